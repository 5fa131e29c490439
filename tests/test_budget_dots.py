"""The budget engine's dot products: the learning path (each kernel sums its own buffer's inside the
parallel loop, :func:`own_dots`; a segment's rows among themselves, :func:`segment_dots`) and the scoring
path (:func:`fixed_dots`) give the same bits, so a model's scores are its next decision values exactly."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import omkl_dist.engine.budget as budget_engine
from omkl_dist.engine.budget import BudgetEngine
from omkl_dist.learners._budget import (
    buffer_values,
    fixed_dots,
    nonzero_dots,
    nonzeros_of,
    own_dots,
    row_bounds,
    segment_dots,
    sparse_own_dots,
)
from omkl_dist.learners.features import fourier_projection
from omkl_dist.learners.nystrom import nystrom_features, nystrom_features_pair, padded_maps
from omkl_dist.scoring._vexp import vexp_neg_n
from omkl_dist.scoring.program import GAUSS
from omkl_dist.scoring.rows import integral_bound
from omkl_dist.scoring.values import CANCEL

from parity_data import subset


def _transposed(B, c):
    """B's first c rows transposed into a wider array (the engine's: (d, budget)), NaN beyond them."""
    BT = np.full((B.shape[1], c + 3), np.nan)
    BT[:, :c] = B[:c].T
    return BT


def _own_dots(X, B, c, sparse=False):
    """:func:`own_dots` (``sparse``: :func:`sparse_own_dots` of X's non-zeros) into a new array
    (NaN first: nothing stale may leak into the sums)."""
    out = np.full((len(X), 1, c), np.nan)
    if sparse:
        sparse_own_dots(*nonzeros_of(X), _transposed(B, c), c, out)
    else:
        own_dots(X, _transposed(B, c), c, out)
    return out


def test_own_and_segment_dots_equal_fixed_dots_bit_for_bit():
    rng = np.random.default_rng(3)
    X, B = rng.normal(size=(37, 11)) * 1e3, rng.normal(size=(20, 11))
    ref = np.empty((37, 1, 15))
    fixed_dots(X, np.ascontiguousarray(B[:15].T)[None], np.array([15]), ref)
    np.testing.assert_array_equal(_own_dots(X, B, 15), ref)
    # a segment's rows among themselves (two segments, of 30 and 7 rows), and of integer rows with zeros
    # from their non-zeros (the second segment flagged integral)
    for Z, integral in ((X, False), (np.round(X / 500) * (np.abs(X) > 400), True)):
        XXt, SQ = np.full((37, 30), np.nan), np.empty((37, 30))
        flags = np.array([False, integral])
        segment_dots(Z, np.array([0, 30, 37]), flags, False, (Z * Z).sum(1), XXt, SQ, *nonzeros_of(Z))
        for a, b in ((0, 30), (30, 37)):
            gram = np.empty((b - a, 1, b - a))
            fixed_dots(Z[a:b], np.ascontiguousarray(Z[a:b].T)[None], np.array([b - a]), gram)
            np.testing.assert_array_equal(XXt[a:b, : b - a].view(np.int64), gram[:, 0].view(np.int64))


def test_integer_rows_dots_from_their_non_zeros_equal_the_dense_sums():
    rng = np.random.default_rng(5)
    X = (rng.integers(-3, 4, size=(40, 30)) * (rng.random((40, 30)) < 0.2)).astype(float)
    B = rng.integers(-3, 4, size=(20, 30)).astype(float)
    dense = _own_dots(X, B, 15)
    np.testing.assert_array_equal(_own_dots(X, B, 15, sparse=True).view(np.int64), dense.view(np.int64))
    np.testing.assert_array_equal(dense[:, 0], X @ B[:15].T)


def test_row_bounds_are_each_rows_integral_bound():
    X = np.array(
        [
            [1.0, -3.0, 0.0],
            [0.5, 1.0, 2.0],
            [np.nan, 1.0, 1.0],
            [np.inf, 2.0, 0.0],
            [-0.0, 0.0, 0.0],
            [1e300, -2.0, 3.0],
        ]
    )
    np.testing.assert_array_equal(row_bounds(X), [integral_bound(X[i : i + 1]) for i in range(len(X))])
    assert row_bounds(np.zeros((2, 0))).tolist() == [0.0, 0.0]


def test_chunks_cut_while_the_kernels_learn_give_the_bits_of_one_chunk_at_a_time(monkeypatch):
    """kernel_step cuts the next chunk's segments while the kernels learn the current one; across
    chunks (integer rows first, then real ones: the integral bound changes between them) the model
    is the one learnt a chunk per call."""
    monkeypatch.setattr(budget_engine, "CHUNK_ROWS", 64)
    rng = np.random.default_rng(4)
    X = np.vstack([rng.integers(-2, 3, size=(150, 4)).astype(float), rng.normal(size=(170, 4))])
    y = np.where(X[:, 0] + X[:, 1] > 0, 1.0, -1.0)
    for learner in ("rbp", "bpas"):
        whole, parts = (
            BudgetEngine("gaussian:1,4;poly:2", 4, learner=learner, budget=9, seed=1, block_size=100) for _ in range(2)
        )
        out = whole.learn(X, y, keep_scores=True)
        F = np.concatenate(
            [parts.learn(X[lo : lo + 64], y[lo : lo + 64], keep_scores=True)["F"] for lo in range(0, 320, 64)]
        )
        np.testing.assert_array_equal(out["F"], F)
        (a, _), (b, _) = whole.state(), parts.state()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_kernel_scores_are_the_next_decision_values_bit_for_bit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)) * [300.0, 1.0, 0.1, 2.0, 1.0]  # raw-cod-rna-like ranges: cancelling distances
    y = np.where(X[:, 1] * X[:, 3] > 0, 1.0, -1.0)
    for learner in ("rbp", "forgetron", "bogd", "bpas"):
        e = BudgetEngine("gaussian:0.5,4,64;poly:2", 5, learner=learner, budget=7, seed=2, block_size=50, lam=0.01)
        e.learn(X[:250], y[:250])
        for t in range(250, 300):  # each row scored by the model as it is just before learning it
            np.testing.assert_array_equal(
                e.kernel_scores(X[t : t + 1])[0], e.learn(X[t : t + 1], y[t : t + 1], keep_scores=True)["F"][0]
            )


def _in_order(terms):
    """A sum from +0.0 in the order given, one term at a time (what the compiled passes must equal)."""
    acc = 0.0
    for v in terms:
        acc += v
    return acc


def _fused_in_order(pairs):
    """``Σ a b`` from +0.0 in the given order, each term added with one rounding: the exact value of
    ``a b + acc`` rounded to the nearest double (a fused multiply-add, computed here without one)."""
    acc = 0.0
    for a, b in pairs:
        acc = float(Fraction(a) * Fraction(b) + Fraction(acc))
    return acc


def test_nonzero_dots_fourier_projection_and_nystrom_features_sum_in_order_bit_for_bit():
    # rows of 0..11 non-zeros (passes of four and the rest), signed zeros, magnitudes that round
    rng = np.random.default_rng(5)
    d, c = 11, 13
    X = rng.normal(size=(40, d)) * 10.0 ** rng.integers(-3, 4, size=(40, d))
    X[rng.random(X.shape) < 0.4] = 0.0
    X[rng.random(X.shape) < 0.1] = -0.0
    X[0], X[1, :5] = 0.0, 0.0
    BT = rng.normal(size=(d, c)) * 1e3
    cols, vals, counts = nonzeros_of(X)
    out = np.empty(c)
    for t in range(len(X)):
        nonzero_dots(cols, vals, t, counts[t], BT, c, out)
        expected = [_in_order(X[t, f] * BT[f, j] for f in range(d) if X[t, f] != 0.0) for j in range(c)]
        assert out.tobytes() == np.array(expected).tobytes(), t
        # FOGD's projections: the same terms, each added by a fused multiply-add
        fourier_projection(cols, vals, t, counts[t], BT, c, out)
        fused = [_fused_in_order((X[t, f], BT[f, j]) for f in range(d) if X[t, f] != 0.0) for j in range(c)]
        assert out.tobytes() == np.array(fused).tobytes(), t
    MT, kv, z = rng.normal(size=(21, 5)), rng.normal(size=21) * 1e4, np.empty(5)  # 21 = 2 passes of 8 + 5
    nystrom_features(MT, kv, z)
    assert z.tobytes() == np.array([_fused_in_order(zip(kv, MT[:, i])) for i in range(5)]).tobytes()


def test_two_rows_nystrom_features_on_the_padded_map_are_each_rows_own_bit_for_bit():
    # NOGD after its switch projects two rows per pass on its map padded to 8 columns: each row's
    # features must be the one-row pass's on the unpadded map (B = 21: passes of 8 and a tail of 5)
    rng = np.random.default_rng(6)
    for P in (5, 8, 11):
        MT, kv = rng.normal(size=(21, P)), rng.normal(size=(2, 21)) * 1e4
        padded = padded_maps(MT[None])[0]
        assert padded.shape == (21, -(-P // 8) * 8)
        assert (padded[:, P:] == 0.0).all()
        z_a, z_b, expected = np.empty(padded.shape[1]), np.empty(padded.shape[1]), np.empty((2, P))
        nystrom_features_pair(padded, kv[0], kv[1], z_a, z_b)
        for r in range(2):
            nystrom_features(MT, kv[r], expected[r])
        assert z_a[:P].tobytes() == expected[0].tobytes() and z_b[:P].tobytes() == expected[1].tobytes(), P


def _gaussian_values_reference(Xb, B, D, param):
    """One pair at a time: ``‖x‖² + ‖b‖² − 2 x·b`` from the dot products D, summed directly where it
    cancels, times param; and how many pairs cancelled."""
    xsq, bsq = np.einsum("ij,ij->i", Xb, Xb), np.einsum("ij,ij->i", B, B)
    d2, cancelled = np.empty((len(Xb), len(B))), 0
    for t in range(len(Xb)):
        for q in range(len(B)):
            s = xsq[t] + bsq[q]
            d2[t, q] = s - 2.0 * D[t, q]
            if d2[t, q] < CANCEL * s:
                cancelled += 1
                acc = 0.0
                for f in range(Xb.shape[1]):
                    acc += (Xb[t, f] - B[q, f]) ** 2
                d2[t, q] = acc
    return d2 * param, xsq, bsq, cancelled


@pytest.mark.parametrize("c", [7, 64, 100, 130])
def test_gaussian_buffer_values_sum_cancelling_pairs_directly_on_raw_codrna(data_dir, c):
    """Raw cod-rna cancels in 3.7 % of (row, budget) pairs, in most rows: the vectorised pass flags them
    and the direct sums replace exactly those (budgets across the pass's eight-pair words)."""
    X, _ = subset(data_dir, "codrna", 400)
    X = np.ascontiguousarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    B, Xb = np.ascontiguousarray(X[:c]), np.ascontiguousarray(X[c : c + 250])
    D = Xb @ B.T
    w, xsq, bsq, cancelled = _gaussian_values_reference(Xb, B, D, 2.0**-3)
    assert cancelled > len(Xb) * c // 100  # (the case under test)
    out, n = np.empty((len(Xb), c)), len(Xb) * c
    buffer_values(
        GAUSS, 2.0**-3, False, D[:, None, :].copy(), np.int64(0), xsq, Xb, bsq, B, c, out, np.empty(n), np.empty(n)
    )
    expected = np.empty(n)
    vexp_neg_n(w.ravel(), expected, np.empty(n), n)
    np.testing.assert_array_equal(out.ravel(), expected)
