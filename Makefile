# Everything runs inside .venv, created on first use from the python3 on PATH.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit e2e bench bench-peers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/agentscore demo

lint: $(STAMP)
	$(BIN)/ruff check agentscore tests benchmarks examples
	$(BIN)/ruff format --check agentscore tests benchmarks examples
	$(BIN)/python -m tests.import_rules

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q -m "not e2e"

e2e: $(STAMP)
	$(BIN)/pytest -q -m e2e

test: lint typecheck unit e2e

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/accuracy.py
	$(BIN)/python benchmarks/soak.py
	$(BIN)/python benchmarks/judge_limits.py
	$(BIN)/python benchmarks/serve.py
	$(BIN)/python benchmarks/serve_core.py
	$(BIN)/python benchmarks/serve_memory.py
	$(BIN)/python benchmarks/serve_latency.py
	$(BIN)/python benchmarks/handover.py
	$(BIN)/python benchmarks/first_submit.py
	$(BIN)/python benchmarks/wakeup.py
	$(BIN)/python benchmarks/wakeup.py --load 2
	$(BIN)/python benchmarks/context_cost.py
	$(BIN)/python benchmarks/eval_ci.py
	$(BIN)/python benchmarks/serve_parts.py
	$(BIN)/python benchmarks/scale_out.py

bench-peers: $(STAMP)
	$(BIN)/python benchmarks/peers.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
