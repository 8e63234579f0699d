# Two entry points: `make run` (the main job, offline) and `make test` (the whole suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint slow live bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/comal --help
	$(BIN)/comal demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy src tests benchmarks

test: lint
	$(BIN)/pytest -q
	$(BIN)/pytest -q -m slow
	$(MAKE) live

# The live suite against a real llama-server (built once, cached outside the checkout).
live: $(STAMP)
	COMAL_LLAMA_SERVER="$$(scripts/build-llama-server.sh)" \
	COMAL_LIVE_MODEL="$$(scripts/fetch-smollm2.sh)" \
	$(BIN)/pytest -q -m live tests/live

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
