"""The sparse scans of a pool tile: per kernel, only the rows with a non-zero coefficient.

A tile whose coefficients are mostly zero (OMKC keeps a row only for the kernels that erred) is
read in CSC order (:class:`.tiles.TileCSC`, kernel after kernel); each kernel's rows are gathered
into a contiguous buffer and take the dense scan's arithmetic (:mod:`.values`), so the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._dense import row_sqdist, weighted_sum
from ._vexp import vexp_neg_n
from .rows import n_rows
from .values import fourth_power


@njit(cache=True, nogil=True, inline="always")  # numba-level inlining: the loops vectorise as in place
def sparse_values(base, ev, scratch, cnt, deg, g, steps):
    """``ev[:cnt]``: one kernel's values from ``base[:cnt]`` in the sparse scans -- dot products
    raised to ``deg`` by repeated multiplication, or (``deg`` 0, a gaussian) squared distances
    scaled in place by the chain anchor's ``g``, their exp, then ``steps`` double squarings (the
    dense scan's arithmetic, so the same bits)."""
    if deg > 0:
        for j in range(cnt):
            ev[j] = base[j]
        for _ in range(deg - 1):
            for j in range(cnt):
                ev[j] *= base[j]
    else:
        for j in range(cnt):
            base[j] *= g
        vexp_neg_n(base, ev, scratch, cnt)
        for _ in range(steps):
            for j in range(cnt):
                ev[j] = fourth_power(ev[j])


@njit(cache=True, nogil=True)
def accumulate_sparse(lo, hi, Xb, xsq, P, psq, dots, csc, plan, xscale, out):
    """Per-kernel scan over only the rows with a non-zero coefficient (``csc``: a :class:`.tiles.TileCSC`),
    for rows ``[lo, hi)`` of the block (a thread's, :func:`.row_threads.over_rows`).

    Each kernel's rows are gathered into a contiguous buffer and processed like the dense scan:
    powers by repeated multiplication, a gaussian as its chain anchor's exp followed by the same
    number of double squarings (so the same bits), then one reassociated reduction.
    """
    ptr, rows, coefs = csc
    deg, anchor_param, steps = plan
    n = n_rows(P)
    m = ptr.shape[0] - 1
    cnt_max = 0
    for k in range(m):
        cnt_max = max(cnt_max, ptr[k + 1] - ptr[k])
    d2 = np.empty(n)
    base = np.empty(cnt_max)
    ev = np.empty(cnt_max)
    scratch = np.empty(cnt_max)
    for t in range(lo, hi):
        row_sqdist(Xb, t, P, xsq[t], psq, dots[t], d2)
        for k in range(m):
            lo, hi = ptr[k], ptr[k + 1]
            cnt = hi - lo
            if cnt == 0:
                continue
            src = dots[t] if deg[k] > 0 else d2
            for j in range(cnt):
                base[j] = src[rows[lo + j]]
            sparse_values(base, ev, scratch, cnt, deg[k], anchor_param[k], steps[k])
            out[t, k] += xscale[t, k] * weighted_sum(coefs[lo:hi], ev[:cnt])


@njit(cache=True, nogil=True)
def accumulate_sparse_exact(lo, hi, Xb, xsq, PT, psq, csc, plan, xscale, out):
    """:func:`accumulate_sparse` for integer data (binary, counts) with many features, rows ``[lo, hi)``: a row's dot
    products with a kernel's support vectors are summed over the row's non-zero features only,
    from ``PT`` (d × nnz, as in the direct scan of :mod:`.scan`; ``psq`` their squared norms). Integer dot
    products and ``‖x‖² + ‖s‖² − 2 x·s`` are exact in any order (see :func:`.support_vectors.blas_dots_exact`),
    so these are the BLAS path's values bit for bit, and the rest is :func:`accumulate_sparse`'s
    arithmetic: the same scores, without a dense product over features that are mostly zero."""
    ptr, _, coefs = csc
    deg, anchor_param, steps = plan
    d = Xb.shape[1]
    m = ptr.shape[0] - 1
    cnt_max = 1
    for k in range(m):
        cnt_max = max(cnt_max, ptr[k + 1] - ptr[k])
    feats = np.empty(d, dtype=np.int64)
    base = np.empty(cnt_max)
    ev = np.empty(cnt_max)
    scratch = np.empty(cnt_max)
    for t in range(lo, hi):
        nf = 0
        for f in range(d):
            if Xb[t, f] != 0.0:
                feats[nf] = f
                nf += 1
        xt = xsq[t]
        for k in range(m):
            lo, hi = ptr[k], ptr[k + 1]
            cnt = hi - lo
            if cnt == 0:
                continue
            acc, ev_k = base[:cnt], ev[:cnt]
            acc[:] = 0.0
            i = 0
            while i + 4 <= nf:  # four features per pass over the sums (exact: any order)
                f0, f1, f2, f3 = feats[i], feats[i + 1], feats[i + 2], feats[i + 3]
                x0, x1, x2, x3 = Xb[t, f0], Xb[t, f1], Xb[t, f2], Xb[t, f3]
                p0, p1, p2, p3 = PT[f0, lo:hi], PT[f1, lo:hi], PT[f2, lo:hi], PT[f3, lo:hi]
                for j in range(cnt):
                    acc[j] += (x0 * p0[j] + x1 * p1[j]) + (x2 * p2[j] + x3 * p3[j])
                i += 4
            for i in range(i, nf):
                xf = Xb[t, feats[i]]
                pf = PT[feats[i], lo:hi]
                for j in range(cnt):
                    acc[j] += xf * pf[j]
            if deg[k] == 0:  # squared distances (exact, as the dot products)
                ps = psq[lo:hi]
                for j in range(cnt):
                    acc[j] = xt + ps[j] - 2.0 * acc[j]
            sparse_values(acc, ev, scratch, cnt, deg[k], anchor_param[k], steps[k])
            out[t, k] += xscale[t, k] * weighted_sum(coefs[lo:hi], ev_k)
