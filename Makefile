# The front door. `make serve` and `make test` install what is missing into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
DB ?= .data/memory.db
PIP := $(BIN)/python -m pip install --disable-pip-version-check -q
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export PIP_NO_INPUT := 1

.PHONY: serve test lint bench synth deploy clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.dev: $(BIN)/python requirements-dev.txt layers/core/pyproject.toml
	$(PIP) -r requirements-dev.txt
	touch $@

serve: $(VENV)/.dev ## start the API on 127.0.0.1 with the embedded stores
	$(BIN)/agentmem serve --host 127.0.0.1 --port $(PORT) --db $(DB)

test: $(VENV)/.dev ## run every test tier
	$(BIN)/python -m pytest -n 2 --dist loadgroup

lint: $(VENV)/.dev ## ruff and mypy (strict on the core package)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.dev ## print latency and quality figures
	$(BIN)/python bench/run.py $(ONLY)

clean:
	rm -rf $(VENV) .data cdk.out .layer-build .pytest_cache .mypy_cache .ruff_cache
