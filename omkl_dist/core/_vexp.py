"""A vectorisable ``exp(-x)`` for x >= 0 (numba has no SIMD exp without Intel's SVML).

Cody-Waite reduction ``x = k ln2 + r`` (|r| <= ln2/2), degree-13 Taylor polynomial for exp(-r)
(truncation < 1e-17), and 2^-k built from exponent bits through the classic 1.5·2^52 shifter, so
the whole loop is float adds/multiplies and 64-bit integer ops that LLVM vectorises. No fast-math:
every caller (pool scan, intra-block pairs) gets bit-identical values for the same argument. Measured
against ``np.exp``: at most 2 ulp in the normal range, subnormal results within 1 unit, and
exactly the same zeros (x > ~745.13 gives 0.0). About 5x faster than a scalar libm loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: adding it leaves round(v) in the low mantissa bits
_SHIFT_BITS = int(np.array([_SHIFT]).view(np.int64)[0])
_TINY = 2.0**-600  # pre-scale so 2^-k stays a normal number for subnormal results
_ZERO_ABOVE = 745.1332191019412  # exp(-x) rounds to 0.0 above this (same as libm)


@njit(cache=True, nogil=True)
def vexp_neg(x, out, scratch):
    """``out[s] = exp(-x[s])`` for arrays of equal length; ``scratch`` is a float64 work array."""
    vexp_neg_n(x, out, scratch, x.shape[0])


@njit(cache=True, nogil=True)
def vexp_neg_n(x, out, scratch, n):
    """:func:`vexp_neg` on the first ``n`` entries (no array views: cheaper inside parallel loops)."""
    for s in range(n):
        scratch[s] = x[s] * _LOG2E + _SHIFT
    bits = scratch.view(np.int64)
    for s in range(n):
        kf = scratch[s] - _SHIFT
        q = kf * _LN2_HI - x[s] + kf * _LN2_LO  # q = -r
        p = 1.0 / 6227020800.0
        p = p * q + 1.0 / 479001600.0
        p = p * q + 1.0 / 39916800.0
        p = p * q + 1.0 / 3628800.0
        p = p * q + 1.0 / 362880.0
        p = p * q + 1.0 / 40320.0
        p = p * q + 1.0 / 5040.0
        p = p * q + 1.0 / 720.0
        p = p * q + 1.0 / 120.0
        p = p * q + 1.0 / 24.0
        p = p * q + 1.0 / 6.0
        p = p * q + 0.5
        p = p * q + 1.0
        p = p * q + 1.0
        k = bits[s] - _SHIFT_BITS
        big = k > 1000
        p = p * _TINY if big else p
        k = k - 600 if big else k
        bits[s] = (1023 - k) << 52
        out[s] = p
    for s in range(n):
        v = out[s] * scratch[s]
        out[s] = 0.0 if x[s] > _ZERO_ABOVE else v
