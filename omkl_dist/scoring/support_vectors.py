"""The shared support-vector store: every instance that any kernel learner kept, stored once.

Rows ``X[:n]`` hold the instances, ``sq[:n]`` their squared norms and ``alpha[:n, k]`` the
coefficient of that instance in kernel k's classifier (0 where kernel k did not keep it). One pool
for all kernels means one dot-product matrix per block serves every kernel
(docs/design.md, "Block-exact online learning").

Multi-class models (``n_classes`` K > 1) keep one coefficient per kernel *and class*: column
``k·K + c`` is kernel k's coefficient for class c (a multi-class update touches two classes, so a
row is sparse across them). Binary models use K = 1: one signed coefficient per kernel.

Duplicate vectors. Two support vectors with the same features and opposite coefficients must
cancel exactly, as they do in instance-by-instance processing. BLAS gives a pair's dot product
bits that depend on the call (GEMM, GEMV, SYRK, tile edges), so rows whose vector occurs more
than once are flagged ``exact`` and their dot products computed in fixed feature order on every
path. Rows are recognised by a hash of their bytes; a hash collision only costs speed. Integer
data (binary, counts) needs none of this: its dot products are exact in any order; nor do sparse
rows (``sparse=True``, a :class:`.rows.SparseRowStore`), whose dot products are always summed in
feature order (:mod:`.rows`).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from .rows import SparseRowStore, integral_bound


def blas_dots_exact(bound_a: float, bound_b: float, n_features: int) -> bool:
    """Dot products of integer vectors are exact in any summation order while every partial sum
    stays below 2**53: then BLAS needs no fixed-order recomputation (binary, count data)."""
    return n_features * bound_a * bound_b < 2.0**53


def writable(state: dict) -> dict:
    """An unpickled object's attributes with read-only arrays copied: a model loaded from a
    read-only memory map must go on learning (its arrays are updated in place)."""
    return {k: v.copy() if isinstance(v, np.ndarray) and not v.flags.writeable else v for k, v in state.items()}


def row_keys(X: np.ndarray) -> list[int]:
    """Hash keys of rows (``+ 0.0`` folds -0.0 into 0.0: equal values, equal keys)."""
    X = np.ascontiguousarray(X + 0.0)
    return [hash(row.tobytes()) for row in X]


class SupportVectors:
    """Growable pool of support vectors with ``n_classes`` coefficient columns per kernel."""

    def __init__(self, n_features: int, n_kernels: int, capacity: int = 256, n_classes: int = 1, sparse: bool = False):
        self.sparse = bool(sparse)
        self.X = SparseRowStore(n_features, capacity) if self.sparse else np.zeros((capacity, n_features))
        self.sq = np.zeros(capacity)
        self.n_classes = int(n_classes)
        self.alpha = np.zeros((capacity, n_kernels * self.n_classes))
        self.exact = np.zeros(capacity, dtype=bool)
        self.int_bound = 0.0  # max |x| over the pool if every value is an integer, else inf
        self.n = 0
        # a row's key -> its first row, and the later rows of keys seen more than once (few): one list
        # per row instead made Python's full garbage collections (0.1 s each) run every ~30,000 rows
        self._row_of_key: dict[int, int] = {}
        self._more_rows_of_key: dict[int, list[int]] = {}
        self.tile_layouts: dict = {}  # the pool scan's per-tile layouts (scoring/scan.py), rebuilt on demand

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_kernels(self) -> int:
        return self.alpha.shape[1] // self.n_classes

    def _reserve(self, extra: int) -> None:
        need = self.n + extra
        cap = self.sq.shape[0]
        if need <= cap:
            return
        new_cap = max(need, 2 * cap)
        for name in ("sq", "alpha", "exact") if self.sparse else ("X", "sq", "alpha", "exact"):
            old = getattr(self, name)
            new = np.zeros((new_cap,) + old.shape[1:], dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def append(self, X: np.ndarray, sq: np.ndarray, alpha: np.ndarray) -> None:
        """Add rows (already selected: each has a non-zero coefficient for some kernel)."""
        k = X.shape[0]
        if k == 0:
            return
        self._reserve(k)
        self.sq[self.n : self.n + k] = sq
        self.alpha[self.n : self.n + k] = alpha
        self.int_bound = max(self.int_bound, integral_bound(X))
        if self.sparse:  # no row keys: sparse dot products are summed in one fixed order anyway
            self.X.append(X)
            self.n += k
            return
        self.X[self.n : self.n + k] = X
        for row, key in enumerate(row_keys(X), start=self.n):
            first = self._row_of_key.setdefault(key, row)
            if first != row:  # a repeated vector: all its rows exact
                self.exact[first] = self.exact[row] = True
                self._more_rows_of_key.setdefault(key, []).append(row)
        self.n += k

    def __getstate__(self):
        state = dict(self.__dict__)
        state["tile_layouts"] = {}  # derived from the rows, rebuilt on demand
        return state

    def __setstate__(self, state):
        if "_rows_by_key" in state:  # (pickled by an earlier version: a list of rows per key)
            by_key = state.pop("_rows_by_key")
            state["_row_of_key"] = {key: rows[0] for key, rows in by_key.items()}
            state["_more_rows_of_key"] = {key: rows[1:] for key, rows in by_key.items() if len(rows) > 1}
        self.__dict__.update(writable(state))

    def __deepcopy__(self, memo):
        """A copy (a served model's snapshot, :mod:`omkl_dist.serving.learning`) made directly:
        ``copy.deepcopy``'s generic walk over the row-key index (then a list per row) cost ten times
        the arrays' copy."""
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        n = self.n  # (the rows in use: the copy grows again, by _reserve, only if it learns)
        twin.X = copy.deepcopy(self.X, memo) if self.sparse else self.X[:n].copy()
        twin.sq, twin.alpha, twin.exact = self.sq[:n].copy(), self.alpha[:n].copy(), self.exact[:n].copy()
        twin._row_of_key = dict(self._row_of_key)
        twin._more_rows_of_key = {key: rows.copy() for key, rows in self._more_rows_of_key.items()}
        # shared layouts: a tile's layout stays valid while its rows and coefficients do, and those never change
        twin.tile_layouts = dict(self.tile_layouts)
        return twin

    def has_key(self, key: int) -> bool:
        """Whether some pool row has this row key."""
        return key in self._row_of_key

    def rows_matching(self, keys) -> np.ndarray:
        """Pool rows whose vector equals (by key) one of the given row keys."""
        found = [r for key in keys if key in self._row_of_key for r in self._rows_of(key)]
        return np.unique(np.asarray(found, dtype=np.int64)) if found else np.empty(0, dtype=np.int64)

    def _rows_of(self, key: int) -> list[int]:
        return [self._row_of_key[key], *self._more_rows_of_key.get(key, ())]

    def n_support(self) -> np.ndarray:
        """Support vectors per kernel (rows with a non-zero coefficient for it, in any class)."""
        alpha = self.alpha[: self.n].reshape(self.n, self.n_kernels, self.n_classes)
        return np.count_nonzero(np.any(alpha != 0.0, axis=2), axis=0).astype(np.int64)

    def keep_columns(self, kernels) -> None:
        """Restrict to the given kernels (all their class columns) and drop rows no remaining kernel uses."""
        K = self.n_classes
        columns = (np.asarray(kernels, dtype=np.int64)[:, None] * K + np.arange(K)).ravel()
        alpha = self.alpha[: self.n][:, columns]
        used = np.flatnonzero(np.any(alpha != 0, axis=1))
        X, sq = self.rows_of(used), self.sq[used]
        self.__init__(self.n_features, len(kernels), capacity=max(len(used), 1), n_classes=K, sparse=self.sparse)
        self.append(X, sq, alpha[used])

    def rows_of(self, rows):
        """The pool's rows ``rows`` (dense array, or CSR matrix for a sparse pool)."""
        return self.X.csr()[rows] if self.sparse else self.X[rows]

    def state(self) -> dict:
        """The pool as arrays; a sparse pool's rows as CSR parts (``pool_X_indptr``, ``_indices``,
        ``_data``) and its width (``pool_X_shape``), never densified."""
        arrays = {"pool_sq": self.sq[: self.n].copy(), "pool_alpha": self.alpha[: self.n].copy()}
        if not self.sparse:
            return {"pool_X": self.X[: self.n].copy(), **arrays}
        X = self.X.csr()
        return {
            "pool_X_indptr": X.indptr,
            "pool_X_indices": X.indices,
            "pool_X_data": X.data,
            "pool_X_shape": np.array(X.shape, dtype=np.int64),
            **arrays,
        }

    @classmethod
    def from_state(cls, state: dict, n_classes: int = 1) -> "SupportVectors":
        X = pool_rows(state)
        alpha = np.asarray(state["pool_alpha"], dtype=np.float64)
        pool = cls(
            X.shape[1],
            alpha.shape[1] // n_classes,
            capacity=max(X.shape[0], 1),
            n_classes=n_classes,
            sparse=sp.issparse(X),
        )
        pool.append(X, np.asarray(state["pool_sq"], dtype=np.float64), alpha)
        return pool


def pool_rows(state: dict):
    """The support vectors of a pool state (:meth:`SupportVectors.state`): a dense array, or CSR."""
    if "pool_X" in state:
        return np.asarray(state["pool_X"], dtype=np.float64)
    shape = tuple(int(v) for v in state["pool_X_shape"])
    return sp.csr_matrix(
        (
            np.asarray(state["pool_X_data"], dtype=np.float64),
            np.asarray(state["pool_X_indices"]),
            np.asarray(state["pool_X_indptr"]),
        ),
        shape=shape,
    )
