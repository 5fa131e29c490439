"""Projectron and Projectron++: the block engine against the naive one-instance-at-a-time reference
(``naive_projectron``, written from the paper) on real binary and multi-class data, with either update;
the inverse Gram matrix it keeps; chunking, block sizes and saved state (kernel shards:
tests/test_budget_multiclass.py; a cluster: tests/test_cluster_every_algorithm.py).

Data: 160-row random subsets of ionosphere (raw), australian (min-max), glass (6 classes, raw) and
vehicle (4 classes, min-max); budgets small enough that buffers fill, η large enough that mistakes
are projected before they do.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from sklearn.base import clone

from omkl_dist.algorithms import Projectron, ProjectronPP
from omkl_dist.engine.budget import BudgetEngine
from omkl_dist.kernels import make_pool

from naive_omkc import kernel_column
from naive_projectron import naive_projectron
from parity_data import subset

SPECS = list(make_pool("omkc16"))
LEARNERS = ("projectron", "projectron++")
ESTIMATOR = {"projectron": Projectron, "projectron++": ProjectronPP}
ROWS, BLOCK, SEED = 160, 37, 3


@functools.lru_cache(maxsize=None)
def load(data_dir, name, multiclass):
    X, labels = subset(data_dir, name, ROWS)
    if not multiclass:
        return X, labels.astype(np.float64), 1
    classes, y = np.unique(labels, return_inverse=True)
    return X, y.astype(np.float64), len(classes)


def _engine(X, K, learner, budget, eta, **kw):
    return BudgetEngine(
        "omkc16", X.shape[1], learner=learner, budget=budget, seed=SEED, block_size=BLOCK, eta=eta, n_classes=K, **kw
    )


CASES = [  # (data, multi-class, budget, η)
    ("ionosphere", False, 12, 0.3),
    ("australian+minmax", False, 10, 0.5),
    ("glass", True, 8, 0.3),
    ("vehicle+minmax", True, 12, 0.5),
]


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize(("name", "multiclass", "budget", "eta"), CASES)
def test_block_engine_matches_naive_reference(data_dir, name, multiclass, budget, eta, learner):
    X, y, K = load(data_dir, name, multiclass)
    ref = naive_projectron(
        X, y, SPECS, plus=learner == "projectron++", budget=budget, eta=eta, n_classes=K, seed=SEED, block_size=BLOCK
    )
    engine = _engine(X, K, learner, budget, eta)
    out = engine.learn(X, y, keep_scores=True)
    np.testing.assert_array_equal(out["mistakes"], ref["mistakes"])
    scale = np.maximum(np.abs(ref["F"]), 1.0)  # decision values are sums of terms that may cancel
    assert (np.abs(out["F"] - ref["F"]) <= 1e-9 * scale).all()
    assert engine.n_support().tolist() == [len(s) for s in ref["sv"]]
    assert engine.n_support().max() == budget and engine.n_support().min() < budget  # full, and projected
    for k, spec in enumerate(SPECS):
        index, coef = engine.support(k)
        assert index.tolist() == ref["sv"][k], k  # the same instances, in the same slots
        np.testing.assert_allclose(coef, ref["coef"][k], rtol=1e-9, atol=1e-12)
        # K_S⁻¹ kept by the block inverse: the reference's, and the inverse of the support set's Gram matrix
        n = len(index)
        kinv = engine.sv_kinv[k, :n, :n]
        np.testing.assert_allclose(kinv, ref["Kinv"][k], rtol=1e-9, atol=1e-9 * np.abs(kinv).max())
        gram = np.column_stack([kernel_column(spec, X[index], X[j]) for j in index])
        np.testing.assert_allclose(kinv @ gram, np.eye(n), atol=1e-6)
    np.testing.assert_allclose(engine.w, ref["w"], rtol=1e-9, atol=1e-300)
    assert engine.n_mistakes == int(ref["mistakes"].sum())


@pytest.mark.parametrize("learner", LEARNERS)
def test_stochastic_update_matches_naive_reference(data_dir, learner):
    """``update="S"``: a kernel learns from a row only when drawn (blocks of one row: the sequential
    algorithm)."""
    X, y, K = load(data_dir, "australian+minmax", False)
    X, y = X[:80], y[:80]
    kw = {"update": "S", "delta": 0.2}
    ref = naive_projectron(
        X, y, SPECS, plus=learner == "projectron++", budget=6, eta=0.5, seed=SEED, block_size=1, **kw
    )
    engine = BudgetEngine("omkc16", X.shape[1], learner=learner, budget=6, seed=SEED, block_size=1, eta=0.5, **kw)
    out = engine.learn(X, y, keep_scores=True)
    np.testing.assert_array_equal(out["mistakes"], ref["mistakes"])
    assert engine.n_support().tolist() == [len(s) for s in ref["sv"]]
    np.testing.assert_allclose(out["F"], ref["F"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(engine.w, ref["w"], rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("learner", LEARNERS)
def test_chunks_block_sizes_and_saved_state_continue_identically(data_dir, learner, tmp_path):
    """partial_fit chunks that split blocks, and another block size, give the model of one fit bit for
    bit (the deterministic update draws nothing); a saved model continues exactly."""
    from omkl_dist.persistence import load_model, save_model

    X, y, _ = load(data_dir, "australian+minmax", False)
    est = ESTIMATOR[learner](budget=10, eta=0.5, block_size=32, n_epochs=1, shuffle=False, random_state=3)
    whole = clone(est).fit(X, y)
    chunked = clone(est)
    for lo, hi in [(0, 1), (1, 50), (50, 51), (51, ROWS)]:
        chunked.partial_fit(X[lo:hi], y[lo:hi], classes=[-1.0, 1.0])
    other = clone(est).set_params(block_size=7).fit(X, y)
    for model in (chunked, other):
        for name, value in whole.engine_.state()[0].items():
            np.testing.assert_array_equal(model.engine_.state()[0][name], value, err_msg=name)
    half = clone(est).fit(X[:90], y[:90])
    save_model(half, tmp_path / "m")
    loaded = load_model(tmp_path / "m").estimator
    loaded.partial_fit(X[90:], y[90:])
    for name, value in whole.engine_.state()[0].items():
        np.testing.assert_array_equal(loaded.engine_.state()[0][name], value, err_msg=name)


def test_zero_rows_and_tiny_eta():
    """κ(x, x) = 0 under polynomial kernels: never a support vector, nothing divided by zero; a tiny η
    adds on every mistake while the projection error is not zero (the linear kernel's rank: 2)."""
    X = np.array([[0.0, 0.0], [1.0, 0.5], [0.0, 0.0], [-1.0, 0.2], [0.3, -2.0]] * 12)
    y = np.array([1, -1, 1, -1, 1] * 12)
    for cls in (Projectron, ProjectronPP):
        model = cls(kernels="poly:1,2", budget=4, eta=1e-6, n_epochs=1, shuffle=False).fit(X, y)
        assert np.isfinite(model.decision_function(X)).all()
        index, _ = model.engine_.support(0)
        assert len(index) == 2 and not np.any(np.all(X[index] == 0, axis=1))


def test_bad_eta_names_the_rule():
    with pytest.raises(ValueError, match=r"eta must be a positive finite number, got 0.0"):
        ProjectronPP(eta=0.0).fit(np.eye(4), [1, -1, 1, -1])
