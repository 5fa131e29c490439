"""Kernel shards + coordinator (driven in-process, no Dask) equal the in-process engine bit for bit.

The shard/coordinator classes are plain Python; here they run in this process over real data
stored as zarr, for every algorithm the cluster engine supports, several shard counts and block
sizes (including blocks longer than one round of 1,024 rows). Equality is exact: weights, support
vectors, coefficients, counters, mistakes.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omkl_dist.algorithms.registry import make_estimator
from omkl_dist.distributed.balance import RowBalance
from omkl_dist.distributed.coordinator import Coordinator
from omkl_dist.distributed.partition import partition_kernels, row_ranges
from omkl_dist.distributed.rounds import round_adapter, splits_rows
from omkl_dist.distributed.shard import KernelShard
from omkl_dist.engine import local as local_engine
from omkl_dist.engine.local import LocalEngine, segmenting
from omkl_dist.engine.protocol import Rule, engine_class
from omkl_dist.kernels import make_pool
from omkl_dist.preprocessing import Scaler
from omkl_dist.scoring.program import compile_program
from omkl_dist.storage import ingest, open_stream
from omkl_dist.storage.stream import load_arrays

CASES = [  # (algo, params) -- stochastic updates sample with block-start weights on a cluster
    ("omkc", {"update": "D", "combination": "D"}),
    ("omkc", {"update": "D", "combination": "S"}),
    ("omkc", {"update": "S", "combination": "D", "block_sync": True}),
    ("omkc", {"update": "S", "combination": "S", "block_sync": True}),
    ("omkc", {"update": "S", "combination": "D"}),  # sequential sampling: row-split rounds
    ("omkc", {"update": "S", "combination": "S"}),
    ("omkc", {"update": "D", "combination": "U"}),
    ("spa", {"block_sync": True}),
    ("spa", {"block_sync": True, "hedge_loss": "mistake"}),
    ("spa", {"block_sync": True, "kernels": "gaussian:0.5,2;laplacian:1"}),  # no lazy Gram: the round's own Gram
    ("spa", {"kernels": "gaussian:0.5,2;laplacian:1"}),
    ("spa", {"hedge_loss": "mistake"}),  # a job's SPA: sequential weights, mistake-discounted Hedge, lazy columns
    ("perceptron", {"kernel": "gaussian(sigma=2)"}),
    ("perceptron-u", {}),
    ("perceptron-star", {"validation_size": 700}),  # keeps one kernel mid-stream, mid-block
    ("rbp", {"budget": 30}),  # the budget baselines: per-kernel buffers, only scores exchanged
    ("forgetron", {"budget": 30}),
    ("bogd", {"budget": 30}),
    ("bpas", {"budget": 30}),
]
BUDGET = ("rbp", "forgetron", "bogd", "bpas")


@pytest.fixture(autouse=True)
def short_spa_rounds(monkeypatch):
    """SPA's rounds (whole blocks, up to LAZY_MAX_SEGMENT rows) at most 300 rows and growing fast,
    so that a 1,243-row dataset takes several: with blocks of 100, three of one block, then three of
    three blocks (block-sync snapshots inside a round); with blocks of 1,100, parts of a block."""
    monkeypatch.setattr(local_engine, "LAZY_MAX_SEGMENT", 300)
    monkeypatch.setattr(local_engine, "ROUND_GROWTH", 1)


@pytest.fixture(scope="module")
def stored(data_dir, tmp_path_factory):
    """svmguide3 (1,243 x 21, raw features) as a zarr dataset with small chunks."""
    out = tmp_path_factory.mktemp("dist") / "svmguide3"
    ingest(data_dir / "svmguide3" / "svmguide3.csv.gz", out, chunk_rows=300)
    return out


def _local_model(algo, params, X, y, block_size, seed):
    model = make_estimator(algo, block_size=block_size, random_state=seed, **params)
    out = model.progressive_partial_fit(X, y, classes=[-1, 1])
    return model, out["mistakes"]


def _sharded(
    algo, params, directory, scaler, n, block_size, seed, n_shards, shuffle, rounds_per_call=3, classes=(-1, 1)
):
    template = make_estimator(algo, block_size=block_size, random_state=seed, **params)
    template.initialize(scaler.n_features_in_, classes, n_rows=n)
    assert not hasattr(template, "validation_size_") or template.validation_size_ == params["validation_size"]
    arrays, scalars = template.engine_.state()
    job = {
        "data": str(directory),
        "shuffle": shuffle,
        "seed": seed,
        "limit": None,
        "kernel_pool": template.kernel_pool_.to_spec_string(),
        "scaler": scaler.to_dict(),
        "classes": template.classes_.tolist(),
    }
    program, rule = template.engine_.program, Rule(scalars["rule"]) if "rule" in scalars else None
    split_rows = splits_rows(scalars)  # as ShardedRounds decides
    parts = [np.arange(program.m)] * n_shards if split_rows else partition_kernels(program, rule, n_shards)
    shards = [KernelShard(job, part, {"arrays": arrays, "scalars": scalars}) for part in parts]
    coord = Coordinator(
        shards,
        parts,
        arrays,
        scalars,
        n,
        checkpoint_every=4,
        select_kernel_at=getattr(template, "validation_size_", None),
        round_ends=round_adapter(scalars).round_ends(scalars, program),  # as ShardedRounds has them
    )
    while not asyncio.run(coord.run_rounds(rounds_per_call))["done"]:
        pass
    return coord, shards


@pytest.mark.parametrize(("algo", "params"), CASES, ids=[f"{a}-{p}" for a, p in CASES])
@pytest.mark.parametrize(("block_size", "n_shards"), [(100, 2), (1100, 3)])
def test_shards_equal_local_engine_bit_for_bit(stored, algo, params, block_size, n_shards):
    seed = 7
    stream = open_stream(stored, block_size=block_size, shuffle=True, seed=seed)
    X = np.concatenate([b[0] for b in stream])
    y = np.concatenate([b[1] for b in stream]).astype(float)
    scaler = Scaler("minmax").fit(X[:500])  # a scaler fitted on a prefix, applied by every shard
    Xs = scaler.transform(X)
    local, local_mistakes = _local_model(algo, params, Xs, y, block_size, seed)
    coord, shards = _sharded(algo, params, stored, scaler, len(y), block_size, seed, n_shards, shuffle=True)
    e = local.engine_
    state = coord.state()
    assert (state["n_seen"], state["n_mistakes"]) == (e.n_seen, e.n_mistakes)
    assert state["history"][-1] == (len(y), int(local_mistakes.sum()))
    if algo in BUDGET:  # each shard holds its kernels' buffers: merged, they are the local engine's
        merged = type(e).merge(
            [s.model_part() for s in shards],
            logw=state["arrays"]["logw"],
            w=state["arrays"]["w"],
            n_mistakes=state["n_mistakes"],
        )
        ours, ref = merged.state()[0], e.state()[0]
        for name, value in ref.items():
            np.testing.assert_array_equal(ours[name], value, err_msg=name)
        return
    for name in ("w", "wsync", "logw", "kernel_mistakes", "kernel_ids"):
        np.testing.assert_array_equal(state["arrays"][name], getattr(e, name), err_msg=name)
    for shard in shards:  # every shard holds the whole pool, identical to the local one
        for name, value in e.support_vectors.state().items():
            np.testing.assert_array_equal(shard.model_part()[name], value, err_msg=name)


@pytest.mark.parametrize(
    ("algo", "params"),
    [("spa", {"block_sync": True}), ("omkc", {"update": "S", "combination": "S"})],
    ids=["spa", "omkc-SS"],
)
@pytest.mark.parametrize("n_shards", [2, 3])
def test_row_split_shares_never_change_the_model(stored, monkeypatch, n_shards, algo, params):
    """The first shard's share of a round and the others' chain follow the shards' timing; any split
    gives the same model bit for bit (here none of the rows, all of them, a random share, in turn,
    each with the others' ranges growing by a random factor)."""
    rng = np.random.default_rng(1)
    shares = []

    def random_share(self, ranges, outs):
        assert outs[0]["ready_at"] > 0 and all("arrived_at" in out for out in outs[1:])
        assert outs[0]["early_start"]  # (both algorithms' recurrences start on the lead's rows)
        self.lead_share = [0.0, 1.0, rng.random()][len(shares) % 3]
        self.lag = 3.0 * rng.random()
        shares.append(ranges[0][1] / max(ranges[-1][1], 1))

    monkeypatch.setattr(RowBalance, "update", random_share)
    test_shards_equal_local_engine_bit_for_bit(stored, algo, params, 100, n_shards)
    assert min(shares) <= 0.08 and max(shares) >= 0.88  # the extremes were taken (8 rows at least)


@pytest.mark.parametrize(
    ("algo", "params", "rounds"),
    [("spa", {"block_sync": True}, 7), ("omkc", {"update": "S", "combination": "S"}, 13)],
    ids=["spa", "omkc-SS"],
)
def test_first_shard_draws_each_next_rounds_uniforms_ahead(stored, monkeypatch, algo, params, rounds):
    """Between rounds the first shard draws the next round's uniforms in its background thread
    (while it would wait for scores): only the first round's are drawn on the way. So its
    recurrence starts on its own rows (SPA, OMKC's sampled updates: the early start)."""
    X, y, _ = load_arrays(stored)
    drawn = []
    draw = LocalEngine._uniforms

    def counted(self, *args):
        drawn.append(threading.current_thread().name.startswith("omkl-shard"))
        return draw(self, *args)

    monkeypatch.setattr(LocalEngine, "_uniforms", counted)
    coord, _ = _sharded(algo, params, stored, Scaler("none").fit(X[:1]), len(y), 100, 0, 2, shuffle=False)
    assert coord.rounds == rounds and drawn == [False] + [True] * (coord.rounds - 1)


def test_round_history_is_the_mistake_sequence(stored):
    X, y, _ = load_arrays(stored)
    scaler = Scaler("none").fit(X[:1])
    _, mistakes = _local_model("omkc", {"update": "D", "combination": "D"}, X, y.astype(float), 64, 0)
    coord, _ = _sharded("omkc", {"update": "D", "combination": "D"}, stored, scaler, len(y), 64, 0, 2, shuffle=False)
    seen, counts = zip(*coord.state()["history"])
    np.testing.assert_array_equal(counts, np.cumsum(mistakes)[np.asarray(seen) - 1])


def test_checkpoint_schedule_stops_run_rounds(stored):
    X, y, _ = load_arrays(stored)
    template = make_estimator("spa", block_size=100, random_state=0, block_sync=True)
    template.initialize(X.shape[1], [-1, 1], n_rows=len(y))
    arrays, scalars = template.engine_.state()
    job = {
        "data": str(stored),
        "shuffle": False,
        "seed": 0,
        "limit": None,
        "kernel_pool": template.kernel_pool_.to_spec_string(),
        "scaler": Scaler("none").fit(X[:1]).to_dict(),
        "classes": [-1, 1],
    }
    shard = KernelShard(job, np.arange(16), {"arrays": arrays, "scalars": scalars})
    coord = Coordinator(
        [shard],
        [np.arange(16)],
        arrays,
        scalars,
        len(y),
        checkpoint_every=5,
        round_ends=segmenting(template.engine_.rule, template.engine_.program, 100),
    )
    first = asyncio.run(coord.run_rounds(100))
    assert first["checkpoint_due"] and first["n_seen"] == 900 and not first["done"]  # 3 x 1 block, 2 x 3
    shard.model_part()  # the last round is applied when run_rounds returns


@pytest.mark.parametrize(("algo", "params"), [("spa", {"block_sync": True}), ("bpas", {"budget": 30})])
def test_every_round_records_its_costs(stored, algo, params):
    """The coordinator keeps one cost record per round (benchmarks/scale_model.py reads them): the
    rows add up to the stream, a compute and I/O time per shard, a serial part in the lead's
    recurrence of a row-split round (SPA) and none in a kernel-split one (BPAS)."""
    X, y, _ = load_arrays(stored)
    coord, _ = _sharded(algo, params, stored, Scaler("none").fit(X[:1]), len(y), 100, 0, 2, shuffle=False)
    records = coord.progress()["timing"]["per_round"]
    assert len(records) == coord.rounds and sum(r["rows"] for r in records) == len(y)
    for r in records:
        assert len(r["compute"]) == len(r["io"]) == 2
        assert min(r["compute"] + r["io"] + [r["wall"], r["coordinator"], r["message"], r["wait"]]) >= 0.0
        assert r["wall"] >= r["coordinator"] + r["message"]
    serial = sum(r["serial"] for r in records)
    assert serial > 0.0 if algo == "spa" else serial == 0.0
    assert all(r["serial"] <= r["compute"][0] for r in records)  # the lead's recurrence is part of its compute


def test_partition_keeps_chains_together_and_uniform_whole():
    program = compile_program(make_pool("omkc16"))
    parts = partition_kernels(program, 0, 2)
    assert sorted(np.concatenate(parts).tolist()) == list(range(16))
    assert [len(p) for p in parts] == [8, 8]
    order = program.order.tolist()
    for part in parts:  # consecutive in evaluation order
        pos = sorted(order.index(k) for k in part)
        assert pos == list(range(pos[0], pos[0] + len(pos)))
    assert len(partition_kernels(program, Rule.UNIFORM, 4)) == 1
    assert len(partition_kernels(compile_program(make_pool("linear")), 0, 4)) == 1
    with pytest.raises(ValueError, match="n_shards"):
        partition_kernels(program, 0, 0)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 20000),
    n_shards=st.integers(1, 6),
    lead_share=st.one_of(st.none(), st.floats(0.0, 1.0)),
    growth=st.floats(1.0, 4.0),
)
def test_row_ranges_cover_the_round_without_single_rows(n, n_shards, lead_share, growth):
    ranges = row_ranges(n, n_shards, lead_share, growth)
    assert len(ranges) == n_shards and ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(n_shards - 1))
    # a lone row would take BLAS's matrix-vector path (unless the round is one row, as in-process)
    assert n == 1 or all(hi - lo != 1 for lo, hi in ranges)
    assert all(lo % 8 == 0 for lo, hi in ranges if hi > lo)
    if lead_share is not None and n_shards > 1 and n >= 16 * n_shards:  # the first shard's share, to 8 rows
        assert abs(ranges[0][1] - lead_share * n) <= 8 or ranges[0][1] == 8 or n - ranges[0][1] < 16


def test_which_rounds_split_by_rows():
    """The coupled rules and every multi-class model split rows; the deterministic binary rules and the
    budget engine (independent kernels) split kernels."""
    from omkl_dist.engine.budget import BudgetEngine
    from omkl_dist.engine.local import LocalEngine

    assert all(splits_rows({"rule": rule}) for rule in (Rule.SPA, Rule.SD, Rule.SS, Rule.OM2))
    assert not any(splits_rows({"rule": rule}) for rule in (Rule.DD, Rule.DS, Rule.UNIFORM, Rule.LEADER))
    assert splits_rows({"rule": Rule.DD, "n_classes": 3})
    assert not splits_rows({"engine": "budget", "n_classes": 3})
    assert engine_class({"engine": "budget"}) is BudgetEngine and engine_class({"rule": 0}) is LocalEngine


def test_spa_rounds_grow_in_whole_blocks_within_windows(monkeypatch):
    monkeypatch.setattr(local_engine, "LAZY_MAX_SEGMENT", 16384)
    monkeypatch.setattr(local_engine, "ROUND_GROWTH", 32)
    program = compile_program(make_pool("omkc16"))
    for block in (256, 700, 1024, 8192):
        rounds = segmenting(Rule.SPA, program, block)
        assert rounds.window == block * (16384 // block)
        g, ends = 0, []
        while g < 1_000_000:
            n = rounds.length(g, 1_000_000 - g)
            assert n % block == 0 or g + n == 1_000_000  # whole blocks
            g += n
            ends.append(g)
        assert set(range(rounds.window, 1_000_000, rounds.window)) <= set(ends)  # never across a window's end
        assert rounds.length(0, 10**6) == block  # the first round is one block, the late ones a window
        assert rounds.length(900_000 - 900_000 % rounds.window, 10**6) == rounds.window
        assert len(ends) < 1_000_000 / block / (4 if block < 8192 else 1)
    assert segmenting(Rule.SPA, program, 20000) == local_engine.Rounds(20000, 20000, 16384)  # cut inside a block
    assert segmenting(Rule.SPA, compile_program(make_pool("gaussian:1;laplacian:1")), 1024).window == 1024
    assert segmenting(0, program, 1024) == local_engine.Rounds(1024, 1024, 1024)
    assert make_estimator("spa", block_size=700).feed_rows() == 16100
    assert make_estimator("omkc", block_size=700).feed_rows() == 700
    assert make_estimator("bpas", block_size=700).feed_rows() == 700
    assert make_estimator("omkc", block_size=700).feed() == local_engine.Feed(700, 700)
    # the kernel-split learners: a block per call early on, then whole blocks, about 4,096 rows
    assert make_estimator("bpas", block_size=700).feed() == local_engine.Feed(700, 3500, 7000)
    assert make_estimator("fogd", block_size=256).feed() == local_engine.Feed(256, 4096, 8192)
    assert make_estimator("nogd", block_size=5000).feed() == local_engine.Feed(5000, 5000, 5000)
    early = make_estimator("rbp", block_size=256).feed()
    ends = [n for n in range(1, 30_000) if early.ends_at(n)]
    assert ends[:3] == [256, 512, 768] and ends[31:34] == [8192, 12288, 16384]
    later = early.from_row(10_000)  # a job continuing a model (a retrain): a block per call over its first rows
    ends = [n for n in range(10_001, 30_000) if later.ends_at(n)]
    assert ends[:2] == [10_240, 10_496] and ends[31:34] == [18_176, 20_480, 24_576]


def test_budget_rounds_span_blocks_each_a_piece():
    """The budget and feature engines' kernels read nothing of each other's or of the weights: their
    rounds grow to 16 blocks (fewer if the replies would carry more than ROUND_VALUES scores), each
    block a piece the coordinator replays as the in-process run's rows of it (the calls, which end at
    block ends, are the coordinator's to follow); the stochastic update (weights at each block's
    start) keeps one block per round."""
    from omkl_dist.distributed.rounds.kernel_split import (
        ROUND_VALUES,
        BudgetEngineSplit,
        BudgetKernelSplit,
        block_pieces,
    )

    program = compile_program(make_pool("omkc16"))
    rounds = BudgetEngineSplit.round_ends({"block_size": 1000, "update": "D"}, program)
    g, ends = 0, []
    while g < 1_000_000:
        g += rounds.length(g, 1_000_000 - g)
        ends.append(g)
    assert ends[:6] == [1000, 2000, 4000, 8000, 16000, 32000]  # 1, 1, 2, 4, 8, 16 blocks
    assert {b - a for a, b in zip(ends[5:], ends[6:-1])} == {16000} and len(ends) == 67
    one_block = BudgetEngineSplit.round_ends({"block_size": 1000, "update": "S"}, program)
    assert one_block.length(8000, 10**6) == 1000
    many_classes = {"block_size": 1000, "n_classes": 26}  # 16 kernels x 26 classes: 2 blocks of scores
    assert BudgetKernelSplit.round_ends(many_classes, program).window == 1000 * (ROUND_VALUES // (1000 * 16 * 26))
    assert block_pieces(1250, 2800, 1000) == [(0, 750), (750, 1750), (1750, 2750), (2750, 2800)]
    assert BudgetKernelSplit.pieces({"block_size": 1000}, 1250, 2800) == block_pieces(1250, 2800, 1000)


def test_spa_fed_round_by_round_is_one_call_bit_for_bit(stored):
    """What ``omkl run`` relies on to give a cluster run's model: partial_fit calls ending at round
    ends (here 3 blocks of 100) leave the model of a single call."""
    X, y, _ = load_arrays(stored)
    whole = make_estimator("spa", block_size=100, n_epochs=1, shuffle=False, random_state=3).fit(X, y)
    fed = make_estimator("spa", block_size=100, random_state=3)
    rows = fed.feed_rows()
    assert rows == 300
    for lo in range(0, len(y), rows):
        fed.partial_fit(X[lo : lo + rows], y[lo : lo + rows], classes=[-1, 1])
    for name, value in whole.engine_.state()[0].items():
        np.testing.assert_array_equal(fed.engine_.state()[0][name], value, err_msg=name)


MULTICLASS_CASES = [
    ("omkc", {}),
    ("omkc", {"update": "S", "combination": "S"}),
    ("om2", {}),
    ("perceptron-u", {}),
    ("perceptron-star", {"validation_size": 250}),
    ("spa", {}),
    ("spa", {"kernels": "gaussian:0.5,2;laplacian:1"}),
    ("spa", {"hedge_loss": "mistake"}),  # a job's SPA: sequential weights, mistake-discounted Hedge, lazy columns
] + [(algo, {"budget": 25}) for algo in BUDGET]


@pytest.fixture(scope="module")
def stored_multiclass(data_dir, tmp_path_factory):
    """segment (2,310 x 19 raw features, 7 classes) as a zarr dataset with small chunks."""
    out = tmp_path_factory.mktemp("dist") / "segment"
    ingest(data_dir / "segment" / "segment.mat.gz", out, chunk_rows=500)
    return out


@pytest.mark.parametrize(("algo", "params"), MULTICLASS_CASES, ids=[f"{a}-{p}" for a, p in MULTICLASS_CASES])
def test_multiclass_shards_equal_local_engine_bit_for_bit(stored_multiclass, algo, params):
    """Multi-class models (a coefficient per kernel and class) run row-split rounds: the first
    shard runs the in-process recurrence, so the model is the in-process one, bit for bit. The
    budget baselines keep their kernels' buffers on the shards (class columns per kernel): merged,
    they are the in-process engine."""
    seed, block_size = 3, 64
    stream = open_stream(stored_multiclass, block_size=block_size, shuffle=True, seed=seed)
    X = np.concatenate([b[0] for b in stream])
    y = np.concatenate([b[1] for b in stream]).astype(float)
    classes = np.arange(7)
    scaler = Scaler("minmax").fit(X[:300])
    model = make_estimator(algo, block_size=block_size, random_state=seed, **params)
    mistakes = model.progressive_partial_fit(scaler.transform(X), y, classes=classes)["mistakes"]
    coord, shards = _sharded(
        algo, params, stored_multiclass, scaler, len(y), block_size, seed, 2, shuffle=True, classes=classes
    )
    state, e = coord.state(), model.engine_
    assert state["history"][-1] == (len(y), int(mistakes.sum())) and e.n_classes == 7
    if algo in BUDGET:
        merged = type(e).merge(
            [s.model_part() for s in shards],
            logw=state["arrays"]["logw"],
            w=state["arrays"]["w"],
            n_mistakes=state["n_mistakes"],
        )
        for name, value in e.state()[0].items():
            np.testing.assert_array_equal(merged.state()[0][name], value, err_msg=name)
        return
    for name in ("w", "wsync", "kernel_mistakes", "kernel_ids", "sqnorm"):
        np.testing.assert_array_equal(state["arrays"][name], getattr(e, name), err_msg=name)
    for name, value in e.support_vectors.state().items():
        np.testing.assert_array_equal(shards[1].model_part()[name], value, err_msg=name)


def test_every_round_adapter_implements_its_protocols():
    """Every member of :class:`~omkl_dist.distributed.rounds.RoundAdapter` on every adapter, and of
    the round kind it runs (:class:`KernelSplit`, :class:`RowSplit`) and of kernel selection where
    the engine has it: the shards, the coordinator and the Dask engine call nothing else."""
    import inspect

    from omkl_dist.distributed.rounds import ADAPTERS, KernelSplit, RoundAdapter, RowSplit, SelectsKernel

    def members(protocol):
        names = {name for name, _ in inspect.getmembers(protocol) if not name.startswith("_")}
        return names | set(RoundAdapter.__annotations__) | set(getattr(protocol, "__annotations__", {}))

    for engine, adapters in ADAPTERS.items():
        for adapter in adapters:
            protocols = (RoundAdapter, RowSplit if adapter.SPLITS_ROWS else KernelSplit)
            protocols += (SelectsKernel,) if engine is LocalEngine else ()
            for protocol in protocols:
                missing = sorted(name for name in members(protocol) - {"engine"} if not hasattr(adapter, name))
                assert not missing, (adapter.__name__, protocol.__name__, missing)
