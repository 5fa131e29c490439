"""njit evaluation of all kernels of a program for one pair of instances.

Bit-for-bit the same arithmetic as the vectorised pool scan in :mod:`.scan` (same distance
expression, same direct recomputation near cancellation, same exp, same power chains), so the
same pair gives the same kernel value whichever path computes it. That keeps exact cancellations
exact: duplicate rows with opposite labels sum to 0.0 on every path, as in the reference.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._vexp import exp_neg_one
from .program import ACHI2, GAUSS, LAPLACE, LINEAR, POLY
from .row_threads import over_rows
from .values import dot_power, exp_neg, fourth_power, l1_chi2, pair_sqdist


@njit(cache=True, nogil=True, inline="always")
def _term(kind, a, b):
    """One column's term of a kernel's base sum."""
    if kind == LINEAR or kind == POLY:
        return a * b
    if kind == GAUSS:
        return (a - b) * (a - b)
    if kind == LAPLACE:
        return abs(a - b)
    if a + b == 0.0:
        return 0.0
    if kind == ACHI2:
        return 2.0 * a * b / (a + b)
    return (a - b) * (a - b) / (a + b)  # CHI2


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _view_sum(kind, x, z, lo, hi):
    """Σ over columns lo..hi-1 of one kernel's terms. Reassociated so LLVM vectorises the sum: its
    bits differ from a running sum's but not between calls (every path calls this one function)."""
    s = 0.0
    if kind == LINEAR or kind == POLY:
        for f in range(lo, hi):
            s += x[f] * z[f]
    elif kind == GAUSS:
        for f in range(lo, hi):
            d = x[f] - z[f]
            s += d * d
    elif kind == LAPLACE:
        for f in range(lo, hi):
            s += abs(x[f] - z[f])
    else:
        for f in range(lo, hi):
            s += _term(kind, x[f], z[f])
    return s


@njit(cache=True, nogil=True, inline="always")
def view_value(kind, param, x, z, cols, c0, c1):
    """κ(x, z) of one kernel summed directly over its columns ``cols[c0:c1]`` (every column when
    the range is empty): the kernels on feature groups (and additive chi2). A contiguous range of
    columns (a view of a multi-view dataset) is summed vectorised (:func:`_view_sum`)."""
    if c1 == c0:
        s = _view_sum(kind, x, z, np.int64(0), x.shape[0])  # a literal 0 compiles it twice
    elif cols[c1 - 1] - cols[c0] == c1 - c0 - 1:
        s = _view_sum(kind, x, z, cols[c0], cols[c1 - 1] + 1)
    else:
        s = 0.0
        for c in range(c0, c1):
            s += _term(kind, x[cols[c]], z[cols[c]])
    if kind == LINEAR or kind == ACHI2:
        return s
    if kind == POLY:
        return dot_power(s, int(param))
    return exp_neg(param * s)


@njit(cache=True, nogil=True)
def pair_values(A, i, B, j, dot, asq, bsq, kinds, param, src, order, need_l1, need_chi2, direct, vcols, vptr, out):
    """Fill ``out[k] = κ_k(A[i], B[j])`` for every kernel k.
    A ``direct`` program sums every kernel over its own columns (:func:`view_value`)."""
    if direct:
        for k in range(kinds.shape[0]):
            out[k] = view_value(kinds[k], param[k], A[i], B[j], vcols, vptr[k], vptr[k + 1])
        return
    d2 = pair_sqdist(asq, bsq, dot, A, i, B, j)
    l1 = 0.0
    chi = 0.0
    if need_l1 or need_chi2:
        l1, chi = l1_chi2(A, i, B, j, need_l1, need_chi2)
    values_from_bases(dot, d2, l1, chi, kinds, param, src, order, out)


@njit(cache=True, nogil=True, inline="always")
def values_from_bases(dot, d2, l1, chi, kinds, param, src, order, out):
    """``out[k]``, every kernel's value of one pair from its dot product, squared distance, L1
    distance and chi-square sum (those the program needs), in the program's ``order`` (a gaussian
    may be the 4th power of a wider one's value). It takes no array but the program's and
    ``out``, so inlined in a pair loop (:func:`row_values`) it binds no row view per pair."""
    for idx in range(order.shape[0]):
        k = order[idx]
        kind = kinds[k]
        if kind == LINEAR:
            out[k] = dot
        elif kind == POLY:
            out[k] = dot_power(dot, int(param[k]))
        elif kind == GAUSS:
            if src[k] >= 0:
                out[k] = fourth_power(out[src[k]])
            else:
                out[k] = exp_neg_one(d2 * param[k])
        elif kind == LAPLACE:
            out[k] = exp_neg(l1 * param[k])
        else:  # CHI2
            out[k] = exp_neg(chi * param[k])


@njit(cache=True, nogil=True)
def row_values(A, i, B, lo, hi, dots, asq, bsq, prog, vals, pair):
    """``vals[k, s - lo] = κ_k(A[i], B[s])`` for the rows ``s`` in ``[lo, hi)`` of B, by
    :func:`pair_values`' arithmetic (``dots[s]``: the dot products, ``asq``/``bsq[s]``: the squared
    norms, ``pair``: an (m,) scratch). The pair loop holds no array but the arguments (the
    record's read once, no row views, no per-pair call taking arrays): each array an iteration
    binds costs reference counts, ~20x a laplacian's arithmetic. The squared distance is taken
    only for gaussians (every other value ignores it)."""
    if prog.direct:  # feature-group kernels, each summed over its own columns
        for s in range(lo, hi):
            program_values(A, i, B, s, dots[s], asq, bsq[s], prog, pair)
            for k in range(pair.shape[0]):  # (a loop: a slice assignment compiles its shape-error text)
                vals[k, s - lo] = pair[k]
        return
    kinds, param, src, order = prog.kinds, prog.param, prog.src, prog.order
    need_l1, need_chi2 = prog.need_l1, prog.need_chi2
    need_d2 = False
    for k in range(kinds.shape[0]):
        need_d2 = need_d2 or kinds[k] == GAUSS
    for s in range(lo, hi):
        d2 = pair_sqdist(asq, bsq[s], dots[s], A, i, B, s) if need_d2 else 0.0
        l1 = 0.0
        chi = 0.0
        if need_l1 or need_chi2:
            l1, chi = l1_chi2(A, i, B, s, need_l1, need_chi2)
        values_from_bases(dots[s], d2, l1, chi, kinds, param, src, order, pair)
        for k in range(kinds.shape[0]):
            vals[k, s - lo] = pair[k]


@njit(cache=True, nogil=True, inline="always")
def program_values(A, i, B, j, dot, asq, bsq, prog, out):
    """:func:`pair_values` with the program as one record (:meth:`.program.KernelProgram.pair_record`)."""
    pair_values(
        A,
        np.int64(i),  # a prange index is uint64 in the parallel body: a second compile of pair_values
        B,
        j,
        dot,
        asq,
        bsq,
        prog.kinds,
        prog.param,
        prog.src,
        prog.order,
        prog.need_l1,
        prog.need_chi2,
        prog.direct,
        prog.vcols,
        prog.vptr,
        out,
    )


def pair_matrix(A, B, program):
    """All kernels between rows of A and B as (m, nA, nB) through the njit pair path (for tests)."""
    return _pair_matrix(
        np.ascontiguousarray(A, dtype=np.float64), np.ascontiguousarray(B, dtype=np.float64), program.pair_record()
    )


@njit(cache=True, nogil=True)
def _pair_matrix(A, B, prog):
    m = prog.kinds.shape[0]
    out = np.empty((m, A.shape[0], B.shape[0]))
    vals = np.empty(m)
    asq = (A * A).sum(axis=1)
    bsq = (B * B).sum(axis=1)
    dots = A @ B.T
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            program_values(A, i, B, j, dots[i, j], asq[i], bsq[j], prog, vals)
            out[:, i, j] = vals
    return out


def overwrite_exact_columns(A, B, cols, offset, dots) -> None:
    """``dots[:, c - offset] = A @ B[c]`` for the listed columns of B, each dot product summed in
    feature order (no BLAS: the same bits whatever the call), vectorised over the rows of A; the
    columns on threads (:func:`.row_threads.over_rows`)."""
    over_rows(_exact_columns, len(cols), np.ascontiguousarray(A.T), B, cols, offset, dots)


@njit(cache=True, nogil=True)
def _exact_columns(lo, hi, AT, B, cols, offset, dots):
    """Columns ``cols[lo:hi]`` of :func:`overwrite_exact_columns` (``AT``: A transposed, C order)."""
    n = AT.shape[1]
    for j in range(lo, hi):
        c = cols[j]
        acc = np.zeros(n)
        for f in range(AT.shape[0]):
            b = B[c, f]
            for t in range(n):
                acc[t] += AT[f, t] * b
        for t in range(n):
            dots[t, c - offset] = acc[t]
