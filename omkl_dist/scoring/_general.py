"""The general scan of a pool tile: every kernel family, one pair at a time (:mod:`._pairs`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ._pairs import program_values


@njit(cache=True, nogil=True)
def accumulate_general(lo, hi, Xb, xsq, P, psq, alpha, dots, prog, K, xscale, out):
    """The scan of a tile for programs with laplacian, chi-square or feature-group kernels, rows
    ``[lo, hi)`` of the block (a thread's, :func:`.row_threads.over_rows`): every kernel's value
    per pair (:func:`._pairs.pair_values`, ``prog`` its record), then K coefficient columns per
    kernel (``alpha`` rows × m·K) summed in pool order."""
    m = prog.kinds.shape[0]
    vals = np.empty(m)
    work = np.empty(3)
    acc = np.empty(m * K)
    for t in range(lo, hi):
        acc[:] = 0.0
        for s in range(P.shape[0]):
            program_values(Xb, t, P, s, dots[t, s], xsq[t], psq[s], prog, vals, work)
            for k in range(m):
                for c in range(k * K, k * K + K):
                    acc[c] += alpha[s, c] * vals[k]
        for c in range(m * K):
            out[t, c] += xscale[t, c] * acc[c]
