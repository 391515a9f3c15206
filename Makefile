# Every target creates .venv on demand, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# `make run` needs cronctl only; the tests, benchmarks and linters need the extras.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
# The example service is installed here, not into the venv: ./cronctl.toml lists it in
# python_path, so only this checkout's configuration sees its jobs (a `cronctl init`
# elsewhere with the same venv does not).
RUN_SITE := .run-site

.PHONY: run test chaos bench house lint venv bytecode clean

$(RUN_STAMP): pyproject.toml $(wildcard examples/*/pyproject.toml) $(wildcard examples/*/*/*.py)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	rm -rf $(RUN_SITE)
	$(BIN)/python -m pip install -q --no-deps --target $(RUN_SITE) examples/cronctl-example-service
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	touch $(DEV_STAMP)

venv: $(DEV_STAMP)

# The package's bytecode, written ahead as an installed package's is (pip compiles what it
# installs; an editable install compiles nothing, and with PYTHONDONTWRITEBYTECODE set, as
# here, every process would compile the ~130 modules again: `cronctl next` 0.31 -> 0.18 s).
# Only modules whose source changed are compiled again.
bytecode: $(RUN_STAMP)
	$(BIN)/python -m compileall -q cronctl

run: $(RUN_STAMP) bytecode
	$(BIN)/cronctl run

# Three workers on two cores: most integration tests wait on real processes (four
# starved the short chaos rounds on a busy machine). worksteal: a worker that runs dry
# takes half of another's queue, so the long chaos and cluster tests do not leave two
# workers idle at the end (644-669 s with the default split, 503 s so).
test: $(DEV_STAMP) bytecode
	$(BIN)/python -m pytest -n 3 --dist worksteal --durations=15 tests

# The long fault-injection run (SIGKILLs every 8-15 s, one PostgreSQL restart); make test
# runs a short round of the same suite.
CHAOS_SECONDS ?= 300
chaos: $(DEV_STAMP) bytecode
	CRONCTL_CHAOS_SECONDS=$(CHAOS_SECONDS) $(BIN)/python -m pytest -s tests/chaos

bench: $(DEV_STAMP) bytecode
	$(BIN)/python -m bench

# The steady-state trace: the cronctl modules that run code while one command job and one
# Python job fire every second, after READY (bench/house.py; about 20 s).
house: $(DEV_STAMP) bytecode
	$(BIN)/python -m bench.house

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy --strict cronctl
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) $(RUN_SITE) build dist .pytest_cache .mypy_cache .ruff_cache
