"""FOGD (and NOGD) block engines against the naive one-instance-at-a-time references
(``tests/naive_features.py``) on real data: the same online mistakes, per-kernel scores, weights and
Hedge weights, bit for bit; independent of block size and chunking; kernel shards (subset + merge)
give the whole engine's columns; a saved state continues exactly."""

from __future__ import annotations

import functools

import numba
import numpy as np
import pytest

from omkl_dist.algorithms import FOGD, NOGD
from omkl_dist.engine.features import FourierEngine
from omkl_dist.engine.nystrom import NystromEngine
from omkl_dist.kernels import make_pool
from omkl_dist.learners import nystrom
from omkl_dist.learners.nystrom import shared_budgets
from omkl_dist.scoring._vtrig import REDUCED_BELOW

from naive_features import naive_fogd, naive_nogd
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
    a = FOGD(n_components=20, block_size=7, n_epochs=1, shuffle=False).fit(X, y)
    b = FOGD(n_components=20, block_size=256, shuffle=False)
    for lo in range(0, N_ROWS, 37):
        b.partial_fit(X[lo : lo + 37], y[lo : lo + 37], classes=[-1.0, 1.0])
    assert a.mistakes_ == b.mistakes_
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_fogd_equals_naive_on_raw_magnitudes_and_zero_rows():
    """Generated rows whose projections on the narrowest gaussians pass the vectorised cos/sin's
    range (there libm's), rows of zeros and a zero column: still the naive reference's bits."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 5)) * np.array([1e-3, 1.0, 1e3, 3e4, 0.0])
    X[[3, 17, 40]] = 0.0
    y = np.where(X[:, 1] > 0, 1.0, -1.0)
    ref = naive_fogd(X, y, SIGMAS, n_components=12, seed=SEED)
    engine = FourierEngine(GAUSSIANS, 5, n_components=12, seed=SEED, block_size=16)
    out = engine.learn(X, y, keep_scores=True)
    assert np.abs(X @ engine.projection[0]).max() > REDUCED_BELOW  # (the case under test)
    np.testing.assert_array_equal(out["F"], ref["F"])
    np.testing.assert_array_equal(engine.W, ref["W"])


def test_fogd_refuses_kernels_without_fourier_features():
    with pytest.raises(ValueError, match="gaussian kernels only"):
        FOGD(kernels="omkc16").fit(np.eye(3), [0, 1, 0])


NOGD_KERNELS = "omkc16"  # polynomial 1..3 and 13 gaussians: every budget fills and switches in 300 rows
NOGD_PARAMS = {"budget": 30, "n_components": 8}


def _nogd_engine(d, K, block_size=64, **kw):
    return NystromEngine(NOGD_KERNELS, d, seed=SEED, block_size=block_size, n_classes=K, **NOGD_PARAMS, **kw)


@pytest.mark.parametrize(
    "name, hedge_hinge", [("codrna+minmax", False), ("codrna+minmax", True), ("a9a", False), ("satimage+minmax", False)]
)
def test_nogd_equals_naive_bit_for_bit(data_dir, name, hedge_hinge):
    X, y, K = _data(data_dir, name)
    ref = naive_nogd(X, y, NOGD_KERNELS, **NOGD_PARAMS, hedge_hinge=hedge_hinge, n_classes=K)
    engine = _nogd_engine(X.shape[1], K, hedge_hinge=hedge_hinge)
    out = engine.learn(X[:100], y[:100], keep_scores=True)  # two calls: a cut inside a block
    rest = engine.learn(X[100:], y[100:], keep_scores=True)
    assert engine.switched.all()  # every kernel went through its switch (the case under test)
    np.testing.assert_array_equal(np.concatenate([out["mistakes"], rest["mistakes"]]), ref["mistakes"])
    np.testing.assert_array_equal(np.concatenate([out["F"], rest["F"]]), ref["F"])
    np.testing.assert_array_equal(np.concatenate([out["score"], rest["score"]]), ref["score"])
    np.testing.assert_array_equal(engine.W, np.stack(ref["W"]))
    np.testing.assert_array_equal(engine.sv_X, np.stack(ref["budget"]))
    np.testing.assert_array_equal(engine.w, ref["w"])
    assert 0 < ref["mistakes"].sum() < (1 - 1 / max(K, 2)) * N_ROWS  # better than chance


def test_nogd_shards_and_state_continue_exactly(data_dir):
    X, y, K = _data(data_dir, "codrna+minmax")
    whole = _nogd_engine(X.shape[1], K, block_size=32)
    whole_out = whole.kernel_step(X[:150], y[:150], 0)
    parts = [_nogd_engine(X.shape[1], K, block_size=32).subset(p) for p in ([0, 5, 12], list(range(1, 5)), [6, 15])]
    outs = [p.kernel_step(X[:150], y[:150], 0) for p in parts]
    for p, o in zip(parts, outs):
        np.testing.assert_array_equal(o["F"], whole_out["F"][:, p.kernel_ids])
    keep = [i for i in range(16) if i not in (0, 5, 12, 1, 2, 3, 4, 6, 15)]
    parts.append(_nogd_engine(X.shape[1], K, block_size=32).subset(keep))
    parts[-1].kernel_step(X[:150], y[:150], 0)
    merged = NystromEngine.merge(parts, logw=whole.logw, w=whole.w)
    np.testing.assert_array_equal(merged.W, whole.W)
    arrays, scalars = merged.state()
    assert "sv_T" not in arrays  # the transposed budget is rebuilt, never saved
    again = NystromEngine.from_state(make_pool(NOGD_KERNELS), arrays, scalars)
    Xn, yn = X[150:], y[150:]
    np.testing.assert_array_equal(again.kernel_step(Xn, yn, 150)["F"], whole.kernel_step(Xn, yn, 150)["F"])
    np.testing.assert_array_equal(again.kernel_scores(X), whole.kernel_scores(X))


@pytest.mark.parametrize("name", ["codrna+minmax", "satimage+minmax"])
def test_nogd_shares_budget_rows_across_kernels_in_any_lanes(data_dir, name, monkeypatch):
    # switched kernels' budgets are mostly the same rows: their dot products and distances are
    # computed once per lane of kernels; the bits must not depend on the lanes or threads, nor
    # differ between learning's scores and kernel_scores
    X, y, K = _data(data_dir, name)
    runs, threads = [], numba.get_num_threads()
    for lanes, on in ((1, 1), (3, 1), (16, 1), (1, threads), (2, threads)):
        monkeypatch.setattr(nystrom, "LANES_PER_THREAD", lanes)
        numba.set_num_threads(on)
        try:
            e = _nogd_engine(X.shape[1], K)
            out = e.learn(X[:250], y[:250], keep_scores=True)
            runs.append((out["F"], e.W.copy(), e.kernel_scores(X), e.kernel_step(X[250:251], y[250:251], 250)["F"]))
        finally:
            numba.set_num_threads(threads)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(runs[0][2][250].reshape(1, -1), runs[0][3])  # scores = learning's, row 250
    idx, U, UT, usq, Mp = shared_budgets(e.sv_X, e.sv_sq, e.n_used, e.switched, e.MT)
    assert e.switched.all() and len(U) < e.n_used.sum() / 2  # shared, the case under test
    np.testing.assert_array_equal(U[idx], e.sv_X)  # every slot's row
    np.testing.assert_array_equal(usq[idx], e.sv_sq)
    np.testing.assert_array_equal(UT, U.T)
    np.testing.assert_array_equal(Mp[:, :, : e.MT.shape[2]], e.MT)


def test_nogd_estimator_block_size_and_chunks_do_not_matter(data_dir):
    X, y, _ = _data(data_dir, "codrna+minmax")
    a = NOGD(**NOGD_PARAMS, block_size=7, n_epochs=1, shuffle=False).fit(X, y)
    b = NOGD(**NOGD_PARAMS, block_size=256, shuffle=False)
    for lo in range(0, N_ROWS, 37):
        b.partial_fit(X[lo : lo + 37], y[lo : lo + 37], classes=[-1.0, 1.0])
    assert a.mistakes_ == b.mistakes_
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_nogd_drops_null_eigenpairs():
    """A linear kernel on 3 features has a budget Gram matrix of rank <= 3: the features beyond it
    are 0 and never learn, and the model is still the budget's predictor at the switch."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = np.where(X @ [1.0, -2.0, 0.5] > 0, 1.0, -1.0)
    e = NystromEngine("linear", 3, budget=12, n_components=8, seed=0, block_size=50)
    e.learn(X, y)
    assert e.switched[0]
    assert (e.MT[0][:, 3:] == 0).all() and (e.W[0, 3:] == 0).all() and (e.W[0, :3] != 0).all()


def test_nogd_refuses_more_components_than_budget():
    with pytest.raises(ValueError, match="n_components <= budget"):
        NOGD(budget=5, n_components=6).fit(np.eye(3), [0, 1, 0])
