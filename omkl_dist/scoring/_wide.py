"""Full-width SIMD for one compiled function: :func:`wide_vectors`.

LLVM compiles numba's loops for the host CPU but, on CPUs with 512-bit vectors (Skylake-SP and
later), prefers 256-bit ones (the ``prefer-256-bit`` tuning: wide instructions once lowered the
clock). The feature learners' loops are throughput-bound arithmetic -- FOGD's ``cos``/``sin``
polynomials, NOGD's Nyström projection -- that 512-bit vectors run ~1.4x faster (measured, issue 36).

Exactness: the vector width changes no result. These functions are compiled without fast-math
reassociation, so LLVM vectorises only element-wise work (each lane the scalar code's operations in
the scalar code's order) and never reorders a sum across lanes; contraction into fused multiply-adds
is decided per operation (``fastmath={"contract"}`` only), the same in a vector of 4 or 8 or none.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

# LLVM function attributes read by the x86 backend when it builds the function's subtarget (and by
# the vectorisers through it): vectors of 512 bits are preferred and legal in this function.
_ATTRIBUTES = ('"prefer-vector-width"="512"', '"min-legal-vector-width"="512"')


@intrinsic
def wide_vectors(typingctx):
    """Call first in an ``@njit`` function: lets LLVM use the CPU's widest vectors (512 bits where
    it has them) in that function and what it inlines; a no-op where the CPU has none wider than 256.
    Emits no code, only the function's attributes."""

    def codegen(context, builder, signature, args):
        # llvmlite's attribute set accepts only its enumerated attributes; string attributes are
        # written into the IR as given (``set.add`` bypasses its name check)
        for attribute in _ATTRIBUTES:
            set.add(builder.function.attributes, attribute)
        return context.get_dummy_value()

    return types.void(), codegen
