# The front door. `make serve` and `make test` install what is missing into .venv first.
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

.PHONY: serve test lint bench synth layer deploy clean opensearch opensearch-node

STAGE ?= dev
SEARCH_BACKEND ?= opensearch
CDK_CONTEXT = -c stage=$(STAGE) -c search_backend=$(SEARCH_BACKEND)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.dev: $(BIN)/python requirements-dev.txt layers/core/pyproject.toml
	$(PIP) -r requirements-dev.txt
	touch $@

# The local model's engine built for this CPU from its C source and ours (kept only if it agrees with the shipped one).
ENGINE_SOURCES := layers/core/python/agentmem/embeddings/engine.py layers/core/python/agentmem/embeddings/e5_matmul_q4q8.c
$(VENV)/.engine: $(VENV)/.dev $(ENGINE_SOURCES)
	$(BIN)/agentmem tune-engine --if-possible
	touch $@

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

serve: $(VENV)/.engine ## start the API on 127.0.0.1 with the embedded stores
	$(BIN)/agentmem serve --host 127.0.0.1 --port $(PORT) --db $(DB)

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

$(VENV)/.infra: $(BIN)/python requirements-infra.txt
	$(PIP) -r requirements-infra.txt
	touch $@

# The agents' own environment (a Strands agent on the AgentCore session manager): Strands pins an older MCP SDK.
$(VENV)/.agents: $(BIN)/python requirements-agents.txt
	$(BIN)/python -m venv $(VENV)/agents
	$(VENV)/agents/bin/python -m pip install --disable-pip-version-check -q -r requirements-agents.txt
	touch $@

test: $(VENV)/.bench $(VENV)/.infra $(VENV)/.agents $(MCP_REFERENCE)/node_modules/.installed $(TS_CLIENT)/node_modules/.installed $(NODE_BUILT) $(VENV)/.chromium ## run every test tier, the bench at a hundredth included (the OpenSearch tests need Java 17 and Maven)
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=20

lint: $(VENV)/.dev ## ruff and mypy (strict on the core package)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The bench's environment: the pinned peers (bench/requirements.txt); `make test` runs the bench at a hundredth.
$(VENV)/.bench: $(VENV)/.engine bench/requirements.txt
	$(PIP) -r bench/requirements.txt
	touch $@

bench: $(VENV)/.bench $(VENV)/.infra $(MCP_REFERENCE)/node_modules/.installed $(NODE_BUILT) ## print latency and quality figures (ONLY="adk mcp" selects sections)
	$(BIN)/python bench/run.py $(ONLY)

synth: $(VENV)/.dev $(VENV)/.infra ## synthesize cdk.out/AgentMemory-$(STAGE).template.json offline (cdk-nag runs too)
	CDK_CONTEXT_JSON='{"stage":"$(STAGE)","search_backend":"$(SEARCH_BACKEND)","aws:cdk:bundling-stacks":[]}' \
		$(BIN)/python infra/app.py
	@echo "cdk.out/AgentMemory-$(STAGE).template.json"

layer: $(VENV)/.infra ## build the arm64 dependency layer into .layer-build/deps (pip, no Docker)
	$(BIN)/python infra/packaging.py

deploy: $(VENV)/.dev $(VENV)/.infra layer ## deploy the stack (needs AWS credentials; STAGE=dev|prod SEARCH_BACKEND=opensearch|table)
	npx --yes aws-cdk@2 deploy $(CDK_CONTEXT) --app "$(BIN)/python infra/app.py" --require-approval broadening

clean:
	rm -rf $(VENV) .data cdk.out $(NODE_DIR)/target .layer-build .pytest_cache .mypy_cache .ruff_cache
