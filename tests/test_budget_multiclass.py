"""Multi-class budget baselines (RBP, Forgetron, BOGD, BPAS): the block engine against the naive
one-instance-at-a-time reference (``naive_budget_mc``) on real multi-class data, kernel sharding
(subset + merge + the multi-class combiner; the Projectrons' too), and the estimators' multi-class contract (chunking,
saved state, class scores).

Data: 160-row random subsets of glass (6 classes, raw features), vehicle (4, min-max scaled) and
segment (7, min-max scaled); budgets small enough that every kernel's buffer overflows.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from sklearn.base import clone

from omkl_dist.algorithms import BOGD, BPAS, RBP, Forgetron
from omkl_dist.combiners.hedge_loss import combine
from omkl_dist.engine.budget import BudgetEngine
from omkl_dist.kernels import make_pool

from naive_budget import naive_budget_mc
from parity_data import subset

SPECS = list(make_pool("omkc16"))
LEARNERS = ("rbp", "forgetron", "bogd", "bpas")
ESTIMATOR = {"rbp": RBP, "forgetron": Forgetron, "bogd": BOGD, "bpas": BPAS}
DATASETS = [("glass", 8), ("vehicle+minmax", 12), ("segment+minmax", 6)]
N_ROWS, SEED, BLOCK, LAM = 160, 11, 37, 0.01


@functools.lru_cache(maxsize=None)
def load(data_dir, name, n_rows=N_ROWS):
    """``(X, class indices, K)``."""
    X, labels = subset(data_dir, name, n_rows)
    classes, y = np.unique(labels, return_inverse=True)
    return X, y.astype(np.float64), len(classes)


def _engine(X, K, learner, budget, **kw):
    return BudgetEngine(
        "omkc16", X.shape[1], learner=learner, budget=budget, seed=SEED, block_size=BLOCK, lam=LAM, n_classes=K, **kw
    )


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize(("name", "budget"), DATASETS)
def test_block_engine_matches_naive_reference(data_dir, name, budget, learner):
    X, y, K = load(data_dir, name)
    ref = naive_budget_mc(X, y, SPECS, K, learner=learner, budget=budget, seed=SEED, block_size=BLOCK, lam=LAM)
    engine = _engine(X, K, learner, budget)
    out = engine.learn(X, y, keep_scores=True)
    np.testing.assert_array_equal(out["mistakes"], ref["mistakes"])
    scale = np.maximum(np.abs(ref["F"]), 1.0)  # class scores are sums of terms that may cancel
    assert (np.abs(out["F"] - ref["F"]) <= 1e-9 * scale).all()
    np.testing.assert_array_equal(engine.kernel_mistakes, ref["kernel_mistakes"])
    assert engine.n_support().tolist() == [len(s) for s in ref["sv"]]
    assert engine.n_support().max() == budget  # removals happened
    for k in range(len(SPECS)):
        index, coef = engine.support(k)
        assert index.tolist() == ref["sv"][k], k  # the same instances, in the same positions
        np.testing.assert_allclose(coef, ref["coef"][k], rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(engine.w, ref["w"], rtol=1e-9, atol=1e-300)
    assert engine.n_mistakes == int(ref["mistakes"].sum())


# BOGD: the gaussian of width 2^-5 gives two rows class scores of ±4e-320 in the reference and 0.0 in the
# engine (whose vectorised exp is within one unit of numpy's in the subnormal range, as test_budget_parity
# notes): a tie there counts a kernel mistake on one side only (everything else still matches)
SUBNORMAL = pytest.mark.xfail(strict=True, reason="subnormal class scores tie on one side only (kernel_mistakes)")


@pytest.mark.parametrize("learner", [pytest.param(a, marks=SUBNORMAL) if a == "bogd" else a for a in LEARNERS])
def test_block_engine_matches_naive_reference_on_generated_data(learner):
    """make test-fast's case: the generated four-class set (repeated rows with other classes)."""
    test_block_engine_matches_naive_reference(None, "generated-multiclass", 8, learner)


@pytest.mark.parametrize("learner", [*LEARNERS, "projectron", "projectron++"])
def test_kernel_shards_then_combiner_equal_the_whole_engine(data_dir, learner):
    """Shards owning kernel ids {0,3,..}, {1,4,..}, {2,5,..} step their kernels; the coordinator puts each
    kernel's K class columns in place and replays the multi-class combiner: bit-identical to one engine."""
    X, y, K = load(data_dir, "segment+minmax")
    whole = _engine(X, K, learner, 9)
    positions = [np.arange(r, 16, 3) for r in range(3)]
    shards = [whole.subset(p) for p in positions]
    logw, w = whole.logw.copy(), whole.w.copy()
    for lo, hi in [(0, 5), (5, 77), (77, N_ROWS)]:  # calls that split blocks
        ref = whole.learn(X[lo:hi], y[lo:hi], keep_scores=True)
        F, L = np.empty((hi - lo, 16 * K)), np.empty((hi - lo, 16))
        for p, shard in zip(positions, shards):
            part = shard.kernel_step(X[lo:hi], y[lo:hi], lo)
            F[:, (p[:, None] * K + np.arange(K)).ravel()], L[:, p] = part["F"], part["loss"]
        score, mistakes = combine(y[lo:hi], F, L, logw, w, whole.gamma, K)
        np.testing.assert_array_equal(F, ref["F"])
        np.testing.assert_array_equal(score, ref["score"])
        np.testing.assert_array_equal(mistakes, ref["mistakes"])
    merged = BudgetEngine.merge(shards[::-1], logw=logw, w=w, n_mistakes=whole.n_mistakes)
    for name, value in whole.state()[0].items():
        np.testing.assert_array_equal(merged.state()[0][name], value, err_msg=name)
    np.testing.assert_array_equal(merged.kernel_scores(X[:30]), whole.kernel_scores(X[:30]))


@pytest.mark.parametrize("learner", LEARNERS)
def test_estimator_chunks_state_and_class_scores(data_dir, learner, tmp_path):
    """partial_fit chunks that split blocks give the model of one fit bit for bit; a saved model continues
    exactly; decision_function gives the next rows' combined class scores, predict their argmax."""
    from omkl_dist.persistence import load_model, save_model

    X, y, K = load(data_dir, "vehicle+minmax")
    labels = np.array(["bus", "opel", "saab", "van"])[y.astype(int)]
    est = ESTIMATOR[learner](budget=10, block_size=32, n_epochs=1, shuffle=False, random_state=3)
    whole = clone(est).fit(X, labels)
    chunked = clone(est)
    for lo, hi in [(0, 1), (1, 8), (8, 50), (50, 51), (51, 150), (150, N_ROWS)]:
        chunked.partial_fit(X[lo:hi], labels[lo:hi], classes=np.unique(labels))
    for name, value in whole.engine_.state()[0].items():
        np.testing.assert_array_equal(chunked.engine_.state()[0][name], value, err_msg=name)
    assert whole.engine_.n_classes == K == 4 and whole.mistakes_ < 0.8 * N_ROWS

    half = clone(est).fit(X[:90], labels[:90])
    save_model(half, tmp_path / "m")
    loaded = load_model(tmp_path / "m").estimator
    scores = loaded.decision_function(X[90:91])
    assert scores.shape == (1, K)
    out = loaded.progressive_partial_fit(X[90:], labels[90:], keep_scores=True)
    np.testing.assert_allclose(out["score"][0], scores[0], rtol=1e-12, atol=1e-300)
    for name, value in whole.engine_.state()[0].items():
        np.testing.assert_array_equal(loaded.engine_.state()[0][name], value, err_msg=name)
    assert whole.predict(X[:5]).tolist() == whole.classes_[np.argmax(whole.decision_function(X[:5]), axis=1)].tolist()
