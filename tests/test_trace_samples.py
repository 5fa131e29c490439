"""The model read inside a block (``sample_at``, :mod:`omkl_dist.engine.samples`) is the naive
one-instance-at-a-time reference's model after that many rows: its support vectors per kernel
exactly, its kernel weight shares to rounding (SPA: Hedge on losses; OMKC: Hedge on updates; OMKC with
PA-I learners: on the updates of the kernels that erred)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.algorithms import OMKC, OMKCPA, SPA
from omkl_dist.kernels import make_pool

from naive_omkc import naive_omkc
from naive_spa import naive_spa

SPECS = list(make_pool("omkc16"))
ROWS_READ = np.array([1, 37, 64, 65, 101, 150, 199, 200])  # inside blocks of 64, at their ends, the last


def _reference(algo, X, y, rows):
    """(support vectors per kernel, weight shares) of the naive run over each prefix of ``rows`` rows."""
    out = []
    for r in rows:
        if algo == "spa":
            _, _, sv, w = naive_spa(X[:r], y[:r], SPECS, seed=5, block_size=64, gamma=0.99, delta=0.001, eta=0.1)
        else:
            pa_c = 0.3 if algo == "omkc-pa" else None
            _, _, _, sv, w = naive_omkc(
                X[:r], y[:r], SPECS, update="S", combination="S", seed=5, block_size=64, pa_c=pa_c
            )
        out.append(([len(s) for s in sv], w / w.sum()))
    return out


@pytest.mark.parametrize("algo", ["spa", "omkc", "omkc-pa"])
def test_samples_inside_blocks_are_the_naive_models(algo):
    rng = np.random.default_rng(0)  # (continuous rows: no exact ties, which a reassociated sum may break)
    X = rng.normal(size=(200, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=200) > 0, 1.0, -1.0)
    if algo == "spa":
        model = SPA(kernels="omkc16", random_state=5, block_size=64, gamma=0.99, delta=0.001, eta=0.1)
    else:
        model = (OMKCPA if algo == "omkc-pa" else OMKC)(
            kernels="omkc16",
            update="S",
            combination="S",
            beta=0.8,
            delta=0.01,
            block_sync=False,
            random_state=5,
            block_size=64,
            **({"C": 0.3} if algo == "omkc-pa" else {}),
        )
    feed = model.feed_rows()
    rows, support, weights = [], [], []
    for lo in range(0, len(y), feed):  # as omkl run feeds it
        wanted = ROWS_READ[(ROWS_READ > lo) & (ROWS_READ <= lo + feed)]
        out = model.progressive_partial_fit(X[lo : lo + feed], y[lo : lo + feed], classes=[-1, 1], sample_at=wanted)
        rows += out["samples"][0].tolist()
        support += out["samples"][1].tolist()
        weights += list(out["samples"][2])
    assert rows == ROWS_READ.tolist()
    for (ref_support, ref_weights), ours_support, ours_weights in zip(
        _reference(algo, X, y, ROWS_READ), support, weights, strict=True
    ):
        assert ours_support == ref_support
        np.testing.assert_allclose(ours_weights, ref_weights, rtol=1e-9)
    assert support[-1] == model.n_support_.tolist() and np.allclose(weights[-1], model.weights_, rtol=1e-12)


# --- on a cluster: the models read where an in-process run's calls end --------------------------
ROUND_END_CASES = [
    ("bpas", {"budget": 20}),  # a budget learner: the buffers live on the kernel shards
    ("om2", {}),  # OM-2's weights: its kernel factors
    ("oks", {}),  # row-split rounds of one block
    ("perceptron-star", {"validation_size": 150}),  # keeps one kernel after a prefix
    ("omkc", {"update": "D", "combination": "D"}),  # on three classes: a coefficient per kernel and class
]
N_ROWS, FEED_BLOCK = 500, 64


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """A generated binary stream, and a three-class one."""
    import pandas as pd

    from omkl_dist.storage import ingest
    from omkl_dist.storage.synth import synthesize

    out = tmp_path_factory.mktemp("samples")
    synthesize(out / "binary", rows=N_ROWS, features=4, seed=1, chunk_rows=200)
    X = np.random.default_rng(2).normal(size=(N_ROWS, 4))
    table = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)]).assign(
        target=np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
    )
    ingest(table, out / "three", chunk_rows=200, label_column="target")
    return out


def _coordinator(job, state, feed, history=(), samples=()):
    """A coordinator over two plain shards (no Dask) continuing ``state`` (a whole engine state)."""
    from omkl_dist.distributed.coordinator import Coordinator
    from omkl_dist.distributed.rounds import round_adapter
    from omkl_dist.distributed.shard import KernelShard, engine_program

    arrays, scalars = state
    adapter = round_adapter(scalars)
    program = engine_program(job["kernel_pool"], arrays["kernel_ids"])
    parts = adapter.partition(program, scalars, 2)
    shards = [KernelShard(job, part, {"arrays": arrays, "scalars": scalars}) for part in parts]
    coord = Coordinator(
        shards,
        parts,
        arrays,
        scalars,
        N_ROWS,
        checkpoint_every=3,
        history=list(history),
        select_kernel_at=job["select_kernel_at"],
        round_ends=adapter.round_ends(scalars, program),
        samples=list(samples),
        feed=feed,
    )
    return coord, shards, adapter


@pytest.mark.parametrize(("algo", "params"), ROUND_END_CASES, ids=[a for a, _ in ROUND_END_CASES])
def test_a_cluster_reads_the_model_where_an_in_process_run_does(synth, algo, params, monkeypatch):
    """Models the engine does not read inside a round: the coordinator reads their support vectors
    per kernel and weight shares where an in-process run's ``partial_fit`` calls end, equal to the
    in-process trace's; a coordinator started from a checkpoint's state continues them. (BPAS's calls
    here: a block each up to row 256, then two blocks each.)"""
    import asyncio

    from omkl_dist.engine import local as local_engine
    from omkl_dist.evaluation.progressive import feed_calls

    monkeypatch.setattr(local_engine, "KERNEL_SPLIT_FEED", 2 * FEED_BLOCK)
    monkeypatch.setattr(local_engine, "EARLY_ROWS", 4 * FEED_BLOCK)

    from omkl_dist.evaluation.progressive import progressive_score
    from omkl_dist.preprocessing import Scaler
    from omkl_dist.storage import open_stream

    data = synth / ("three" if algo == "omkc" else "binary")
    stream = open_stream(data, block_size=N_ROWS)
    X = np.concatenate([b[0] for b in stream])
    y = np.concatenate([b[1] for b in stream]).astype(float)
    classes = np.unique(y).tolist()
    assert len(classes) == (3 if algo == "omkc" else 2)
    scaler = Scaler("minmax").fit(X)
    kernels = "gaussian:0.5,2;linear" if algo != "perceptron-star" else "gaussian:0.5,1,2"

    def estimator():  # as a job over the stream makes it
        from omkl_dist.job import make_stream_estimator

        return make_stream_estimator(algo, {"kernels": kernels, **params}, n_rows=N_ROWS, block_size=FEED_BLOCK, seed=3)

    model = estimator()
    feed = model.feed_rows()
    Xs = scaler.transform(X)
    blocks = [(Xs[lo : lo + feed], y[lo : lo + feed]) for lo in range(0, N_ROWS, feed)]
    calls = list(feed_calls(blocks, model.feed()))  # as omkl run feeds it
    local = progressive_score(model, calls, n_rows=N_ROWS, classes=classes)
    assert len(local.sampled_at) == len(calls) == (6 if algo == "bpas" else len(blocks))  # (read at calls' ends)

    template = estimator().initialize(X.shape[1], classes, n_rows=N_ROWS)
    job = {
        "data": str(data),
        "shuffle": False,
        "seed": 0,
        "limit": None,
        "kernel_pool": template.kernel_pool_.to_spec_string(),
        "scaler": scaler.to_dict(),
        "classes": classes,
        "select_kernel_at": getattr(template, "validation_size_", None),
    }
    coord, shards, adapter = _coordinator(job, template.engine_.state(), model.feed())
    progress = asyncio.run(coord.run_rounds(100))  # to the first checkpoint
    assert progress["checkpoint_due"] and not progress["done"]
    first = coord.state()
    scalars = {**template.engine_.state()[1], "n_seen": first["n_seen"], "n_mistakes": first["n_mistakes"]}
    state = adapter.gather(first["arrays"], scalars, lambda i: shards[i].model_part(), len(shards))
    while not asyncio.run(coord.run_rounds(100))["done"]:
        pass
    resumed, _, _ = _coordinator(job, state, model.feed(), first["history"], first["samples"])
    while not asyncio.run(resumed.run_rounds(100))["done"]:
        pass
    for run in (coord, resumed):
        samples = run.state()["samples"]
        assert [s[0] for s in samples] == local.sampled_at
        assert [s[1] for s in samples] == local.n_support
        assert [s[2] for s in samples] == local.weights  # bit for bit


def test_support_gained_counts_the_cumulative_support():
    """The support vectors each kernel has gained by a sampled row, counted over the rows some kernel
    kept, are the cumulative count over every row."""
    from omkl_dist.engine.samples import _support_gained

    rng = np.random.default_rng(2)
    coef = np.where(rng.random((500, 7)) < 0.01, rng.normal(size=(500, 7)), 0.0)
    coef[40] = 0.0
    coef[41, 3] = -0.0  # (a zero, however signed, is no support vector)
    for rows in ([], [0], [40, 41, 42], np.sort(rng.choice(500, 30, replace=False)), [499]):
        rows = np.asarray(rows, dtype=np.int64)
        expected = np.cumsum(coef != 0.0, axis=0, dtype=np.int64)[rows]
        np.testing.assert_array_equal(_support_gained(coef, rows), expected)
