"""How the pool scans read one tile of the pool (:class:`TileLayout`): densely, or sparsely through its
non-zero coefficients in CSC order (:class:`TileCSC`), kept by the pool until rows are added to the tile.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .program import kernel_scales
from .rows import transposed

KERNEL_VALUE_COST = 8  # see sparse_limit


class TileCSC(NamedTuple):
    """A tile's non-zero coefficients, kernel (or (kernel, class) column) after kernel: column k's
    are ``coefs[ptr[k]:ptr[k + 1]]``, of the tile rows ``rows[ptr[k]:ptr[k + 1]]``."""

    ptr: np.ndarray  # int64 (columns + 1,)
    rows: np.ndarray  # int64 (nnz,)
    coefs: np.ndarray  # float64 (nnz,)


def csc_ptr(nz_k, m):
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(nz_k, minlength=m), out=ptr[1:])
    return ptr


def tile_csc(alpha, X, max_nnz, by_key):
    """A tile's non-zero coefficients in CSC order (kernel after kernel): ``(ptr, nz_k, nz_s,
    coefs, key)``, or empty arrays if there are ``max_nnz`` or more. Within a kernel the rows come
    in index order, or with ``by_key`` sorted by the feature of widest spread ``key`` (ties by
    index; else ``key`` is -1). The sort is NumPy's stable one (numba's mergesort compiled in
    1.5 s, on every first run of a path through here)."""
    ptr, key = _csc_counts(alpha, X, max_nnz, by_key)
    if ptr[-1] >= max_nnz:
        return ptr, np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), -1
    order = np.argsort(X[:, key], kind="stable") if key >= 0 else np.arange(alpha.shape[0])
    return (ptr, *_csc_fill(alpha, ptr, order), key)


@njit(cache=True, nogil=True)
def _csc_counts(alpha, X, max_nnz, by_key):
    """:func:`tile_csc`'s column pointers, and its sort feature (-1: none, or too many non-zeros)."""
    n, m = alpha.shape
    ptr = np.zeros(m + 1, dtype=np.int64)
    for s in range(n):
        for k in range(m):
            if alpha[s, k] != 0.0:
                ptr[k + 1] += 1
    for k in range(m):
        ptr[k + 1] += ptr[k]
    key = -1
    if ptr[m] >= max_nnz or not by_key or n == 0:
        return ptr, key
    widest = -1.0
    for f in range(X.shape[1]):
        lo, hi = X[0, f], X[0, f]
        for s in range(n):
            lo, hi = min(lo, X[s, f]), max(hi, X[s, f])
        if hi - lo > widest:
            widest, key = hi - lo, f
    return ptr, key


@njit(cache=True, nogil=True)
def _csc_fill(alpha, ptr, order):
    """:func:`tile_csc`'s ``(nz_k, nz_s, coefs)``: the rows in ``order`` fill each kernel's stretch."""
    m = alpha.shape[1]
    nnz = ptr[m]
    nz_k, nz_s, coefs = np.empty(nnz, np.int64), np.empty(nnz, np.int64), np.empty(nnz)
    fill = ptr[:m].copy()
    for s in order:  # rows in scan order fill each kernel's stretch in that order
        for k in range(m):
            if alpha[s, k] != 0.0:
                i = fill[k]
                nz_k[i], nz_s[i], coefs[i] = k, s, alpha[s, k]
                fill[k] += 1
    return nz_k, nz_s, coefs


class TileLayout:
    """How the scans read one pool tile: whether it is scanned sparsely and, if so, its non-zero
    coefficients in CSC order per kernel (``nz_k``, ``nz_s``, ``coefs``, ``ptr``) and (made on
    first use) the kept rows transposed (``PT``, d × nnz) with their squared norms. For the
    direct scan (few features, some gaussian) each kernel's rows are sorted by the feature
    ``sort_feature``, see :func:`.scan._accumulate_sparse_direct`. Pool rows are append-only and their
    coefficients never change, so a tile's layout stays valid until rows are added to it: the
    pool keeps it, and a segment's scan rebuilds only the last tile's. (Dense tiles keep
    nothing: their scan is dominated by the kernel values.) With normalised kernels the tile
    keeps its rows' :func:`.program.kernel_scales` (``scales``), folded into ``coefs``.)"""

    def __init__(self, pool, s0, s1, program, density: float, direct_features: int):
        self.key = layout_key(s1, program, pool, density)
        self.sparse = program.sparse is not None
        self.sort_feature = -1
        self.scales = None
        if program.norm.any():
            rows = pool.X.csr(s0, s1) if pool.sparse else pool.X[s0:s1]
            self.scales = kernel_scales(program, rows, pool.sq[s0:s1])
        if self.sparse:
            by_key = not pool.sparse and pool.n_features <= direct_features and bool((program.sparse[0] == 0).any())
            max_nnz = sparse_limit(pool, s1 - s0, density)
            self.ptr, self.nz_k, self.nz_s, self.coefs, self.sort_feature = tile_csc(
                pool.alpha[s0:s1], _NO_ROWS if pool.sparse else pool.X[s0:s1], max_nnz, by_key
            )
            self.sparse = self.ptr[-1] < max_nnz
            if self.sparse and self.scales is not None:  # a support vector's factor R(s) in its coefficient
                self.coefs = self.coefs * self.scales[self.nz_s, self.nz_k // pool.n_classes]
        self._PT = None
        self._rows_T = None

    def coefficients(self, pool, s0, s1, transpose: bool) -> np.ndarray:
        """The tile's coefficients (K columns per kernel), times the support vectors' normalisation
        factors; (kernel columns × rows) when ``transpose``."""
        alpha = pool.alpha[s0:s1]
        if self.scales is not None:
            alpha = alpha * np.repeat(self.scales, pool.n_classes, axis=1)
        return np.ascontiguousarray(alpha.T) if transpose else alpha

    def rows_transposed(self, pool, s0, s1):
        """The tile's rows of a sparse pool by feature (:func:`.rows.transposed`), for :func:`.rows.csr_dots`."""
        if self._rows_T is None:
            self._rows_T = transposed(pool.X.csr(s0, s1))
        return self._rows_T

    def csc(self, active=None):
        """The :class:`TileCSC` of the columns flagged in ``active`` (default all)."""
        if active is None:
            return TileCSC(self.ptr, self.nz_s, self.coefs)
        keep = active[self.nz_k]
        return TileCSC(csc_ptr(self.nz_k[keep], len(self.ptr) - 1), self.nz_s[keep], self.coefs[keep])

    def kept_rows(self, pool, s0, nz_s):
        """``(PT, sq)``: the tile's rows ``nz_s`` (``rows`` of :meth:`csc`: the support vectors,
        kernel after kernel) transposed (d × nnz), and their squared norms; kept for all kernels."""
        if nz_s is self.nz_s and self._PT is not None:
            return self._PT
        rows = s0 + nz_s
        PT = (np.ascontiguousarray(pool.X[rows].T), pool.sq[rows])
        if nz_s is self.nz_s:
            self._PT = PT
        return PT


_NO_ROWS = np.empty((0, 0))  # tile_csc reads rows only to sort by a feature (dense pools of few features)


def sparse_limit(pool, rows: int, density: float) -> int:
    """The non-zero coefficients at which a tile of ``rows`` pool rows is scanned densely. Binary
    pools: a share ``density`` of its coefficients. Multi-class ones: where the costs meet --
    the sparse scan takes a product (or distance) over the d features and a kernel value per
    non-zero (kernel, class) column of a row, the dense one a product per row and, per kernel, one
    value and K multiply-adds (``KERNEL_VALUE_COST``: a kernel value in multiply-adds). OM-2 keeps
    every row for every kernel (2m non-zeros a row: dense), OMKC only for the kernels that erred."""
    m, K, d = pool.n_kernels, pool.n_classes, pool.n_features
    if K == 1:
        return int(np.ceil(density * rows * m))  # nnz < density · size
    return int(np.ceil(rows * (d + m * (KERNEL_VALUE_COST + K)) / (d + KERNEL_VALUE_COST)))


def layout_key(s1, program, pool, density):
    """What a tile's layout depends on: it is rebuilt when rows are added or the scan's settings change."""
    return s1, pool.alpha.shape[1], program.sparse is not None, density, program.norm.tobytes()
