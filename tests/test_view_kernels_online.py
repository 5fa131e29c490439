"""Kernels on feature groups (and the additive chi-square kernel) in the shared-pool online learners:
OMKC, OM-2 and the Perceptron baselines on the views of mfeat and on column groups of vehicle,
against the naive references (each kernel summed directly over its own columns)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.algorithms import OM2, OMKC, RBP, PerceptronU
from omkl_dist.kernels import make_pool
from omkl_dist.storage.views import read_views

from naive_multiclass import corollary_p, naive_om2, naive_omkc_mc, naive_perceptron_u_mc
from naive_omkc import naive_omkc

SEED, BLOCK = 11, 40
MFEAT_POOL = "linear,poly:2,chi2,gaussian:1 @ fourier; achi2,gaussian:2 @ zernike; linear,chi2:0.5 @ morphological"


@pytest.fixture(scope="module")
def mfeat(data_dir):
    ds, groups = read_views("mfeat", data_dir=data_dir)
    X = ds.X
    span = X.max(axis=0) - X.min(axis=0)
    X = (X - X.min(axis=0)) / np.where(span > 0, span, 1.0)
    rows = np.random.default_rng(0).permutation(len(X))[:150]
    return np.ascontiguousarray(X[rows]), ds.y[rows], groups


@pytest.mark.parametrize("update, combination", [("D", "D"), ("S", "S")])
def test_omkc_on_views_matches_naive(mfeat, update, combination):
    X, y, groups = mfeat
    specs = list(make_pool(MFEAT_POOL).with_groups(groups))
    model = OMKC(kernels=specs, update=update, combination=combination, block_size=BLOCK, random_state=SEED)
    out = model.progressive_partial_fit(X, y, classes=np.arange(10), keep_scores=True)
    mk, _, F, _, w = naive_omkc_mc(X, y, 10, specs, update=update, combination=combination, seed=SEED, block_size=BLOCK)
    np.testing.assert_array_equal(out["mistakes"], mk)
    np.testing.assert_allclose(out["F"], F, rtol=0, atol=1e-9 * max(1.0, np.abs(F).max()))
    assert (model.engine_.w == w).all()


def test_binary_omkc_and_perceptron_u_on_column_groups(mfeat):
    X, y, groups = mfeat
    yb = np.where(y < 5, -1, 1)
    specs = list(make_pool("linear,gaussian:1 @ a=0:100; chi2,achi2 @ b=216:292"))
    model = OMKC(kernels=specs, block_size=BLOCK, random_state=SEED)
    out = model.progressive_partial_fit(X, yb, keep_scores=True)
    mk, scores, F, _, w = naive_omkc(X, yb, specs, update="D", combination="D", seed=SEED, block_size=BLOCK)
    np.testing.assert_array_equal(out["mistakes"], mk)
    np.testing.assert_allclose(out["F"], F, rtol=0, atol=1e-9 * max(1.0, np.abs(F).max()))
    out = PerceptronU(kernels=specs, block_size=BLOCK).progressive_partial_fit(X, y)
    np.testing.assert_array_equal(out["mistakes"], naive_perceptron_u_mc(X, y, 10, specs)[0])


def test_om2_on_views_matches_naive(mfeat):
    X, y, groups = mfeat
    X, y = X[:90], y[:90]
    specs = list(make_pool(MFEAT_POOL).with_groups(groups))
    model = OM2(kernels=specs, block_size=BLOCK)
    out = model.progressive_partial_fit(X, y, classes=np.arange(10))
    mk, scores, _, _, alpha = naive_om2(X, y, 10, specs, p=corollary_p(len(specs)))
    np.testing.assert_array_equal(out["mistakes"], mk)
    np.testing.assert_allclose(out["score"], scores, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(scores).max()))
    np.testing.assert_allclose(model.kernel_weights_, alpha, rtol=1e-9, atol=1e-12)


def test_budget_baselines_refuse_views_clearly(mfeat):
    X, y, _ = mfeat
    with pytest.raises(ValueError, match="budget baselines .* evaluate kernels on every column"):
        RBP(kernels="linear @ 0:5", budget=10).fit(X, y)
