"""The njit kernel core against the kernel layer and the naive formulas.

* ``scoring._pairs.pair_matrix`` (the per-pair evaluator), ``scoring.gram.block_gram`` (the kernel
  matrix of one block, the engine's intra-block path) and ``scoring.scan.pool_scores`` (the scan
  of a block against the SV pool, dense or sparse per kernel) against
  ``KernelPool.evaluate(..., sqdist="direct")`` and the exactly summed formulas of
  ``tests/naive_kernels.py``, with an error bound derived per kernel kind (see ``_bound``);
* ``scoring._vexp.vexp_neg`` against ``np.exp`` (≤ 2 ulp in the normal range, the same zeros,
  subnormals within one unit, position independence), on a grid and as a hypothesis property;
* bit-identity of the two njit paths for the same pairs (given the same dot products and squared
  norms), including exact duplicates, near-duplicates and a pool scan cut into several tiles.

Rows come from the real datasets: fourclass (scaled to [-1, 1]), ionosphere ([-1, 1], d=34), raw
australian (features up to 1e5), breast-cancer (small integers) and a1a (binary, d=123, many
duplicate rows), plus exact and near-duplicates of them so the cancellation branch (direct
recomputation of ‖a−b‖²) is exercised.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from omkl_dist.kernels import make_pool
from omkl_dist.scoring import scan as _scores
from omkl_dist.scoring._blas import fixed_shape_dots
from omkl_dist.scoring._pairs import overwrite_exact_columns, pair_matrix, pair_values
from omkl_dist.scoring._vexp import _ZERO_ABOVE, exp_neg_one, vexp_neg
from omkl_dist.scoring.gram import block_gram
from omkl_dist.scoring.program import MAX_CHAIN, compile_program
from omkl_dist.scoring.scan import pool_scores
from omkl_dist.scoring.support_vectors import SupportVectors
from omkl_dist.scoring.values import CANCEL
from omkl_dist.storage import read_dataset, resolve_dataset

from naive_kernels import naive_pool

EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny  # smallest normal double
DENORM = np.nextafter(0.0, 1.0)  # one unit in the subnormal range (4.9e-324)

POOLS = {
    "omkc16": "omkc16",
    "mkboost17": "mkboost17",
    # every kind; gaussian widths a factor 2 apart but not powers of two (chained or not,
    # depending on whether 1/(2σ²) comes out exactly 4x), laplacian and chi2 on the general path
    "mixed": "linear;polynomial:2,3;gaussian:0.3,0.6,1.2,5;laplacian:0.5,2;chi2:0.5,1",
}
DATASETS = ["fourclass", "ionosphere", "australian", "breast-cancer", "a1a"]


# --------------------------------------------------------------------------- data
_CACHE: dict = {}


def _blocks(data_dir, name: str, *, nonneg: bool):
    """(A, B): 10 query rows and 18 pool rows of dataset ``name``, B holding exact duplicates of
    rows of A, a duplicate pair of its own and near-duplicates (relative noise 1e-9 and 1e-6)."""
    key = (name, nonneg)
    if key not in _CACHE:
        X = read_dataset(resolve_dataset(name, data_dir=data_dir)).X
        if nonneg:  # chi2 needs non-negative features: shift each column to start at 0
            X = X - np.minimum(X.min(axis=0), 0.0)
        rng = np.random.default_rng(20240611)
        idx = rng.permutation(len(X))
        A = X[idx[:10]]
        others = X[idx[10:20]]
        scale = np.abs(A[2:4]).max(axis=1, keepdims=True) + 1.0
        near = A[2:4] + scale * np.array([[1e-9], [1e-6]]) * rng.uniform(0.0, 1.0, size=(2, X.shape[1]))
        B = np.vstack([others[:5], A[0:1], others[5:], A[5:6], A[5:6], near, others[0:1]])
        _CACHE[key] = (np.ascontiguousarray(A), np.ascontiguousarray(B))
    return _CACHE[key]


def _pool_and_data(data_dir, pool_name, dataset):
    pool = make_pool(POOLS[pool_name])
    nonneg = any(s.kind == "chi2" for s in pool)
    A, B = _blocks(data_dir, dataset, nonneg=nonneg)
    return pool, A, B


@njit(cache=True)
def _numba_sq(A):
    # the squared norms exactly as ``scoring._pairs.pair_matrix`` computes them (same expression)
    return (A * A).sum(axis=1)


# --------------------------------------------------------------------------- error bound
def _chain_lengths(program):
    length = np.zeros(program.m, dtype=np.int64)
    for k in program.order:  # sources come before dependants
        if program.src[k] >= 0:
            length[k] = length[program.src[k]] + 1
    return length


def _bound(pool, program, A, B, K_ref):
    """First-order bound on |κ_fast − κ_exact| per kernel and pair, shape (m, nA, nB).

    * linear / polynomial p: the BLAS dot has relative error ≤ d·eps w.r.t. Σ|a_i b_i|, and the
      p-th power multiplies relative errors by p (plus p−1 roundings), so
      ``(p·d + p)·eps·(|a|·|b|)^p``. (|a|·|b| rather than |a·b|: a dot product that cancels has
      an error relative to the magnitudes of its terms, not to its value.)
    * gaussian: exp(−x), x = γ‖a−b‖². The fast path takes ‖a‖²+‖b‖²−2a·b (absolute error
      ≤ (d+3)·eps·(‖a‖²+‖b‖²)) unless that is below CANCEL·(‖a‖²+‖b‖²), where it sums (a−b)²
      directly (relative error ≤ d·eps). So the relative error of x is at most
      δ = (d+3)·eps·min(1 + (‖a‖²+‖b‖²)/‖a−b‖², 1.01/CANCEL), and that of κ is x·δ plus the exp
      (2 ulp) amplified by 4 per squaring of a chained width (4^chain).
    * laplacian / chi2: x = scale · (sum of d non-negative terms, relative error ≤ (d+1)·eps),
      κ error x·(d+1)·eps·κ plus 2 ulp.
    Plus 2 units of the subnormal range for results that underflow.
    """
    d = A.shape[1]
    K_ref = np.asarray(K_ref)
    absdot = np.abs(A) @ np.abs(B).T
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :]
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    l1 = np.abs(A[:, None, :] - B[None, :, :]).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d2 > 0, 1.0 + sq / d2, np.inf)
    delta_d2 = (d + 3) * EPS * np.minimum(ratio, 1.01 / CANCEL)
    chain = _chain_lengths(program)
    out = np.empty_like(K_ref)
    for k, spec in enumerate(pool):
        if spec.kind in ("linear", "polynomial"):
            p = 1 if spec.kind == "linear" else spec.p
            out[k] = (p * d + p) * EPS * absdot**p
        elif spec.kind == "gaussian":
            x = d2 / (2.0 * spec.sigma**2)
            out[k] = K_ref[k] * (x * delta_d2 + 4.0 ** chain[k] * 4 * EPS)
        elif spec.kind == "laplacian":
            out[k] = K_ref[k] * ((l1 / spec.sigma) * (d + 1) * EPS + 4 * EPS)
        else:  # chi2: x = γ·Σ(a−b)²/(a+b); the sum is bounded by the L1 distance
            out[k] = K_ref[k] * (spec.gamma * l1 * (d + 3) * EPS + 4 * EPS)
    return out + 2 * DENORM


def _assert_within(K, K_ref, bound, what):
    err = np.abs(K - K_ref)
    bad = err > bound
    if bad.any():
        k, i, j = np.argwhere(bad)[0]
        raise AssertionError(
            f"{what}: {bad.sum()} values out of bound; first kernel {k} pair ({i}, {j}): "
            f"{K[k, i, j]!r} vs {K_ref[k, i, j]!r} (err {err[k, i, j]:.3g} > {bound[k, i, j]:.3g})"
        )


# --------------------------------------------------------------------------- pair path
@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("pool_name", list(POOLS))
def test_pair_path_matches_kernel_layer_and_naive(data_dir, pool_name, dataset):
    pool, A, B = _pool_and_data(data_dir, pool_name, dataset)
    program = compile_program(pool)
    K = pair_matrix(A, B, program)
    K_naive = naive_pool(pool, A, B)  # exactly summed formulas (math.fsum)
    K_layer = pool.evaluate(A, B, sqdist="direct")
    assert K.shape == K_naive.shape == (len(pool), len(A), len(B))
    bound = _bound(pool, program, A, B, K_naive)
    _assert_within(K, K_naive, bound, "pair path vs naive")
    _assert_within(K_layer, K_naive, bound, "kernel layer (direct) vs naive")
    # κ(x, x) of the exact duplicates: gaussian, laplacian, chi2 give exactly 1 (the direct
    # recomputation of a zero distance is exactly 0, whatever the magnitude of the features)
    dup = np.array([(0, 5), (5, 11), (5, 12)])  # (row of A, row of B) with B[j] == A[i]
    for k, spec in enumerate(pool):
        vals = K[k, dup[:, 0], dup[:, 1]]
        if spec.kind in ("gaussian", "laplacian", "chi2"):
            assert (vals == 1.0).all(), (spec.name, vals)


def test_blocks_hold_the_duplicates_the_tests_rely_on(data_dir):
    A, B = _blocks(data_dir, "australian", nonneg=False)
    assert (B[5] == A[0]).all() and (B[11] == A[5]).all() and (B[12] == A[5]).all()
    assert (B[13] != A[2]).any() and np.allclose(B[13], A[2], rtol=0, atol=1e-8 * np.abs(A[2]).max() + 1e-8)


def test_near_duplicates_use_the_cancellation_branch(data_dir):
    """On raw australian (‖x‖² ~ 1e10) a neighbour at relative distance 1e-9 is far below
    eps·‖x‖²: only the direct recomputation gets its gaussian values right."""
    pool = make_pool("gaussian:2^-6,1")
    program = compile_program(pool)
    A, B = _blocks(data_dir, "australian", nonneg=False)
    K = pair_matrix(A[2:3], B[13:14], program)[:, 0, 0]
    d2 = float(((A[2] - B[13]) ** 2).sum())
    assert d2 < EPS * float((A[2] ** 2).sum())  # below the rounding error of ‖a‖²+‖b‖²−2a·b
    ref = np.exp(-d2 / (2.0 * np.array([2.0**-6, 1.0]) ** 2))
    np.testing.assert_allclose(K, ref, rtol=1e-14)


def test_long_gaussian_ladders_restart_chains():
    program = compile_program(make_pool("omkc16"))
    chain = _chain_lengths(program)
    assert chain.max() == MAX_CHAIN
    assert (program.src >= 0).sum() == 13 - 3  # 13 widths: anchors at the 1st, 7th and 13th
    program = compile_program(make_pool("gaussian:0.3,0.6,1.2,5"))
    assert program.src[3] == -1 and program.src[2] != 3  # σ=5 is no factor-2 neighbour of σ=1.2


# --------------------------------------------------------------------------- pool scan
def _pool_of(B, alpha, sq=None):
    pool = SupportVectors(B.shape[1], alpha.shape[1], capacity=1)
    pool.append(B, _numba_sq(B) if sq is None else sq, alpha)
    return pool


def _scan_single_values(A, B, program, xsq, psq, **scan_options):
    """Read κ_k(A[t], B[s]) out of pool_scores with a one-hot coefficient row per pool row."""
    m = program.m
    out = np.empty((m, len(A), len(B)))
    for s in range(len(B)):
        alpha = np.zeros((len(B), m))
        alpha[s] = 1.0
        out[:, :, s] = pool_scores(A, xsq, _pool_of(B, alpha, psq), program, **scan_options).T
    return out


def _scan_dots(A, B, s0, tile):
    """The dot products the pool scan uses for one tile: ``A @ P.T`` in BLAS calls of one shape
    (``scoring/_blas.py``), with the columns of rows that repeat in the pool recomputed in fixed
    feature order (see ``scoring/support_vectors.py``)."""
    dots = fixed_shape_dots(A, B[s0 : s0 + tile])
    exact = _pool_of(B, np.ones((len(B), 1))).exact
    cols = np.flatnonzero(exact[s0 : s0 + tile]) + s0
    if len(cols):
        overwrite_exact_columns(A, B, cols, s0, dots)
    return dots


def _pair_values_with_scan_dots(A, B, program, xsq, psq, tile):
    """κ_k(A[t], B[s]) from the per-pair evaluator, fed the very dot products the pool scan
    computes (one ``Xb @ P.T`` per tile of the pool, fixed-order for duplicated rows)."""
    out = np.empty((program.m, len(A), len(B)))
    vals = np.empty(program.m)
    for s0 in range(0, len(B), tile):
        dots = _scan_dots(A, B, s0, tile)
        for t in range(len(A)):
            for j in range(dots.shape[1]):
                pair_values(
                    A,
                    t,
                    B,
                    s0 + j,
                    dots[t, j],
                    xsq[t],
                    psq[s0 + j],
                    program.kinds,
                    program.param,
                    program.src,
                    program.order,
                    program.need_l1,
                    program.need_chi2,
                    program.direct,
                    program.vcols,
                    program.vptr,
                    vals,
                )
                out[:, t, s0 + j] = vals
    return out


def _grouped_sum(terms):
    """Σ terms as the direct scan sums over features: in groups of four, ``(a + b) + (c + d)``,
    added in order, then a pair ``a + b``, then a single one."""
    acc, f = 0.0, 0
    while f + 4 <= len(terms):
        acc += (terms[f] + terms[f + 1]) + (terms[f + 2] + terms[f + 3])
        f += 4
    if f + 2 <= len(terms):
        acc += terms[f] + terms[f + 1]
        f += 2
    for v in terms[f:]:
        acc += v
    return acc


def _direct_values(A, B, program):
    """κ_k(A[t], B[s]) with the direct sparse scan's arithmetic (few features): dot products and
    squared distances (from differences) summed by :func:`_grouped_sum`, powers by repeated
    multiplication, a gaussian as its chain anchor's exp followed by double squarings."""
    deg, anchor_param, steps = program.sparse
    out = np.empty((program.m, len(A), len(B)))
    one, scratch = np.empty(1), np.empty(1)
    for t in range(len(A)):
        for s in range(len(B)):
            dot = _grouped_sum([float(a * b) for a, b in zip(A[t], B[s])])
            d2 = _grouped_sum([float((a - b) * (a - b)) for a, b in zip(A[t], B[s])])
            for k in range(program.m):
                if deg[k] > 0:
                    v = dot
                    for _ in range(deg[k] - 1):
                        v *= dot
                else:
                    vexp_neg(np.array([d2 * anchor_param[k]]), one, scratch)
                    v = one[0]
                    for _ in range(steps[k]):
                        w = v * v
                        v = w * w
                out[k, t, s] = v
    return out


# the pool scan has a dense kernel-major loop and, for pools of dot/gaussian kernels, a sparse
# per-kernel loop over the non-zero coefficients (taken below SPARSE_DENSITY); force each in turn
SCANS = {"dense": 0.0, "sparse": 2.0}
SCAN_CASES = [
    pytest.param(p, scan, id=f"{p}-{scan}")
    for p in POOLS
    for scan in SCANS
    if scan == "dense" or compile_program(make_pool(POOLS[p])).sparse is not None
]


@pytest.mark.parametrize("tile", [_scores.TILE, 5])
@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize(("pool_name", "scan"), SCAN_CASES)
def test_pool_scan_bit_identical_to_pair_path(data_dir, monkeypatch, pool_name, scan, dataset, tile):
    """Given the same dot products and squared norms, the pool scan (dense or sparse, vectorised
    or general loop) and the per-pair evaluator use the same arithmetic: identical bits for every
    pair, duplicates included, whatever the tiling of the pool. The direct sparse scan (few
    features) sums its own dot products and distances: identical bits to that arithmetic."""
    monkeypatch.setattr(_scores, "TILE", tile)
    monkeypatch.setattr(_scores, "SPARSE_DENSITY", SCANS[scan])
    pool, A, B = _pool_and_data(data_dir, pool_name, dataset)
    program = compile_program(pool)
    xsq, psq = np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B)
    direct = scan == "sparse" and A.shape[1] <= _scores.DIRECT_DOT_FEATURES
    K_pair = _direct_values(A, B, program) if direct else _pair_values_with_scan_dots(A, B, program, xsq, psq, tile)
    K_scan = _scan_single_values(A, B, program, xsq, psq)
    mismatch = K_pair != K_scan
    assert not mismatch.any(), (
        f"{mismatch.sum()} values differ; first (kernel, t, s) = {tuple(np.argwhere(mismatch)[0])}"
    )
    # the duplicates in the pool give bit-identical columns, so ±1 coefficients cancel exactly
    assert (K_scan[:, :, 11] == K_scan[:, :, 12]).all()
    alpha = np.zeros((len(B), program.m))
    alpha[11], alpha[12] = 1.0, -1.0
    assert (pool_scores(A, xsq, _pool_of(B, alpha, psq), program) == 0.0).all()


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize(("pool_name", "scan"), SCAN_CASES)
def test_block_gram_bit_identical_to_pool_scan(data_dir, monkeypatch, pool_name, scan, dataset):
    """The engine's intra-block kernel matrix ``block_gram`` against the pool scan of the same
    rows, fed the same dot products: identical bits on every pair it fills (s < t). The direct
    sparse scan (few features) has its own arithmetic: both within the error bound of exact."""
    monkeypatch.setattr(_scores, "SPARSE_DENSITY", SCANS[scan])
    pool, A, B = _pool_and_data(data_dir, pool_name, dataset)
    program = compile_program(pool)
    Xb = np.ascontiguousarray(np.vstack([A, B[11:15]]))  # with duplicates and near-duplicates of rows
    xsq = np.einsum("ij,ij->i", Xb, Xb)
    P = Xb.copy()
    direct = scan == "sparse" and Xb.shape[1] <= _scores.DIRECT_DOT_FEATURES
    G = block_gram(Xb, xsq, _scan_dots(Xb, P, 0, len(P)), program)  # the dots the scan computes
    K_scan = _scan_single_values(Xb, P, program, xsq, xsq)
    lower = np.tril(np.ones((len(Xb), len(Xb)), dtype=bool), -1)
    K_naive = naive_pool(pool, Xb, Xb)
    bound = _bound(pool, program, Xb, Xb, K_naive)
    _assert_within(np.where(lower, G, K_naive), K_naive, bound, "block_gram vs naive")
    if direct:
        _assert_within(np.where(lower, K_scan, K_naive), K_naive, bound, "direct pool scan vs naive")
        return
    mismatch = (G != K_scan) & lower
    assert not mismatch.any(), f"{mismatch.sum()} values differ; first {tuple(np.argwhere(mismatch)[0])}"


def _integer_rows(data_dir, pool_name, dataset):
    pool, A, B = _pool_and_data(data_dir, pool_name, dataset)
    B = B[(B == np.round(B)).all(axis=1)]  # drop the near-duplicates
    assert (A == np.round(A)).all() and len(B) >= 12
    return pool, A, B


@pytest.mark.parametrize("tile", [_scores.TILE, 5])
@pytest.mark.parametrize("dataset", ["breast-cancer", "a1a"])
@pytest.mark.parametrize("pool_name", list(POOLS))
def test_pair_matrix_bit_identical_to_pool_scan_on_exact_dots(data_dir, monkeypatch, pool_name, dataset, tile):
    """Integer-valued rows have exact dot products and norms, whichever BLAS routine or summation
    order computes them; then ``pair_matrix`` and the pool scan agree to the bit for every pair."""
    monkeypatch.setattr(_scores, "TILE", tile)
    pool, A, B = _integer_rows(data_dir, pool_name, dataset)
    program = compile_program(pool)
    K_pair = pair_matrix(A, B, program)
    K_scan = _scan_single_values(A, B, program, np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B))
    assert (K_pair == K_scan).all()


@pytest.mark.parametrize("tile", [_scores.TILE, 5])
@pytest.mark.parametrize("pool_name", [p for p in POOLS if compile_program(make_pool(POOLS[p])).sparse is not None])
def test_exact_sparse_feature_scan_bit_identical_on_integer_data(data_dir, monkeypatch, pool_name, tile):
    """Integer rows with many features (a1a: binary, d = 123), scanned sparsely where BLAS is
    exact (``blas_exact``), sum each row's dot products over its non-zero features only: the
    same bits as ``pair_matrix`` and as the BLAS path, for single pairs and for mixed-sign sums."""
    monkeypatch.setattr(_scores, "TILE", tile)
    monkeypatch.setattr(_scores, "SPARSE_DENSITY", SCANS["sparse"])
    pool, A, B = _integer_rows(data_dir, pool_name, "a1a")
    program = compile_program(pool)
    assert A.shape[1] > _scores.DIRECT_DOT_FEATURES
    xsq, psq = np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B)
    K_scan = _scan_single_values(A, B, program, xsq, psq, blas_exact=True)
    assert (K_scan == pair_matrix(A, B, program)).all()
    alpha = np.random.default_rng(5).choice([-1.0, 0.0, 1.0, 0.5], size=(len(B), program.m))
    sv = _pool_of(B, alpha, psq)
    assert (pool_scores(A, xsq, sv, program, blas_exact=True) == pool_scores(A, xsq, sv, program)).all()


def _whole_block_and_row_by_row(pool, A, B):
    """Pool scores of the rows of A as one block and one row at a time, against a ±1 pool of B."""
    program = compile_program(pool)
    alpha = np.random.default_rng(4).choice([-1.0, 1.0], size=(len(B), program.m))
    sv = _pool_of(B, alpha)
    xsq = np.einsum("ij,ij->i", A, A)
    whole = pool_scores(A, xsq, sv, program)
    rows = np.vstack([pool_scores(A[t : t + 1], xsq[t : t + 1], sv, program) for t in range(len(A))])
    return whole, rows


def test_single_row_blocks_match_multi_row_blocks_on_integer_data(data_dir):
    """With exact dot products a block of one row (numpy uses a matrix-vector product) and a
    block of many rows (a matrix product) give the same bits: the scan adds no rounding that
    depends on the row's position in the block."""
    whole, rows = _whole_block_and_row_by_row(*_integer_rows(data_dir, "omkc16", "breast-cancer"))
    assert (whole == rows).all()


def test_single_row_blocks_match_multi_row_blocks_on_real_valued_data(data_dir):
    """For real-valued rows BLAS may round a dot product differently with the shape of the call
    (a matrix-vector product, a small-matrix kernel, an edge kernel), so the scan takes its BLAS
    products in calls of one shape (scoring/_blas.py): a row scored alone or in a block gets the
    same bits -- what lets a shard score part of a round for the in-process engine's model."""
    for name in ("ionosphere", "australian"):
        whole, rows = _whole_block_and_row_by_row(*_pool_and_data(data_dir, "omkc16", name))
        assert (whole == rows).all(), name


@pytest.mark.parametrize("n_cols", [1, 3, 8, 40, 990, 4095])
@pytest.mark.parametrize("d", [2, 18, 123])
def test_fixed_shape_dots_give_a_row_the_same_bits_in_any_call(n_cols, d):
    """Whatever rows a row is computed with, wherever it sits among them and however many BLAS
    threads run, :func:`fixed_shape_dots` gives it the same bits (measured on OpenBLAS's SkylakeX
    kernels: a plain ``A[:8] @ B.T`` differs from ``(A @ B.T)[:8]`` for 990 columns)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(n_cols * 1000 + d)
    A, B = rng.normal(size=(300, d)), rng.normal(size=(n_cols, d))
    whole = fixed_shape_dots(A, B)
    np.testing.assert_allclose(whole, A @ B.T, rtol=1e-12, atol=1e-12)
    for cuts in ([1], [8, 9, 200], [64, 128], [7, 150, 299]):
        parts = np.split(A, cuts)
        with threadpool_limits(1):
            split = np.vstack([fixed_shape_dots(p, B) for p in parts])
        assert (split == whole).all(), cuts


def test_direct_scan_skips_only_exact_zeros(data_dir):
    """The direct scan (few features) skips a gaussian's support vectors whose value is exactly
    0 by the sort feature's difference alone. On raw cod-rna (one feature spans thousands) it
    skips many; every skipped pair's value, in the scan's own arithmetic, is exactly 0; a row's
    scores have the same bits whichever rows it is scanned with (alone, reordered: a cluster
    shard scans a part of the segment); and the sums stay within the bound of exact ones."""
    X = read_dataset(resolve_dataset("codrna", data_dir=data_dir)).X
    rng = np.random.default_rng(5)
    idx = rng.permutation(len(X))
    A, B = np.ascontiguousarray(X[idx[:24]]), np.ascontiguousarray(X[idx[24:224]])
    pool = make_pool("omkc16")
    program = compile_program(pool)
    deg, anchor_param, steps = program.sparse
    alpha = rng.choice([-1.0, 0.0, 1.0, 0.5], size=(len(B), program.m), p=[0.05, 0.85, 0.05, 0.05])
    sv = _pool_of(B, alpha)
    layout = _scores._tile_layout(sv, 0, sv.n, program)
    key = layout.sort_feature
    assert layout.sparse and key == int(np.argmax(np.ptp(B, axis=0)))
    keys = B[layout.nz_s, key]
    K = _direct_values(A, B, program)
    skipped = total = 0
    for k in np.flatnonzero(deg == 0):
        lo, hi = layout.ptr[k], layout.ptr[k + 1]
        assert (np.diff(keys[lo:hi]) >= 0).all()
        for t in range(len(A)):
            a, b = _scores._live_range(keys, lo, hi, A[t, key], anchor_param[k], _scores.ZERO_ARG / 4.0 ** steps[k])
            outside = np.r_[layout.nz_s[lo:a], layout.nz_s[b:hi]]
            assert (K[k, t, outside] == 0.0).all(), (k, t)
            skipped, total = skipped + len(outside), total + hi - lo
    assert skipped > 0.3 * total, (skipped, total)
    xsq = np.einsum("ij,ij->i", A, A)
    whole = pool_scores(A, xsq, sv, program)
    perm = rng.permutation(len(A))
    assert (pool_scores(A[perm], xsq[perm], sv, program) == whole[perm]).all()
    singles = np.vstack([pool_scores(A[t : t + 1], xsq[t : t + 1], sv, program) for t in range(len(A))])
    assert (singles == whole).all()
    K_naive = naive_pool(pool, A, B)
    bound = _bound(pool, program, A, B, K_naive)
    scale = np.einsum("ktb,bk->tk", np.abs(K_naive), np.abs(alpha))
    tol = np.einsum("ktb,bk->tk", bound, np.abs(alpha)) + (len(B) + 2) * EPS * scale
    assert (np.abs(whole - np.einsum("ktb,bk->tk", K_naive, alpha)) <= tol).all()


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize(("pool_name", "scan"), SCAN_CASES)
def test_pool_scan_matches_naive_sums(data_dir, monkeypatch, pool_name, scan, dataset):
    """F[t, k] = Σ_s α_sk κ_k(x_t, b_s) against the exact formulas, for mixed-sign coefficients
    (zero for some kernels, as in the shared pool), with the scale-aware bound
    Σ_s |α_sk| · bound_k(t, s) + (n + 2)·eps·Σ_s |α_sk κ_k| for the reassociated sum."""
    monkeypatch.setattr(_scores, "SPARSE_DENSITY", SCANS[scan])
    pool, A, B = _pool_and_data(data_dir, pool_name, dataset)
    program = compile_program(pool)
    rng = np.random.default_rng(3)
    alpha = rng.choice([-1.0, 0.0, 1.0, 0.5], size=(len(B), program.m))
    xsq = np.einsum("ij,ij->i", A, A)
    F = pool_scores(A, xsq, _pool_of(B, alpha, np.einsum("ij,ij->i", B, B)), program)
    K_naive = naive_pool(pool, A, B)
    F_ref = np.einsum("ktb,bk->tk", K_naive, alpha)
    bound = _bound(pool, program, A, B, K_naive)
    scale = np.einsum("ktb,bk->tk", np.abs(K_naive), np.abs(alpha))
    tol = np.einsum("ktb,bk->tk", bound, np.abs(alpha)) + (len(B) + 2) * EPS * scale
    err = np.abs(F - F_ref)
    assert (err <= tol).all(), np.max(err / np.maximum(tol, TINY))
    # an empty pool scores exactly 0
    empty = SupportVectors(A.shape[1], program.m)
    assert (pool_scores(A, xsq, empty, program) == 0.0).all()


# --------------------------------------------------------------------------- vexp
def _vexp(x):
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    vexp_neg(x, out, np.empty_like(x))
    return out


@njit
def _exp_neg_one_each(x):
    """:func:`exp_neg_one` of every entry (the pair evaluator's scalar twin of the vector loop)."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = exp_neg_one(x[i])
    return out


def _check_vexp(x):
    out, ref = _vexp(x), np.exp(-x)
    normal = ref >= TINY
    ulp = np.abs(out[normal].view(np.int64) - ref[normal].view(np.int64))
    assert ulp.max(initial=0) <= 2, x[normal][np.argmax(ulp)]
    assert ((out == 0.0) == (ref == 0.0)).all(), x[(out == 0.0) != (ref == 0.0)]
    sub = ~normal
    assert (np.abs(out[sub] - ref[sub]) <= DENORM).all(), x[sub][np.abs(out[sub] - ref[sub]) > DENORM]
    assert (out >= 0.0).all()
    return out


def test_vexp_grid():
    ln2 = np.log(2.0)
    k = np.arange(0, 1076)
    x = np.concatenate(
        [
            np.linspace(0.0, 708.5, 200_001),  # normal results
            np.linspace(708.3, 746.0, 50_001),  # normal → subnormal → 0
            np.geomspace(1e-300, 2.0, 5_001),  # tiny arguments (result ≈ 1 - x)
            (k[:, None] + np.array([-0.5, -1e-12, 0.0, 1e-12, 0.5])).ravel() * ln2,  # reduction edges
            [
                0.0,
                DENORM,
                TINY,
                EPS,
                0.5,
                1.0,
                708.3964185322641,
                708.4,
                709.78,
                np.nextafter(_ZERO_ABOVE, 0.0),
                _ZERO_ABOVE,
                np.nextafter(_ZERO_ABOVE, np.inf),
                746.0,
                1e3,
                1e10,
                1e300,
                np.inf,
            ],
        ]
    )
    x = np.abs(x)
    out = _check_vexp(x)
    # the pair evaluator's scalar exp: the vector loop's bits for every argument
    assert (_exp_neg_one_each(x).view(np.int64) == out.view(np.int64)).all()
    assert np.isnan(_exp_neg_one_each(np.array([np.nan]))[0])
    assert _vexp(np.array([0.0]))[0] == 1.0
    assert _vexp(np.array([np.inf, 1e300]))[0] == 0.0
    # the largest argument with a non-zero result agrees with libm
    below = np.nextafter(_ZERO_ABOVE, 0.0)
    assert _vexp(np.array([below]))[0] == np.exp(-below) > 0.0
    assert out.shape == x.shape


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(min_value=0.0, max_value=800.0, allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=9),
)
def test_vexp_property(values, pad):
    """Against np.exp for any arguments, and each value independent of its position in the
    vector (the SIMD body and the scalar tail compute the same bits)."""
    x = np.array(values)
    out = _check_vexp(x)
    padded = _vexp(np.concatenate([np.full(pad, 3.0), x]))[pad:]
    assert (padded == out).all()
    singles = np.array([_vexp(np.array([v]))[0] for v in x])
    assert (singles == out).all()
    assert (_exp_neg_one_each(x).view(np.int64) == out.view(np.int64)).all()


def test_pool_flags_every_row_of_a_repeated_vector_and_finds_them_by_key():
    """Rows whose vector occurs more than once are flagged exact (all of them, the first included),
    found by key, and a copy or a pickle (also one of an earlier version's index) keeps them."""
    import copy
    import pickle

    from omkl_dist.scoring.support_vectors import row_keys

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    X[4] = X[1]
    X[5] = X[1]
    pool = SupportVectors(3, 1, capacity=2)
    pool.append(X[:3], (X[:3] ** 2).sum(1), np.ones((3, 1)))
    pool.append(X[3:], (X[3:] ** 2).sum(1), np.ones((3, 1)))
    assert pool.exact[: pool.n].tolist() == [False, True, False, False, True, True]
    keys = row_keys(X)
    np.testing.assert_array_equal(pool.rows_matching([keys[1], keys[0]]), [0, 1, 4, 5])
    legacy = pickle.loads(pickle.dumps(pool)).__getstate__()
    legacy["_rows_by_key"] = {keys[0]: [0], keys[1]: [1, 4, 5], keys[2]: [2], keys[3]: [3]}
    del legacy["_row_of_key"], legacy["_more_rows_of_key"]
    old = SupportVectors.__new__(SupportVectors)
    old.__setstate__(legacy)
    for other in (copy.deepcopy(pool), pickle.loads(pickle.dumps(pool)), old):
        np.testing.assert_array_equal(other.rows_matching([keys[1]]), [1, 4, 5])
        assert other.has_key(keys[3]) and not other.has_key(hash(b"absent"))
        other.append(X[:1], (X[:1] ** 2).sum(1), np.ones((1, 1)))
        np.testing.assert_array_equal(other.rows_matching([keys[0]]), [0, 6])
        assert other.exact[0] and other.exact[6]
