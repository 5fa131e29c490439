"""Budget baselines (RBP, Forgetron, BOGD, BPAS): the block engine against the naive one-instance-at-a-time
reference on real data, kernel sharding (subset + merge + combine_step), chunking and state round trips."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from generated_data import NAMES, generated
from sklearn.base import clone

from omkl_dist.algorithms import BOGD, BPAS, RBP, Forgetron, Projectron, ProjectronPP
from omkl_dist.algorithms.registry import make_estimator
from omkl_dist.combiners.hedge_loss import combine_step
from omkl_dist.engine.budget import BudgetEngine
from omkl_dist.kernels import make_pool
from omkl_dist.preprocessing import Scaler
from omkl_dist.storage import read_dataset

from naive_budget import naive_budget

SPECS = list(make_pool("omkc16"))
LEARNERS = ("rbp", "forgetron", "bogd", "bpas")
RANDOM = ("rbp", "bogd")
ESTIMATOR = {"rbp": RBP, "forgetron": Forgetron, "bogd": BOGD, "bpas": BPAS}
ROWS = 170
CASES = [  # (file, scaling, budget): real-valued and integer data, small budgets (frequent removals)
    ("australian/australian.libsvm.gz", "minmax", 12),
    ("ionosphere/pmlb_ionosphere.tsv.gz", "none", 5),
    ("svmguide3/svmguide3.csv.gz", "minmax", 30),
    ("german.numer/german.mat.gz", "none", 12),  # raw integers: polynomial kernel values ~1e12
    ("a9a/a9a.gz", "none", 12),  # binary: duplicated rows with both labels, exact cancellations
    ("german.numer/german.mat.gz", "minmax", 8),
]
LAM = 0.01  # large enough for BOGD's shrinking to matter over a few hundred rows


@functools.lru_cache(maxsize=None)
def _data(file, scaling, rows=ROWS):
    """``(X, y)``: ``rows`` random rows of a real data file, or the first of a generated set."""
    if file in NAMES:
        X, y = generated(file, rows)
        return Scaler(scaling).fit_transform(X), y.astype(np.float64)
    from omkl_dist.storage.datadir import data_dir

    ds = read_dataset(data_dir() / file)
    X = ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X
    X = Scaler(scaling).fit_transform(np.asarray(X, dtype=np.float64))
    rows = np.random.default_rng(0).permutation(len(X))[:rows]  # files are often sorted by label
    return np.ascontiguousarray(X[rows]), np.asarray(ds.y, dtype=np.float64)[rows]


@functools.lru_cache(maxsize=None)
def _reference(file, scaling, learner, budget, block_size):
    X, y = _data(file, scaling)
    return naive_budget(X, y, SPECS, learner=learner, budget=budget, seed=7, block_size=block_size, lam=LAM)


def _assert_matches(engine, out, ref, rtol=1e-9):
    np.testing.assert_array_equal(out["mistakes"], ref["mistakes"])
    scale = np.maximum(np.abs(ref["F"]), 1.0)  # decision values are sums of terms that may cancel
    assert (np.abs(out["F"] - ref["F"]) <= rtol * scale).all()
    np.testing.assert_allclose(out["score"], ref["score"], rtol=rtol, atol=rtol)
    assert engine.n_support().tolist() == [len(s) for s in ref["sv"]]
    for k in range(len(SPECS)):
        index, coef = engine.support(k)
        assert index.tolist() == ref["sv"][k], k  # the same instances, in the same positions
        np.testing.assert_allclose(coef, ref["coef"][k], rtol=rtol, atol=1e-300)
    np.testing.assert_allclose(engine.w, ref["w"], rtol=rtol, atol=1e-300)


# The self-tuned Forgetron on raw german: polynomial kernel values ~1e9-1e12 (far outside the paper's
# κ(x, x) <= 1), so Q sums Ψ terms of ±5e11 that cancel down to ~18 and φ = f(Q) is computed from a
# quantity with ~1e-4 absolute rounding error: any two correct implementations agree on every decision
# (checked exactly) but on the values only to ~1e-3. Scaled german checks the Forgetron at 1e-9.
ILL_CONDITIONED = {("german.numer/german.mat.gz", "none", "forgetron"): 1e-3}


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize(("file", "scaling", "budget"), CASES)
@pytest.mark.parametrize("block_size", [37, 1000])
def test_block_engine_matches_naive_reference(data_dir, file, scaling, budget, learner, block_size):
    X, y = _data(file, scaling)
    ref = _reference(file, scaling, learner, budget, block_size if learner in RANDOM else 0)
    engine = BudgetEngine("omkc16", X.shape[1], learner=learner, budget=budget, seed=7, block_size=block_size, lam=LAM)
    out = engine.learn(X, y, keep_scores=True)
    _assert_matches(engine, out, ref, rtol=ILL_CONDITIONED.get((file, scaling, learner), 1e-9))
    assert engine.n_mistakes == int(ref["mistakes"].sum())
    # per-kernel mistakes (for RBP/Forgetron they drive the updates, checked above via the SV sets); the
    # engine's own values: a gaussian of width 2^-6 can sit in the subnormal range, where the engine's
    # vectorised exp is within one unit of numpy's, so 0.0 against 5e-324 may differ from the reference
    np.testing.assert_array_equal(engine.kernel_mistakes, (y[:, None] * out["F"] <= 0).sum(axis=0))
    # removals happened (the budget was exceeded), and a random learner's draws are per block
    assert engine.n_support().max() == budget


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize(
    ("file", "budget"), [("generated-binary", 12), ("generated-ties", 12), ("generated-sparse", 8)]
)
def test_block_engine_matches_naive_reference_on_generated_data(file, budget, learner):
    """make test-fast's cases: repeated rows of both labels, integer ties, mostly zeros."""
    test_block_engine_matches_naive_reference(None, file, "none", budget, learner, 37)


@pytest.mark.parametrize("learner", LEARNERS)
def test_budget_one(data_dir, learner):
    """B = 1: every update replaces the single support vector (BOGD: no B/(B-1) rescaling)."""
    X, y = _data("australian/australian.libsvm.gz", "minmax")
    X, y = X[:120], y[:120]
    ref = naive_budget(X, y, SPECS, learner=learner, budget=1, seed=2, block_size=16, lam=LAM)
    engine = BudgetEngine("omkc16", X.shape[1], learner=learner, budget=1, seed=2, block_size=16, lam=LAM)
    _assert_matches(engine, engine.learn(X, y, keep_scores=True), ref)


def _state_equal(a, b, *, ignore=()):
    sa, sb = a.state(), b.state()
    assert {k: v for k, v in sa[1].items() if k not in ignore} == {k: v for k, v in sb[1].items() if k not in ignore}
    assert sa[0].keys() == sb[0].keys()
    for name in sa[0]:
        assert sa[0][name].dtype == sb[0][name].dtype, name
        np.testing.assert_array_equal(sa[0][name], sb[0][name], err_msg=name)


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize(("file", "scaling"), [("svmguide3/svmguide3.csv.gz", "minmax"), ("a9a/a9a.gz", "none")])
def test_kernel_shards_then_combiner_equal_the_whole_engine(data_dir, learner, file, scaling):
    """Shards owning kernel ids {0,3,6,..}, {1,4,..}, {2,5,..} run kernel_step separately on the same rows;
    the coordinator joins their columns and replays combine_step: bit-identical to the unsharded run."""
    X, y = _data(file, scaling)
    whole = BudgetEngine("omkc16", X.shape[1], learner=learner, budget=9, seed=4, block_size=32, lam=LAM)
    positions = [np.arange(r, 16, 3) for r in range(3)]
    shards = [whole.subset(p) for p in positions]
    logw, w = whole.logw.copy(), whole.w.copy()
    n_mistakes = 0
    for lo, hi in [(0, 5), (5, 77), (77, ROWS)]:  # calls that split blocks
        ref = whole.learn(X[lo:hi], y[lo:hi], keep_scores=True)
        parts = [s.kernel_step(X[lo:hi], y[lo:hi], lo) for s in shards]
        F, L = np.empty((hi - lo, 16)), np.empty((hi - lo, 16))
        for p, part in zip(positions, parts):
            F[:, p], L[:, p] = part["F"], part["loss"]
        score, mistakes = combine_step(y[lo:hi], F, L, logw, w, np.log(0.99))
        n_mistakes += int(mistakes.sum())
        np.testing.assert_array_equal(F, ref["F"])
        np.testing.assert_array_equal(score, ref["score"])
        np.testing.assert_array_equal(mistakes, ref["mistakes"])
    merged = BudgetEngine.merge(shards[::-1], logw=logw, w=w, n_mistakes=n_mistakes)
    _state_equal(merged, whole)
    np.testing.assert_array_equal(merged.kernel_scores(X[:50]), whole.kernel_scores(X[:50]))
    # the merged engine goes on exactly like the whole one
    a, b = merged.learn(X[:40], y[:40], keep_scores=True), whole.learn(X[:40], y[:40], keep_scores=True)
    np.testing.assert_array_equal(a["F"], b["F"])
    _state_equal(merged, whole)


def test_shard_misuse_is_rejected():
    e = BudgetEngine("poly:1,2;gaussian:1", 2, learner="rbp", budget=3, seed=0, block_size=8)
    with pytest.raises(ValueError, match="positions"):
        e.subset([0, 0])
    with pytest.raises(ValueError, match="global instance 5"):
        e.kernel_step(np.zeros((2, 2)), np.ones(2), 5)
    a, b = e.subset([0, 1]), e.subset([1, 2])
    with pytest.raises(ValueError, match="share kernel ids"):
        BudgetEngine.merge([a, b])
    b.kernel_step(np.ones((2, 2)), np.ones(2), 0)
    with pytest.raises(ValueError, match="n_seen"):  # b has seen 2 rows, the other part none
        BudgetEngine.merge([e.subset([0]), b])


@pytest.mark.parametrize("learner", LEARNERS)
def test_chunking_and_block_size(data_dir, learner):
    """partial_fit chunks that split blocks give the same model bit for bit; for the deterministic
    learners (Forgetron, BPAS) so does any block size."""
    X, y = _data("australian/australian.libsvm.gz", "minmax")
    est = ESTIMATOR[learner](budget=10, block_size=32, n_epochs=1, shuffle=False, random_state=3)
    whole = clone(est).fit(X, y)
    chunked = clone(est)
    for lo, hi in [(0, 1), (1, 8), (8, 50), (50, 51), (51, 150), (150, ROWS)]:
        chunked.partial_fit(X[lo:hi], y[lo:hi], classes=[-1.0, 1.0])
    _state_equal(chunked.engine_, whole.engine_)
    np.testing.assert_array_equal(chunked.decision_function(X), whole.decision_function(X))
    other = clone(est).set_params(block_size=7).fit(X, y)
    if learner in RANDOM:  # random streams are per (seed, block, kernel): another block size, other draws
        assert other.mistakes_ != whole.mistakes_ or not np.array_equal(other.engine_.sv_index, whole.engine_.sv_index)
    else:
        _state_equal(other.engine_, whole.engine_, ignore=("block_size",))


@pytest.mark.parametrize("learner", LEARNERS)
def test_state_round_trip_continues_identically(data_dir, learner, tmp_path):
    from omkl_dist.persistence import load_model, save_model

    X, y = _data("svmguide3/svmguide3.csv.gz", "minmax")
    model = ESTIMATOR[learner](budget=8, block_size=16, random_state=5).partial_fit(X[:90], y[:90])
    arrays, meta = model.to_state()
    copy = type(model).from_state(arrays, meta)
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m").estimator
    a = model.progressive_partial_fit(X[90:], y[90:], keep_scores=True)
    for other in (copy, loaded):
        b = other.progressive_partial_fit(X[90:], y[90:], keep_scores=True)
        np.testing.assert_array_equal(a["F"], b["F"])
        np.testing.assert_array_equal(a["score"], b["score"])
        _state_equal(other.engine_, model.engine_)
        np.testing.assert_array_equal(other.weights_, model.weights_)


@pytest.mark.parametrize("learner", LEARNERS)
def test_kernel_scores_are_the_next_decision_values(data_dir, learner):
    X, y = _data("ionosphere/pmlb_ionosphere.tsv.gz", "none")
    e = BudgetEngine("omkc16", X.shape[1], learner=learner, budget=6, seed=1, block_size=64, lam=LAM)
    e.learn(X[:120], y[:120])
    scores = e.kernel_scores(X[120:121])
    np.testing.assert_allclose(e.learn(X[120:121], y[120:121], keep_scores=True)["F"], scores, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("learner", LEARNERS)
def test_zero_norm_instances_with_polynomial_kernels(learner):
    """κ(x, x) = 0: x is the zero function; no division by zero, never a support vector."""
    X = np.array([[0.0, 0.0], [1.0, 0.5], [0.0, 0.0], [-1.0, 0.2]] * 15)
    y = np.array([1, -1, 1, -1] * 15)
    model = ESTIMATOR[learner](kernels="poly:1,2,3", budget=3, n_epochs=1, shuffle=False, random_state=0).fit(X, y)
    assert np.isfinite(model.decision_function(X)).all()
    e = model.engine_
    for k in range(3):
        index, coef = e.support(k)
        assert np.isfinite(coef).all() and not np.any(np.all(X[index] == 0, axis=1))


@pytest.mark.parametrize(
    ("cls", "params", "match"),
    [
        (RBP, {"budget": 0}, r"budget must be a positive integer, got 0"),
        (Forgetron, {"gamma": 1.0}, r"gamma must be a float in \(0, 1\), got 1.0"),
        (BPAS, {"eta": 0.0}, r"eta must be a positive finite number, got 0.0"),
        (BOGD, {"lam": -0.1}, r"lam must be a finite number >= 0"),
        (BOGD, {"lam": 20.0}, r"eta \* lam < 1.*lam=20.0"),
    ],
)
def test_bad_parameters_name_the_rule_and_the_value(cls, params, match):
    with pytest.raises(ValueError, match=match):
        cls(**params).fit(np.eye(4), [1, -1, 1, -1])


def test_registry_builds_the_baselines():
    for name, cls in (
        ("rbp", RBP),
        ("forgetron", Forgetron),
        ("bogd", BOGD),
        ("bpas", BPAS),
        ("projectron", Projectron),
        ("projectron++", ProjectronPP),
    ):
        model = make_estimator(name, budget=7, kernels="gaussian:1")
        assert type(model) is cls and model.budget == 7
    assert make_estimator("bogd", lam=0.5).lam == 0.5
    assert make_estimator("projectron++", eta=0.3).eta == 0.3
    with pytest.raises(ValueError, match="do not apply"):
        make_estimator("rbp", eta=0.2)


def test_cli_run_passes_the_budget(data_dir, tmp_path):
    import json

    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    res = CliRunner().invoke(
        main,
        [
            "run",
            "bogd",
            "--data",
            "australian",
            "--budget",
            "7",
            "--lam",
            "0.001",
            "--limit",
            "150",
            "--kernels",
            "gaussian:0.5,1",
            "--trace-out",
            str(tmp_path / "t.json"),
            "--quiet",
            "--json",
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    assert report["params"]["budget"] == 7 and report["params"]["lam"] == 0.001
    assert report["n_support"]["total"] == 14
