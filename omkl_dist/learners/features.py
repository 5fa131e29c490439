"""Online gradient descent on explicit kernel features, one learner per kernel: the update of FOGD
(random Fourier features) and of NOGD after its Nyström phase (Lu, Hoi, Wang, Zhao & Liu, "Large
Scale Online Kernel Learning", JMLR 17(47), 2016, Algorithms 1 and 2).

Kernel k's model is a weight vector ``w_k`` over its features ``z_k(x)`` (P of them): the score is
``f_k(x) = w_k · z_k(x)``, summed in eight lanes (:func:`feature_score`), and on a positive hinge
loss ``y f_k(x) < 1`` the gradient step ``w_k ← w_k + η y z_k(x)``. Multi-class (K classes, a
weight vector per class): the multi-class hinge loss of Crammer & Singer on the rival r (highest-scoring other class),
``ℓ = [1 − f_k(x, y) + f_k(x, r)]_+``; on ``ℓ > 0`` the step ``+η z`` on class y, ``−η z`` on r.

What each kernel hands the Hedge combiner per row: its score(s) ``F`` before the update and the loss
that discounts its weight, the mistake indicator ``y f_k(x) <= 0`` (``f_k(x, y) <= f_k(x, r)``) or
the hinge loss (``hedge_hinge``). The kernels learn apart (the combiner is replayed afterwards,
:func:`omkl_dist.combiners.hedge_loss.combine`), so the loop runs kernels in parallel, rows in order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..combiners.votes import rival
from ..scoring._fma import fma
from ..scoring._vtrig import cos_sin
from ..scoring._wide import wide_vectors
from ..scoring.row_threads import over_kernel_rows, over_rows
from ._budget import nonzeros_of

# rows whose features one pass makes ahead of their updates: their cos/sin in one pass of 8 D values, whole
# 512-bit vectors (a row's D = 100 alone left a scalar tail of 4: ~25 % of the pass)
ROWS_AHEAD = 8


# unsigned indices: numba adds a negative index's wrap-around to every signed one, a compare and select per
# load that LLVM could not drop here (the score's loop took 1.5x as long: measured, issue 36)
_U1, _U2, _U3, _U4, _U5, _U6, _U7 = (np.uint64(i) for i in range(1, 8))


@njit(cache=True, nogil=True, inline="always")
def feature_score(W, k, off, z):
    """``Σ_i W[k, off + i] z[i]`` in a fixed order of eight lanes: lane l sums the terms
    i ≡ l (mod 8) of the first ``P - P mod 8`` in order, the lanes are added pairwise
    ``((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))``, then the last ``P mod 8`` terms in order;
    each term is added by a fused multiply-add (:mod:`omkl_dist.scoring._fma`: one rounding).
    Eight independent chains of adds instead of one of P dependent adds (which was a quarter of
    FOGD's time per row); the naive reference sums in the same order."""
    P = z.shape[0]
    P8 = P - P % 8
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    base = np.uint64(off)
    for i in range(0, P8, 8):
        zi = np.uint64(i)
        wi = base + zi
        a0 = fma(W[k, wi], z[zi], a0)
        a1 = fma(W[k, wi + _U1], z[zi + _U1], a1)
        a2 = fma(W[k, wi + _U2], z[zi + _U2], a2)
        a3 = fma(W[k, wi + _U3], z[zi + _U3], a3)
        a4 = fma(W[k, wi + _U4], z[zi + _U4], a4)
        a5 = fma(W[k, wi + _U5], z[zi + _U5], a5)
        a6 = fma(W[k, wi + _U6], z[zi + _U6], a6)
        a7 = fma(W[k, wi + _U7], z[zi + _U7], a7)
    s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    for i in range(P8, P):
        s = fma(W[k, off + i], z[i], s)
    return s


@njit(cache=True, nogil=True, inline="always")
def _step(W, k, off, z, step):
    for i in range(z.shape[0]):
        W[k, off + i] = fma(step, z[i], W[k, off + i])


@njit(cache=True, nogil=True, inline="always")
def margin_of(F, t, k, K, yt):
    """Kernel k's margin on row t from its score(s) ``F[t]`` and, multi-class, the rival class r:
    ``(y f, -1)``, or ``(f_y − f_r, r)``."""
    if K == 1:
        return yt * F[t, k], np.int64(-1)
    y = int(yt)
    r = rival(F[t, k * K : k * K + K], y)
    return F[t, k * K + y] - F[t, k * K + r], r


@njit(cache=True, nogil=True, inline="always")
def hedge_loss_of(margin, hedge_hinge):
    """What discounts the kernel's Hedge weight: its hinge loss, or its mistake indicator."""
    if hedge_hinge:
        return max(0.0, 1.0 - margin)
    return 1.0 if margin <= 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def ogd_step(z, yt, r, W, k, eta, n_classes):
    """The hinge loss's gradient step on features z: ``+η y z`` (multi-class: ``+η z`` on the true
    class, ``−η z`` on the rival r), each weight by one fused multiply-add."""
    P = z.shape[0]
    if n_classes == 1:
        _step(W, k, 0, z, eta * yt)
    else:
        _step(W, k, int(yt) * P, z, eta)
        _step(W, k, r * P, z, -eta)


@njit(cache=True, nogil=True, inline="always")  # (a call per row and kernel: its arrays' reference counts)
def learn_row(z, yt, W, k, eta, hedge_hinge, n_classes, F, L, t):
    """Kernel k on one row of features z: its score(s) into ``F[t]``, its Hedge loss into
    ``L[t, k]``, the gradient step on a positive hinge loss; returns 1 for a mistake, else 0."""
    K = n_classes
    P = z.shape[0]
    if K == 1:  # (the binary case written out: its score stays in a register, no loop over one class)
        f = feature_score(W, k, 0, z)
        F[t, k] = f
        margin = yt * f
        if margin < 1.0:
            _step(W, k, 0, z, eta * yt)
    else:
        for c in range(K):
            F[t, k * K + c] = feature_score(W, k, c * P, z)
        margin, r = margin_of(F, t, k, K, yt)
        if margin < 1.0:
            ogd_step(z, yt, r, W, k, eta, K)
    L[t, k] = hedge_loss_of(margin, hedge_hinge)
    return 1 if margin <= 0.0 else 0


@njit(cache=True, nogil=True, inline="always")
def fourier_projection(cols, vals, t, nnz, UT, D, p):
    """``p_i = Σ_j x_tj UT[j, i]`` for the D directions, over row t's non-zeros (:func:`._budget.nonzeros_of`:
    a zero feature's term ``fma(0, u, p)`` would leave p as it is) in feature order from +0.0, each term
    added by a fused multiply-add; four features per pass over p (each ``p_i`` loaded and stored once per
    four terms: the passes are load/store bound). :func:`._budget.nonzero_dots`'s passes with FOGD's
    rounding: the budget learners keep theirs, which their naive references compute unfused."""
    if nnz >= 4:  # (the first pass sets p: no pass of zeros)
        v0, v1, v2, v3 = vals[t, 0], vals[t, 1], vals[t, 2], vals[t, 3]
        b0, b1, b2, b3 = UT[cols[t, 0]], UT[cols[t, 1]], UT[cols[t, 2]], UT[cols[t, 3]]
        for i in range(D):
            p[i] = fma(v3, b3[i], fma(v2, b2[i], fma(v1, b1[i], fma(v0, b0[i], 0.0))))
    else:
        for i in range(D):
            p[i] = 0.0
    q = 4 if nnz >= 4 else 0
    while q + 4 <= nnz:
        v0, v1, v2, v3 = vals[t, q], vals[t, q + 1], vals[t, q + 2], vals[t, q + 3]
        b0, b1, b2, b3 = UT[cols[t, q]], UT[cols[t, q + 1]], UT[cols[t, q + 2]], UT[cols[t, q + 3]]
        for i in range(D):
            p[i] = fma(v3, b3[i], fma(v2, b2[i], fma(v1, b1[i], fma(v0, b0[i], p[i]))))
        q += 4
    while q < nnz:
        v0, b0 = vals[t, q], UT[cols[t, q]]
        for i in range(D):
            p[i] = fma(v0, b0[i], p[i])
        q += 1


@njit(cache=True, nogil=True, inline="always")
def fourier_features(cols, vals, counts, t, UT, p, z_cos, z_sin):
    """Row t's features on one kernel's directions ``UT`` (d × D, transposed): the projections
    ``p_i = u_i · x_t`` (:func:`fourier_projection`), then ``z = (cos p_1 … cos p_D, sin p_1 … sin p_D)``
    (``z_cos``, ``z_sin``: its halves) by the vectorised :func:`~omkl_dist.scoring._vtrig.cos_sin`."""
    fourier_projection(cols, vals, t, counts[t], UT, p.shape[0], p)
    cos_sin(p, z_cos, z_sin)


def fourier_rows(X, UT, y, W, eta, hedge_hinge, n_classes, F, L, kernel_mistakes) -> None:
    """FOGD over rows X: each kernel k makes its rows' features on its directions ``UT[k]`` (d × D)
    :data:`ROWS_AHEAD` rows at a time -- their projections (:func:`fourier_projection`), then
    their ``cos``/``sin`` in one vectorised pass -- and learns them (:func:`learn_row`), rows in
    order: a row's features do not depend on the model, so making them ahead changes no bit.
    Kernels and rows on threads in equal shares (:func:`.row_threads.over_kernel_rows`). ``F``
    (n, m K), ``L`` (n, m) out; ``W`` (m, K 2D) and ``kernel_mistakes`` updated in place."""
    args = (*nonzeros_of(X), UT, y, W, eta, hedge_hinge, n_classes, F, L, kernel_mistakes)
    over_kernel_rows(_fourier_rows_range, UT.shape[0], X.shape[0], *args)


def fourier_scores(X, UT, W, n_classes, out) -> None:
    """``out[t, k K + c] = w_{k,c} · z_k(x_t)`` for rows X (no update), kernels on threads."""
    over_rows(_fourier_scores_range, UT.shape[0], *nonzeros_of(X), UT, W, n_classes, out)


# Kernels [lo, hi) each, serial: a kernel's rows do not depend on the other kernels', so kernel ranges
# on threads compute the bits of the prange loops these were, which numba compiled twice (the outlined
# loop body and its caller): FOGD's first fit waited on that (issue 39). Learning: rows [t_lo, t_hi).
@njit(cache=True, nogil=True)
def _fourier_rows_range(
    lo, hi, t_lo, t_hi, cols, vals, counts, UT, y, W, eta, hedge_hinge, n_classes, F, L, kernel_mistakes
):
    wide_vectors()
    D = UT.shape[2]
    R = ROWS_AHEAD
    p, c, s = np.zeros(R * D), np.empty(R * D), np.empty(R * D)
    p_rows = p.reshape(R, D)
    z = np.empty(2 * D)
    for k in range(lo, hi):
        U = UT[k]
        errs = 0
        for t0 in range(t_lo, t_hi, R):
            rows = min(R, t_hi - t0)
            for r in range(rows):
                t = t0 + r
                fourier_projection(cols, vals, t, counts[t], U, D, p_rows[r])
            cos_sin(p, c, s)  # (every row of the pass: a last pass's stale rows are finite, unused)
            for r in range(rows):
                for i in range(D):
                    z[i] = c[r * D + i]
                    z[D + i] = s[r * D + i]
                errs += learn_row(z, y[t0 + r], W, k, eta, hedge_hinge, n_classes, F, L, t0 + r)
        kernel_mistakes[k] += errs


@njit(cache=True, nogil=True)
def _fourier_scores_range(lo, hi, cols, vals, counts, UT, W, n_classes, out):
    n, D = counts.shape[0], UT.shape[2]
    p, z = np.empty(D), np.empty(2 * D)
    z_cos, z_sin = z[:D], z[D:]
    for k in range(lo, hi):
        U = UT[k]
        for t in range(n):
            fourier_features(cols, vals, counts, t, U, p, z_cos, z_sin)
            for c in range(n_classes):
                out[t, k * n_classes + c] = feature_score(W, k, c * 2 * D, z)
