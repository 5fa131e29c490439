# Two entry points work on a fresh machine with only Python 3.11:
#   make demo   -> creates .venv, installs, runs the main job on the embedded default (wdbc)
#   make test   -> creates .venv if needed, installs, runs the whole test suite
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint bench clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m omkl_dist.pipelines.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

# no real datasets, no cluster processes, nothing marked slow: ~25 s once numba's cache is warm,
# ~100 s on a clean checkout (compiling the kernels); needs neither ../shared nor a network
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not data and not cluster and not slow"

# ruff's pyflakes, pycodestyle and import-order rules ([tool.ruff] in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m omkl_dist.pipelines.bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
