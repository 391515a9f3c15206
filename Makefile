# Every target creates .venv on demand, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test chaos bench lint venv clean

$(STAMP): pyproject.toml $(wildcard examples/*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	@if [ -d examples/cronctl-example-service ]; then $(BIN)/python -m pip install -q -e examples/cronctl-example-service; fi
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/cronctl run

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests

# The long fault-injection run (SIGKILLs every 8-15 s, one PostgreSQL restart); make test
# runs a short round of the same suite.
CHAOS_SECONDS ?= 300
chaos: $(STAMP)
	CRONCTL_CHAOS_SECONDS=$(CHAOS_SECONDS) $(BIN)/python -m pytest -s -p no:randomly tests/chaos

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy --strict cronctl
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
