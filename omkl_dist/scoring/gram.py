"""Kernel values between the rows of one block: the engine's in-block Gram matrix (:func:`block_gram`)
and, for learners that keep few rows, one support vector's column of it (:func:`gram_column`).

Same arithmetic as the pool scan (:mod:`.values`), so a pair gives the same bits in the block as
against the pool.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._dense import ScoreWeights, chain_row
from ._pairs import row_values
from .program import dot_gauss_plan
from .row_threads import over_rows
from .rows import later_dots, n_rows, rows_sqdist
from .values import CANCEL, gauss_next, power_up


def block_gram(
    Xb: np.ndarray, xsq: np.ndarray, XXt: np.ndarray, program, active=None, out=None, scale=None
) -> np.ndarray:
    """Kernel values between rows of one block (lower triangle), (m, B, B); with ``active`` only
    those kernels' slices are set. ``out``: a C-contiguous (m, B, B) array to fill (reusing one
    saves the page faults of a fresh allocation, which cost more than the arithmetic). ``scale``:
    the rows' :func:`.program.kernel_scales`, needed when the program has normalised kernels."""
    if program.fast is not None:
        G = np.empty((program.m, len(xsq), len(xsq))) if out is None else out
        over_rows(_gram_dot_gauss, len(xsq), Xb, xsq, XXt, G, dot_gauss_plan(program, active))
    else:
        G = np.zeros((program.m, len(xsq), len(xsq)))
        over_rows(_gram_general, len(xsq), Xb, xsq, XXt, program.pair_record(), G)
    for k in np.flatnonzero(program.norm if active is None else program.norm & np.asarray(active, dtype=bool)):
        G[k] *= scale[:, k][:, None]
        G[k] *= scale[:, k][None, :]
    return G


@njit(cache=True, nogil=True)
def _gram_dot_gauss(lo, hi, Xb, xsq, XXt, G, plan):
    """``G[k, t, s] = κ_k(x_t, x_s)`` inside one block for the rows ``t`` in ``[lo, hi)`` (a
    thread's, :func:`.row_threads.over_rows`), same arithmetic as the pool scan (only the kernels
    flagged on; the others' slices are left unset).

    Full rows rather than the triangle the recurrence reads: uniform work per row vectorises and
    balances across threads better than rows of growing length.
    """
    B = n_rows(Xb)
    no_scores = np.empty((0, 0))
    weights = ScoreWeights(no_scores, no_scores, 1)
    work = np.empty((4, B))
    for t in range(lo, hi):
        chain_row(Xb, t, Xb, xsq[t], xsq, XXt[t], plan, work, G, no_scores, weights)


@njit(cache=True, nogil=True)
def _gram_general(lo, hi, Xb, xsq, XXt, prog, G):
    """``G[:, t, s]`` for the rows ``t`` in ``[lo, hi)`` and ``s < t``, every kernel per pair."""
    m = prog.kinds.shape[0]
    vals = np.empty((m, Xb.shape[0]))
    pair = np.empty(m)
    for t in range(max(lo, 1), hi):
        row_values(Xb, t, Xb, 0, t, XXt[t], xsq[t], xsq, prog, vals, pair)
        for k in range(m):  # (not a slice assignment: numba compiles its shape-error text, ~2 s)
            for s in range(t):
                G[k, t, s] = vals[k, s]


@njit(cache=True, nogil=True)
def gram_column(Xb, XbT, xsq, s, col, plan, want, scale, norm):
    """Fill ``col[k, t] = κ_k(x_t, x_s)`` for the rows t > s of the block and the kernels k with
    ``want[k]`` (those row s became a support vector of): its kernel values against the rows still to
    come (``plan``: a :class:`.program.DotGaussPlan`). Same arithmetic as the pool scan (query norm
    + support-vector norm − 2·dot), vectorised over t; for learners that keep few rows this replaces
    the full block Gram (the recurrence adds the column to the later rows' scores at once, so one
    (m, B) buffer serves every support vector of the block). The dot products are summed in feature
    order, as :func:`._pairs.overwrite_exact_columns` does, so duplicated rows cancel exactly without
    a block-wide check; ``XbT`` is the block :func:`.rows.transposed` (d × B), so they are read
    contiguously. ``Xb`` may be dense or :class:`.rows.CSRRows` (:func:`.rows.later_dots`). A
    normalised kernel (``norm[k]``) gets its values times ``scale[t, k]·scale[s, k]``
    (:func:`.program.kernel_scales` of the block's rows; only dot-product kernels change)."""
    dot_idx, dot_deg, g_idx, g_param, g_anchor, dot_on, g_on, g_need = plan
    B = n_rows(Xb)
    n = B - s - 1
    if n <= 0:
        return
    q = np.empty(n)
    cur = np.empty(n)
    d2 = np.empty(n)
    xg = np.empty(n)
    scratch = np.empty(n)
    q[:] = 0.0
    later_dots(Xb, XbT, s, q)
    for i in range(n):  # (not a slice assignment: numba compiles its shape-error text, ~2 s)
        cur[i] = q[i]
    deg = np.int64(1)  # not a literal 1: power_up would be compiled for that type too
    for j in range(dot_idx.shape[0]):
        if dot_on[j] and want[dot_idx[j]]:  # powers built in the same order whichever are skipped
            deg = power_up(cur, q, deg, dot_deg[j])
            k = dot_idx[j]
            if norm[k]:
                for i in range(n):
                    col[k, s + 1 + i] = cur[i] * scale[s + 1 + i, k] * scale[s, k]
            else:
                for i in range(n):
                    col[k, s + 1 + i] = cur[i]
    need = np.zeros(g_idx.shape[0], dtype=np.bool_)  # the wanted gaussians and their chain predecessors
    for j in range(g_idx.shape[0] - 1, -1, -1):
        need[j] = g_need[j] and (
            (g_on[j] and want[g_idx[j]]) or (j + 1 < g_idx.shape[0] and need[j + 1] and not g_anchor[j + 1])
        )
    if not need.any():
        return
    for i in range(n):
        t = s + 1 + i
        d2[i] = xsq[t] + xsq[s] - 2.0 * q[i]
        if d2[i] < CANCEL * (xsq[t] + xsq[s]):
            d2[i] = rows_sqdist(Xb, t, Xb, s)
    for j in range(g_idx.shape[0]):
        if need[j]:
            gauss_next(g_anchor[j], g_param[j], d2, cur, xg, scratch)
        if need[j] and g_on[j] and want[g_idx[j]]:
            for i in range(n):
                col[g_idx[j], s + 1 + i] = cur[i]
