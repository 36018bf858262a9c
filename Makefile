# beyond-tops: a thin, self-documenting wrapper over the `harness` CLI.
# `make bench` and `make test` are all a newcomer needs; the venv is created on first use.

HW      ?= cpu
SUITE   ?= quick
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help venv bench models test lint overhead clean

help: ## show this help
	@echo "beyond-tops — MLPerf LoadGen benchmarks of ONNX models (HW=$(HW), SUITE=$(SUITE))"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP) ## create .venv and install the project with its dev tools

models: $(STAMP) ## generate the models the suite needs (cached by content hash)
	$(BIN)/harness models build --suite $(SUITE)

bench: models ## run the suite (default: quick, ResNet-50 SingleStream + Offline) on HW
	$(BIN)/harness bench $(SUITE) --hw $(HW)

test: $(STAMP) ## run every test (unit + real LoadGen integration runs)
	$(BIN)/python -m pytest

lint: $(STAMP) ## ruff and mypy, as CI runs them
	$(BIN)/ruff check harness tests benchmarks
	$(BIN)/ruff format --check harness tests benchmarks
	$(BIN)/mypy

overhead: models ## measure harness overhead against plain onnxruntime loops
	$(BIN)/python benchmarks/overhead.py

clean: ## remove the venv and caches (never results/)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
