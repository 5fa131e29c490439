"""The budget engine's compiled loops: per kernel, its learner over a segment's rows (block-exact, see
:mod:`omkl_dist.learners._budget`), and the current model's decision values.

They take the records of :mod:`.records` (the segment's rows, the kernels, the engine's buffers) and
:class:`~omkl_dist.learners.records.BudgetParams`, built once per call by
:class:`~omkl_dist.engine.budget.BudgetEngine`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..combiners.votes import rival
from ..learners._budget import (
    BOGD,
    FORGETRON,
    MSUM_SIZE,
    PROJECTRON,
    PROJECTRONPP,
    RBP,
    buffer_values,
    cancelled_sum,
    gram_triangle,
    kernel_values,
    own_dots,
    self_kernel,
    sparse_own_dots,
    sum2_rounded,
    triangle_start,
    two_sum,
)
from ..learners.bogd import bogd_mc_step, bogd_step
from ..learners.bpas import bpas_mc_step, bpas_step
from ..learners.forgetron import forgetron_mc_step, forgetron_step
from ..learners.projectron import projectron_mc_step, projectron_step
from ..learners.rbp import rbp_mc_step, rbp_step
from ..learners.records import Accumulators, BlockValues, SegmentScratch, Slots
from ..scoring.program import LINEAR, POLY
from ..scoring.row_threads import over_rows

# Decision values: a rounded sum of n terms is within n·1.1e-16·Σ|terms| of the exact sum, so when
# |sum| > 1e-3 Σ|terms| it is accurate to ~1e-10 relative (n <= 1000) and its sign certain; below
# that (duplicated support vectors with opposite coefficients cancelling, or every term ±0) the terms
# are summed exactly, so the sign and value are the true ones, not rounding noise.
_CANCELLED = 1e-3
# a kernel's scale factor is folded into its coefficients when it leaves [1e-100, 1e100]
_SCALE_LO, _SCALE_HI = 1e-100, 1e100


# Inlined in its one caller, _budget_block_range: numba links a called function's compiled module into
# its caller's and LLVM optimises and compiles the whole again, so as a function of its own this loop's
# code went through LLVM twice (the caller's 2.7 s of compile was that second pass; issue 39).
@njit(cache=True, nogil=True, inline="always")
def _kernel_block(k, y, Xb, xsq, XXt, SQ, U, selected, g, integral, nonzeros, kernels, hp, buffers, F, L, ws, state):
    """Kernel k's learner over the rows of one segment (of a :class:`~.records.BudgetRows`); updates its
    buffer (:class:`~.records.BudgetBuffers`) and writes its scores ``F[:, k K : (k + 1) K]`` and
    ``L[:, k]``. ``K`` = 1: the binary learners (labels ±1, one coefficient per slot); K > 1: their
    multi-class rules (labels 0..K−1, K coefficients per slot).

    The segment's kernel values with the buffer of its start come first, as one (rows × B) matrix from
    the rows' dot products with the buffer (summed here, in feature order); then per row t: those
    values, the values with the slots that block rows took since (the segment's own Gram values ``G``,
    gathered through the list of such slots), the scores, and the learner's step on slot-indexed
    coefficients, κ(x, x) and accumulators -- if ``selected[t, k]`` (else no step and no loss for
    Hedge: a stochastic update's kernel not drawn). ``ws``: its work arrays
    (:class:`~omkl_dist.learners.records.SegmentScratch`). ``state``: its scale, slots used, the
    Forgetron's head, Q and M and its mistakes, as the segment before left them; returns them (its
    caller writes them to the buffers once per chunk: written per segment, the threads' kernels
    shared their cache lines)."""
    kind, param, norm = kernels.kinds[k], kernels.param[k], kernels.norm[k]
    dot_kernel = kind == LINEAR or kind == POLY
    learner, budget, K = hp.learner, hp.budget, hp.n_classes
    sv_X, sv_sq, coef, sv_index, sv_kxx = buffers.sv_X, buffers.sv_sq, buffers.coef, buffers.sv_index, buffers.sv_kxx
    acc, acc_lo, kinv = buffers.acc, buffers.acc_lo, buffers.kinv
    n = y.shape[0]
    s, n_used, hd, q, mk, wrong = state
    used0 = n_used
    V, work, scratch, G, parts, fc, row, deg = ws.V, ws.work, ws.scratch, ws.G, ws.parts, ws.fc, ws.row, ws.deg
    Kbuf = ws.values[: n * used0].reshape((n, used0))  # the rows' kernel values with the buffer of the segment start
    if used0 > 0:  # the kernel sums its own dot products, in feature order
        # (rows, 1, used0): its kernel index is 0, typed as k is; integral rows by their non-zeros
        own = ws.dots[: n * used0].reshape((n, 1, used0))
        cols, vals, counts = nonzeros
        if integral:
            sparse_own_dots(cols, vals, counts, ws.BT, used0, own)
        else:
            own_dots(Xb, ws.BT, used0, own)
        buffer_values(kind, param, norm, own, np.int64(0), xsq, Xb, sv_sq[k], sv_X[k], used0, Kbuf, work, scratch)
    gram_from = n  # G holds the rows from this one on (computed when the first row becomes a support vector)
    entry, block_slots, listed = ws.entry, ws.block_slots, ws.listed  # (block_slots: the slots holding a
    for j in range(budget):  # block row, first n_block)
        entry[j] = -1
        listed[j] = False
    plus = learner == PROJECTRONPP
    ck, acck, acclk, kxxk, SV, svsq = coef[k], acc[k], acc_lo[k], sv_kxx[k], sv_X[k], sv_sq[k]
    slots = Slots(ck, entry)
    values = BlockValues(V, kxxk)
    accs = Accumulators(acck, acclk)
    n_block = 0
    for t in range(n):
        for j in range(used0):  # (a loop: a slice assignment costs ~20 ns a row in views)
            V[j] = Kbuf[t, j]
        for i in range(n_block):
            j = block_slots[i]
            r = entry[j]
            V[j] = G[triangle_start(r, n) + t - r - 1]
        for c in range(K):  # Σ_j a_j[c] κ(x_j, x_t) in slot order (unscaled), exact when the terms cancel
            # (written out here: an inlined helper taking the arrays cost an atomic reference count
            # increment and decrement per array and row, ~4 % of a BPAS pass over cod-rna)
            fb = 0.0
            fabs = 0.0
            if dot_kernel:  # their sums cancel on most rows of raw data: exact_dot's first pass alongside
                e = 0.0
                ea = 0.0
                for j in range(n_used):
                    v = ck[j * K + c] * V[j]
                    fb, err = two_sum(fb, v)
                    e += err
                    ea += abs(err)
                    fabs += abs(v)
                if abs(fb) <= _CANCELLED * fabs and fabs != 0.0:
                    fb = sum2_rounded(fb, e, ea, ck, K, c, V, n_used, parts)
                elif abs(fb) <= _CANCELLED * fabs:
                    fb = cancelled_sum(ck, K, c, V, n_used, parts, fabs)
            else:
                for j in range(n_used):
                    v = ck[j * K + c] * V[j]
                    fb += v
                    fabs += abs(v)
                if abs(fb) <= _CANCELLED * fabs:  # heavy cancellation: sum exactly (see msum_add)
                    fb = cancelled_sum(ck, K, c, V, n_used, parts, fabs)
            fc[c] = s * fb
            F[t, k * K + c] = fc[c]
        kxx = self_kernel(kind, param, norm, xsq[t])
        if K == 1:
            yt = y[t]
            f = fc[0]
            if yt * f <= 0.0:
                wrong += 1
            if not selected[t, k]:
                loss, new = 0.0, -1
            elif learner == RBP:
                loss, n_used, new = rbp_step(t, yt, f, kxx, U[t, k], hp, n_used, slots)
            elif learner == FORGETRON:
                loss, state, new = forgetron_step(t, yt, f, kxx, hp, (n_used, hd, s, q, mk), slots, accs, values)
                n_used, hd, s, q, mk = state
            elif learner == BOGD:
                loss, n_used, s, new = bogd_step(t, yt, f, kxx, U[t, k], hp, n_used, s, slots)
            elif plus or learner == PROJECTRON:
                loss, n_used, new = projectron_step(t, yt, f, kxx, hp, n_used, slots, V, kinv[k], deg, plus)
            else:
                loss, n_used, new = bpas_step(t, yt, f, kxx, hp, n_used, slots, values, deg)
        else:
            yt = int(y[t])
            r = rival(fc, yt)
            margin = fc[yt] - fc[r]
            if margin <= 0.0:
                wrong += 1
            if not selected[t, k]:
                loss, new = 0.0, -1
            elif learner == RBP:
                loss, n_used, new = rbp_mc_step(t, yt, r, margin, kxx, U[t, k], hp, n_used, slots)
            elif learner == FORGETRON:
                loss, state, new = forgetron_mc_step(
                    t, yt, r, margin, kxx, hp, (n_used, hd, s, q, mk), slots, accs, values
                )
                n_used, hd, s, q, mk = state
            elif learner == BOGD:
                loss, n_used, s, new = bogd_mc_step(t, yt, r, margin, kxx, U[t, k], hp, n_used, s, slots)
            elif plus or learner == PROJECTRON:
                loss, n_used, new = projectron_mc_step(t, yt, r, margin, kxx, hp, n_used, slots, V, kinv[k], deg, plus)
            else:
                loss, n_used, new = bpas_mc_step(t, yt, r, margin, kxx, hp, n_used, slots, values, row, deg)
        L[t, k] = loss
        if new >= 0:
            kxxk[new] = kxx
            if not listed[new]:
                listed[new] = True
                block_slots[n_block] = new
                n_block += 1
            if gram_from == n:
                gram_from = t
                gram_triangle(kind, param, norm, XXt, SQ, xsq, Xb, t, G, work, scratch)
        if s < _SCALE_LO or s > _SCALE_HI:  # fold the scale into the coefficients (rare)
            for j in range(n_used):
                for c in range(K):
                    ck[j * K + c] *= s
                acck[j] *= s
                acclk[j] *= s
            s = 1.0
    BT = ws.BT
    for j in range(n_used):  # the block rows still holding a slot become buffer rows (and its transpose's)
        r = entry[j]
        if r >= 0:
            for col in range(Xb.shape[1]):  # (a loop: a slice assignment compiles numba's shape-error text)
                SV[j, col] = Xb[r, col]
                BT[col, j] = Xb[r, col]
            svsq[j] = xsq[r]
            sv_index[k, j] = g + r
    return s, n_used, hd, q, mk, wrong


def budget_block(k_lo, k_hi, rows, kernels, hp, buffers, F, L) -> None:
    """Kernels ``[k_lo, k_hi)``'s learners over the segments of a chunk of rows (:func:`_kernel_block`
    segment after segment), on this thread; ``F`` and ``L`` the chunk's rows of the scores."""
    _budget_block_range(k_lo, k_hi, rows, kernels, hp, buffers, F, L)


def budget_scores(Xb, xsq, D, kernels, K, buffers, out) -> None:
    """``out[t, k K + c] = f_k(x_t, c)``: the (class) decision values of the current model (no update);
    ``D`` the rows' dot products with the buffers. Rows on threads."""
    over_rows(_budget_scores_range, Xb.shape[0], Xb, xsq, D, kernels, K, buffers, out)


# Kernels (rows) [lo, hi) each, serial: a kernel's learner (a row's scores) does not depend on the
# others', so ranges on threads compute the bits of the prange loops these were, which numba compiled
# twice (the outlined loop body and its caller, _kernel_block inlined in each): ~a third of the budget
# learners' compile time (issue 39).
@njit(cache=True, nogil=True)
def _budget_block_range(lo, hi, rows, kernels, hp, buffers, F, L):
    y, Xb, xsq, XXt, SQ, U, g, bounds, integral, selected, cols, vals, counts = rows
    ws = _segment_scratch(bounds, hp.budget, Xb.shape[1], hp.n_classes)
    for kk in range(lo, hi):
        SV, BT = buffers.sv_X[kk], ws.BT  # the buffer's transpose, kept up to date by its segments (a
        for j in range(buffers.used[kk]):  # transpose per segment was a fifth of a BPAS pass over a9a)
            for f in range(SV.shape[1]):
                BT[f, j] = SV[j, f]
        state = (buffers.scale[kk], buffers.used[kk], buffers.head[kk], buffers.Q[kk], buffers.M[kk], 0)
        for i in range(bounds.shape[0] - 1):
            a, b = bounds[i], bounds[i + 1]
            state = _kernel_block(
                kk,
                y[a:b],
                Xb[a:b],
                xsq[a:b],
                XXt[a:b],
                SQ[a:b],
                U[a:b],
                selected[a:b],
                g + a,
                integral[i],
                (cols[a:b], vals[a:b], counts[a:b]),
                kernels,
                hp,
                buffers,
                F[a:b],
                L[a:b],
                ws,
                state,
            )
        buffers.scale[kk], buffers.used[kk], buffers.head[kk], buffers.Q[kk], buffers.M[kk] = state[:5]
        buffers.kmistakes[kk] += state[5]


@njit(cache=True, nogil=True, inline="always")
def _segment_scratch(bounds, budget, d, K):
    """A kernel's :class:`~omkl_dist.learners.records.SegmentScratch` for segments ``bounds``."""
    S = 1
    for i in range(bounds.shape[0] - 1):
        S = max(S, bounds[i + 1] - bounds[i])
    B = max(budget, 1)
    tri = max(triangle_start(S - 1, S), 1)
    return SegmentScratch(
        np.empty(B),
        np.empty(max(S * B, tri)),
        np.empty(max(S * B, tri)),
        np.empty(S * B),
        np.empty(S * B),
        np.empty((d, B)),
        np.empty(tri),
        np.empty(B, dtype=np.int64),
        np.empty(B, dtype=np.int64),
        np.empty(B, dtype=np.bool_),
        np.empty(B),
        np.empty(MSUM_SIZE),
        np.empty(K),
        np.empty(K),
    )


@njit(cache=True, nogil=True)
def _budget_scores_range(lo, hi, Xb, xsq, D, kernels, K, buffers, out):
    kinds, param, norm = kernels
    sv_X, sv_sq, coef, scale, used = buffers.sv_X, buffers.sv_sq, buffers.coef, buffers.scale, buffers.used
    m = kinds.shape[0]
    width = max(D.shape[2], 1)
    vals = np.empty(width)
    work = np.empty(width)
    scratch = np.empty(width)
    parts = np.empty(MSUM_SIZE)
    for t in range(lo, hi):
        for k in range(m):
            n = used[k]
            kernel_values(  # (lo as an int64, not a literal 0: one compiled kernel_values, not two)
                kinds[k],
                param[k],
                norm[k],
                D[t, k],
                xsq[t],
                t,
                Xb,
                sv_sq[k],
                np.int64(0),
                sv_X[k],
                n,
                vals,
                work,
                scratch,
            )
            for c in range(K):
                acc = 0.0
                aabs = 0.0
                for j in range(n):
                    v = coef[k, j * K + c] * vals[j]
                    acc += v
                    aabs += abs(v)
                if abs(acc) <= _CANCELLED * aabs:
                    acc = cancelled_sum(coef[k], K, c, vals, n, parts, aabs)
                out[t, k * K + c] = scale[k] * acc
