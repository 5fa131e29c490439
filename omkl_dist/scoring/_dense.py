"""The dense scan of a pool tile: dot-product kernels and gaussians, kernel-major, vectorised over the tile.

For one row each kernel's values over the tile form one contiguous vector (:mod:`.values`: powers
built incrementally, gaussians along their chains) and its score one reassociated reduction
(:func:`weighted_sum`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .rows import n_rows, rows_sqdist
from .values import CANCEL, gauss_next, power_up


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def weighted_sum(a, b):
    """Σ a·b, reassociated so LLVM vectorises the reduction."""
    acc = 0.0
    for s in range(a.shape[0]):
        acc += a[s] * b[s]
    return acc


@njit(cache=True, nogil=True)
def row_sqdist(Xb, t, P, xt, psq, dot_row, d2):
    """``d2[s] = ‖x_t − P[s]‖²`` from the dot products: the expression of :func:`.values.pair_sqdist`,
    vectorised in a first pass, then the direct sums where it cancels."""
    for s in range(d2.shape[0]):
        d2[s] = xt + psq[s] - 2.0 * dot_row[s]
    for s in range(d2.shape[0]):
        if d2[s] < CANCEL * (xt + psq[s]):
            d2[s] = rows_sqdist(Xb, t, P, s)


@njit(cache=True, nogil=True, parallel=True)
def accumulate_dot_gauss(Xb, xsq, P, psq, alphaT, dots, plan, K, xscale, out):
    """Kernel-major scan for dot-product kernels and gaussians.

    For one row t each kernel's values over the tile form one contiguous vector and its score one
    reduction. Dot kernels come sorted by degree (powers built incrementally); gaussians widest
    first, each either an exp anchor or the previous one to the 4th power. Only kernels flagged
    ``plan.dot_on``/``plan.g_on`` are scored; ``plan.g_need`` marks the gaussians whose values must be
    computed (the scored ones and their chain predecessors), see :func:`.program.dot_gauss_plan`. ``alphaT`` has K
    rows per kernel (one per class), kernel k's values meet rows ``k·K … k·K + K − 1``.
    ``xscale[t, c]`` multiplies column c's score of row t: the row's normalisation factor
    (:func:`.program.kernel_scales`; 1.0 for an unnormalised kernel, which leaves the bits as they
    are), the support vectors' factors being folded into ``alphaT``.
    """
    dot_idx, dot_deg, g_idx, g_param, g_anchor, dot_on, g_on, g_need = plan
    B = n_rows(Xb)
    n = n_rows(P)
    for t in prange(B):
        d2 = np.empty(n)
        cur = np.empty(n)
        xg = np.empty(n)
        scratch = np.empty(n)
        dot_row = dots[t]
        cur[:] = dot_row
        deg = 1
        for j in range(dot_idx.shape[0]):
            if dot_on[j]:
                deg = power_up(cur, dot_row, deg, dot_deg[j])
                for c in range(dot_idx[j] * K, dot_idx[j] * K + K):
                    out[t, c] += xscale[t, c] * weighted_sum(alphaT[c], cur)
        if not g_need.any():
            continue
        row_sqdist(Xb, t, P, xsq[t], psq, dot_row, d2)
        for j in range(g_idx.shape[0]):
            if g_need[j]:
                gauss_next(g_anchor[j], g_param[j], d2, cur, xg, scratch)
            if g_on[j]:
                for c in range(g_idx[j] * K, g_idx[j] * K + K):
                    out[t, c] += xscale[t, c] * weighted_sum(alphaT[c], cur)
