"""NOGD per kernel: Nyström Online Gradient Descent (Lu, Hoi, Wang, Zhao & Liu, "Large Scale Online
Kernel Learning", JMLR 17(47), 2016, Algorithm 2, as the authors' ``NysGD.m`` runs it).

Kernel k first learns as a kernel predictor ``f(x) = Σ_j α_j κ(x_j, x)`` on a budget of B rows: on
a positive hinge loss the row joins with ``α = η y`` (multi-class: ``+η`` on the true class, ``−η``
on the rival). At its first positive loss with a full budget it switches, once: the top eigenpairs
(Λ, V) of the budget's Gram matrix give the Nyström map ``z(x) = Λ^{-1/2} Vᵀ (κ(x_1, x) … κ(x_B, x))``
and the weights ``w = Λ^{1/2} Vᵀ α`` (the same function on the budget's span: the authors'
``w = α pinv(M)``); from then on (that row included) it is online gradient descent on z
(:mod:`.features`).

Exactness: a row's kernel values with the budget are computed row by row, dot products summed in
feature order (a zero feature skipped: adding ``0·s`` to a finite sum changes no bit), then
:func:`._budget.kernel_values`'s arithmetic, so every value has the bits of the one-row-at-a-time
reference wherever it is computed; ``z`` sums in budget order. The eigendecomposition is done once
per kernel, at the switch, by :func:`nystrom_start` (LAPACK's ``dsyevd`` through numpy on one BLAS
thread): bit-identical on one machine whoever calls it, up to the LAPACK/BLAS build across machines.
"""

from __future__ import annotations

import time

import numba
import numpy as np
from numba import njit

from ..scoring._blas import one_blas_thread
from ..scoring._fma import fma
from ..scoring._vexp import vexp_neg_n
from ..scoring._wide import wide_vectors
from ..scoring.program import GAUSS
from ..scoring.row_threads import over_rows
from ._budget import FROM_FIRST, buffer_values, nonzero_dots, nonzeros_of, row_nonzeros, scaled_sqdists
from .features import feature_score, hedge_loss_of, learn_row, margin_of, ogd_step

# eigenvalues at most RANK_TOL · B · λ_max are dropped (numpy's matrix_rank tolerance, ε = 2^-52): the
# Gram matrix of a budget is often of low numerical rank (a linear kernel on 8 features: rank <= 8)
RANK_TOL = float(np.finfo(np.float64).eps)


@njit(cache=True, nogil=True, inline="always")
def nystrom_features(MT, kv, z):
    """``z[i] = Σ_j M[i, j] kv[j]`` summed in budget order from +0.0 (each term by a fused multiply-add,
    :mod:`omkl_dist.scoring._fma`), from ``MT = Mᵀ`` (B × P):
    eight budget rows per pass over z (one load and store of ``z[i]`` per eight products, not per
    product: with P = 20 the passes were load/store bound, 40 % of NOGD's time per row)."""
    B, P = MT.shape
    B8 = B - B % 8
    for i in range(P):
        z[i] = 0.0
    for j in range(0, B8, 8):
        v0, v1, v2, v3 = kv[j], kv[j + 1], kv[j + 2], kv[j + 3]
        v4, v5, v6, v7 = kv[j + 4], kv[j + 5], kv[j + 6], kv[j + 7]
        for i in range(P):
            a = fma(v3, MT[j + 3, i], fma(v2, MT[j + 2, i], fma(v1, MT[j + 1, i], fma(v0, MT[j, i], z[i]))))
            z[i] = fma(v7, MT[j + 7, i], fma(v6, MT[j + 6, i], fma(v5, MT[j + 5, i], fma(v4, MT[j + 4, i], a))))
    for j in range(B8, B):
        v = kv[j]
        for i in range(P):
            z[i] = fma(v, MT[j, i], z[i])


@njit(cache=True, nogil=True, inline="always")
def nystrom_features_pair(MT, kv_a, kv_b, z_a, z_b):
    """:func:`nystrom_features` of two rows in one pass over ``MT``: each ``z[i]`` the same sum in the
    same order, the two rows' chains of adds interleaved (a row alone is bound by its chains'
    latency and its passes' loads of ``MT``; measured, issue 36). ``MT`` may have more columns than
    the features used (:func:`padded_maps`): theirs come out too, unused."""
    B, P = MT.shape
    B8 = B - B % 8
    for i in range(P):
        z_a[i] = 0.0
        z_b[i] = 0.0
    for j in range(0, B8, 8):
        a0, a1, a2, a3 = kv_a[j], kv_a[j + 1], kv_a[j + 2], kv_a[j + 3]
        a4, a5, a6, a7 = kv_a[j + 4], kv_a[j + 5], kv_a[j + 6], kv_a[j + 7]
        b0, b1, b2, b3 = kv_b[j], kv_b[j + 1], kv_b[j + 2], kv_b[j + 3]
        b4, b5, b6, b7 = kv_b[j + 4], kv_b[j + 5], kv_b[j + 6], kv_b[j + 7]
        for i in range(P):
            m0, m1, m2, m3 = MT[j, i], MT[j + 1, i], MT[j + 2, i], MT[j + 3, i]
            m4, m5, m6, m7 = MT[j + 4, i], MT[j + 5, i], MT[j + 6, i], MT[j + 7, i]
            a = fma(a3, m3, fma(a2, m2, fma(a1, m1, fma(a0, m0, z_a[i]))))
            z_a[i] = fma(a7, m7, fma(a6, m6, fma(a5, m5, fma(a4, m4, a))))
            b = fma(b3, m3, fma(b2, m2, fma(b1, m1, fma(b0, m0, z_b[i]))))
            z_b[i] = fma(b7, m7, fma(b6, m6, fma(b5, m5, fma(b4, m4, b))))
    for j in range(B8, B):
        va, vb = kv_a[j], kv_b[j]
        for i in range(P):
            z_a[i] = fma(va, MT[j, i], z_a[i])
            z_b[i] = fma(vb, MT[j, i], z_b[i])


def padded_maps(MT: np.ndarray) -> np.ndarray:
    """The maps ``MT`` (m, B, P) with their features padded by zeros to a multiple of 8 (the width of
    512-bit vectors), so the projection's passes run in whole vectors; a padding column's feature
    is a sum of ``κ · 0``, never used."""
    Mp = np.zeros((*MT.shape[:2], -(-MT.shape[2] // 8) * 8))
    Mp[:, :, : MT.shape[2]] = MT
    return Mp


def nystrom_start(G: np.ndarray, alpha: np.ndarray, n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """The switch of one kernel from its budget's Gram matrix ``G`` (B × B) and coefficients
    ``alpha`` (B × K): ``(Mᵀ (B × P), W (K × P))`` with ``M = Λ^{-1/2} Vᵀ``, ``w_c = Λ^{1/2} Vᵀ α_c``
    over the top ``n_components`` = P eigenpairs (largest first; an eigenvector's sign set so its
    largest-magnitude entry is positive). Eigenpairs with ``λ <= RANK_TOL · B · λ_max`` get zero
    rows (their features are 0 and never learn): the map keeps P features whatever the rank.

    The one place NOGD decomposes: the engine and the naive reference both call it, on one BLAS
    thread, so one machine gives the same bits for both and for any sharding.
    """
    B, P = G.shape[0], int(n_components)
    with one_blas_thread():
        lam, V = np.linalg.eigh(G)
        lam, V = lam[::-1][:P], np.ascontiguousarray(V[:, ::-1][:, :P])
        top = np.argmax(np.abs(V), axis=0)
        V *= np.where(V[top, np.arange(V.shape[1])] < 0, -1.0, 1.0)
        keep = lam > RANK_TOL * B * max(float(lam[0]), 0.0)
        root = np.where(keep, np.sqrt(np.where(keep, lam, 1.0)), 0.0)
        inv_root = np.where(keep, 1.0 / np.where(keep, root, 1.0), 0.0)
        MT = np.zeros((B, P))
        MT[:, : len(lam)] = V * inv_root
        W = np.zeros((alpha.shape[1], P))
        W[:, : len(lam)] = (alpha.T @ V) * root
    return MT, W


@njit(cache=True, nogil=True)
def _budget_score(alpha, k, K, c, kv, F, t):
    """Kernel-phase scores ``F[t, k K + cl] = Σ_j α_j[cl] κ_j`` in budget order."""
    for cl in range(K):
        s = 0.0
        for j in range(c):
            s += alpha[k, j * K + cl] * kv[j]
        F[t, k * K + cl] = s


def nystrom_rows(
    X, xsq, y, start, pending, kernels, budget, shared, W, eta, hedge_hinge, K, F, L, kernel_mistakes, stop, costs
):
    """NOGD's kernels over rows, each from its row ``start[k]``, in lanes of kernels on threads.

    ``kernels`` = (kinds, param, norm); ``budget`` = (sv_X (m, B, d), sv_T (m, d, B), sv_sq, alpha (m, B K),
    n_used, switched), updated in place with ``W`` (m, K P); ``shared`` = :func:`shared_budgets`.
    A kernel still on its budget that meets a positive loss with the budget full stops there:
    ``stop[k]`` = that row (its scores and loss written, its step pending), else ``n``; the caller
    switches it (:func:`nystrom_start`) and calls again from that row with ``pending[k]``, which
    takes the row's step on the new features and goes on. ``costs`` (m): each kernel's estimated
    time, which cuts the lanes (:func:`lane_bounds`) and is updated from the lanes' times."""
    rows = (X, nonzeros_of(X), xsq)  # (the rows' non-zeros found once for every kernel)
    bounds = lane_bounds(costs, lanes_of(len(start)))
    seconds = np.zeros(len(bounds) - 1)

    def lanes(lo, hi, *args):  # (each range one lane when there are threads for them)
        cpu = time.thread_time()
        _nystrom_rows_range(lo, hi, *args)
        seconds[lo:hi] = (time.thread_time() - cpu) / (hi - lo)

    args = (bounds, rows, y, start, pending, kernels, budget, shared, W, eta, hedge_hinge, K, F, L)
    over_rows(lanes, len(bounds) - 1, *args, kernel_mistakes, stop)
    follow_costs(costs, bounds, seconds)


LANES_PER_THREAD = 1


def lanes_of(m: int) -> int:
    """How many lanes m kernels learn in: a lane's switched kernels' rows share their dot products and
    distances (:func:`_switched_phase`), so the fewer lanes, the more is shared; one lane per thread."""
    return max(1, min(m, LANES_PER_THREAD * numba.get_num_threads()))


def lane_bounds(costs: np.ndarray, lanes: int) -> np.ndarray:
    """Lane l's kernels are ``bounds[l] <= k < bounds[l + 1]``: runs of neighbours (a lane's kernels
    interleaved with another's wrote the same cache lines of the scores and losses row after row),
    cut where the kernels' estimated ``costs`` come nearest to equal shares."""
    cum = np.concatenate([[0.0], np.cumsum(costs)])
    cuts = [int(np.argmin(np.abs(cum - cum[-1] * lane / lanes))) for lane in range(1, lanes)]
    return np.array([0, *cuts, len(costs)], dtype=np.int64)


def follow_costs(costs: np.ndarray, bounds: np.ndarray, seconds: np.ndarray) -> None:
    """Each lane's kernels' costs scaled to the lane's measured time, so the next call's cut moves
    towards equal times: a kernel's cost depends on its kind and the data (a gaussian's exps against
    a polynomial's powers: on raw cod-rna's omkc16 the best cut of 16 was at 9, on a9a at 8). The cut
    changes no bit: a kernel's rows are the same in any lane."""
    for lane in range(len(bounds) - 1):
        part = costs[bounds[lane] : bounds[lane + 1]]
        if len(part) and seconds[lane] > 0.0:
            part *= seconds[lane] / part.sum()
    np.maximum(costs, 1e-9, out=costs)  # (a lane that did nothing keeps a share)


def nystrom_scores(X, xsq, kernels, budget, shared, W, K, out) -> None:
    """``out[t, k K + c]``: kernel k's current score of class c for every row (no update), rows on threads."""
    over_rows(_nystrom_scores_range, X.shape[0], (X, nonzeros_of(X), xsq), kernels, budget, shared, W, K, out)


def shared_budgets(sv_X, sv_sq, n_used, switched, MT) -> tuple:
    """What the switched kernels' features are made from: ``(idx (m, B), U (u, d), UT (d, u), usq (u),
    Mp (m, B, P8))``, slot q of kernel k being row ``idx[k, q]`` of U (-1: no row), ``Mp`` the maps
    padded (:func:`padded_maps`). NOGD's kernels mostly fill their budgets from the same early rows
    (raw cod-rna's 16: 132 distinct rows of 1,600), so a row's dot products with U serve every
    kernel: the same bits (a dot product is summed in feature order whoever asks)."""
    m, B, d = sv_X.shape
    idx = np.full((m, B), -1, dtype=np.int64)
    ks = np.flatnonzero(switched)
    slots = np.arange(B)[None, :] < n_used[ks][:, None]
    rows = np.concatenate([sv_X[ks][slots], sv_sq[ks][slots][:, None]], axis=1)  # (its norm: the same row)
    keys = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1] * 8))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    where = idx[ks]
    where[slots] = inverse.ravel()
    idx[ks] = where
    U = np.ascontiguousarray(rows[first, :d])
    return idx, U, np.ascontiguousarray(U.T), np.ascontiguousarray(rows[first, d]), padded_maps(MT)


# kernel values with a fixed budget computed in one call: a chunk of rows of at most this many values
# (192 rows of raw cod-rna's 132 shared budget rows: the switched phase on one thread took 0.428 s,
# 0.467 s with half as many rows and 0.450 s with four times as many)
CHUNK_VALUES = 25_600
# D's one kernel, an int64 as the budget engine passes its index (a literal 0 compiled buffer_values again)
ONLY = np.int64(0)


@njit(cache=True, nogil=True, inline="always")
def chunk_rows(c):
    """Rows per chunk for values with ``c`` rows: even (features are taken two rows at a time), >= 2."""
    return max(2, CHUNK_VALUES // max(c, 1) // 2 * 2)


@njit(cache=True, nogil=True)
def chunk_values(kind, param, norm, nonzeros, X, xsq, t, h, SV, SVT, svsq, c, D, out, work, scratch):
    """``out[i - t, q] = κ(X[i], SV[q])`` for rows ``t <= i < h`` and q < c: the rows' dot products
    (:func:`chunk_dots`), then the chunk's kernel arithmetic in one pass
    (:func:`._budget.buffer_values`: kernel_values' per value)."""
    chunk_dots(nonzeros, t, h, SVT, c, D)
    buffer_values(kind, param, norm, D[: h - t], ONLY, xsq[t:h], X[t:h], svsq, SV, c, out[: h - t], work, scratch)


@njit(cache=True, nogil=True)
def chunk_dots(nonzeros, t, h, SVT, c, D):
    """``D[i - t, 0, q]``: row i's dot product with row q of ``SVT``'s transpose, for ``t <= i < h`` and
    q < c (:func:`._budget.nonzero_dots`). One call per chunk: a call per row took its arrays'
    reference counts, three of them on arrays every kernel's thread shares (X, the budget's rows and
    norms): ~30 % of NOGD's compiled time, contended."""
    cols, vals, counts = nonzeros
    for i in range(t, h):
        nonzero_dots(cols, vals, i, counts[i], SVT, c, D[i - t, 0])


@njit(cache=True, nogil=True, inline="always")
def lane_buffers(u, B):
    """Rows per chunk and a lane's work arrays for ``u`` shared rows and budgets of B: ``(Du, d2u, Dk,
    kv, work, scratch)`` (:func:`shared_chunk`, :func:`kernel_chunk`)."""
    rows_per = chunk_rows(max(u, B))
    Du, d2u, Dk = np.empty((rows_per, 1, u)), np.empty(rows_per * u), np.empty((rows_per, 1, B))
    return rows_per, (Du, d2u, Dk, np.empty(rows_per * B), np.empty(rows_per * B), np.empty(rows_per * B))


@njit(cache=True, nogil=True)
def kernel_chunk(k, kernels, budget, rows, t, r0, h, cols, bufs):
    """Kernel k's values ``κ(X[i], SV[q])`` for rows ``r0 <= i < h``, returned as ``(h - r0, c)``, from
    the dot products ``Du`` of rows ``t, t + 1, …`` with the shared rows and, for a gaussian, their
    distances ``d2u`` (:func:`shared_chunk`; slot q is shared row ``cols[q]``): a gaussian's distances
    times its parameter, then its exps (:func:`._budget.buffer_values`' arithmetic on the same
    distances); another kernel's values from its slots' dot products."""
    kind, param = kernels[0][k], kernels[1][k]
    X, _, xsq = rows
    Du, d2u, Dk, kv, work, scratch = bufs
    c, u, nr = budget[4][k], Du.shape[2], h - r0
    out = kv[: nr * c].reshape(nr, c)
    if kind == GAUSS:
        for i in range(nr):
            base = (i + r0 - t) * u
            for q in range(c):
                work[i * c + q] = d2u[base + cols[q]] * param
        vexp_neg_n(work, kv, scratch, nr * c)
        return out
    for i in range(nr):
        for q in range(c):
            Dk[i, 0, q] = Du[i + r0 - t, 0, cols[q]]
    SV, svsq = budget[0][k], budget[2][k]
    buffer_values(kind, param, kernels[2][k], Dk[:nr], ONLY, xsq[r0:h], X[r0:h], svsq, SV, c, out, work, scratch)
    return out


@njit(cache=True, nogil=True)
def shared_chunk(rows, t, h, R, RT, rsq, gauss, bufs):
    """Rows ``t <= i < h``'s dot products with the shared rows R (``Du[i - t, 0]``) and, if a gaussian
    asks, their squared distances (``d2u[(i - t) u + r]``: :func:`._budget.scaled_sqdists` unscaled,
    which times a gaussian's parameter gives the bits of its own call): once for every kernel."""
    X, nonzeros, xsq = rows
    Du, d2u = bufs[0], bufs[1]
    u = R.shape[0]
    chunk_dots(nonzeros, t, h, RT, u, Du)
    if gauss:
        scaled_sqdists(Du[: h - t], ONLY, xsq[t:h], X[t:h], rsq, R, u, 1.0, d2u)


@njit(cache=True, nogil=True, inline="always")
def any_gaussian(kinds, ks):
    """Whether any kernel of ``ks`` is a gaussian (then :func:`shared_chunk` computes distances)."""
    for k in ks:
        if kinds[k] == GAUSS:
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def switched_from(lo, hi, switched, start, n):
    """Kernels ``lo <= k < hi`` switched and with rows left (``start[k] < n``), in order."""
    ks, c = np.empty(hi - lo, dtype=np.int64), 0
    for k in range(lo, hi):
        if switched[k] and start[k] < n:
            ks[c] = k
            c += 1
    return ks[:c]


@njit(cache=True, nogil=True)
def lane_rows(ks, n_used, shared):
    """Kernels ``ks``'s part of :func:`shared_budgets`: ``(cols, R, RT, rsq)``, their distinct rows only
    (``R``, its transpose, their squared norms), slot q of kernel k being row ``cols[k, q]`` of R."""
    idx, U, _, usq, _ = shared
    local, cols = np.empty(U.shape[0], dtype=np.int64), np.empty(idx.shape, dtype=np.int64)
    local[:] = -1  # (fills, not np.full or array copies: numba compiles a shape error's text for those)
    cols[:] = -1
    u = 0
    for k in ks:
        for q in range(n_used[k]):
            g = idx[k, q]
            if local[g] < 0:
                local[g] = u
                u += 1
            cols[k, q] = local[g]
    R, RT, rsq = np.empty((u, U.shape[1])), np.empty((U.shape[1], u)), np.empty(u)
    for g in range(U.shape[0]):
        r = local[g]
        if r >= 0:
            for f in range(U.shape[1]):
                R[r, f] = U[g, f]
                RT[f, r] = U[g, f]
            rsq[r] = usq[g]
    return cols, R, RT, rsq


# Lanes [lo, hi) each, serial: a kernel's rows do not depend on the other kernels', so kernels on
# threads compute the bits of the prange loops these were, which numba compiled twice (the outlined
# loop body and its caller): NOGD's first fit waited on that (issue 39).
@njit(cache=True, nogil=True)
def _nystrom_rows_range(
    lo,
    hi,
    bounds,
    rows,
    y,
    start,
    pending,
    kernels,
    budget,
    shared,
    W,
    eta,
    hedge_hinge,
    K,
    F,
    L,
    kernel_mistakes,
    stop,
):
    n, switched = rows[0].shape[0], budget[5]
    for lane in range(lo, hi):
        for k in range(bounds[lane], bounds[lane + 1]):
            stop[k] = n
            if not switched[k]:
                _budget_phase(k, rows, y, start, kernels, budget, eta, hedge_hinge, K, F, L, kernel_mistakes, stop)
        on = switched_from(bounds[lane], bounds[lane + 1], switched, start, n)
        if len(on):
            _switched_phase(
                on, rows, y, start, pending, kernels, budget, shared, W, eta, hedge_hinge, K, F, L, kernel_mistakes
            )


@njit(cache=True, nogil=True, inline="always")
def _switched_phase(
    ks, rows, y, start, pending, kernels, budget, shared, W, eta, hedge_hinge, K, F, L, kernel_mistakes
):
    """Switched kernels ``ks`` (a lane's), each from its row ``start[k]`` (its switch row's step
    first when ``pending[k]``): a chunk of rows' dot products and distances with the kernels' budget
    rows once (:func:`shared_chunk`), then kernel by kernel its values (:func:`kernel_chunk`), features
    and steps. A switched kernel's map is fixed: its features do not
    depend on its steps, and its steps stay in row order, so interleaving kernels by chunks changes no bit."""
    wide_vectors()  # (512-bit vectors: the padded map's projection and the kernel values' passes)
    n_used, Mp = budget[4], shared[4]
    cols, R, RT, rsq = lane_rows(ks, n_used, shared)
    n, B, u, P = rows[0].shape[0], budget[0].shape[1], R.shape[0], W.shape[1] // K
    Z = np.empty((2, Mp.shape[2]))  # two rows' padded features
    gauss = any_gaussian(kernels[0], ks)
    rows_per, bufs = lane_buffers(u, B)
    errs = np.zeros(len(ks), dtype=np.int64)
    first = n
    for k in ks:
        first = min(first, start[k])
    for t in range(first, n, rows_per):
        h = min(n, t + rows_per)
        shared_chunk(rows, t, h, R, RT, rsq, gauss, bufs)
        for s in range(len(ks)):
            k = ks[s]
            i = max(t, start[k])
            if i >= h:
                continue
            r0, M = i, Mp[k]
            Kv = kernel_chunk(k, kernels, budget, rows, t, i, h, cols[k], bufs)
            switch_row = start[k] if pending[k] else -1
            while i < h:  # two rows at a time (one projection and one learn_row: each compiled once)
                j = min(i + 1, h - 1)  # (a last row alone: projected twice, kept once)
                nystrom_features_pair(M, Kv[i - r0], Kv[j - r0], Z[0], Z[1])
                for v in range(j - i + 1):
                    row = i + v
                    if row == switch_row:  # scored and counted on the budget: only its step, on z
                        margin, r = margin_of(F, row, k, K, y[row])
                        ogd_step(Z[v, :P], y[row], r, W, k, eta, K)
                    else:
                        errs[s] += learn_row(Z[v, :P], y[row], W, k, eta, hedge_hinge, K, F, L, row)
                i = j + 1
    for s in range(len(ks)):
        kernel_mistakes[ks[s]] += errs[s]


@njit(cache=True, nogil=True, inline="always")
def _budget_phase(k, rows, y, start, kernels, budget, eta, hedge_hinge, K, F, L, kernel_mistakes, stop):
    """Kernel k on its budget from row ``start[k]`` until it switches (rows here are few: the budget
    fills, then the kernel switches)."""
    X, nonzeros, xsq = rows
    kinds, param, norm = kernels
    sv_X, sv_T, sv_sq, alpha, n_used, _ = budget
    n, B = X.shape[0], sv_X.shape[1]
    kind, prm, nrm = kinds[k], param[k], norm[k]
    SV, SVT, svsq = sv_X[k], sv_T[k], sv_sq[k]
    kv_row, work, scratch, D1 = np.empty(B), np.empty(B), np.empty(B), np.empty((1, 1, B))
    errs = 0
    for t in range(start[k], n):
        c = n_used[k]
        kv = kv_row[:c].reshape(1, c)  # (the one call compiled for the chunks, on one row)
        chunk_values(kind, prm, nrm, nonzeros, X, xsq, t, t + 1, SV, SVT, svsq, c, D1, kv, work, scratch)
        _budget_score(alpha, k, K, c, kv[0], F, t)
        margin, r = margin_of(F, t, k, K, y[t])
        L[t, k] = hedge_loss_of(margin, hedge_hinge)
        errs += 1 if margin <= 0.0 else 0
        if margin < 1.0:
            if c == B:
                stop[k] = t
                break
            for f in range(X.shape[1]):
                sv_X[k, c, f] = X[t, f]
                sv_T[k, f, c] = X[t, f]
            sv_sq[k, c] = xsq[t]
            if K == 1:
                alpha[k, c] = eta * y[t]
            else:
                alpha[k, c * K + int(y[t])] = eta
                alpha[k, c * K + r] = -eta
            n_used[k] = c + 1
    kernel_mistakes[k] += errs


@njit(cache=True, nogil=True)
def _nystrom_scores_range(lo, hi, rows, kernels, budget, shared, W, K, out):
    """Rows [lo, hi)'s scores: a switched kernel's from its features (values as in learning, from
    :func:`shared_chunk`), a kernel on its budget from its budget's values."""
    wide_vectors()
    X, nonzeros, xsq = rows
    kinds, param, norm = kernels
    sv_X, sv_T, sv_sq, alpha, n_used, switched = budget
    idx, U, UT, usq, Mp = shared
    B, u, P = sv_X.shape[1], U.shape[0], W.shape[1] // K
    on = switched_from(0, switched.shape[0], switched, np.zeros(switched.shape[0], dtype=np.int64), 1)
    z = np.empty(Mp.shape[2])
    zP = z[:P]
    gauss = any_gaussian(kinds, on)
    rows_per, bufs = lane_buffers(u, B)
    _, _, Dk, kv, work, scratch = bufs
    for t in range(lo, hi, rows_per):
        h = min(hi, t + rows_per)
        if len(on):
            shared_chunk(rows, t, h, U, UT, usq, gauss, bufs)
        for k in on:
            Kv = kernel_chunk(k, kernels, budget, rows, t, t, h, idx[k], bufs)
            for i in range(t, h):
                nystrom_features(Mp[k], Kv[i - t], z)
                for cl in range(K):
                    out[i, k * K + cl] = feature_score(W, k, cl * P, zP)
        for k in range(switched.shape[0]):  # a kernel on its budget: its values directly
            if switched[k]:
                continue
            c = n_used[k]
            Kv = kv[: (h - t) * c].reshape(h - t, c)
            chunk_values(
                kinds[k],
                param[k],
                norm[k],
                nonzeros,
                X,
                xsq,
                t,
                h,
                sv_X[k],
                sv_T[k],
                sv_sq[k],
                c,
                Dk,
                Kv,
                work,
                scratch,
            )
            for i in range(t, h):
                _budget_score(alpha, k, K, c, Kv[i - t], out, i)


@njit(cache=True)
def budget_gram(kind, param, norm, SV, SVT, svsq):
    """The budget's Gram matrix ``G[i, j] = κ(SV[i], SV[j])``: its rows as one chunk of
    :func:`chunk_values` (symmetric bit for bit: dot products and the kernel arithmetic are)."""
    B = SV.shape[0]
    G = np.empty((B, B))
    work, scratch = np.empty(B * B), np.empty(B * B)
    nonzeros = (np.empty(SV.shape, dtype=np.int32), np.empty(SV.shape), np.empty(B, dtype=np.int64))
    row_nonzeros(SV, *nonzeros)
    D = np.empty((B, 1, B))
    chunk_values(kind, param, norm, nonzeros, SV, svsq, FROM_FIRST, B, SV, SVT, svsq, B, D, G, work, scratch)
    return G
