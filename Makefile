# Two entry points: `make demo` runs the main job on a fresh reports root,
# `make test` runs every quality gate. Both set up .venv by themselves.
SHELL := /bin/bash
PYTHON ?= $(shell for p in python3 python3.13 python3.12 python3.11; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	&& { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_ROOT ?= demo-reports/$(shell date +%Y%m%d-%H%M%S)

.PHONY: demo test lint bench clean-venv

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: Python 3.11+ is required (python3 --version)" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@# bytecode ahead of time: failing scripts call capture, which must start fast even
	@# where PYTHONDONTWRITEBYTECODE is set
	$(BIN)/python -m compileall -q src >/dev/null
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python scripts/demo.py --dir "$(DEMO_ROOT)"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/black --check -q .
	$(BIN)/mypy --strict src
	$(BIN)/mypy tests

# the independent tests in parallel (one worker per core), then the timing-sensitive soaks
# (`-m slow`) alone, so neither slows the other's clocks
JOBS ?= auto
test: lint
	$(BIN)/pytest -n $(JOBS) -m "not slow" --durations=15
	$(BIN)/pytest -m slow

bench: $(STAMP)
	$(BIN)/python bench/capture.py
	$(BIN)/python bench/mirror.py
	$(BIN)/python bench/containment.py
	$(BIN)/python bench/serve.py
	$(BIN)/python bench/fleet.py
	$(BIN)/python bench/cli.py

clean-venv:
	rm -rf $(VENV)
