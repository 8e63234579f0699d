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
	$(BIN)/ruff check src tests perf
	$(BIN)/ruff format --check src tests perf
	$(BIN)/mypy src tests perf
	$(BIN)/vulture

test: lint
	$(BIN)/pytest -q -n 2 --dist loadfile
	$(BIN)/pytest -q -m slow
	$(MAKE) live

# The live suite against a real llama-server (built once, cached outside the checkout).
live: $(STAMP)
	COMAL_LLAMA_SERVER="$$(scripts/build-llama-server.sh)" \
	COMAL_LIVE_MODEL="$$(scripts/fetch-smollm2.sh)" \
	COMAL_LIVE_CODER_MODEL="$$(scripts/fetch-qwen-coder.sh)" \
	$(BIN)/pytest -q -m live tests/live

bench: $(STAMP)
	for m in context_bench ledger_bench provider_bench evidence_bench evidence_memory permission_bench; do \
		$(BIN)/python -m perf.$$m || exit 1; \
	done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
