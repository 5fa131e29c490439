"""Dot-product matrices through BLAS in calls of one fixed shape: a row's bits never depend on the
rows it is computed with.

BLAS picks its code by the shape of a call: a small-matrix kernel below some size, edge kernels
for a column count that is not a multiple of its unroll, a split across threads. Measured with
OpenBLAS 0.3.31's SkylakeX kernels: row r of ``A @ B.T`` differs in its last bits between a
product of 8 rows and one of 1,024 rows when ``B`` has 990 rows (and for any row count when ``B``
has 8-40 rows of 123 features). A shard that scores part of a round must get the bits the
in-process engine gets for the whole round, so for data whose dot products BLAS does not compute
exactly (non-integers), every product is taken ``BLAS_ROWS`` rows at a time -- the last group
padded with zero rows -- against ``B`` padded with zero rows to a multiple of ``B_ROWS_MULTIPLE``.
In such calls a row's result depends on neither its neighbours, nor its place in the call, nor
the BLAS thread count (``tests/test_core_kernels.py`` checks it on the machine that runs the suite).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

BLAS_ROWS = 64
B_ROWS_MULTIPLE = 8
_SCRATCH = threading.local()
_CONTROLLER = None  # threadpoolctl's view of the loaded BLAS libraries, found once


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread inside, for loops that alternate small BLAS products with numba's parallel
    regions: OpenBLAS's threads and numba's both spin-wait between calls, and on 2 cores they stalled
    each other (BPAS on a9a, integer rows: 4.1 s wall and 8 s CPU with both, 0.64 s with BLAS on one
    thread). The bits do not change: integer products are exact, the others are taken in calls whose
    rows do not depend on the thread count (above)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    with _CONTROLLER.limit(limits=1, user_api="blas"):
        yield


def _scratch(name: str, shape) -> np.ndarray:
    size = int(np.prod(shape))
    buf = getattr(_SCRATCH, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(max(size, 1))
        setattr(_SCRATCH, name, buf)
    return buf[:size].reshape(shape)


def fixed_shape_dots(A: np.ndarray, B: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``A @ B.T`` (float64, C-contiguous ``(len(A), len(B))``, written to ``out`` if given) from
    BLAS calls of shape ``(BLAS_ROWS, d) x (d, len(B) rounded up to B_ROWS_MULTIPLE)`` only."""
    n, d = A.shape
    m = B.shape[0]
    out = np.empty((n, m)) if out is None else out
    if n == 0 or m == 0:
        return out
    m_pad = m + (-m % B_ROWS_MULTIPLE)
    if m_pad != m:
        Bp = _scratch("b", (m_pad, d))
        Bp[:m] = B
        Bp[m:] = 0.0
        B = Bp
    BT = B.T
    for r0 in range(0, n, BLAS_ROWS):
        r1 = min(r0 + BLAS_ROWS, n)
        rows = A[r0:r1]
        if r1 - r0 < BLAS_ROWS:
            rows = _scratch("a", (BLAS_ROWS, d))
            rows[: r1 - r0] = A[r0:r1]
            rows[r1 - r0 :] = 0.0
        if rows.shape[0] == r1 - r0 and m_pad == m:
            np.matmul(rows, BT, out=out[r0:r1])
        else:
            res = np.matmul(rows, BT, out=_scratch("res", (BLAS_ROWS, m_pad)))
            out[r0:r1] = res[: r1 - r0, :m]
    return out
