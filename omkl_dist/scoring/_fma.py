"""``fma(a, b, c)``: ``a·b + c`` rounded once (IEEE 754's fused multiply-add), in compiled code.

numba has no fused multiply-add of its own, and LLVM fuses ``a * b + c`` only under fast-math
contraction, which it decides per context: an inlined copy of the same expression could fuse in one
caller and not in another, and a reference would not know which. This calls LLVM's ``llvm.fma``,
which is always fused: one instruction where the CPU has FMA (every x86-64 since 2013, every
ARMv8), libm's correctly rounded ``fma`` where it has none -- the same bits everywhere, vectorised
or not.

Why: FOGD's cos/sin polynomials, its projections and the feature learners' scores and steps are
chains of multiply-adds (issue 36): one instruction instead of two. Measured (session 54, same-run
A/B): cos/sin ~20 % faster; a pass of FOGD 1.08-1.18x and of NOGD 1.03-1.09x as fast on cod-rna,
a9a and ijcnn1.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def fma(typingctx, a, b, c):
    """``a·b + c`` with one rounding (float64 arguments)."""
    signature = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, sig, args):
        return builder.fma(*args)

    return signature, codegen


@njit(cache=True)
def fma_arrays(a, b, c):
    """``a·b + c`` elementwise with one rounding each, for 1-D float64 arrays of one length: the
    naive references' way to do the library's fused arithmetic (tests/naive_features.py)."""
    out = np.empty(c.shape[0])
    for i in range(c.shape[0]):
        out[i] = fma(a[i], b[i], c[i])
    return out
