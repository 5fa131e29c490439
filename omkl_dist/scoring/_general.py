"""The general scan of a pool tile: every kernel family, one pair at a time (:mod:`._pairs`)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._pairs import program_values


@njit(cache=True, nogil=True, parallel=True)
def accumulate_general(Xb, xsq, P, psq, alpha, dots, prog, K, xscale, out):
    """The scan of a tile for programs with laplacian, chi-square or feature-group kernels: every
    kernel's value per pair (:func:`._pairs.pair_values`, ``prog`` its record), then K coefficient
    columns per kernel (``alpha`` rows × m·K) summed in pool order."""
    B = Xb.shape[0]
    m = prog.kinds.shape[0]
    for t in prange(B):
        vals = np.empty(m)
        work = np.empty(3)
        acc = np.zeros(m * K)
        for s in range(P.shape[0]):
            program_values(Xb, t, P, s, dots[t, s], xsq[t], psq[s], prog, vals, work)
            for k in range(m):
                for c in range(k * K, k * K + K):
                    acc[c] += alpha[s, c] * vals[k]
        for c in range(m * K):
            out[t, c] += xscale[t, c] * acc[c]
