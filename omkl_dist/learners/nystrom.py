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

import numpy as np
from numba import njit

from ..scoring._blas import one_blas_thread
from ..scoring._fma import fma
from ..scoring._wide import wide_vectors
from ..scoring.row_threads import over_rows
from ._budget import FROM_FIRST, buffer_values, nonzero_dots, nonzeros_of, row_nonzeros
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
    the features used (:func:`padded_map`): theirs come out too, unused."""
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


@njit(cache=True, nogil=True, inline="always")
def padded_map(M, out):
    """``out[:, :P] = M``, zeros after: the map with its features padded to a multiple of 8 (the
    width of 512-bit vectors), so the projection's passes run in whole vectors; a padding column's
    feature is a sum of ``κ · 0``, never used."""
    B, P = M.shape
    for j in range(B):
        for i in range(P):
            out[j, i] = M[j, i]
        for i in range(P, out.shape[1]):
            out[j, i] = 0.0


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


def nystrom_rows(X, xsq, y, start, pending, kernels, budget, W, MT, eta, hedge_hinge, K, F, L, kernel_mistakes, stop):
    """NOGD's kernels (on threads, :func:`.row_threads.over_rows`) over rows, each from its row ``start[k]``.

    ``kernels`` = (kinds, param, norm); ``budget`` = (sv_X (m, B, d), sv_T (m, d, B), sv_sq, alpha (m, B K),
    n_used, switched), updated in place with ``W`` (m, K P) and ``MT`` (m, B, P). A kernel still on its
    budget that meets a positive loss with the budget full stops there: ``stop[k]`` = that row (its
    scores and loss written, its step pending), else ``n``; the caller switches it
    (:func:`nystrom_start`) and calls again from that row with ``pending[k]``, which takes the row's
    step on the new features and goes on."""
    rows = (X, nonzeros_of(X), xsq)  # (the rows' non-zeros found once for every kernel)
    args = (rows, y, start, pending, kernels, budget, W, MT, eta, hedge_hinge, K, F, L, kernel_mistakes, stop)
    over_rows(_nystrom_rows_range, len(start), *args)


def nystrom_scores(X, xsq, kernels, budget, W, MT, K, out) -> None:
    """``out[t, k K + c]``: kernel k's current score of class c for every row (no update), kernels on threads."""
    over_rows(_nystrom_scores_range, len(kernels[0]), (X, nonzeros_of(X), xsq), kernels, budget, W, MT, K, out)


# kernel values with a fixed budget computed in one call: a chunk of rows of at most this many values
# (128 rows of a budget of 100; a chunk of a large budget's rows that spilt out of the caches was slower)
CHUNK_VALUES = 12_800
# D's one kernel, an int64 as the budget engine passes its index (a literal 0 compiled buffer_values again)
ONLY = np.int64(0)


@njit(cache=True, nogil=True, inline="always")
def chunk_rows(c):
    """Rows per chunk for a budget of ``c``: even (the switched phase takes rows two at a time), >= 2."""
    return max(2, CHUNK_VALUES // max(c, 1) // 2 * 2)


@njit(cache=True, nogil=True)
def chunk_values(kind, param, norm, nonzeros, X, xsq, t, h, SV, SVT, svsq, c, D, out, work, scratch):
    """``out[i - t, q] = κ(X[i], SV[q])`` for rows ``t <= i < h`` and q < c: each row's dot products
    (:func:`._budget.nonzero_dots`, into ``D``), then the chunk's kernel arithmetic in one pass
    (:func:`._budget.buffer_values`: kernel_values' per value). One call per chunk: a call per row
    took its arrays' reference counts, three of them on arrays every kernel's thread shares (X, the
    budget's rows and norms): ~30 % of NOGD's compiled time, contended."""
    cols, vals, counts = nonzeros
    for i in range(t, h):
        nonzero_dots(cols, vals, i, counts[i], SVT, c, D[i - t, 0])
    buffer_values(kind, param, norm, D[: h - t], ONLY, xsq[t:h], X[t:h], svsq, SV, c, out[: h - t], work, scratch)


# Kernels [lo, hi) each, serial: a kernel's rows do not depend on the other kernels', so kernel ranges
# on threads compute the bits of the prange loops these were, which numba compiled twice (the outlined
# loop body and its caller): NOGD's first fit waited on that (issue 39).
@njit(cache=True, nogil=True)
def _nystrom_rows_range(
    lo, hi, rows, y, start, pending, kernels, budget, W, MT, eta, hedge_hinge, K, F, L, kernel_mistakes, stop
):
    wide_vectors()  # (512-bit vectors: the padded map's projection and the kernel values' passes)
    X, nonzeros, xsq = rows
    kinds, param, norm = kernels
    sv_X, sv_T, sv_sq, alpha, n_used, switched = budget
    n, B, P = X.shape[0], sv_X.shape[1], MT.shape[2]
    kv_row, work, scratch, D1 = np.empty(B), np.empty(B), np.empty(B), np.empty((1, 1, B))
    Mp = np.empty((B, -(-P // 8) * 8))
    Z = np.empty((2, Mp.shape[1]))  # two rows' padded features
    z_pad, z_pad_b = Z[0], Z[1]
    z = z_pad[:P]  # (views made once: each costs reference counts)
    for k in range(lo, hi):
        kind, prm, nrm = kinds[k], param[k], norm[k]
        SV, SVT, svsq, M = sv_X[k], sv_T[k], sv_sq[k], MT[k]  # (views made once per kernel, not per row)
        stop[k] = n
        errs = 0
        t = start[k]
        if switched[k]:  # the budget is fixed: rows' features do not depend on the updates
            c = n_used[k]
            padded_map(M, Mp)
            rows_per = chunk_rows(c)  # (the rows' kernel values a chunk per call: :func:`chunk_values`)
            D, Kv = np.empty((rows_per, 1, c)), np.empty((rows_per, c))
            work_c, scratch_c = np.empty(rows_per * c), np.empty(rows_per * c)
            switch_row = pending[k]
            while t < n:
                h = min(n, t + rows_per)
                chunk_values(kind, prm, nrm, nonzeros, X, xsq, t, h, SV, SVT, svsq, c, D, Kv, work_c, scratch_c)
                i = t
                if switch_row:  # the switch row: scored and counted on the budget, stepped on z
                    nystrom_features(Mp, Kv[0], z_pad)
                    margin, r = margin_of(F, i, k, K, y[i])
                    ogd_step(z, y[i], r, W, k, eta, K)
                    switch_row = False
                    i += 1
                while i < h:  # two rows at a time (one learn_row in the loop: the compiler inlines it once)
                    pair = i + 1 < h
                    if pair:
                        nystrom_features_pair(Mp, Kv[i - t], Kv[i + 1 - t], z_pad, z_pad_b)
                    else:
                        nystrom_features(Mp, Kv[i - t], z_pad)
                    for u in range(2 if pair else 1):
                        errs += learn_row(Z[u, :P], y[i + u], W, k, eta, hedge_hinge, K, F, L, i + u)
                    i += 2 if pair else 1
                t = h
            kernel_mistakes[k] += errs
            continue
        for t in range(start[k], n):  # (rows here are few: the budget fills, then the kernel switches)
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
def _nystrom_scores_range(lo, hi, rows, kernels, budget, W, MT, K, out):
    X, nonzeros, xsq = rows
    kinds, param, norm = kernels
    sv_X, sv_T, sv_sq, alpha, n_used, switched = budget
    n, P = X.shape[0], MT.shape[2]
    z = np.empty(P)
    for k in range(lo, hi):
        SV, SVT, svsq, M = sv_X[k], sv_T[k], sv_sq[k], MT[k]
        kind, prm, nrm, c = kinds[k], param[k], norm[k], n_used[k]
        rows_per = chunk_rows(c)
        D, Kv = np.empty((rows_per, 1, c)), np.empty((rows_per, c))
        work, scratch = np.empty(rows_per * c), np.empty(rows_per * c)
        for t in range(0, n, rows_per):  # a chunk's kernel values in one call, as in the switched phase
            h = min(n, t + rows_per)
            chunk_values(kind, prm, nrm, nonzeros, X, xsq, t, h, SV, SVT, svsq, c, D, Kv, work, scratch)
            for i in range(t, h):
                if not switched[k]:
                    _budget_score(alpha, k, K, c, Kv[i - t], out, i)
                    continue
                nystrom_features(M, Kv[i - t], z)
                for cl in range(K):
                    out[i, k * K + cl] = feature_score(W, k, cl * P, z)


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
