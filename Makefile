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

.PHONY: serve test lint bench synth layer deploy clean

STAGE ?= dev
SEARCH_BACKEND ?= opensearch
CDK_CONTEXT = -c stage=$(STAGE) -c search_backend=$(SEARCH_BACKEND)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.dev: $(BIN)/python requirements-dev.txt layers/core/pyproject.toml
	$(PIP) -r requirements-dev.txt
	touch $@

# The MCP reference memory server, pinned (package-lock.json): the differential test and make bench run it.
MCP_REFERENCE := peers/mcp-server-memory
$(MCP_REFERENCE)/node_modules/.installed: $(MCP_REFERENCE)/package.json $(MCP_REFERENCE)/package-lock.json
	npm ci --prefix $(MCP_REFERENCE) --no-audit --no-fund --loglevel=error
	touch $@

serve: $(VENV)/.dev ## start the API on 127.0.0.1 with the embedded stores
	$(BIN)/agentmem serve --host 127.0.0.1 --port $(PORT) --db $(DB)

$(VENV)/.infra: $(BIN)/python requirements-infra.txt
	$(PIP) -r requirements-infra.txt
	touch $@

test: $(VENV)/.dev $(VENV)/.infra $(MCP_REFERENCE)/node_modules/.installed ## run every test tier
	$(BIN)/python -m pytest -n 2 --dist loadgroup

lint: $(VENV)/.dev ## ruff and mypy (strict on the core package)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The bench-only environment: the pinned peers (bench/requirements.txt), not installed by `make test`.
$(VENV)/.bench: $(VENV)/.dev bench/requirements.txt
	$(PIP) -r bench/requirements.txt
	touch $@

bench: $(VENV)/.bench $(MCP_REFERENCE)/node_modules/.installed ## print latency and quality figures (ONLY="adk mcp" selects sections)
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
	rm -rf $(VENV) .data cdk.out .layer-build .pytest_cache .mypy_cache .ruff_cache
