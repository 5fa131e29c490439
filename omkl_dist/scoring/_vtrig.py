"""A vectorisable ``(cos x, sin x)`` (numba calls libm's scalar ``cos``/``sin`` one value at a time).

FOGD's features are ``cos`` and ``sin`` of every projection: 2,600 values per row for 13 kernels of
100 directions, ~155 million libm calls for one pass over cod-rna -- the whole cost of the learner.
Here both come from one argument reduction and two polynomials, in a loop of float adds, multiplies
and compares that LLVM vectorises (~20x a scalar libm loop, measured on a loaded 2-core machine).

The arithmetic is fdlibm's (FreeBSD's ``e_rem_pio2.c``, ``k_sin.c``, ``k_cos.c``): the argument
reduced by ``n = round(x 2/π)`` against π/2 in three parts (``n π/2`` to ~119 bits: exact products
for ``|n| < 2^20``), the remainder as a double-double ``y0 + y1``, the minimax polynomials of
``sin`` and ``cos`` on ``[-π/4, π/4]`` (by Horner's rule in fused multiply-adds,
:mod:`._fma`) with the tail's correction, and the quadrant ``n mod 4``
choosing and negating them. Measured against glibc's ``cos``/``sin`` over arguments of magnitude
1e-3 .. 3e6: at most 1 ulp apart (3 % of values differ in their last bit). Beyond
:data:`REDUCED_BELOW` (where ``n π/2`` would no longer be exact) it calls libm's. No fast-math
flag: IEEE double arithmetic and fused multiply-adds (one rounding each) in a fixed order, so the
bits are the same on every machine (libm's can differ between glibc versions) and for every caller
-- the engine and the naive reference both call :func:`cos_sin`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._fma import fma

_INV_PIO2 = 6.36619772367581382433e-01  # 2/π
_PIO2_1 = 1.57079632673412561417e00  # first 33 bits of π/2
_PIO2_2 = 6.07710050630396597660e-11  # next 33 bits
_PIO2_2T = 2.02226624879595063154e-21  # π/2 - _PIO2_1 - _PIO2_2
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: (v + shift) - shift rounds v to an integer (|v| < 2^51)
# sin on [-π/4, π/4]: x + x³ (S1 + x² (S2 + …)); cos: 1 - x²/2 + x⁴ (C1 + x² (C2 + …)) (fdlibm's)
_S1, _S2, _S3, _S4, _S5, _S6 = (
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
)
_C1, _C2, _C3, _C4, _C5, _C6 = (
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
)
REDUCED_BELOW = 1.6e6  # < 2^20 π/2: n < 2^20, so n times a 33-bit part of π/2 is exact


# inlined into its callers' loops (FOGD's row loop calls it per row and kernel): a call cost the
# constants' set-up and the arrays' reference counts each time, ~10 % of FOGD's time per row
@njit(cache=True, nogil=True, inline="always")
def cos_sin(p, cos_out, sin_out):
    """``cos_out[i] = cos p[i]``, ``sin_out[i] = sin p[i]`` for the entries of ``p``."""
    D = p.shape[0]
    for i in range(D):
        x = p[i]
        n = (x * _INV_PIO2 + _SHIFT) - _SHIFT
        # x - n π/2 as y0 + y1 (fdlibm's second reduction step, taken always)
        t = x - n * _PIO2_1
        w = n * _PIO2_2
        r = t - w
        w = n * _PIO2_2T - ((t - r) - w)
        y0 = r - w
        y1 = (r - y0) - w
        z = y0 * y0
        v = z * y0
        # the polynomials by Horner's rule in fused multiply-adds (fdlibm's own evaluation order, in
        # separate multiplies and adds, took ~25 % longer; still within 1 ulp of glibc's)
        rs = fma(z, fma(z, fma(z, fma(z, _S6, _S5), _S4), _S3), _S2)
        s = y0 - ((z * fma(-v, rs, 0.5 * y1) - y1) - v * _S1)
        rc = z * fma(z, fma(z, fma(z, fma(z, fma(z, _C6, _C5), _C4), _C3), _C2), _C1)
        hz = 0.5 * z
        wc = 1.0 - hz
        c = wc + (((1.0 - wc) - hz) + fma(z, rc, -(y0 * y1)))
        q = np.int64(n) & 3  # the quadrant: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c)
        odd = (q & 1) == 1
        cq = s if odd else c
        sq = c if odd else s
        cos_out[i] = -cq if (q == 1 or q == 2) else cq
        sin_out[i] = -sq if q >= 2 else sq
    for i in range(D):
        if not abs(p[i]) < REDUCED_BELOW:  # (NaN included: libm's answer)
            cos_out[i] = math.cos(p[i])
            sin_out[i] = math.sin(p[i])
