"""Every online algorithm through the public cluster API (`fit_on_cluster`), exact and resumable.

For each of the online algorithms (the four OMKC variants, OMKC with PA-I learners, the three
Perceptron baselines, SPA, OM-2, the budget baselines' engine with either update, Projectron and
Projectron++ (the same engine with a K_S^-1 state), FOGD, NOGD and OKS, also on feature-group kernels)
on a stored stream:

1. ``omkl run``'s in-process job (:func:`~omkl_dist.pipelines.run.run_job`) gives the reference model;
2. ``fit_on_cluster(client, ...)`` on **3** workers with checkpoints, the coordinator's worker
   (which also hosts the first shard) going down mid-job with its actors: the engine recovers from
   the last checkpoint on the 2 workers left and ends in the same model bit for bit, having
   reported progress from row 0 to the end;
3. (SPA, BPAS, Perceptron(*), OM-2, OKS, FOGD, NOGD: one per round kind and engine) the checkpoints are cut
   back to the earliest one (as if the job had died there) and the same engine's
   ``fit(..., resume=True)`` on the 2 workers left continues from it to the same model bit for bit.

"The same model" includes its probability calibration (learnt by the coordinator from the rounds'
progressive scores, checkpointed with the rows it gathered since its last batch).

The Dask cluster is in-process (``LocalCluster(processes=False)``, actors in threads), which runs
the engine's real actor code; SIGKILLed worker *processes* (restarted by their nannies) are tested
on real ``dask worker`` processes in ``test_cluster_integration.py`` (SPA, OMKC (S,S)).
"""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager

import numpy as np
import pytest

from omkl_dist.persistence import load_model

pytestmark = pytest.mark.cluster

ROWS, BLOCK, SEED = 1600, 160, 5
WORKERS = 3
# also resumed with resume=True (job.json, scaler, history)
RESUMED = ("spa", "bpas", "perceptron-star", "om2", "oks", "fogd", "nogd", "omkc-pa")
CASES = [
    ("omkc", {"update": "D", "combination": "D"}),
    ("omkc", {"update": "D", "combination": "S"}),
    ("omkc", {"update": "S", "combination": "D"}),
    ("omkc", {"update": "S", "combination": "S"}),
    # PA-I learners (kernel-ddpa on kernel-split rounds, kernel-sdpa on row-split ones)
    ("omkc-pa", {"update": "D", "combination": "D"}),
    ("omkc-pa", {"update": "S", "combination": "D"}),
    ("perceptron", {"kernel": "gaussian:1"}),
    ("perceptron-u", {}),
    ("perceptron-star", {}),
    ("spa", {}),
    ("om2", {}),
    # the four budget baselines are one engine (BudgetEngine: a learner code inside its kernel step), one
    # kind of round (BudgetEngineSplit) and one checkpointed state, so BPAS stands for them in the lost
    # worker and the resume; every learner with either update is the in-process one on a cluster in
    # test_cluster_equals_local.py, its shards its whole engine in test_budget_parity.py, test_budget_sd.py
    ("bpas", {"budget": 30}),
    # the stochastic update ("_sd"): shards draw a block's kernels with the weights of its start
    ("bpas", {"budget": 30, "update": "S"}),
    ("projectron", {"budget": 30, "eta": 0.3}),
    ("projectron++", {"budget": 30, "eta": 0.3, "update": "S"}),
    ("fogd", {"kernels": "gaussian:0.5,1,2", "n_components": 20}),
    ("nogd", {"kernels": "gaussian:0.5,1,2;polynomial:2", "budget": 30, "n_components": 8}),
    ("oks", {}),
    ("oks", {"loss": "hinge", "kernels": "gaussian:0.5,1 @ 0:3; linear,laplacian:1 @ 2:5"}),
    # normalised kernels: SPA's lazy in-block columns on the row-split rounds, a budget learner's on kernel shards
    ("spa", {"kernels": "gaussian:0.5,1;poly:2+norm;linear+norm"}),
    ("bpas", {"budget": 30, "kernels": "gaussian:0.5,1;poly:2+norm;linear+norm"}),
]
KERNELS = "gaussian:0.5,1,2;poly:2;linear"


@contextmanager
def _local_cluster():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=WORKERS,
            threads_per_worker=1,
            processes=False,
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address="127.0.0.1:0",
        ) as local,
        Client(local) as client,
    ):
        yield local, client


@pytest.fixture
def cluster():  # a fresh one per test: a test takes one of its workers down
    with _local_cluster() as both:
        yield both


@pytest.fixture(scope="module")
def intact_cluster():  # one for the tests that lose no worker
    with _local_cluster() as both:
        yield both


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    from omkl_dist.storage.synth import synthesize

    out = tmp_path_factory.mktemp("every") / "synth"
    synthesize(out, rows=ROWS, features=5, seed=3, chunk_rows=800)
    return out


def _arrays(model):
    arrays, meta = model.to_state()
    return arrays, {"engine": meta["engine"], "calibration": meta["calibration"]}


def _assert_same(model, reference):
    arrays, engine = _arrays(model)
    ref_arrays, ref_engine = reference
    assert sorted(arrays) == sorted(ref_arrays) and engine == ref_engine  # (the calibration included)
    assert engine["calibration"]["class_counts"] and sum(engine["calibration"]["class_counts"]) > 0
    for name, value in ref_arrays.items():
        np.testing.assert_array_equal(arrays[name], value, err_msg=name)


@pytest.mark.parametrize(("algo", "params"), CASES, ids=[a + "".join(f"-{v}" for v in p.values()) for a, p in CASES])
def test_cluster_fit_and_resume_equal_the_sequential_run(cluster, stored, tmp_path, algo, params):
    from omkl_dist.distributed import fit_on_cluster
    from omkl_dist.job import make_stream_estimator
    from omkl_dist.pipelines.run import run_job

    local, client = cluster
    params = params if algo == "perceptron" else {"kernels": KERNELS, **params}
    job = _job(algo, params, stored, "minmax")
    run_job(job, str(stored), model_out=tmp_path / "local", trace_out=tmp_path / "trace.json", show_progress=False)
    reference = _arrays(load_model(tmp_path / "local").estimator)

    def estimator():  # (the job's parameters: its defaults included, e.g. SPA's hedge_loss)
        return make_stream_estimator(algo, dict(job.params), n_rows=ROWS, block_size=BLOCK, seed=SEED)

    ckpt, seen = tmp_path / "ckpt", []

    def lose_a_worker(progress):  # once a checkpoint exists, one of the three workers goes down mid-job
        seen.append((progress["n_seen"], progress["n_rows"], progress["done"]))
        if len(client.nthreads()) == WORKERS and any(ckpt.glob("ckpt-*")) and not progress["done"]:
            address = sorted(client.nthreads())[0]  # the coordinator's (and the first shard's) worker
            local.sync(next(w for w in local.workers.values() if w.address == address).close)

    options = {"checkpoint_every": 2, "rounds_per_call": 2, "worker_timeout": 0.5}
    fit = fit_on_cluster(
        client,
        estimator(),
        stored,
        scaling="minmax",
        seed=SEED,
        checkpoint_dir=ckpt,
        on_progress=lose_a_worker,
        **options,
    )
    _assert_same(fit.model, reference)
    local_trace = json.loads((tmp_path / "trace.json").read_text())["trace"]
    _assert_same_curve(fit.trace, local_trace)  # through a worker's loss and a recovery
    assert len(fit.accounting.failures) == 1 and fit.accounting.workers == WORKERS - 1  # recovered on the two left
    assert seen[0] == (0, ROWS, False) and seen[-1] == (ROWS, ROWS, True) and fit.accounting.resumed_from == 0
    if algo not in RESUMED:  # (the recovery above restarted from a checkpoint the same way)
        return
    checkpoints = sorted(ckpt.glob("ckpt-*"))
    for later in checkpoints[1:]:  # back to the earliest kept checkpoint, as if the job had died there
        shutil.rmtree(later)
    resumed = fit_on_cluster(
        client,
        estimator(),
        stored,
        scaling="minmax",
        seed=SEED,
        checkpoint_dir=ckpt,
        resume=True,
        keep_checkpoints=False,
        **options,
    )  # the same options, a new call: on the 2 workers left
    done = resumed.accounting
    assert 0 < done.resumed_from < ROWS and done.failures == () and done.workers == WORKERS - 1
    _assert_same(resumed.model, reference)
    _assert_same_curve(resumed.trace, local_trace)  # a resumed job's curve is the unbroken one's
    assert not ckpt.exists()
    _assert_predicts_the_same_probabilities(resumed, tmp_path, stored)


def _assert_predicts_the_same_probabilities(fit, tmp_path, stored):
    """``omkl predict --proba`` on the saved cluster model writes the in-process model's probabilities."""
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from omkl_dist.persistence import save_model
    from omkl_dist.pipelines.cli import main

    save_model(fit.as_model(), tmp_path / "cluster")
    for model in ("local", "cluster"):
        args = ["predict", "--model-dir", tmp_path / model, "--data", stored, "--out", tmp_path / f"{model}.parquet"]
        ran = CliRunner().invoke(main, [*map(str, args), "--proba"], catch_exceptions=False)
        assert ran.exit_code == 0, ran.output
    local, cluster = (pq.read_table(tmp_path / f"{model}.parquet") for model in ("local", "cluster"))
    columns = [name for name in local.column_names if name.startswith("proba_")]
    assert len(columns) == 2 and local.select(columns).equals(cluster.select(columns))


def _assert_same_curve(trace, local_trace):
    """The cluster's mistake curve is the in-process one, value for value, a point at least every 1 %;
    so are the support vectors and weights the trace reads: at those points (binary shared-pool
    models but Perceptron(*)), the others' where the in-process run's calls end."""
    assert (trace["n_seen"], trace["mistake_rate"]) == (local_trace["n_seen"], local_trace["mistake_rate"])
    assert trace["n_seen"][-1] == ROWS and np.diff([0, *trace["n_seen"]]).max() <= ROWS / 100
    assert all(trace[key] == local_trace[key] for key in ("sampled_at", "n_support", "weights"))


WIDE_CASES = [
    ("spa", {}),
    ("omkc", {"update": "S", "combination": "S"}),
    ("omkc", {"update": "D", "combination": "D"}),
    ("om2", {}),
    ("bpas", {"budget": 30}),
]


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """An rcv1-shaped stream (20,000 features, ~0.4 % non-zero) in the csr layout, two chunks."""
    from omkl_dist.storage import ingest
    from omkl_dist.storage.synth_sparse import write_sparse_libsvm

    folder = tmp_path_factory.mktemp("wide")
    write_sparse_libsvm(folder / "wide.svm", rows=1200, features=20_000, density=0.004, seed=2)
    ingest(folder / "wide.svm", folder / "csr", chunk_rows=700)
    return folder / "csr"


@pytest.mark.parametrize(
    ("algo", "params"), WIDE_CASES, ids=[a + "".join(f"-{v}" for v in p.values()) for a, p in WIDE_CASES]
)
def test_cluster_fit_on_a_csr_stream_equals_the_sequential_run(intact_cluster, wide, tmp_path, algo, params):
    """Shards read CSR blocks and the shared-pool models keep sparse support vectors there too (the
    budget learners densify each block): the cluster's model is the sequential run's bit for bit."""
    from omkl_dist.distributed import fit_on_cluster
    from omkl_dist.job import make_stream_estimator
    from omkl_dist.pipelines.run import run_job

    _, client = intact_cluster
    job = _job(algo, {"kernels": KERNELS, **params}, wide, "none")
    run_job(job, str(wide), model_out=tmp_path / "local", trace_out=tmp_path / "trace.json", show_progress=False)
    local = load_model(tmp_path / "local").estimator
    assert local.sparse_rows_ == (algo != "bpas")
    fit = fit_on_cluster(
        client, make_stream_estimator(algo, dict(job.params), n_rows=1200, block_size=BLOCK, seed=SEED), wide, seed=SEED
    )
    _assert_same(fit.model, _arrays(local))


def _job(algo, params, data, scaling):
    """``omkl run``'s job of the case: the kernels as given, the stream's first rows scaled."""
    from omkl_dist.defaults import resolve_settings
    from omkl_dist.job import DataWindow, Job

    settings = resolve_settings(scaling=scaling, kernels_given=True)
    return Job.build(algo, params, data=DataWindow(str(data)), block_size=BLOCK, seed=SEED, settings=settings)
