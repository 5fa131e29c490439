"""The general scan of a pool tile: every kernel family, one row's pairs at a time (:mod:`._pairs`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ._pairs import row_values


@njit(cache=True, nogil=True)
def accumulate_general(lo, hi, Xb, xsq, P, psq, alpha, dots, prog, K, xscale, out):
    """The scan of a tile for programs with laplacian, chi-square or feature-group kernels, rows
    ``[lo, hi)`` of the block (a thread's, :func:`.row_threads.over_rows`): every kernel's value
    per pair (:func:`._pairs.row_values`, ``prog`` its record), then K coefficient columns per
    kernel (``alpha`` rows × m·K), each summed in pool order."""
    m = prog.kinds.shape[0]
    S = P.shape[0]
    vals = np.empty((m, S))
    pair = np.empty(m)
    for t in range(lo, hi):
        row_values(Xb, t, P, 0, S, dots[t], xsq[t], psq, prog, vals, pair)
        for k in range(m):
            for c in range(k * K, k * K + K):
                acc = 0.0
                for s in range(S):
                    acc += alpha[s, c] * vals[k, s]
                out[t, c] += xscale[t, c] * acc
