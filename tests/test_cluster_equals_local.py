"""Every registered online estimator on a Dask cluster equals the in-process estimator bit for bit,
on small generated data (``make test-fast``: no real datasets, no cluster processes).

``fit_on_cluster(client, estimator, dataset)`` (kernel shards or row-split rounds, a coordinator, the
lead shard's early start) against ``progressive_partial_fit`` on the same rows in the same order, for
every estimator of :data:`~omkl_dist.algorithms.registry.ALGORITHMS` with each of its
``_unit_test_params`` (short blocks: many rounds over 240 rows), on four generated streams: binary
rows with repeats of both labels, small integers (exact ties), a csr stream, four classes. The
model's probability calibration included: the in-process estimator is fed calls of ``feed_rows()``-row
blocks ending where its ``feed()`` says, as ``omkl run`` feeds it (a calibration batch per call).

The cluster is in-process (``LocalCluster(processes=False)``: actors in threads), which runs the
engine's actor code; real worker processes are ``tests/test_cluster_every_algorithm.py``'s and
``tests/test_cluster_integration.py``'s (marked ``cluster``), the real-data shard runs
``tests/test_distributed_engine.py``'s (marked ``data``).
"""

from __future__ import annotations

import numpy as np
import pytest
from generated_data import NAMES, stored

from omkl_dist.algorithms.registry import ALGORITHMS
from omkl_dist.evaluation.progressive import feed_calls
from omkl_dist.storage.stream import load_arrays

CASES = [
    pytest.param(cls, params, id=f"{name}-{i}")
    for name, cls in ALGORITHMS.items()
    for i, params in enumerate(cls._unit_test_params)
]


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address="127.0.0.1:0",
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("generated")
    return {name: stored(name, folder) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("cls", "params"), CASES)
def test_cluster_fit_equals_the_in_process_estimator(client, datasets, cls, params, name):
    _check_cluster_equals_in_process(client, datasets[name], cls, params)


@pytest.mark.parametrize("algo", ["bpas", "fogd"])
def test_calls_joining_blocks_calibrate_and_trace_alike_on_a_cluster(client, datasets, algo, monkeypatch):
    """The kernel-split learners' calls join blocks after the first rows (``kernel_split_feed``:
    here a block of 16 rows per call up to row 64, then two blocks): the cluster's calibration
    follows those calls, and its trace reads the model where they end."""
    from omkl_dist.engine import local as local_engine

    monkeypatch.setattr(local_engine, "KERNEL_SPLIT_FEED", 32)
    monkeypatch.setattr(local_engine, "EARLY_ROWS", 64)
    cls = ALGORITHMS[algo]
    params = cls._unit_test_params[0]
    assert cls(**params).feed() == local_engine.Feed(16, 32, 64)
    fit, local_trace = _check_cluster_equals_in_process(client, datasets["generated-binary"], cls, params)
    ends = [64 + 32 * i for i in range(1, 6)] + [240]
    assert local_trace.sampled_at == [16, 32, 48, 64, *ends]
    assert fit.trace["sampled_at"] == local_trace.sampled_at and fit.trace["weights"] == local_trace.weights


def _check_cluster_equals_in_process(client, data, cls, params):
    """The model (its calibration included) of ``fit_on_cluster`` over ``data`` equals the estimator's
    fed as ``omkl run`` feeds it; returns the cluster's fit and the in-process trace."""
    from omkl_dist.distributed import fit_on_cluster
    from omkl_dist.evaluation.progressive import progressive_score

    X, y, meta = load_arrays(data)
    classes = sorted(internal for _, internal in meta["label_map"])
    local = cls(**params).initialize(X.shape[1], classes, n_rows=len(y), sparse=meta.get("layout") == "csr")
    feed = local.feed_rows()  # fed as omkl run feeds it: the calibration learns a batch per call
    blocks = [(X[lo : lo + feed], y[lo : lo + feed]) for lo in range(0, len(y), feed)]
    trace = progressive_score(local, feed_calls(blocks, local.feed()), n_rows=len(y), classes=classes)
    fit = fit_on_cluster(client, cls(**params), data, permute=False)
    arrays, meta_local = local.to_state()
    ours, meta_cluster = fit.model.to_state()
    assert meta_cluster["engine"] == meta_local["engine"]
    # the probability calibration too, learnt by the coordinator from the rounds' progressive scores
    assert meta_cluster["calibration"] == meta_local["calibration"] and fit.model.calibration_.n_rows == len(y)
    assert sorted(ours) == sorted(arrays)
    for key, value in arrays.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
    return fit, trace


def test_every_worker_warms_the_jobs_kernels_and_a_failed_warmup_is_passed_over(client, caplog):
    """DaskRunner's warm-up (distributed/warm.py): one task per worker, its compiles counted; a
    warm-up that fails is a logged warning, not the job's error."""
    from omkl_dist.algorithms import SPA
    from omkl_dist.distributed.warm import WorkerWarmup

    warmed = WorkerWarmup(client, SPA(kernels="gaussian:0.9", block_size=8), 3, [-1, 1], sparse=False).wait()
    assert warmed.workers == 2 and warmed.compiles >= 0
    assert warmed.summary() == "" if not warmed.compiles else "first use" in warmed.summary()
    failed = WorkerWarmup(client, SPA(kernels="gaussian:0.9", block_size=8), 3, [1], sparse=False).wait()
    assert failed.compiles == 0 and failed.workers == 2
    # (in-process workers share one process, which tries a kind of job once)
    assert caplog.text.count("warming a worker's kernels failed") == 1 and "needs at least two" in caplog.text


def test_a_worker_warms_each_kind_of_job_once(monkeypatch):
    from omkl_dist.algorithms import SPA
    from omkl_dist.distributed import warm

    fitted = []
    monkeypatch.setattr(warm, "_WARMED", set())
    monkeypatch.setattr(warm, "clone", lambda estimator: fitted.append(estimator) or estimator)
    spa = SPA(kernels="gaussian:1", block_size=8)
    for classes in ([-1, 1], [-1, 1], [0, 1, 2]):
        warm.warm_job_kernels(spa, 3, classes, False)
    assert len(fitted) == 2
