"""The budget baselines' stochastic update (``update="S"``, the authors' C++ toolbox's kernel_rbp_sd,
kernel_forgetron_sd, kernel_bogd_sd, kernel_bpas_sd): the block engine against the naive
one-instance-at-a-time references (``naive_budget(..., update="S")``, ``naive_budget_mc``) on real
data, blocks of one row (the sequential algorithm) and of several; kernel shards told the weights at
each block start equal the whole engine bit for bit; misuse is refused."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.algorithms import BOGD, BPAS, RBP, Forgetron
from omkl_dist.combiners.hedge_loss import combine
from omkl_dist.engine.budget import BudgetEngine
from omkl_dist.kernels import make_pool

from naive_budget import naive_budget, naive_budget_mc
from parity_data import subset

SPECS = list(make_pool("omkc16"))
LEARNERS = ("rbp", "forgetron", "bogd", "bpas")
SEED, LAM, DELTA = 13, 0.01, 0.2  # a large δ: the weak kernels are drawn too (so they overflow their budgets)


def _engine(X, learner, budget, block_size, K=1):
    return BudgetEngine(
        "omkc16",
        X.shape[1],
        learner=learner,
        budget=budget,
        seed=SEED,
        block_size=block_size,
        lam=LAM,
        n_classes=K,
        update="S",
        delta=DELTA,
    )


def _check(engine, out, ref):
    np.testing.assert_array_equal(out["mistakes"], ref["mistakes"])
    scale = np.maximum(np.abs(ref["F"]), 1.0)  # decision values are sums of terms that may cancel
    assert (np.abs(out["F"] - ref["F"]) <= 1e-9 * scale).all()
    assert engine.n_support().tolist() == [len(s) for s in ref["sv"]]
    for k in range(len(SPECS)):
        index, coef = engine.support(k)
        assert index.tolist() == ref["sv"][k], k  # the same instances, in the same positions
        np.testing.assert_allclose(coef, np.asarray(ref["coef"][k]).reshape(coef.shape), rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(engine.w, ref["w"], rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize(
    ("name", "budget", "rows", "block_size"), [("australian+minmax", 6, 150, 37), ("ionosphere", 4, 60, 1)]
)
def test_block_engine_matches_naive_reference(data_dir, name, budget, rows, block_size, learner):
    X, y = subset(data_dir, name, rows)
    y = y.astype(np.float64)
    ref = naive_budget(
        X, y, SPECS, learner=learner, budget=budget, seed=SEED, block_size=block_size, lam=LAM, update="S", delta=DELTA
    )
    engine = _engine(X, learner, budget, block_size)
    out = engine.learn(X[:50], y[:50], keep_scores=True)  # two calls: the second starts inside a block
    rest = engine.learn(X[50:], y[50:], keep_scores=True)
    out = {key: np.concatenate([out[key], rest[key]]) for key in out}
    _check(engine, out, ref)
    assert engine.n_support().max() == budget  # removals happened
    learnt = np.array([len(s) for s in ref["sv"]])
    deterministic = naive_budget(X, y, SPECS, learner=learner, budget=budget, seed=SEED, block_size=block_size, lam=LAM)
    assert not np.array_equal(learnt, [len(s) for s in deterministic["sv"]]) or not np.array_equal(
        ref["w"], deterministic["w"]
    )  # the draws change what is learnt


@pytest.mark.parametrize("learner", LEARNERS)
def test_multiclass_matches_naive_reference(data_dir, learner):
    X, labels = subset(data_dir, "vehicle+minmax", 100)
    classes, y = np.unique(labels, return_inverse=True)
    y = y.astype(np.float64)
    ref = naive_budget_mc(
        X, y, SPECS, len(classes), learner=learner, budget=6, seed=SEED, block_size=16, lam=LAM, update="S", delta=DELTA
    )
    engine = _engine(X, learner, 6, 16, len(classes))
    out = engine.learn(X, y, keep_scores=True)
    np.testing.assert_array_equal(out["mistakes"], ref["mistakes"])
    scale = np.maximum(np.abs(ref["F"]), 1.0)
    assert (np.abs(out["F"] - ref["F"]) <= 1e-9 * scale).all()
    np.testing.assert_array_equal(engine.kernel_mistakes, ref["kernel_mistakes"])
    assert engine.n_support().tolist() == [len(s) for s in ref["sv"]]
    np.testing.assert_allclose(engine.w, ref["w"], rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("learner", LEARNERS)
def test_kernel_shards_told_the_block_weights_equal_the_whole_engine(data_dir, learner):
    X, y = subset(data_dir, "australian+minmax", 150)
    y = y.astype(np.float64)
    whole = _engine(X, learner, 7, 32)
    ref = whole.learn(X, y, keep_scores=True)
    fresh = _engine(X, learner, 7, 32)
    positions = [np.arange(r, 16, 3) for r in range(3)]
    shards = [fresh.subset(p) for p in positions]
    logw, w = fresh.logw.copy(), fresh.w.copy()
    for lo in range(0, len(y), 32):  # a round per block, as a cluster runs them
        hi = min(len(y), lo + 32)
        F, L = np.empty((hi - lo, 16)), np.empty((hi - lo, 16))
        for p, shard in zip(positions, shards):
            shard.sync_weights(w)
            part = shard.kernel_step(X[lo:hi], y[lo:hi], lo)
            F[:, p], L[:, p] = part["F"], part["loss"]
        score, mistakes = combine(y[lo:hi], F, L, logw, w, 0.99, 1)
        np.testing.assert_array_equal(F, ref["F"][lo:hi])
        np.testing.assert_array_equal(mistakes, ref["mistakes"][lo:hi])
    merged = BudgetEngine.merge(shards, logw=logw, w=w)
    for name in BudgetEngine.KERNEL_ARRAYS:
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name), err_msg=name)


def test_stochastic_update_refuses_rows_without_their_block_weights():
    e = BudgetEngine("poly:1;gaussian:1", 2, learner="rbp", budget=3, seed=0, block_size=8, update="S", delta=0.5)
    with pytest.raises(ValueError, match="sync_weights"):
        e.kernel_step(np.ones((2, 2)), np.ones(2), 0)
    e.sync_weights(np.array([1.0, 0.5]))
    np.testing.assert_array_equal(e.p_update, [0.5 + 0.25, 0.25 + 0.25])  # (1 − δ) w / max w + δ/m
    with pytest.raises(ValueError, match="split at blocks"):
        e.kernel_step(np.ones((9, 2)), np.ones(9), 0)
    e.kernel_step(np.ones((3, 2)), np.ones(3), 0)
    e.sync_weights(np.array([0.1, 1.0]))  # inside the block: its start's probabilities stay
    np.testing.assert_array_equal(e.p_update, [0.75, 0.5])
    with pytest.raises(ValueError, match="update must be"):
        BudgetEngine("poly:1", 2, learner="rbp", budget=3, seed=0, block_size=8, update="X")


@pytest.mark.parametrize("cls", [RBP, Forgetron, BOGD, BPAS])
def test_estimators_take_the_stochastic_update(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    d = cls(kernels="gaussian:0.5,1,2;poly:2", budget=20, n_epochs=1, shuffle=False, block_size=32).fit(X, y)
    s = cls(kernels="gaussian:0.5,1,2;poly:2", budget=20, n_epochs=1, shuffle=False, block_size=32, update="S").fit(
        X, y
    )
    assert s.engine_.update == "S" and d.engine_.update == "D"
    assert not np.array_equal(s.engine_.kernel_mistakes, d.engine_.kernel_mistakes) or not np.array_equal(
        s.weights_, d.weights_
    )
    assert (s.predict(X) == s.predict(X)).all() and s.score(X, y) > 0.6


def test_cli_runs_an_sd_baseline(tmp_path):
    import json

    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    def invoke(*args):
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)

    out = tmp_path / "s"
    assert invoke("data", "synth", "--rows", 600, "--features", 4, "--seed", 2, "--out", out).exit_code == 0
    args = [
        "run",
        "bogd",
        "--data",
        out,
        "--update",
        "S",
        "--delta",
        0.1,
        "--budget",
        20,
        "--kernels",
        "gaussian:0.5,1",
    ]
    res = invoke(*args, "--scaling", "minmax", "--json", "--quiet", "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    assert report["params"]["update"] == "S" and report["params"]["delta"] == 0.1 and report["n"] == 600
