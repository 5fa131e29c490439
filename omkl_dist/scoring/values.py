"""Kernel values from a pair's parts: the one njit arithmetic every evaluator calls.

A kernel value is built from the pair's dot product (linear, polynomial), squared distance
(gaussian), L1 distance (laplacian) or chi-square sum, and the kind's parameter. The pool scan
(:mod:`.scan`), the per-pair evaluator (:mod:`._pairs`), the block Gram (:mod:`.gram`), the budget
learners (:mod:`omkl_dist.learners._budget`) and the batch evaluators (:mod:`omkl_dist.kernels._numba`)
take these helpers, so the same parts give the same bits on every path: exact cancellations
(duplicated rows with opposite labels) stay exact. The scalar helpers are ``inline="always"``:
their callers' loops vectorise as if the arithmetic were written in place.
"""

from __future__ import annotations

import math

from numba import njit

from ._vexp import _ZERO_ABOVE, vexp_neg

CANCEL = 1e-3  # recompute ‖a−b‖² directly when it is below CANCEL·(‖a‖²+‖b‖²)


@njit(cache=True, nogil=True)
def direct_sqdist(A, i, B, j):
    """‖A[i] − B[j]‖² summed in feature order (no fast-math: identical on every path)."""
    acc = 0.0
    for c in range(A.shape[1]):
        diff = A[i, c] - B[j, c]
        acc += diff * diff
    return acc


@njit(cache=True, nogil=True, inline="always")
def pair_sqdist(asq, bsq, dot, A, i, B, j):
    """‖A[i] − B[j]‖² as ``‖a‖² + ‖b‖² − 2 a·b``, summed directly (:func:`direct_sqdist`) where that
    expression cancels (below ``CANCEL (‖a‖² + ‖b‖²)``)."""
    d2 = asq + bsq - 2.0 * dot
    if d2 < CANCEL * (asq + bsq):
        d2 = direct_sqdist(A, i, B, j)
    return d2


@njit(cache=True, nogil=True)
def l1_chi2(A, i, B, j, need_l1, need_chi2):
    """``(Σ |a − b|, Σ (a − b)²/(a + b))`` over the features of A[i] and B[j], each sum in feature
    order (a chi-square term with ``a + b = 0`` is skipped); a sum not needed stays 0."""
    l1 = 0.0
    chi = 0.0
    for c in range(A.shape[1]):
        diff = A[i, c] - B[j, c]
        if need_l1:
            l1 += abs(diff)
        if need_chi2:
            s = A[i, c] + B[j, c]
            if s != 0.0:
                chi += diff * diff / s
    return l1, chi


@njit(cache=True, nogil=True, inline="always")
def dot_power(x, p):
    """``x**p`` for an integer ``p >= 1`` by repeated multiplication (the polynomial kernels' arithmetic:
    exact for p = 1, no call to ``pow``)."""
    v = x
    for _ in range(p - 1):
        v *= x
    return v


@njit(cache=True, nogil=True, inline="always")
def fourth_power(x):
    """``x**4`` as two squarings: the gaussian of half the width from a gaussian value (program.py)."""
    v = x * x
    return v * v


@njit(cache=True, nogil=True, inline="always")
def exp_neg(x):
    """``exp(−x)`` for x >= 0 by libm, exactly 0 beyond :data:`._vexp._ZERO_ABOVE` (as :func:`._vexp.vexp_neg`)."""
    return 0.0 if x > _ZERO_ABOVE else math.exp(-x)


@njit(cache=True, nogil=True)
def power_up(cur, dot_row, deg, target):
    """``cur`` holds ``dot_row**deg``; raise it to ``dot_row**target`` by repeated multiplication."""
    while deg < target:
        for s in range(cur.shape[0]):
            cur[s] *= dot_row[s]
        deg += 1
    return deg


@njit(cache=True, nogil=True)
def gauss_next(anchor, g, d2, cur, xg, scratch):
    """Replace ``cur`` by the next gaussian's values in a chain: ``exp(-g·d2)`` at a chain anchor,
    else the previous (twice as wide) gaussian's values to the 4th power."""
    if anchor:
        for s in range(cur.shape[0]):
            xg[s] = d2[s] * g
        vexp_neg(xg, cur, scratch)
    else:
        for s in range(cur.shape[0]):
            cur[s] = fourth_power(cur[s])


@njit(cache=True, nogil=True, inline="always")
def norm_factor(kind_degree, sq):
    """κ(x, x)^(-1/2) of a dot-product kernel of degree ``kind_degree`` (1: linear), (x·x)^(-p/2),
    0 for a zero row: a normalised kernel's value is κ(a, b)·factor(a)·factor(b)."""
    if sq <= 0.0:
        return 0.0
    return dot_power(1.0 / math.sqrt(sq), kind_degree)
