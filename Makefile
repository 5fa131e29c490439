# Two entry points work on a fresh machine with only Python 3.11:
#   make demo   -> creates .venv, installs, runs the main job on the embedded default (wdbc)
#   make test   -> creates .venv if needed, installs, runs the whole test suite
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint bench bench-peers bench-cxx bench-accuracy bench-compile bench-scale clean venv airflow-env mlflow-env study-defaults

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m omkl_dist.pipelines.demo

# two pytest workers (pytest-xdist), one per core: a test file's tests run in one worker, so its
# module fixtures (a cluster, a generated stream) are made once; the files go out in collection
# order, which puts the files with slow or cluster tests first (tests/conftest.py), not xdist's
# default of the files with the most tests first (that left the long files of few tests for last,
# one worker idle); the 20 slowest tests are listed at the end, so CI's output says where the
# suite's time goes. numba's kernels are compiled first, once, by `omkl warmup` on every core: a
# cold cache otherwise has each pytest worker, `omkl` command and `dask worker` compile what it
# meets first, several of them the same kernels at once, inside the tests' time
test: $(STAMP)
	$(BIN)/omkl warmup --if-cold --quiet
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=20

# no real datasets, no cluster processes, nothing marked slow (the end-to-end `omkl` command tests); the
# parity and cluster-equals-local checks run here on generated data (tests/generated_data.py):
# ~150 s on 2 cores once numba's cache is warm (a clean checkout first compiles the kernels: `omkl warmup`, on
# every core; the cache lives in the checkout); needs neither ../shared nor a network
test-fast: $(STAMP)
	$(BIN)/omkl warmup --if-cold --quiet
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not data and not cluster and not slow"

# ruff's lint rules and its formatter (line length 120), then mypy (strict on the estimators, storage and
# the engine interface; [tool.ruff] and [tool.mypy] in pyproject.toml). CI runs it first.
lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

# Apache Airflow (pinned) in its own cached virtual environment, for the DAG's real run in the tests
# (the test creates it too when missing; CI creates it first so the suite's time is the tests' own)
airflow-env: $(STAMP)
	$(BIN)/python tests/airflow_env.py

# the MLflow server (the full `mlflow`, pinned) in its own cached virtual environment, for tests/test_mlflow.py's
# real `mlflow server` (our own environment has only the client, the `mlflow` extra: the server's pins would
# downgrade pyarrow); about 1-2 minutes of pip on two shared cores, then cached under ~/.cache/omkl-dist
mlflow-env: $(STAMP)
	$(BIN)/python tests/mlflow_env.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks.bench

# every learner of the authors' C++ toolbox we have, with its parameters, on cod-rna, a9a and ijcnn1 beside the
# C++'s published numbers (results/peers.json; BENCHMARKS.md is written by `make bench`); about an hour on 2 cores
bench-peers: $(STAMP)
	OMKL_DATA_DIR=$${OMKL_DATA_DIR:-../shared/datasets} $(BIN)/python -m benchmarks.bench_peers

# the authors' C++ toolbox timed here beside ours (issue 36's learners on cod-rna, a9a, ijcnn1, alternating;
# results/cxx.json, BENCHMARKS.md): needs a build of the toolbox (benchmarks/bench_cxx.py says how), ~10 minutes
bench-cxx: $(STAMP)
	OMKL_DATA_DIR=$${OMKL_DATA_DIR:-../shared/datasets} $(BIN)/python -m benchmarks.bench_cxx --toolbox "$${OMKL_CXX_TOOLBOX:?set OMKL_CXX_TOOLBOX to the toolbox binary}"

# the Dask engine on 1, 2, ... (the cores present) real worker processes, every round's costs recorded, and
# a cost model's projection to 64 workers (results/scale.json, results/scale-speedup.png, BENCHMARKS.md);
# SPA 1M, OMKC (S,S) 200k, OM-2 26 classes 200k, OKS 200k, BPAS 1M rows: ~15 minutes on 2 cores.
# OMKL_BENCH_QUICK=1: streams a twentieth as long (a check of the machinery)
bench-scale: $(STAMP)
	$(BIN)/python -m benchmarks.bench_scale

# numba's compile time per function on a cold cache, every algorithm warmed in one process (what a fresh
# clone's `omkl warmup` pays): results/compile-times.json, a few minutes on 2 shared cores; then a fresh
# cache's first `omkl run spa` on 1,000 rows, alone and with its compile-ahead helper: results/first-run.json
bench-compile: $(STAMP)
	$(BIN)/python -m benchmarks.compile_times
	OMKL_DATA_DIR=$${OMKL_DATA_DIR:-../shared/datasets} $(BIN)/python -m benchmarks.first_run

# batch MKL (defaults: C by cross-validation, unit-diagonal kernels) beside one tuned RBF SVM, 5 splits of
# the MKBoost paper's binary datasets; resumable (results/batch-accuracy.jsonl), a few hours on 2 shared cores;
# then MKBoost with the paper's raw polynomial kernels against its normalised default (~5 minutes)
bench-accuracy: $(STAMP)
	OMKL_DATA_DIR=$${OMKL_DATA_DIR:-../shared/datasets} $(BIN)/python -m benchmarks.bench_accuracy
	OMKL_DATA_DIR=$${OMKL_DATA_DIR:-../shared/datasets} $(BIN)/python -m benchmarks.mkboost_kernels

# the study behind the defaults: the first 3,000 rows of every dataset (about 7 minutes on 2 cores), then
# the whole streams of the datasets of >= 10,000 rows with the other defaults as axes (hours: resumable, a
# rerun adds only what is missing); docs/defaults.md reports both side by side
WHOLE_DATASETS = codrna,ijcnn1,a9a,susy,w7a,magic04-shaped,letters-shaped
study-defaults: $(STAMP)
	$(BIN)/omkl study defaults --results benchmarks/results/study-defaults.jsonl --doc runs/study-defaults-3000.md
	OMKL_DATA_DIR=$${OMKL_DATA_DIR:-../shared/datasets} nice -n 10 $(BIN)/omkl study defaults --max-rows all \
	  --datasets $(WHOLE_DATASETS) --axes hedge_loss,budget,pool --permutations 1 \
	  --results benchmarks/results/study-defaults-whole.jsonl \
	  --compare benchmarks/results/study-defaults.json --doc docs/defaults.md

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
