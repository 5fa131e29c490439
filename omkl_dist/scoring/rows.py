"""Instances as dense rows or as sparse (CSR) rows, for every kernel evaluator of the shared pool.

Wide sparse data (text: rcv1's 47,236 features at 0.16 % density) cannot be scanned densely: a
block of 1,024 dense rows is 387 MB and its dot products with the pool cost d multiply-adds a
pair where ~76 would do. The dot-product and gaussian kernels need only three things from the
rows -- dot products, squared norms, and (near cancellation) a squared distance summed directly
-- so a model keeps its rows either dense or as CSR, and the scans take either:

- :class:`CSRRows` is what njit code sees of CSR rows (int64 ``indptr``/``indices``, float64
  ``data``, ``n_rows``, ``n_cols``): a namedtuple, so one kernel source compiles for arrays and
  for it (numba specialises it per argument type; :func:`n_rows` reads either's length -- a
  tuple-valued field would not pass into numba's parallel loops);
- :func:`rows_sqdist` and :func:`later_dots` are the two per-row operations that read features,
  each overloaded for arrays and :class:`CSRRows`;
- :func:`csr_dots` computes a block's dot products with sparse rows.

Every sparse dot product and distance is summed over the non-zero features in feature order,
whatever the call: the same bits in-process, on a shard and after a resume, and for repeated
rows the same values (duplicates cancel exactly, so the dense path's fixed-order repair is never
needed). For integer data (binary, counts) the sums are exact, so a sparse fit equals the dense
fit of the same rows bit for bit; for other data they differ from BLAS's in the last bits.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import scipy.sparse as sp
from numba import njit, types
from numba.extending import overload

from .._validation import canonical_csr
from .row_threads import over_rows
from .values import direct_sqdist


class CSRRows(namedtuple("CSRRows", ["indptr", "indices", "data", "n_rows", "n_cols"])):
    __slots__ = ()

    @property
    def shape(self) -> tuple[int, int]:
        return self.n_rows, self.n_cols


_END = 1 << 62  # past every feature index (merges of two rows' features)
COUNTING_WIDTH = 1 << 22  # up to this many features, rows are read by feature through a counting sort


def is_sparse(X) -> bool:
    """Whether ``X`` is a scipy.sparse matrix or array."""
    return sp.issparse(X)


def writeable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy of it if it is read-only (a memory-mapped X, a model loaded with ``mmap_mode="r"``).

    numba compiles every kernel again for read-only arrays (a different argument type): about a minute
    of compilation for the first read-only call, against an O(size) copy of the rows."""
    return a if a.flags.writeable else a.copy()


def as_csr(X) -> sp.csr_matrix:
    """``X`` as a canonical float64 CSR matrix (sorted indices, no duplicates) with writeable arrays
    (:func:`writeable`), copied only if needed."""
    if not sp.issparse(X):
        return sp.csr_matrix(np.asarray(X, dtype=np.float64))
    X = canonical_csr(X)
    if X.data.flags.writeable and X.indices.flags.writeable and X.indptr.flags.writeable:
        return X
    return sp.csr_matrix((writeable(X.data), writeable(X.indices), writeable(X.indptr)), shape=X.shape)


def as_rows(X):
    """What the njit evaluators take: a dense array as it is, CSR as :class:`CSRRows`."""
    if not sp.issparse(X):
        return X
    X = as_csr(X)
    return CSRRows(
        X.indptr.astype(np.int64, copy=False),
        X.indices.astype(np.int64, copy=False),
        X.data,
        int(X.shape[0]),
        int(X.shape[1]),
    )


class FeatureColumns(namedtuple("FeatureColumns", ["features", "indptr", "indices", "data", "n_rows", "n_cols"])):
    """Sparse rows read by feature: the features that occur (ascending), and for the i-th of
    them its rows ``indices[indptr[i]:indptr[i + 1]]`` (ascending) and values. Only occurring
    features are listed, so its size does not grow with the width of the data."""

    __slots__ = ()


def transposed(X):
    """The rows' features read by column: a dense array transposed (C-contiguous), CSR (or
    :class:`CSRRows`) as :class:`FeatureColumns`."""
    if isinstance(X, CSRRows):
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)
    if not sp.issparse(X):
        return np.ascontiguousarray(X.T)
    X = as_csr(X)
    if X.shape[1] <= max(COUNTING_WIDTH, 4 * X.nnz):  # a counting sort by feature (no comparison sort)
        T = X.tocsc()
        T.sort_indices()
        counts = np.diff(T.indptr)
        features = np.flatnonzero(counts)
        indptr = np.concatenate([[0], np.cumsum(counts[features])])
    else:  # features far apart: number the occurring ones first, so nothing is sized by the width
        features, compact = np.unique(X.indices, return_inverse=True)
        T = sp.csr_matrix((X.data, compact.ravel(), X.indptr), shape=(X.shape[0], len(features))).T.tocsr()
        T.sort_indices()
        indptr = T.indptr
    return FeatureColumns(
        features.astype(np.int64),
        indptr.astype(np.int64),
        T.indices.astype(np.int64),
        T.data,
        int(X.shape[0]),
        int(X.shape[1]),
    )


def dense_rows(X) -> np.ndarray:
    """``X`` as a writeable C-contiguous float64 array (sparse rows densified): engines that keep dense
    rows. No copy when ``X`` already is one."""
    return np.ascontiguousarray(X.toarray()) if sp.issparse(X) else writeable(np.ascontiguousarray(X, dtype=np.float64))


def sqnorms(X) -> np.ndarray:
    """Squared norm of every row (sparse: summed over the non-zeros in feature order)."""
    if not sp.issparse(X):
        return np.einsum("ij,ij->i", X, X)
    return _csr_sqnorms(as_rows(X))


def integral_bound(X) -> float:
    """max |x| if every value of X is an integer, else inf (see :func:`.support_vectors.blas_dots_exact`)."""
    values = as_csr(X).data if sp.issparse(X) else X
    if values.size == 0:
        return 0.0
    return float(np.abs(values).max()) if np.array_equal(values, np.rint(values)) else np.inf


def sparse_dots(A, B, out=None) -> np.ndarray:
    """``A @ B.T`` as a dense (len(A), len(B)) array from sparse rows, each entry summed in feature
    order (:func:`csr_dots`); ``B`` may be given already :func:`transposed`."""
    BT = B if isinstance(B, FeatureColumns) else transposed(B)
    R = as_rows(A)
    out = np.empty((R.n_rows, BT.n_rows)) if out is None else out
    csr_dots(R, BT, out)
    return out


@njit(cache=True, nogil=True)
def _csr_sqnorms(R):
    out = np.zeros(R.n_rows)
    for t in range(R.n_rows):
        acc = 0.0
        for p in range(R.indptr[t], R.indptr[t + 1]):
            acc += R.data[p] * R.data[p]
        out[t] = acc
    return out


@njit(cache=True, nogil=True, inline="always")
def _column_of(BT, f, lo):
    """The position of feature ``f`` in ``BT.features`` searching from ``lo`` (features come in
    ascending order, so each search starts where the last ended), or -1 with the next start."""
    i = lo + np.searchsorted(BT.features[lo:], f)
    if i < BT.features.shape[0] and BT.features[i] == f:
        return i, i + 1
    return -1, i


def csr_dots(A, BT, out) -> None:
    """``out[t, s] = Σ_f A[t, f]·B[s, f]`` for CSR rows ``A`` and ``BT`` = B's
    :class:`FeatureColumns`: each row's non-zero features in ascending order, each adding its
    products with the rows of B that have it -- every entry's sum in feature order. Rows on
    threads (:func:`.row_threads.over_rows`)."""
    over_rows(_csr_dot_rows, A.n_rows, A, BT, out)


@njit(cache=True, nogil=True)
def _csr_dot_rows(lo, hi, A, BT, out):
    """Rows ``[lo, hi)`` of :func:`csr_dots`."""
    for t in range(lo, hi):
        row = out[t]
        row[:] = 0.0
        lo = 0
        for p in range(A.indptr[t], A.indptr[t + 1]):
            c, lo = _column_of(BT, A.indices[p], lo)
            if c < 0:
                continue
            a = A.data[p]
            for q in range(BT.indptr[c], BT.indptr[c + 1]):
                row[BT.indices[q]] += a * BT.data[q]


@njit(cache=True, nogil=True)
def _csr_sqdist(A, i, B, j):
    """‖A[i] − B[j]‖² over the union of the two rows' features in feature order: the terms the
    dense :func:`.values.direct_sqdist` adds, without its zeros (which change no sum)."""
    a, a_end = A.indptr[i], A.indptr[i + 1]
    b, b_end = B.indptr[j], B.indptr[j + 1]
    acc = 0.0
    while a < a_end or b < b_end:
        fa = A.indices[a] if a < a_end else _END
        fb = B.indices[b] if b < b_end else _END
        if fa == fb:
            diff = A.data[a] - B.data[b]
            a += 1
            b += 1
        elif fa < fb:
            diff = A.data[a]
            a += 1
        else:
            diff = -B.data[b]
            b += 1
        acc += diff * diff
    return acc


def n_rows(X):
    """Rows of a dense array or :class:`CSRRows` (njit only)."""
    raise TypeError("n_rows is called from njit code only")


@overload(n_rows)
def _n_rows(X):
    if isinstance(X, types.Array):
        return lambda X: X.shape[0]
    return lambda X: X.n_rows


def rows_sqdist(A, i, B, j):
    """‖A[i] − B[j]‖² summed directly in feature order (njit only: dense or :class:`CSRRows`)."""
    raise TypeError("rows_sqdist is called from njit code only")


@overload(rows_sqdist)
def _rows_sqdist(A, i, B, j):
    if isinstance(A, types.Array):
        return lambda A, i, B, j: direct_sqdist(A, i, B, j)
    return lambda A, i, B, j: _csr_sqdist(A, i, B, j)


@njit(cache=True, nogil=True)
def _dense_later_dots(Xb, XbT, s, q):
    for f in range(Xb.shape[1]):
        b = Xb[s, f]
        if b == 0.0:  # adds only zeros (sparse data: most features): the same sums without them
            continue
        xf = XbT[f, s + 1 :]
        for i in range(q.shape[0]):
            q[i] += xf[i] * b


@njit(cache=True, nogil=True)
def _csr_later_dots(Xb, XbT, s, q):
    start = 0
    for p in range(Xb.indptr[s], Xb.indptr[s + 1]):
        c, start = _column_of(XbT, Xb.indices[p], start)  # always found: row s has the feature
        b = Xb.data[p]
        lo, hi = XbT.indptr[c], XbT.indptr[c + 1]
        first = lo + np.searchsorted(XbT.indices[lo:hi], s + 1)  # the rows after s that have feature f
        for r in range(first, hi):
            q[XbT.indices[r] - s - 1] += XbT.data[r] * b


def later_dots(Xb, XbT, s, q):
    """Add ``x_s · x_t`` for the block's rows t > s to ``q[t − s − 1]`` (``q`` starts at 0), in
    feature order; ``XbT`` is the block :func:`transposed` (njit only)."""
    raise TypeError("later_dots is called from njit code only")


@overload(later_dots)
def _later_dots(Xb, XbT, s, q):
    if isinstance(Xb, types.Array):
        return lambda Xb, XbT, s, q: _dense_later_dots(Xb, XbT, s, q)
    return lambda Xb, XbT, s, q: _csr_later_dots(Xb, XbT, s, q)


class SparseRowStore:
    """Growable CSR rows (the support vectors of a model on sparse data): ``indptr``, ``indices``
    and ``data`` with spare capacity, doubled as rows are appended."""

    def __init__(self, n_features: int, capacity: int = 256):
        self.n_features = int(n_features)
        self.n = 0
        self.indptr = np.zeros(capacity + 1, dtype=np.int64)
        self.indices = np.zeros(capacity * 8, dtype=np.int64)
        self.data = np.zeros(capacity * 8)

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.n_features

    @property
    def nnz(self) -> int:
        return int(self.indptr[self.n])

    def append(self, X) -> None:
        """Add the rows of ``X`` (sparse or dense)."""
        X = as_csr(X)
        k, nnz = X.shape[0], self.nnz
        if self.n + k + 1 > len(self.indptr):
            self.indptr = _grown(self.indptr, self.n + k + 1, self.n + 1)
        if nnz + X.nnz > len(self.data):
            self.indices = _grown(self.indices, nnz + X.nnz, nnz)
            self.data = _grown(self.data, nnz + X.nnz, nnz)
        self.indptr[self.n + 1 : self.n + k + 1] = X.indptr[1:] + nnz
        self.indices[nnz : nnz + X.nnz] = X.indices
        self.data[nnz : nnz + X.nnz] = X.data
        self.n += k

    def rows(self, lo: int = 0, hi: int | None = None) -> CSRRows:
        """Rows ``lo:hi`` as :class:`CSRRows` (views of the stored features)."""
        hi = self.n if hi is None else hi
        start, stop = self.indptr[lo], self.indptr[hi]
        return CSRRows(
            self.indptr[lo : hi + 1] - start, self.indices[start:stop], self.data[start:stop], hi - lo, self.n_features
        )

    def csr(self, lo: int = 0, hi: int | None = None) -> sp.csr_matrix:
        """Rows ``lo:hi`` as a scipy CSR matrix (a copy)."""
        R = self.rows(lo, hi)
        return sp.csr_matrix((R.data.copy(), R.indices.copy(), R.indptr.copy()), shape=R.shape)


def _grown(a: np.ndarray, need: int, keep: int) -> np.ndarray:
    new = np.zeros(max(need, 2 * len(a)), dtype=a.dtype)
    new[:keep] = a[:keep]
    return new
