"""Kernel pools: an ordered, immutable set of kernels evaluated together.

A :class:`KernelPool` is the container (a sequence of kernel specs, a value: equal, hashable,
picklable); its matrices come from :mod:`omkl_dist.kernels.gram` (every kernel between two blocks of
rows at once, sharing the work across kernels), its text from :mod:`omkl_dist.kernels.pool_text`.
:func:`make_pool` builds a pool from a name, a spec string, specs or another pool.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Iterable, Sequence

import numpy as np

from omkl_dist.kernels.gram import GramEvaluator, PairwiseParts
from omkl_dist.kernels.grammar import MAX_KERNELS, check_kernel_count
from omkl_dist.kernels.pool_text import NAMED_POOL_SPECS, format_pool, parse_pool
from omkl_dist.kernels.specs import KernelSpec

__all__ = ["KernelPool", "NAMED_POOLS", "make_pool"]


class KernelPool(Sequence):
    """An ordered, immutable sequence of kernel specs that are evaluated together.

    Build one from specs, or from text with :func:`make_pool` / :meth:`from_spec`.

    Parameters
    ----------
    specs : iterable of KernelSpec
        At least one kernel; no kernel may appear twice.

    Examples
    --------
    >>> import numpy as np
    >>> pool = make_pool("poly:1,2;gaussian:2^-1..2^1")
    >>> len(pool), pool.names[2]
    (5, 'gaussian(sigma=0.5)')
    >>> pool.to_spec_string()
    'polynomial:1,2;gaussian:2^-1..2^1'
    >>> K = pool.evaluate(np.eye(3), np.ones((2, 3)))
    >>> K.shape
    (5, 3, 2)
    >>> pool.evaluate_diag(np.eye(3))[:, 0]
    array([1., 1., 1., 1., 1.])
    """

    __slots__ = ("_specs", "_gram", "_hash")

    def __init__(self, specs: Iterable[KernelSpec]):
        specs = tuple(itertools.islice(specs, MAX_KERNELS + 1))  # a longer iterable is not read further
        if len(specs) > MAX_KERNELS:
            raise ValueError(f"the kernel list has more than {MAX_KERNELS} kernels; a pool holds at most {MAX_KERNELS}")
        for pos, spec in enumerate(specs):
            if not isinstance(spec, KernelSpec):
                raise TypeError(
                    f"KernelPool takes KernelSpec objects, got {spec!r} at position {pos}; use make_pool() for strings"
                )
        if not specs:
            raise ValueError("a kernel pool needs at least one kernel")
        first_seen: dict[KernelSpec, int] = {}
        for pos, spec in enumerate(specs):
            if spec in first_seen:
                raise ValueError(
                    f"kernel {spec.name} appears twice in the pool "
                    f"(positions {first_seen[spec]} and {pos}); each kernel may appear once"
                )
            first_seen[spec] = pos
        object.__setattr__(self, "_specs", specs)
        object.__setattr__(self, "_gram", GramEvaluator(specs))  # refuses a kernel of another family
        object.__setattr__(self, "_hash", hash(specs))

    # ------------------------------------------------------------------ sequence & value
    def __setattr__(self, name, value):
        raise AttributeError("KernelPool is immutable")

    def __len__(self) -> int:
        return len(self._specs)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return KernelPool(self._specs[index])
        return self._specs[index]

    def __iter__(self):
        return iter(self._specs)

    def __eq__(self, other):
        if not isinstance(other, KernelPool):
            return NotImplemented
        return self._specs == other._specs

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # Rebuild from the specs: the evaluator's plan arrays are derived data.
        return (KernelPool, (self._specs,))

    def __repr__(self) -> str:
        return f"KernelPool.from_spec({self.to_spec_string()!r})"

    @property
    def specs(self) -> tuple[KernelSpec, ...]:
        """The kernels, in order."""
        return self._specs

    @property
    def names(self) -> tuple[str, ...]:
        """Canonical name of each kernel, e.g. ``'gaussian(sigma=0.25)'``."""
        return tuple(spec.name for spec in self._specs)

    @property
    def needs(self) -> frozenset[str]:
        """Base matrices this pool is computed from: a subset of dot, sqdist, l1, chi2, achi2
        (over every view)."""
        return self._gram.needs

    @property
    def has_views(self) -> bool:
        """Whether some kernel sees only a feature group."""
        return self._gram.has_views

    @property
    def groups(self) -> dict[str, tuple[int, ...] | None]:
        """The feature groups the kernels name, with their columns (None while unresolved)."""
        return {s.group: s.columns for s in self._specs if s.group is not None}

    @property
    def rescaled(self) -> bool:
        """Whether some kernel's values change with normalisation (:attr:`KernelSpec.rescaled`)."""
        return self._gram.rescaled

    def normalized(self, normalize: bool = True) -> KernelPool:
        """The pool with every kernel normalised (or none): κ(x, y) / sqrt(κ(x, x) κ(y, y)).

        Examples
        --------
        >>> make_pool("omkc16").normalized().to_spec_string()
        'polynomial:1,2,3+norm;gaussian:2^-6..2^6+norm'
        """
        return KernelPool(s.normalized(normalize) for s in self._specs)

    def with_groups(self, feature_groups) -> KernelPool:
        """The pool with every kernel that names a feature group given that group's columns.

        ``feature_groups`` maps group names to column indices (a multi-view dataset's meta
        records them); kernels with their own columns or on every column are kept as they are.

        Examples
        --------
        >>> pool = make_pool("linear;chi2:1 @ hist")
        >>> pool.with_groups({"hist": range(3, 6)}).names
        ('linear', 'chi2(gamma=1)@hist=3:6')
        """
        specs = []
        for spec in self._specs:
            if spec.group is not None and spec.columns is None:
                if feature_groups is None or spec.group not in feature_groups:
                    known = sorted(feature_groups or {})
                    raise ValueError(
                        f"kernel {spec.name} sees feature group {spec.group!r}, which is not among the "
                        f"data's feature groups {known}; name one of those, or give the columns "
                        f"(@{spec.group}=0:10)"
                    )
                spec = spec.on_columns(feature_groups[spec.group])
            specs.append(spec)
        return KernelPool(specs)

    def check_width(self, n_features: int, *, owner: str | None = None) -> None:
        """Refuse a kernel that sees a column at or beyond ``n_features``: the width the pool is bound
        to (the data's, or a loaded model's). Compiled code indexes rows by the view's columns, so
        every estimator checks here before it learns or predicts.

        Examples
        --------
        >>> make_pool("linear @ 0:3").check_width(3)  # columns 0, 1 and 2 of three
        >>> make_pool("linear @ 0:3").check_width(2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: kernel linear@0:3 sees column 2, but the data has 2 columns (0 to 1); ...
        """
        prefix = f"{owner}: " if owner else ""
        for spec in self._specs:
            if spec.columns is not None and spec.columns[-1] >= n_features:
                raise ValueError(
                    f"{prefix}kernel {spec.name} sees column {spec.columns[-1]}, but the data has {n_features} "
                    f"columns (0 to {n_features - 1}); give columns below {n_features} (e.g. @ 0:{n_features}), "
                    "or leave the view out to use every column"
                )

    @classmethod
    def from_spec(cls, spec) -> KernelPool:
        """Same as :func:`make_pool`; reads back :meth:`to_spec_string`."""
        return make_pool(spec)

    def to_spec_string(self) -> str:
        """Compact text that :func:`make_pool` reads back into an equal pool.

        Consecutive kernels of one kind are grouped (``gaussian:0.5,1``) and runs of at least three
        consecutive powers of two are written as ranges (``gaussian:2^-6..2^6``).
        """
        return format_pool(self._specs)

    # ------------------------------------------------------------------ evaluation (kernels/gram.py)
    def evaluate(self, A, B=None, *, out=None, sqdist: str = "gemm") -> np.ndarray:
        """:meth:`GramEvaluator.evaluate` of this pool (kernels/gram.py)."""
        return self._gram.evaluate(A, B, out=out, sqdist=sqdist)

    def normalize_block(self, K, A, B=None) -> None:
        """:meth:`GramEvaluator.normalize_block` of this pool (kernels/gram.py)."""
        self._gram.normalize_block(K, A, B)

    def evaluate_diag(self, X, *, out=None) -> np.ndarray:
        """:meth:`GramEvaluator.evaluate_diag` of this pool (kernels/gram.py)."""
        return self._gram.evaluate_diag(X, out=out)

    def products(self, A, B=None, *, sqdist: str = "gemm") -> PairwiseParts:
        """:meth:`GramEvaluator.products` of this pool (kernels/gram.py)."""
        return self._gram.products(A, B, sqdist=sqdist)

    def from_parts(self, parts: PairwiseParts, *, out=None) -> np.ndarray:
        """:meth:`GramEvaluator.from_parts` of this pool (kernels/gram.py)."""
        return self._gram.from_parts(parts, out=out)

    def from_products(self, dot, sq_a, sq_b, *, out=None) -> np.ndarray:
        """:meth:`GramEvaluator.from_products` of this pool (kernels/gram.py)."""
        return self._gram.from_products(dot, sq_a, sq_b, out=out)


def make_pool(spec, normalize: bool | None = None) -> KernelPool:
    """Build a :class:`KernelPool` from a name, a spec string, specs, or a pool.

    ``normalize``: True (or False) normalises every kernel (or none), see :meth:`KernelPool.normalized`;
    None keeps what the spec says (a ``+norm`` suffix normalises an item).

    Parameters
    ----------
    spec : str, KernelSpec, KernelPool or iterable of these
        * a named pool: ``"omkc16"`` (polynomial p=1,2,3 then gaussian σ=2^-6..2^6, 16 kernels)
          or ``"mkboost17"`` (gaussian σ=2^-6..2^7 then polynomial p=1,2,3, 17 kernels);
        * a spec string of ``;``-separated items, each a named pool, a kernel name
          (``"gaussian(sigma=0.5)"``, ``"linear"``) or ``kind:values`` where values are a comma
          list of numbers (``0.5``, ``1e-3``, ``2^-6``) and ranges (``2^-6..2^6`` steps one power of
          two, ``1..3`` steps one). Kinds: linear, polynomial (poly), gaussian (rbf), laplacian,
          chi2 (bare ``chi2`` is γ = 1), achi2 (additive chi-square). Several kinds may share an
          item, separated by commas (``linear,poly:2,chi2,gaussian:2^0``), and an item may end
          with ``@ view``: a feature group's name, column ranges, or both
          (``@ fourier``, ``@ 0:76``, ``@ fourier=0:76``), which all its kernels see;
        * a list of specs and/or strings (each read as above), concatenated in order.

    Raises
    ------
    ValueError
        Unknown kernel or pool name (the message lists valid names and close matches), bad
        parameter, duplicate kernel, or empty pool.

    Examples
    --------
    >>> make_pool("omkc16").names[:4]
    ('polynomial(p=1)', 'polynomial(p=2)', 'polynomial(p=3)', 'gaussian(sigma=0.015625)')
    >>> len(make_pool("gaussian:0.5,1,2;linear;laplacian:1;chi2:1"))
    6
    >>> from omkl_dist.kernels.specs import Polynomial
    >>> make_pool(["gaussian(sigma=0.5)", Polynomial(p=2)]).to_spec_string()
    'gaussian:0.5;polynomial:2'
    >>> make_pool("linear,poly:2,chi2,gaussian:2^0 @ fou=0:3; linear @ zer=3:5").to_spec_string()
    'linear@fou=0:3;polynomial:2@fou=0:3;chi2:1@fou=0:3;gaussian:1@fou=0:3;linear@zer=3:5'
    """
    if normalize is not None:
        return make_pool(spec).normalized(bool(normalize))
    if isinstance(spec, KernelPool):
        return spec
    if isinstance(spec, KernelSpec):
        return KernelPool((spec,))
    if isinstance(spec, str):
        return KernelPool(parse_pool(spec))
    if isinstance(spec, Iterable):
        specs = []
        for element in spec:
            if isinstance(element, (str, KernelSpec, KernelPool)):
                specs.extend(make_pool(element))
            else:
                raise TypeError(f"pool elements must be kernel specs or strings, got {type(element).__name__}")
            check_kernel_count(len(specs), "the kernel list")
        return KernelPool(specs)
    raise TypeError(f"make_pool takes a pool name, spec string, KernelSpec(s) or KernelPool, got {type(spec).__name__}")


NAMED_POOLS: types.MappingProxyType[str, KernelPool] = types.MappingProxyType(
    {name: KernelPool(specs) for name, specs in NAMED_POOL_SPECS.items()}
)
"""Named pools accepted by :func:`make_pool`: ``omkc16`` (OMKC's 3 polynomial + 13 gaussian kernels)
and ``mkboost17`` (MKBoost's 14 gaussian widths + 3 polynomial kernels)."""
