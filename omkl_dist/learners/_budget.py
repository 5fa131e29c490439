"""Shared machinery of the budget learners (RBP, Forgetron, BOGD, BPAS, Projectron): a fixed-capacity support-vector
buffer per kernel and the block-exact kernel values (docs/design.md, "Block-exact online learning").

Buffer of one kernel (capacity B). Slot j holds a support vector with *unscaled* coefficient ``a_j``;
its coefficient in the classifier is ``s · a_j`` with the kernel's scale factor ``s``, so shrinking
every coefficient (Forgetron's φ, BOGD's 1 − ηλ and B/(B−1)) is one multiplication. Slots fill
0, 1, …, B−1 while the budget has room; after that a new support vector takes the slot of the one it
replaces ("positions" in the naive references of ``tests/naive_budget.py``). A multi-class buffer
(K classes) holds K unscaled coefficients per slot, slot j's at ``j K .. j K + K − 1``; K = 1 is the
binary layout.

Inside a block of n rows, a slot refers either to a buffer row (``entry[j] = -1``; its kernel value with
row t comes from the block's dot products with the buffer) or to block row r (``entry[j] = r``; kernel
value ``κ(x_r, x_t)`` from the block's own Gram values, :func:`gram_triangle`, computed from the first row
that becomes a support vector on).
Whatever a slot holds, its coefficients, κ(x, x) and accumulators stay in the slot's own entries of the
buffer arrays (a new support vector overwrites the one it replaces), and the engine gathers row t's
kernel values with every slot into one vector ``V`` (``V[j]``: slot j's) before the learner's step, so
the decision value ``f(x_t) = s Σ_j coef_j V_j`` is a plain loop over the slots in slot order: what
instance-by-instance processing gives (summed exactly, see :func:`msum_add`). At the block end the
rows of the block rows still holding a slot are written into their slots.

Kernel values use one arithmetic on every path: dot products are summed in feature order
(:func:`fixed_dots`, or BLAS when the data are integers and every partial sum is exact), squared
norms in feature order, ``‖a‖² + ‖b‖² − 2 a·b`` with the direct sum near cancellation, each gaussian
its own ``exp`` (no shared squaring chains: a kernel's values never depend on which other kernels
are evaluated with it, so a shard owning a few kernels computes the same bits as the whole engine).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from ..scoring._vexp import vexp_neg_n
from ..scoring.program import CHI2, GAUSS, LINEAR, POLY
from ..scoring.row_threads import over_rows
from ..scoring.values import CANCEL, direct_sqdist, dot_power, exp_neg, l1_chi2, norm_factor

# learner codes
RBP, FORGETRON, BOGD, BPAS, PROJECTRON, PROJECTRONPP = 0, 1, 2, 3, 4, 5
LEARNER_CODES = {
    "rbp": RBP,
    "forgetron": FORGETRON,
    "bogd": BOGD,
    "bpas": BPAS,
    "projectron": PROJECTRON,
    "projectron++": PROJECTRONPP,
}
PROJECTING = (PROJECTRON, PROJECTRONPP)  # the learners that keep K_S⁻¹ of their support set
# a first row or slot 0 as an int64: a literal 0 would compile the function it is passed to a second time
# (kernel_values keeps its literal-0 specialisation on purpose: tests/test_numba_cache.py's SPECIALISED)
FROM_FIRST = np.int64(0)


# --------------------------------------------------------------------------- dot products, norms
@njit(cache=True)
def row_sq(X):
    """‖x‖² per row, summed in feature order (the same bits for the same vector on every call)."""
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        acc = 0.0
        for f in range(X.shape[1]):
            acc += X[i, f] * X[i, f]
        out[i] = acc
    return out


@njit(cache=True)
def row_bounds(X):
    """Each row's :func:`~omkl_dist.scoring.rows.integral_bound`: max |x| if every value of the row is
    an integer, else inf (a NaN is not one; an infinity is, with bound inf), in one pass."""
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        bound = 0.0
        for f in range(X.shape[1]):
            v = X[i, f]
            if v != math.floor(v):
                bound = np.inf
                break
            bound = max(bound, abs(v))
        out[i] = bound
    return out


@njit(cache=True)
def _dots_row(A, i, BT, c, out):
    """``out[j] = Σ_f A[i, f] BT[f, j]`` for j < c, each sum in feature order (vectorised over j)."""
    for j in range(c):
        out[j] = 0.0
    for f in range(A.shape[1]):
        a = A[i, f]
        for j in range(c):
            out[j] += a * BT[f, j]


@njit(cache=True, nogil=True)
def row_nonzeros(X, cols, vals, counts):
    """Each row's non-zero features in feature order: ``counts[t]`` of them, their columns
    ``cols[t, :counts[t]]`` and values ``vals[t, :counts[t]]`` (found once per segment for every
    kernel's dot products with it, :func:`nonzero_dots`). Each value is written at the next place and
    kept there if non-zero (a branch per value, mispredicted at each of a sparse row's non-zeros, took
    1.5x the time on a9a)."""
    for t in range(X.shape[0]):
        q = 0
        for f in range(X.shape[1]):
            a = X[t, f]
            cols[t, q] = f
            vals[t, q] = a
            q += a != 0.0
        counts[t] = q


@njit(cache=True, nogil=True, inline="always")
def nonzero_dots(cols, vals, t, nnz, BT, c, out):
    """:func:`_dots_row` of row t without the terms of its zero features, given by its non-zeros
    (:func:`row_nonzeros`): the same bits for finite values (a term ``±0`` added to a sum started at
    +0.0 changes nothing, not even a zero's sign), from +0.0 in feature order, taken four features per pass over
    ``out[:c]`` (each ``out[j]`` loaded and stored once per four products, not once per product:
    the passes were load/store bound)."""
    if nnz >= 4:
        v0, v1, v2, v3 = vals[t, 0], vals[t, 1], vals[t, 2], vals[t, 3]
        b0, b1, b2, b3 = BT[cols[t, 0]], BT[cols[t, 1]], BT[cols[t, 2]], BT[cols[t, 3]]
        for j in range(c):
            out[j] = (((0.0 + v0 * b0[j]) + v1 * b1[j]) + v2 * b2[j]) + v3 * b3[j]
    else:
        for j in range(c):
            out[j] = 0.0
    q = 4 if nnz >= 4 else 0
    while q + 4 <= nnz:
        v0, v1, v2, v3 = vals[t, q], vals[t, q + 1], vals[t, q + 2], vals[t, q + 3]
        b0, b1, b2, b3 = BT[cols[t, q]], BT[cols[t, q + 1]], BT[cols[t, q + 2]], BT[cols[t, q + 3]]
        for j in range(c):
            out[j] = (((out[j] + v0 * b0[j]) + v1 * b1[j]) + v2 * b2[j]) + v3 * b3[j]
        q += 4
    while q < nnz:
        v0, b0 = vals[t, q], BT[cols[t, q]]
        for j in range(c):
            out[j] += v0 * b0[j]
        q += 1


def nonzeros_of(X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows X's non-zero features (:func:`row_nonzeros`) as ``(cols, vals, counts)``."""
    n, d = X.shape
    cols, vals, counts = np.empty((n, d), dtype=np.int32), np.empty((n, d)), np.empty(n, dtype=np.int64)
    row_nonzeros(X, cols, vals, counts)
    return cols, vals, counts


@njit(cache=True, nogil=True)
def segment_dots(X, bounds, integral, gaussian, xsq, XXt, SQ, cols, vals, counts):
    """For each segment ``[bounds[i], bounds[i + 1])`` of rows X: the dot products among its rows,
    ``XXt[a + s, t] = X[a + s] · X[a + t]`` in feature order -- from the rows' non-zeros
    (:func:`row_nonzeros`: ``cols``, ``vals``, ``counts``) where ``integral[i]``, the same bits --,
    and with ``gaussian`` their squared distances ``SQ`` (:func:`row_sqdists`). One call for a chunk's
    segments: calls per segment from Python (and for integral rows a BLAS product each) were 2-5 % of
    a BPAS pass over cod-rna and a9a, on the thread that also runs kernels."""
    for i in range(bounds.shape[0] - 1):
        a, b = bounds[i], bounds[i + 1]
        Xs = X[a:b]
        XT = np.ascontiguousarray(Xs.T)
        if integral[i]:  # (a9a: 14 non-zeros of 123 features)
            for s in range(b - a):
                nonzero_dots(cols, vals, a + s, counts[a + s], XT, b - a, XXt[a + s])
        else:
            for s in range(b - a):
                _dots_row(Xs, s, XT, b - a, XXt[a + s])
        if gaussian:
            row_sqdists(Xs, xsq[a:b], XXt[a:b], SQ[a:b])


@njit(cache=True)
def own_dots(Xb, BT, c, out):
    """``out[t, 0, q] = Xb[t] · B[q]`` for q < c, each sum in feature order (as :func:`fixed_dots`),
    given ``BT[:, :c]``, B's first c rows transposed ((d, >= c): the budget learners keep their
    buffer's transpose from segment to segment); ``out`` (rows, 1, c) is the caller's."""
    n, d = Xb.shape
    dots = out.reshape(n, c)  # (written in place: a call per row on a view of it cost an atomic
    # reference count increment and decrement per row)
    for t in range(n):  # four features per pass over the row's dots, as nonzero_dots (the passes
        # were load/store bound); each sum still from +0.0 in feature order
        f = 0
        for j in range(c):
            dots[t, j] = 0.0
        while f + 4 <= d:
            a0, a1, a2, a3 = Xb[t, f], Xb[t, f + 1], Xb[t, f + 2], Xb[t, f + 3]
            b0, b1, b2, b3 = BT[f], BT[f + 1], BT[f + 2], BT[f + 3]
            for j in range(c):
                dots[t, j] = (((dots[t, j] + a0 * b0[j]) + a1 * b1[j]) + a2 * b2[j]) + a3 * b3[j]
            f += 4
        while f < d:
            a0, b0 = Xb[t, f], BT[f]
            for j in range(c):
                dots[t, j] += a0 * b0[j]
            f += 1


@njit(cache=True)
def sparse_own_dots(cols, vals, counts, BT, c, out):
    """:func:`own_dots` of integral rows given by their non-zeros (:func:`row_nonzeros`, found once
    for every kernel): four non-zero features per pass over a row's dots (a9a: 14 of 123 features).
    Every value of the rows and of B an integer (finite), each sum is exact in any order and its zero
    terms can be skipped (skipping a term ``0 · b`` of a sum started at +0.0 never changes it, not
    even a zero's sign)."""
    n = counts.shape[0]
    dots = out.reshape(n, c)
    for t in range(n):
        nonzero_dots(cols, vals, t, counts[t], BT, c, dots[t])


def fixed_dots(A, BT, counts, out) -> None:
    """``out[i, k, j] = A[i] · B_k[j]`` for j < counts[k], with ``BT[k] = B_kᵀ`` (d × c): dot products
    summed in feature order, so the same pair of vectors gives the same bits wherever it occurs.
    The (row, kernel) pairs on threads (:func:`.row_threads.over_rows`): each pair's sums are its
    own, the bits of the prange loop this was, in a third of its compile time (issue 39)."""
    over_rows(_fixed_dots_range, BT.shape[0] * A.shape[0], A, BT, counts, out)


@njit(cache=True, nogil=True)
def _fixed_dots_range(lo, hi, A, BT, counts, out):
    m = BT.shape[0]
    for idx in range(lo, hi):
        i = idx // m
        k = idx - i * m
        _dots_row(A, i, BT[k], counts[k], out[i, k])


# --------------------------------------------------------------------------- kernel values
# (the arithmetic of omkl_dist.scoring.values, vectorised over one row's buffer)
@njit(cache=True, inline="always")
def _degree(kind, param):
    """The power of a dot-product kernel's dot product: 1 for linear, p for polynomial."""
    return 1 if kind == LINEAR else int(param)


@njit(cache=True, inline="always")
def _dot_kernel(dot, p, norm, fa, bsq):
    """A linear/polynomial kernel's value from the pair's dot product, as :func:`kernel_values` gives it
    (``fa``: the first row's :func:`.values.norm_factor` when ``norm``, the normalised kernel)."""
    v = dot_power(dot, p)
    if norm:
        v *= fa * norm_factor(p, bsq)
    return v


@njit(cache=True)
def kernel_values(kind, param, norm, dots, asq, i, A, bsq, lo, B, n, out, work, scratch):
    """``out[q] = κ(A[i], B[lo + q])`` for q < n, from their dot products ``dots[q]`` and squared norms.

    Linear/polynomial: the dot product to the power p by repeated multiplication (``norm``: times
    both rows' :func:`.values.norm_factor`, the normalised kernel). Gaussian:
    ``exp(-(‖a‖² + ‖b‖² - 2 a·b) / 2σ²)``, the squared distance summed directly when the expression
    cancels (below ``CANCEL (‖a‖² + ‖b‖²)``). Laplacian and chi-square: direct sums per pair.
    """
    if kind == LINEAR:
        for q in range(n):
            out[q] = dots[q]
    elif kind == POLY:
        p = int(param)
        for q in range(n):
            out[q] = dot_power(dots[q], p)
    elif kind == GAUSS:
        # :func:`.values.pair_sqdist`'s arithmetic in passes that vectorise: the expanded distances,
        # then the direct sums where they cancel (a few % of the pairs of raw cod-rna), then the scale
        for q in range(n):
            work[q] = asq + bsq[lo + q] - 2.0 * dots[q]
        for q in range(n):
            if work[q] < CANCEL * (asq + bsq[lo + q]):
                work[q] = direct_sqdist(A, i, B, lo + q)
        for q in range(n):
            work[q] *= param
        vexp_neg_n(work, out, scratch, n)
    else:  # LAPLACE, CHI2
        chi2 = kind == CHI2
        for q in range(n):
            l1, chi = l1_chi2(A, i, B, lo + q, not chi2, chi2)
            out[q] = exp_neg((chi if chi2 else l1) * param)
    if norm and (kind == LINEAR or kind == POLY):
        p = _degree(kind, param)
        fa = norm_factor(p, asq)
        for q in range(n):
            out[q] *= fa * norm_factor(p, bsq[lo + q])


_ONE64 = np.uint64(1)


@njit(cache=True)
def buffer_values(kind, param, norm, D, k, xsq, Xb, bsq, B, c, out, work, scratch):
    """``out[t, q] = κ(Xb[t], B[q])`` for every row t and q < c, from the dot products ``D[t, k, q]``:
    :func:`kernel_values` row by row, a gaussian's as one pass over the whole (rows × c) matrix (the
    same arithmetic per value, without a call per row); ``work`` and ``scratch`` hold rows × c."""
    n = Xb.shape[0]
    if kind == LINEAR or kind == POLY:  # (no call per row: its views and arguments cost reference counts)
        p = _degree(kind, param)
        if not norm:
            for t in range(n):
                for q in range(c):
                    out[t, q] = dot_power(D[t, k, q], p)
            return
        for q in range(c):  # the budget rows' factors once, not per row (a square root and a division each)
            work[q] = norm_factor(p, bsq[q])
        for t in range(n):  # _dot_kernel's arithmetic
            fa = norm_factor(p, xsq[t])
            for q in range(c):
                out[t, q] = dot_power(D[t, k, q], p) * (fa * work[q])
        return
    if kind != GAUSS:
        for t in range(n):
            kernel_values(kind, param, norm, D[t, k], xsq[t], t, Xb, bsq, np.int64(0), B, c, out[t], work, scratch)
        return
    scaled_sqdists(D, k, xsq, Xb, bsq, B, c, param, work)
    vexp_neg_n(work, out.reshape(n * c), scratch, n * c)


@njit(cache=True, nogil=True)
def scaled_sqdists(D, k, xsq, Xb, bsq, B, c, scale, out):
    """``out[t c + q] = ‖Xb[t] − B[q]‖² · scale`` for every row t and q < c, from the dot products
    ``D[t, k, q]``: :func:`kernel_values`' distances (expanded, summed directly where that cancels).
    With ``scale`` 1.0 these are the distances themselves, which times a gaussian's parameter give the
    bits of that gaussian's own call (``d · 1.0`` is ``d``)."""
    # one vectorised pass per row: the scaled distances, and a byte per pair whose expanded distance
    # cancels; those pairs (3.7 % of raw cod-rna's, in 95 % of its rows, a few each) are then summed
    # directly, found eight bytes at a time (a test and branch per pair mispredicted, and a list of
    # them built pair by pair cost as much as the pass)
    flags = np.zeros(-(-c // 8) * 8, dtype=np.uint8)
    words = flags.view(np.uint64)
    for t in range(Xb.shape[0]):
        xt, base = xsq[t], t * c
        cancels = 0
        for q in range(c):
            s = xt + bsq[q]
            d2 = s - 2.0 * D[t, k, q]
            hit = d2 < CANCEL * s
            flags[q] = hit
            cancels += hit
            out[base + q] = d2 * scale
        if cancels:
            for w in range(words.shape[0]):
                bits = words[w]
                while bits:  # (byte i of a word is its bits 8i..8i+7: numba's platforms are little-endian)
                    q = w * 8 + (trailing_zeros(bits) >> 3)
                    out[base + q] = direct_sqdist(Xb, t, B, q) * scale
                    bits &= bits - _ONE64


@njit(cache=True)
def self_kernel(kind, param, norm, sq):
    """κ(x, x): (x·x)^p for the dot kernels (normalised: 1, 0 for a zero row), 1 for the distance kernels."""
    if norm and (kind == LINEAR or kind == POLY):
        return 1.0 if sq > 0.0 else 0.0
    if kind == LINEAR:
        return sq
    if kind == POLY:
        return dot_power(sq, int(param))
    return 1.0


@njit(cache=True)
def row_sqdists(Xb, xsq, XXt, out):
    """``out[s, t] = ‖x_s − x_t‖²`` for the rows t > s of a segment, with :func:`kernel_values`'s
    arithmetic (expanded from the dots ``XXt``, summed directly where that cancels): computed once
    per segment for every gaussian kernel instead of once per kernel."""
    n = Xb.shape[0]
    for s in range(n):  # two passes per row, as kernel_values (8x faster than values.pair_sqdist per pair)
        for t in range(s + 1, n):
            out[s, t] = xsq[s] + xsq[t] - 2.0 * XXt[s, t]
        for t in range(s + 1, n):
            if out[s, t] < CANCEL * (xsq[s] + xsq[t]):
                out[s, t] = direct_sqdist(Xb, s, Xb, t)


@njit(cache=True, inline="always")
def triangle_start(s, n):
    """Where row s's values start in a packed upper triangle of n rows: ``(s, t)``, t > s, is at
    ``triangle_start(s, n) + t − s − 1`` (rows s, s + 1, … follow each other)."""
    return s * (n - 1) - (s * (s - 1)) // 2


@njit(cache=True)
def gram_triangle(kind, param, norm, XXt, SQ, xsq, Xb, s0, G, work, scratch):
    """``G[triangle_start(s, n) + t − s − 1] = κ(x_s, x_t)`` for the segment's rows s0 <= s < t: its own
    Gram values from the first row s0 that became a support vector on (a later row needs a column only
    once an earlier one is a support vector), as one vectorised pass for a gaussian (from the shared
    squared distances ``SQ``, :func:`row_sqdists`) and row by row (:func:`kernel_values`) otherwise;
    the same bits as :func:`kernel_values` per column."""
    n = Xb.shape[0]
    lo = triangle_start(s0, n)
    size = triangle_start(n - 1, n) - lo
    if size <= 0:
        return
    if kind == GAUSS:
        i = 0
        for s in range(s0, n):
            for t in range(s + 1, n):
                work[i] = SQ[s, t] * param
                i += 1
        vexp_neg_n(work, G[lo:], scratch, size)
        return
    if kind == LINEAR or kind == POLY:  # (as buffer_values: no call per row)
        p = _degree(kind, param)
        for s in range(s0, n - 1):
            fa = norm_factor(p, xsq[s]) if norm else 1.0
            start = triangle_start(s, n) - s - 1
            for t in range(s + 1, n):
                G[start + t] = _dot_kernel(XXt[s, t], p, norm, fa, xsq[t])
        return
    for s in range(s0, n - 1):
        kernel_values(
            kind,
            param,
            norm,
            XXt[s, s + 1 :],
            xsq[s],
            s,
            Xb,
            xsq,
            s + 1,
            Xb,
            n - s - 1,
            G[triangle_start(s, n) :],
            work,
            scratch,
        )


# --------------------------------------------------------------------------- slots
@njit(cache=True, inline="always")
def place(j, t, a, coef, entry):
    """Block row t (unscaled coefficient a) takes slot j, replacing what the slot held."""
    coef[j] = a
    entry[j] = t


@njit(cache=True, inline="always")
def place_pair(j, t, K, a, y, r, coef, entry):
    """Multi-class: block row t takes slot j with unscaled coefficients ``+a`` on class y and ``−a`` on
    class r (the pair φ(x, y) − φ(x, r) of a multi-class update), replacing what the slot held.
    Slot j's K coefficients are ``coef[j K : (j + 1) K]``."""
    clear_slot(j, K, coef)
    entry[j] = t
    coef[j * K + y] = a
    coef[j * K + r] = -a


@njit(cache=True, inline="always")
def clear_slot(j, K, coef):
    """Zero slot j's K coefficients."""
    for c in range(K):
        coef[j * K + c] = 0.0


@njit(cache=True, inline="always")
def random_slot(u, budget):
    """The slot a uniform draw ``u`` in [0, 1) removes from a full buffer: ``int(u B)`` (at most B − 1)."""
    j = int(u * budget)
    return j if j < budget else budget - 1


@njit(cache=True, inline="always")
def free_or_random_slot(u, budget, used):
    """``(slot, used)`` for a new support vector: the next free slot, or a random one of a full buffer."""
    if used < budget:
        return used, used + 1
    return random_slot(u, budget), used


# Exact summation of decision values. A decision value is a sum of terms that cancel exactly for
# duplicated support vectors with opposite coefficients (binary data: equal distances, equal kernel
# values); a rounded sum then returns noise of the largest terms' rounding, whose sign is arbitrary,
# instead of the small true value. Shewchuk's non-overlapping partials (the algorithm of Python's
# ``math.fsum``) keep the sum exact; the final step rounds it correctly, like ``math.fsum``.
MSUM_SIZE = 64  # non-overlapping partials of doubles are ~2^53 apart: at most ~40 of them


@njit(cache=True, inline="always")
def msum_add(p, n, x):
    """Add x to the exact sum held in partials ``p[:n]``; returns the new count."""
    i = 0
    for j in range(n):  # (selects, not branches: which way they go depends on the data, unpredictably)
        y = p[j]
        swap = abs(x) < abs(y)
        big = y if swap else x
        small = x if swap else y
        hi = big + small
        lo = small - (hi - big)
        p[i] = lo  # (i <= j: p[j] is read already; a zero lo is overwritten by the next one kept)
        i += lo != 0.0
        x = hi
    if i >= p.shape[0]:  # cannot happen for finite doubles; keep going, inexactly, rather than fail
        i = p.shape[0] - 1
        p[i - 1] += p[i]
    p[i] = x
    return i + 1


@njit(cache=True, inline="always")
def msum_value(p, n):
    """The correctly rounded value of the exact sum in ``p[:n]`` (as ``math.fsum`` rounds it).

    (Written without ``break`` and without assigning to ``n``: inlined into :func:`exact_dot`, whose
    array arguments' reference counts LLVM then prunes.)"""
    hi = 0.0
    lo = 0.0
    i = n
    if i > 0:
        i -= 1
        hi = p[i]
    while i > 0 and lo == 0.0:  # (a non-zero lo, or a NaN, ends the scan)
        x = hi
        i -= 1
        y = p[i]
        hi = x + y
        yr = hi - x
        lo = y - yr
    below = p[i - 1] if i > 0 else 0.0
    if (lo < 0.0 and below < 0.0) or (lo > 0.0 and below > 0.0):
        y = lo * 2.0
        x = hi + y
        yr = x - hi
        if y == yr:
            hi = x
    return hi


_FINITE = 1e300  # above: leave overflow to the partials


@njit(cache=True, inline="always")
def two_sum(a, b):
    """``(a + b, its rounding error)``: the error is exact (Knuth's TwoSum, no overflow)."""
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


@njit(cache=True, inline="always")
def exact_dot(coef, K, c, V, n, parts):
    """``Σ_j coef[j K + c] V[j]`` over j < n, the products rounded, their sum correctly rounded: the
    bits :func:`msum_add` and :func:`msum_value` give (``parts``: their scratch), about 6x faster.

    A rounded sum s with the exact errors of its additions (Sum2, Ogita, Rump & Oishi 2005) holds the
    exact sum as ``s + Σ err``; ``r = fl(s + fl Σ err)``, with its own exact error ρ, is then the
    correctly rounded sum whenever ρ plus the bound ``(n + 1) 2⁻⁵² Σ|err|`` on the error of ``fl Σ err``
    stays below an eighth of r's ulp (half the gap below a power of two, with room for the bound's own
    rounding): r is then the one double nearest the exact sum, whatever the tie rule. Otherwise (an
    exact or near-exact zero, a sum on a rounding boundary, overflow) the partials decide."""
    s = 0.0
    e = 0.0
    ea = 0.0
    for j in range(n):
        s, err = two_sum(s, coef[j * K + c] * V[j])
        e += err
        ea += abs(err)
    return sum2_rounded(s, e, ea, coef, K, c, V, n, parts)


@njit(cache=True, inline="always")
def sum2_rounded(s, e, ea, coef, K, c, V, n, parts):
    """:func:`exact_dot` from its first pass (the rounded sum ``s``, the sum ``e`` of its additions'
    exact errors and their absolute sum ``ea``), e.g. taken alongside a decision value's sum: the
    certificate, else the partials."""
    r, rho = two_sum(s, e)
    certain = r != 0.0 and abs(r) < _FINITE
    if certain:
        certain = abs(rho) + (n + 1) * 2.0**-52 * ea < math.ldexp(1.0, math.frexp(r)[1] - 55)
    if not certain:
        n_parts = np.int64(0)
        for j in range(n):
            n_parts = msum_add(parts, n_parts, coef[j * K + c] * V[j])
        r = msum_value(parts, n_parts)
    last_use(coef, V, parts)  # (one exit, every call inlined: no reference counting per call)
    return r


@njit(cache=True)
def cancelled_sum(coef, K, c, V, n, parts, abs_sum):
    """:func:`exact_dot` for a slot sum whose rounded value cancelled (``abs_sum`` = Σ|terms|).

    ``abs_sum = 0``: every term is ±0 (a narrow gaussian far from every support vector: all its
    values underflow to 0, the commonest case by far on raw data). Their exact sum is the one the
    partials give -- −0.0 when every term is −0.0 (n >= 1), else +0.0 -- found by one sign pass,
    not by a pass through the partials per term."""
    if abs_sum != 0.0:
        out = exact_dot(coef, K, c, V, n, parts)
    else:
        negative = 0
        for j in range(n):
            negative += math.copysign(1.0, coef[j * K + c] * V[j]) < 0.0
        out = -0.0 if n > 0 and negative == n else 0.0
    last_use(coef, V, parts)  # (as exact_dot's: called per row and kernel, on a view of the shared buffer)
    return out


# Reference counting of a step's array arguments. numba increments an array argument's count on entry and
# decrements it after the argument's last use on each path; LLVM's pruning pass removes the pair only
# when the decrement is in the one block every path reaches and no path leaves in between (a call that
# may raise, a second ``return``). A step called per row and kernel therefore has a single exit, inlines
# its helpers and ends with ``last_use(...)`` of its arrays: its compiled code has no NRT_incref/decref
# (an atomic add and subtract per array, row and kernel; perf charged ~14 % of a BPAS pass over cod-rna
# to reference counting in all, of which removing bpas_step's saved 3-7 %: BENCHMARKS.md).
@njit(cache=True, inline="always")
def last_use(a, b, c):
    """Nothing: a use of the step's array arguments (records or tuples of them) in its exit block."""


@njit(cache=True, inline="always")
def hinge(y, f):
    v = 1.0 - y * f
    return v if v > 0.0 else 0.0
