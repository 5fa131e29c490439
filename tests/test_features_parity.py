"""FOGD (and NOGD) block engines against the naive one-instance-at-a-time references
(``tests/naive_features.py``) on real data: the same online mistakes, per-kernel scores, weights and
Hedge weights, bit for bit; independent of block size and chunking; kernel shards (subset + merge)
give the whole engine's columns; a saved state continues exactly."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from omkl_dist.algorithms import FOGD
from omkl_dist.engine.features import FourierEngine
from omkl_dist.kernels import make_pool

from naive_features import naive_fogd
from parity_data import subset

GAUSSIANS = "gaussian:2^-6..2^6"
SIGMAS = [spec.sigma for spec in make_pool(GAUSSIANS)]
N_ROWS = 300
SEED = 4242
CASES = ["codrna+minmax", "a9a", "satimage+minmax"]  # real-valued, binary 0/1 (123 columns), 6 classes


@functools.lru_cache(maxsize=None)
def _data(data_dir, name):
    X, y = subset(data_dir, name, N_ROWS)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    classes, codes = np.unique(y, return_inverse=True)
    y_coded = np.where(codes == 1, 1.0, -1.0) if len(classes) == 2 else codes.astype(np.float64)
    return np.ascontiguousarray(X), y_coded, (1 if len(classes) == 2 else len(classes))


def _fogd_engine(d, K, block_size=64, **kw):
    return FourierEngine(GAUSSIANS, d, n_components=30, seed=SEED, block_size=block_size, n_classes=K, **kw)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("hedge_hinge", [False, True])
def test_fogd_equals_naive_bit_for_bit(data_dir, name, hedge_hinge):
    X, y, K = _data(data_dir, name)
    ref = naive_fogd(X, y, SIGMAS, n_components=30, seed=SEED, hedge_hinge=hedge_hinge, n_classes=K)
    engine = _fogd_engine(X.shape[1], K, hedge_hinge=hedge_hinge)
    out = engine.learn(X[:100], y[:100], keep_scores=True)  # two calls: a cut inside a block
    rest = engine.learn(X[100:], y[100:], keep_scores=True)
    np.testing.assert_array_equal(np.concatenate([out["mistakes"], rest["mistakes"]]), ref["mistakes"])
    np.testing.assert_array_equal(np.concatenate([out["F"], rest["F"]]), ref["F"])
    np.testing.assert_array_equal(np.concatenate([out["score"], rest["score"]]), ref["score"])
    np.testing.assert_array_equal(engine.W, ref["W"])
    np.testing.assert_array_equal(engine.w, ref["w"])
    assert 0 < ref["mistakes"].sum() < 0.5 * N_ROWS  # it learns something


def test_fogd_shards_and_state_continue_exactly(data_dir):
    X, y, K = _data(data_dir, "codrna+minmax")
    whole = _fogd_engine(X.shape[1], K, block_size=32)
    whole_out = whole.kernel_step(X, y, 0)
    parts = [
        _fogd_engine(X.shape[1], K, block_size=32).subset(p) for p in ([0, 5, 12], [1, 2, 3, 4], list(range(6, 12)))
    ]
    outs = [p.kernel_step(X, y, 0) for p in parts]
    for p, o in zip(parts, outs):
        np.testing.assert_array_equal(o["F"], whole_out["F"][:, np.searchsorted(np.arange(13), p.kernel_ids)])
    merged = FourierEngine.merge(parts, logw=whole.logw, w=whole.w)
    np.testing.assert_array_equal(merged.W, whole.W)
    arrays, scalars = merged.state()
    assert "projection" not in arrays  # regenerated from (seed, kernel id), never saved
    again = FourierEngine.from_state(make_pool(GAUSSIANS), arrays, scalars)
    Xn, yn = X[::-1].copy(), y[::-1].copy()
    np.testing.assert_array_equal(again.kernel_step(Xn, yn, N_ROWS)["F"], whole.kernel_step(Xn, yn, N_ROWS)["F"])


def test_fogd_estimator_block_size_and_chunks_do_not_matter(data_dir):
    X, y, _ = _data(data_dir, "codrna+minmax")
    a = FOGD(n_components=20, block_size=7, shuffle=False).fit(X, y)
    b = FOGD(n_components=20, block_size=256, shuffle=False)
    for lo in range(0, N_ROWS, 37):
        b.partial_fit(X[lo : lo + 37], y[lo : lo + 37], classes=[-1.0, 1.0])
    assert a.mistakes_ == b.mistakes_
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_fogd_refuses_kernels_without_fourier_features():
    with pytest.raises(ValueError, match="gaussian kernels only"):
        FOGD(kernels="omkc16").fit(np.eye(3), [0, 1, 0])
