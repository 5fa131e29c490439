"""Batch (Gram) evaluation of a kernel pool: every kernel matrix between two blocks of rows at once.

Evaluating a pool shares work across its kernels. For blocks ``A`` (nA × d) and ``B`` (nB × d):

* the dot matrix ``A @ B.T`` is computed once, by BLAS, and every linear and polynomial kernel is
  an elementwise power of it;
* the squared-distance matrix is computed once, from that same dot matrix as
  ``‖a‖² + ‖b‖² − 2 a·b`` (clipped at 0), and every gaussian width is ``exp(−D²/(2σ²))`` of it;
* the L1-distance matrix is computed once for all laplacians, the chi-square sum once for all
  chi2 kernels (compiled loops in :mod:`omkl_dist.kernels._numba`).

Kernels on a feature group (a *view*, :mod:`omkl_dist.kernels.specs`) share work with the kernels
of the same view: each view's columns are taken once and its base matrices computed on them.

So a 16-kernel OMKC pool costs one GEMM plus 16 cheap elementwise passes.

Numerical accuracy of the squared distance
------------------------------------------
``‖a‖² + ‖b‖² − 2 a·b`` cancels when a and b are close: its absolute error is a few units of
roundoff of ``‖a‖² + ‖b‖²``, however small the true distance. Measured against exact rational
arithmetic on uniform[−1, 1]^20, N(0, 1e6)^50, fourclass, raw australian (features up to 1e5)
and near-duplicate pairs (b = a + 1e-9…1e-6 noise)::

    |D²_gemm − D²_exact| ≤ 2.0 · eps · (‖a‖² + ‖b‖²)     (eps = 2.2e-16; the tests allow 8·eps)

while the direct sum Σ(a−b)² stayed within 3.3·eps *relative* to D² on the same pairs. The
kernel error is ``|ΔK| ≈ K · |ΔD²| / (2σ²)``; measured maximum |ΔK| over σ = 2^-6..2^6:

===============================  ===========  ===========================
data                             gemm         direct (``sqdist="direct"``)
===============================  ===========  ===========================
fourclass (scaled to [−1, 1])    2.7e-13      2.2e-16
australian, raw                  4.7e-13      1.1e-16
[−1, 1]^20, near-duplicates      7.2e-12      2.2e-16
australian raw, near-duplicates  1.0e-07      1.1e-16
===============================  ===========  ===========================

The bound allows more: australian's largest row has ‖x‖² ≈ 1e10, so at σ = 2^-6 a
near-duplicate pair could be off by 2048 · 2 · eps · 2e10 ≈ 2e-2. So scale the features, or pass
``sqdist="direct"`` to :meth:`GramEvaluator.evaluate` (no BLAS: about as fast for d ≈ 14, 6× slower
at d = 123, 20× at d = 500 on 2000 × 2000). When ``B`` is omitted the diagonal distance is set to
exactly 0, as scikit-learn does, so a Gram matrix has κ(x, x) exact, and the norms are added
before the dot term so the Gram matrix is exactly symmetric.
The L1 and chi-square matrices are always summed directly and have no such cancellation.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np

from omkl_dist._validation import check_array, check_nonnegative
from omkl_dist.kernels import _numba

__all__ = ["PairwiseParts", "GramEvaluator"]

_FAMILIES = ("dot", "sqdist", "l1", "chi2", "achi2")
_NONNEGATIVE = ("chi2", "achi2")  # families defined for non-negative features only

# Below this many inner-loop steps (rows × columns × features or kernels) the serial build is
# faster: waking numba's thread pool costs tens of microseconds, hundreds on a loaded machine.
_PARALLEL_MIN_WORK = 1 << 15


def _loop(name: str, n_rows: int, work: int):
    """The parallel or serial build of compiled loop ``name`` for a block of this size."""
    if n_rows >= 2 and work >= _PARALLEL_MIN_WORK:
        return getattr(_numba, name)
    return _numba.SERIAL[name]


@dataclass(frozen=True, eq=False)  # arrays have no single truth value
class PairwiseParts:
    """Base pairwise matrices between two blocks, each ``(nA, nB)`` float64 or ``None``.

    ``dot`` = A·Bᵀ, ``sqdist`` = squared Euclidean distance, ``l1`` = Manhattan distance,
    ``chi2`` = Σ (a−b)²/(a+b), ``achi2`` = Σ 2ab/(a+b). Produced by :meth:`GramEvaluator.products`,
    consumed by :meth:`GramEvaluator.from_parts` (a pool's methods of the same names); a pool needs only
    the parts in :attr:`GramEvaluator.needs`. ``views`` holds the parts of the kernels on feature groups, by their
    columns (the fields above serve the kernels on every column).
    """

    dot: np.ndarray | None = None
    sqdist: np.ndarray | None = None
    l1: np.ndarray | None = None
    chi2: np.ndarray | None = None
    achi2: np.ndarray | None = None
    views: dict | None = None


class GramEvaluator:
    """The kernel matrices of an ordered tuple of kernel specs, computed together.

    :class:`~omkl_dist.kernels.pools.KernelPool` holds one and evaluates through it; a single
    :class:`~omkl_dist.kernels.specs.KernelSpec` evaluates through a one-kernel evaluator, so both
    take the same code path.

    Parameters
    ----------
    specs : tuple of KernelSpec
        The kernels, in the order of the output's first axis (checked by the pool: at least one,
        none twice). Each must be of a family computed from one of dot, sqdist, l1, chi2, achi2.
    """

    __slots__ = ("specs", "_plan")

    def __init__(self, specs: tuple):
        for spec in specs:
            if spec.family not in _FAMILIES:
                raise ValueError(
                    f"{spec!r} has family {spec.family!r}; a pool computes kernels only from "
                    f"one of {', '.join(_FAMILIES)}"
                )
        # Per view (its columns; None: every column) and family: which output slots it fills and
        # with which coefficient, as the arrays the compiled transforms take, built once here
        # rather than on every evaluation.
        plan = {}
        for columns in dict.fromkeys(s.columns for s in specs):
            families = {}
            for family in _FAMILIES:
                slots = [i for i, s in enumerate(specs) if s.family == family and s.columns == columns]
                if slots:
                    dtype = np.int64 if family == "dot" else np.float64
                    coefs = np.array([specs[i].coef for i in slots], dtype=dtype)
                    families[family] = (np.array(slots, dtype=np.int64), coefs)
            plan[columns] = types.MappingProxyType(families)
        self.specs = specs
        self._plan = types.MappingProxyType(plan)

    def __len__(self) -> int:
        return len(self.specs)

    @property
    def needs(self) -> frozenset[str]:
        """Base matrices the kernels are computed from: a subset of dot, sqdist, l1, chi2, achi2
        (over every view)."""
        return frozenset(family for families in self._plan.values() for family in families)

    @property
    def has_views(self) -> bool:
        """Whether some kernel sees only a feature group."""
        return any(s.columns is not None or s.group is not None for s in self.specs)

    @property
    def rescaled(self) -> bool:
        """Whether some kernel's values change with normalisation."""
        return any(s.rescaled for s in self.specs)

    def evaluate(self, A, B=None, *, out=None, sqdist: str = "gemm") -> np.ndarray:
        """All kernel matrices between the rows of ``A`` and ``B``.

        Parameters
        ----------
        A : array_like, shape (nA, d)
        B : array_like, shape (nB, d), optional
            Defaults to ``A`` (a Gram matrix; its distance diagonal is then exactly 0).
        out : ndarray, shape (m, nA, nB), float64, C-contiguous, optional
            Written in place and returned.
        sqdist : {"gemm", "direct"}
            How gaussians get squared distances: from the shared dot matrix (fast, absolute error
            measured ≤ 2.0·eps·(‖a‖²+‖b‖²)) or by direct summation (error relative to D², no BLAS).

        Returns
        -------
        K : ndarray, shape (m, nA, nB)
            ``K[k, i, j] = κ_k(A[i], B[j])`` with ``m = len(specs)``.
        """
        K = self.from_parts(self.products(A, B, sqdist=sqdist), out=out)
        if self.rescaled:
            self.normalize_block(K, A, B)
        return K

    def normalize_block(self, K, A, B=None) -> None:
        """Divide, in place, the normalised kernels' matrices in ``K`` (``(m, nA, nB)``, raw values
        between the rows of ``A`` and ``B``, e.g. from :meth:`from_parts`) by sqrt(κ(a, a) κ(b, b)),
        giving 0 for zero rows. The other kernels' matrices are left as they are."""
        rows = [k for k, s in enumerate(self.specs) if s.rescaled]
        sub = GramEvaluator(tuple(self.specs[k].normalized(False) for k in rows))
        ra = _inverse_sqrt(sub.evaluate_diag(A))
        rb = ra if B is None or B is A else _inverse_sqrt(sub.evaluate_diag(B))
        for j, k in enumerate(rows):
            K[k] *= ra[j][:, None]
            K[k] *= rb[j][None, :]

    def evaluate_diag(self, X, *, out=None) -> np.ndarray:
        """κ_k(x, x) for every kernel and row, shape ``(m, n)``.

        1 for gaussian, laplacian and chi2; ``‖x‖^(2p)`` for polynomial (``‖x‖²`` for linear), ``Σ x``
        for achi2 (each on the kernel's view).
        """
        X = check_array(X, sparse="refuse", non_empty=False)
        self._check_resolved()
        out = self._output((len(self), X.shape[0]), out)
        out[...] = 1.0
        if self.rescaled:  # 1 where κ(x, x) > 0
            raw = GramEvaluator(tuple(s.normalized(False) for s in self.specs)).evaluate_diag(X)
            for k, spec in enumerate(self.specs):
                out[k] = (raw[k] > 0) if spec.rescaled else raw[k]
            return out
        for columns, families in self._plan.items():
            Xv = self._view(columns, X)
            for family in _NONNEGATIVE:
                if family in families:
                    check_nonnegative(Xv, self._first_name(family, columns))
            if "achi2" in families:
                out[families["achi2"][0]] = Xv.sum(axis=1)
            if "dot" in families:
                sq = np.einsum("ij,ij->i", Xv, Xv)
                for slot, degree in zip(*families["dot"], strict=True):
                    np.power(sq, int(degree), out=out[slot])
        return out

    def products(self, A, B=None, *, sqdist: str = "gemm") -> PairwiseParts:
        """The base matrices this pool needs between ``A`` and ``B`` (``B=None`` means ``A``).

        Reuse them across calls with :meth:`from_parts`; the dot matrix comes with a gemm
        squared distance for free.
        """
        if sqdist not in ("gemm", "direct"):
            raise ValueError(f"sqdist must be 'gemm' or 'direct', got {sqdist!r}")
        A = check_array(A, name="A", sparse="refuse", non_empty=False)
        self._check_resolved()
        same = B is None or B is A
        B = A if same else check_array(B, name="B", sparse="refuse", non_empty=False)
        if A.shape[1] != B.shape[1]:
            raise ValueError(f"A and B must have the same number of features, got {A.shape[1]} and {B.shape[1]}")
        views = {}
        for columns, families in self._plan.items():
            Av = self._view(columns, A)
            Bv = Av if same else self._view(columns, B)
            views[columns] = self._view_products(families, columns, Av, Bv, same, sqdist)
        if set(views) == {None}:
            return views[None]
        every = views.pop(None, PairwiseParts())
        return PairwiseParts(**{f: getattr(every, f) for f in _FAMILIES}, views=views)

    def _view_products(self, needs, columns, A, B, same, sqdist) -> PairwiseParts:
        """The base matrices the families ``needs`` take between the views ``A`` and ``B``."""
        for family in _NONNEGATIVE:
            if family in needs:
                check_nonnegative(A, self._first_name(family, columns), name="A")
                if not same:
                    check_nonnegative(B, self._first_name(family, columns), name="B")
        shape = (A.shape[0], B.shape[0])
        size, d = shape[0] * shape[1], A.shape[1]
        parts = {}
        if "dot" in needs or ("sqdist" in needs and sqdist == "gemm"):
            # One BLAS call; numpy routes A @ A.T to SYRK, which gives an exactly symmetric result.
            parts["dot"] = A @ A.T if same else A @ B.T
        if "sqdist" in needs:
            D2 = np.empty(shape)
            if sqdist == "gemm":
                sq_a = np.einsum("ij,ij->i", A, A)
                sq_b = sq_a if same else np.einsum("ij,ij->i", B, B)
                _loop("_sqdist_from_dot", shape[0], D2.size)(parts["dot"], sq_a, sq_b, D2)
                if same:
                    np.fill_diagonal(D2, 0.0)  # cancellation would leave ±ulps; κ(x, x) is exact
            else:
                _loop("_sqdist_direct", shape[0], D2.size * d)(A, B, D2)
            parts["sqdist"] = D2
        if "l1" in needs:
            parts["l1"] = _loop("_l1_dist", shape[0], size * d)(A, B, np.empty(shape))
        if "chi2" in needs:
            parts["chi2"] = _loop("_chi2_sum", shape[0], size * d)(A, B, np.empty(shape))
        if "achi2" in needs:
            parts["achi2"] = _loop("_achi2_sum", shape[0], size * d)(A, B, np.empty(shape))
        return PairwiseParts(**parts)

    def from_parts(self, parts: PairwiseParts, *, out=None) -> np.ndarray:
        """Kernel matrices ``(m, nA, nB)`` from precomputed base matrices (see :attr:`needs`).

        The parts are trusted to be finite and consistent (e.g. sqdist ≥ 0); only their
        presence and shapes are checked.
        """
        bases, shape = {}, None
        for columns, families in self._plan.items():
            view = parts if columns is None else (parts.views or {}).get(columns)
            for family in families:
                base = None if view is None else getattr(view, family)
                if base is None:
                    raise ValueError(
                        f"parts.{family} is missing; {self._first_name(family, columns)} needs it "
                        f"(this pool needs {', '.join(sorted(self.needs))})"
                    )
                base = np.ascontiguousarray(base, dtype=np.float64)
                if base.ndim != 2 or (shape is not None and base.shape != shape):
                    raise ValueError(
                        f"parts.{family} has shape {base.shape}, expected a 2-D (nA, nB) matrix"
                        + (f" of shape {shape}" if shape else "")
                    )
                shape = base.shape
                bases[columns, family] = base
        out = self._output((len(self), *shape), out)
        for columns, families in self._plan.items():
            for family, (slots, coefs) in families.items():
                base = bases[columns, family]
                if family == "achi2":  # the kernel is its base matrix
                    out[slots] = base
                    continue
                name = "_powers_from_dot" if family == "dot" else "_exp_neg_scaled"
                _loop(name, shape[0], shape[0] * shape[1] * len(slots))(base, coefs, slots, out)
        return out

    def from_products(self, dot, sq_a, sq_b, *, out=None) -> np.ndarray:
        """Kernel matrices from a dot matrix and squared row norms the caller already has.

        For pools of linear, polynomial and gaussian kernels only (laplacian and chi2 need the
        rows themselves). No diagonal fix-up is applied: see the accuracy note in the module doc.

        Parameters
        ----------
        dot : ndarray, shape (nA, nB)
            ``A @ B.T``.
        sq_a : ndarray, shape (nA,)
            ``‖a_i‖²``.
        sq_b : ndarray, shape (nB,)
            ``‖b_j‖²``.
        out : ndarray, shape (m, nA, nB), optional

        Examples
        --------
        >>> import numpy as np
        >>> from omkl_dist.kernels.specs import Gaussian, Linear
        >>> gram = GramEvaluator((Linear(), Gaussian(1.0)))
        >>> A, B = np.eye(2), np.array([[1.0, 1.0]])
        >>> K = gram.from_products(A @ B.T, (A * A).sum(1), (B * B).sum(1))
        >>> np.allclose(K, gram.evaluate(A, B))
        True
        """
        if self.has_views:
            raise ValueError(
                "from_products takes the products of every column; this pool has kernels on feature "
                f"groups ({', '.join(s.name for s in self.specs if s.view)}): use evaluate(A, B)"
            )
        extra = self.needs - {"dot", "sqdist"}
        if extra:
            bad = [s.name for s in self.specs if s.family in extra]
            raise ValueError(
                f"from_products covers linear, polynomial and gaussian kernels only; "
                f"{', '.join(bad)} need the rows: use evaluate(A, B)"
            )
        dot = np.ascontiguousarray(dot, dtype=np.float64)
        if dot.ndim != 2:
            raise ValueError(f"dot must be 2-D (nA, nB), got shape {dot.shape}")
        parts = {"dot": dot}
        if "sqdist" in self.needs:
            sq_a = np.ascontiguousarray(sq_a, dtype=np.float64)
            sq_b = np.ascontiguousarray(sq_b, dtype=np.float64)
            if sq_a.shape != (dot.shape[0],) or sq_b.shape != (dot.shape[1],):
                raise ValueError(
                    f"sq_a and sq_b must have shapes ({dot.shape[0]},) and ({dot.shape[1]},) "
                    f"to match dot {dot.shape}, got {sq_a.shape} and {sq_b.shape}"
                )
            sqdist = _loop("_sqdist_from_dot", dot.shape[0], dot.size)
            parts["sqdist"] = sqdist(dot, sq_a, sq_b, np.empty(dot.shape))
        return self.from_parts(PairwiseParts(**parts), out=out)

    # ------------------------------------------------------------------ helpers
    def _first_name(self, family: str, columns=None) -> str:
        return next(s.name for s in self.specs if s.family == family and s.columns == columns)

    def _check_resolved(self) -> None:
        for spec in self.specs:
            if not spec.resolved:
                spec.view_of(np.empty((0, 0)))  # raises, naming the group and the fix

    def _view(self, columns, X: np.ndarray) -> np.ndarray:
        """The columns of ``X`` the kernels of view ``columns`` see."""
        first = next(s for s in self.specs if s.columns == columns)
        return first.view_of(X)

    @staticmethod
    def _output(shape: tuple[int, ...], out) -> np.ndarray:
        if out is None:
            return np.empty(shape)
        if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != shape:
            got = (out.shape, out.dtype) if isinstance(out, np.ndarray) else type(out).__name__
            raise ValueError(f"out must be a float64 array of shape {shape}, got {got}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be C-contiguous and writeable")
        return out


def _inverse_sqrt(values: np.ndarray) -> np.ndarray:
    """1/sqrt(v), and 0 where v is 0 (a normalised kernel of a zero row is 0)."""
    out = np.zeros_like(values)
    np.divide(1.0, np.sqrt(values), out=out, where=values > 0)
    return out
