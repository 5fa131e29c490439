"""Compiled inner loops of the kernel layer.

Two kinds of functions live here, all taking and returning plain float64 arrays:

* *base* computations, one pairwise matrix shared by every kernel of a family
  (squared Euclidean distance, L1 distance, chi-square sums);
* *transforms*, which turn one base matrix into several kernel matrices at once and write them
  straight into their slots of the caller's ``(m, nA, nB)`` output, so a pool never copies.

Callers (``pools.py``) pass C-contiguous float64 arrays and int64 slot arrays only, which keeps
each function to one compiled specialisation. Every loop runs ``prange`` over rows: rows are
independent and each writes its own output rows, so no synchronisation is needed. Each function
also has a serial build, ``SERIAL[name]``, for small blocks (an online learner's one point against
its support vectors), where waking the thread pool costs more than the loop itself.
"""

from __future__ import annotations

import math
import types

from numba import njit, prange

from ..scoring.values import dot_power

# cache=True: the parallel functions take seconds to compile; cached machine code makes the
# second process (tests, Dask workers on the same machine) start at once.
_JIT = {"parallel": True, "cache": True, "nogil": True, "fastmath": False}


@njit(**_JIT)
def _sqdist_from_dot(dot, sq_a, sq_b, out):
    """``out[i, j] = max(‖a_i‖² + ‖b_j‖² − 2 a_i·b_j, 0)`` from a precomputed dot matrix."""
    n_a, n_b = dot.shape
    for i in prange(n_a):
        sa = sq_a[i]
        for j in range(n_b):
            # Add the norms first: a + b is commutative in floating point, so a symmetric dot
            # matrix gives an exactly symmetric distance matrix.
            d = (sa + sq_b[j]) - 2.0 * dot[i, j]
            # Cancellation can push a true 0 slightly negative; a distance is never negative.
            out[i, j] = d if d > 0.0 else 0.0
    return out


@njit(**_JIT)
def _sqdist_direct(A, B, out):
    """``out[i, j] = Σ_k (a_ik − b_jk)²`` summed directly: no cancellation, no BLAS."""
    n_a, d = A.shape
    n_b = B.shape[0]
    for i in prange(n_a):
        for j in range(n_b):
            s = 0.0
            for k in range(d):
                t = A[i, k] - B[j, k]
                s += t * t
            out[i, j] = s
    return out


@njit(**_JIT)
def _l1_dist(A, B, out):
    """``out[i, j] = Σ_k |a_ik − b_jk|`` (Manhattan distance)."""
    n_a, d = A.shape
    n_b = B.shape[0]
    for i in prange(n_a):
        for j in range(n_b):
            s = 0.0
            for k in range(d):
                s += abs(A[i, k] - B[j, k])
            out[i, j] = s
    return out


@njit(**_JIT)
def _chi2_sum(A, B, out):
    """``out[i, j] = Σ_k (a_ik − b_jk)² / (a_ik + b_jk)``, skipping terms with ``a + b = 0``.

    Inputs must be non-negative (checked by the caller); the skip rule is scikit-learn's.
    """
    n_a, d = A.shape
    n_b = B.shape[0]
    for i in prange(n_a):
        for j in range(n_b):
            s = 0.0
            for k in range(d):
                den = A[i, k] + B[j, k]
                if den != 0.0:
                    num = A[i, k] - B[j, k]
                    s += num * num / den
            out[i, j] = s
    return out


@njit(**_JIT)
def _achi2_sum(A, B, out):
    """``out[i, j] = Σ_k 2 a_ik b_jk / (a_ik + b_jk)``, skipping terms with ``a + b = 0``."""
    n_a, d = A.shape
    n_b = B.shape[0]
    for i in prange(n_a):
        for j in range(n_b):
            s = 0.0
            for k in range(d):
                den = A[i, k] + B[j, k]
                if den != 0.0:
                    s += 2.0 * A[i, k] * B[j, k] / den
            out[i, j] = s
    return out


@njit(**_JIT)
def _exp_neg_scaled(D, scales, slots, out):
    """``out[slots[k]] = exp(−scales[k] · D)`` for every k: one base matrix, many widths.

    Serves gaussian (D = squared distance, scale = 1/(2σ²)), laplacian (D = L1, scale = 1/σ)
    and chi-square (D = chi-square sum, scale = γ).
    """
    n_a, n_b = D.shape
    m = scales.shape[0]
    for i in prange(n_a):
        for k in range(m):
            # Negate the scale, not the product, so the rounding matches sklearn's K *= -gamma.
            c = -scales[k]
            s = slots[k]
            for j in range(n_b):
                out[s, i, j] = math.exp(c * D[i, j])
    return out


@njit(**_JIT)
def _powers_from_dot(dot, degrees, slots, out):
    """``out[slots[k]] = dot ** degrees[k]`` for every k (linear is degree 1).

    Integer powers by repeated multiplication (:func:`omkl_dist.scoring.values.dot_power`, the
    online paths' arithmetic): exact for degree 1 and within (p−1) roundings otherwise, no ``pow``.
    """
    n_a, n_b = dot.shape
    m = degrees.shape[0]
    for i in prange(n_a):
        for k in range(m):
            p = degrees[k]
            s = slots[k]
            for j in range(n_b):
                out[s, i, j] = dot_power(dot[i, j], p)
    return out


def _serial_build(parallel_fn):
    """Compile the same loop without threads (``prange`` then runs as ``range``).

    The copy gets its own qualified name so its on-disk cache entry does not collide with the
    parallel build's (numba keys cache files by name and source line, not by compile flags).
    """
    py = parallel_fn.py_func
    fn = types.FunctionType(py.__code__, py.__globals__, py.__name__ + "_serial")
    fn.__qualname__ = py.__qualname__ + "_serial"
    fn.__doc__ = py.__doc__
    return njit(cache=True, nogil=True, fastmath=False)(fn)


SERIAL = {
    fn.__name__: _serial_build(fn)
    for fn in (
        _sqdist_from_dot,
        _sqdist_direct,
        _l1_dist,
        _chi2_sum,
        _achi2_sum,
        _exp_neg_scaled,
        _powers_from_dot,
    )
}
"""Serial build of each parallel function above, by name."""
