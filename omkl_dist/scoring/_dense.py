"""The dense scan of a pool tile: dot-product kernels and gaussians, kernel-major, vectorised over the tile.

For one row each kernel's values over the tile form one contiguous vector (:mod:`.values`: powers
built incrementally, gaussians along their chains) and its score one reassociated reduction
(:func:`weighted_sum`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

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


class ScoreWeights(NamedTuple):
    """How :func:`chain_row` turns a kernel's values over the tile into scores (the pool scan):
    ``out[t, c] += xscale[t, c] · Σ_s alphaT[c, s] κ_k(x_t, s)`` for the kernel's K class columns.
    Read-only."""

    alphaT: np.ndarray
    xscale: np.ndarray
    K: int


@njit(cache=True, nogil=True, inline="always")
def _emit(k, t, cur, G, out, weights):
    if G.shape[0] > 0:  # the block Gram: keep the values
        for s in range(cur.shape[0]):  # (not a slice assignment: numba compiles its shape-error text, ~2 s)
            G[k, t, s] = cur[s]
    else:  # the pool scan: add the kernel's scores
        K = weights.K
        for c in range(k * K, k * K + K):
            out[t, c] += weights.xscale[t, c] * weighted_sum(weights.alphaT[c], cur)


@njit(cache=True, nogil=True, inline="always")
def chain_row(Xb, t, P, xt, psq, dot_row, plan, work, G, out, weights):
    """Walk row t's kernels over the tile ``P`` once, each kernel's values in turn in one vector
    (``work``: four scratch rows of the tile's length): dot kernels by degree (:func:`.values.power_up`),
    then the gaussians along their chains (:func:`.values.gauss_next`). Each kernel flagged on is kept
    in ``G[k, t]`` (the block Gram) when ``G`` is not empty, else scored into ``out`` (the pool scan,
    :class:`ScoreWeights`). The scan and the block Gram share it, so a pair gets the same bits in both."""
    dot_idx, dot_deg, g_idx, g_param, g_anchor, dot_on, g_on, g_need = plan
    d2, cur, xg, scratch = work[0], work[1], work[2], work[3]
    for s in range(cur.shape[0]):
        cur[s] = dot_row[s]
    deg = np.int64(1)  # not a literal 1: power_up would be compiled for that type too
    for j in range(dot_idx.shape[0]):
        if dot_on[j]:
            deg = power_up(cur, dot_row, deg, dot_deg[j])
            _emit(dot_idx[j], t, cur, G, out, weights)
    if not g_need.any():
        return
    row_sqdist(Xb, t, P, xt, psq, dot_row, d2)
    for j in range(g_idx.shape[0]):
        if g_need[j]:
            gauss_next(g_anchor[j], g_param[j], d2, cur, xg, scratch)
        if g_on[j]:
            _emit(g_idx[j], t, cur, G, out, weights)


@njit(cache=True, nogil=True)
def accumulate_dot_gauss(lo, hi, Xb, xsq, P, psq, alphaT, dots, plan, K, xscale, out):
    """Kernel-major scan for dot-product kernels and gaussians, rows ``[lo, hi)`` of the block (a
    thread's, :func:`.row_threads.over_rows`).

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
    n = n_rows(P)
    no_gram = np.empty((0, 0, 0))
    weights = ScoreWeights(alphaT, xscale, K)
    work = np.empty((4, n))
    for t in range(lo, hi):
        chain_row(Xb, t, P, xsq[t], psq, dots[t], plan, work, no_gram, out, weights)
