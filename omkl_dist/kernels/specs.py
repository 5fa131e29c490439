"""Kernel specifications: small immutable values naming one kernel function and its parameter.

A spec knows its formula's parameter, its printable ``name``, its diagonal κ(x, x), and the
*family* of pairwise base matrix it is computed from, which is what lets a
:class:`~omkl_dist.kernels.pools.KernelPool` share work between kernels:

============  =====================================  ==================  ==================
kind          κ(x, y)                                family (base)       per-kernel scale
============  =====================================  ==================  ==================
linear        x·y                                    ``dot``             degree 1
polynomial    (x·y)^p                                ``dot``             degree p
gaussian      exp(−‖x−y‖² / (2σ²))                   ``sqdist``          1/(2σ²)
laplacian     exp(−‖x−y‖₁ / σ)                       ``l1``              1/σ
chi2          exp(−γ Σ_k (x_k−y_k)² / (x_k+y_k))     ``chi2``            γ
achi2         Σ_k 2 x_k y_k / (x_k+y_k)              ``achi2``           --
============  =====================================  ==================  ==================

The polynomial kernel has no offset and gamma 1, as in the OMKC paper (Hoi et al., 2013). The
chi-square kernel is scikit-learn's ``chi2_kernel``: terms with x_k + y_k = 0 contribute 0 and
features must be non-negative; the additive chi-square kernel (Vedaldi & Zisserman's positive
definite form, scikit-learn's ``additive_chi2_kernel`` is its negative distance form) follows the
same rules.

Normalised kernels
------------------
Every spec may be *normalised* (``normalize=True``; in text a ``+norm`` suffix:
``polynomial(p=2)+norm``): κ̃(x, y) = κ(x, y) / sqrt(κ(x, x) κ(y, y)), 0 when either self-value
is 0 (a zero row). A normalised polynomial kernel is the p-th power of the cosine of x and y; the
distance kernels (gaussian, laplacian, chi2) already have κ(x, x) = 1, so the flag leaves their
values unchanged. Without normalisation a pool's polynomial kernels grow with ‖x‖^2p and the
distance kernels stay in [0, 1], which lets the polynomial kernels dominate a combination.

Feature groups
--------------
Every spec may see only some columns (``columns``, sorted distinct indices) and may carry the name
of the feature group they belong to (``group``, e.g. one view of a multi-view dataset): the OKS
paper's kernels are four kernel types on each of fifteen feature types. A spec that names a group
whose columns are not known yet is *unresolved*; :meth:`KernelSpec.on_columns` (or
:meth:`~omkl_dist.kernels.pools.KernelPool.with_groups` for a whole pool) gives it its columns.
In text a view follows the kernel after ``@``: ``chi2(gamma=1)@fourier`` (a named group),
``linear@0:76`` (column ranges, end exclusive) or ``linear@fourier=0:76`` (both).

Parameter bounds
----------------
A degree is an integer in 1..:data:`MAX_DEGREE`; a width or scale (σ, γ) lies in
[:data:`MIN_SCALE`, :data:`MAX_SCALE`] = [2^-64, 2^64]. Within them every coefficient the kernels
are computed from (1/(2σ²), 1/σ, γ) is a normal float, neither 0 nor an overflow, and a power
costs at most that many multiplications; the papers' pools use degrees 1 to 3 and widths 2^-6 to 2^7.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from numbers import Integral, Real
from typing import ClassVar

import numpy as np

from omkl_dist._validation import Interval, check_array, check_nonnegative, check_param, did_you_mean
from omkl_dist.kernels.gram import GramEvaluator
from omkl_dist.kernels.grammar import (
    NORM_SUFFIX,
    check_columns,
    check_group_name,
    format_columns,
    format_number,
    parse_number,
    parse_view,
    read_call,
    strip_norm,
)

__all__ = [
    "KernelSpec",
    "Linear",
    "Polynomial",
    "Gaussian",
    "Laplacian",
    "ChiSquare",
    "AdditiveChiSquare",
    "KERNEL_KINDS",
    "MAX_DEGREE",
    "MIN_SCALE",
    "MAX_SCALE",
    "parse_spec",
]

MAX_DEGREE = 32  # a polynomial kernel's highest degree (see "Parameter bounds")
MIN_SCALE, MAX_SCALE = 2.0**-64, 2.0**64  # the range of a width σ or scale γ


def _scale_param(kind: str, param: str, value, example: str) -> float:
    """A width or scale within [MIN_SCALE, MAX_SCALE] (finite, and its coefficient a normal float)."""
    return check_param(
        kind,
        param,
        value,
        [Interval(Real, MIN_SCALE, MAX_SCALE, closed="both")],
        hint=f" (> 0 and within 2^-64..2^64, e.g. {example})",
    )


# ----------------------------------------------------------------------------- specs
@dataclass(frozen=True, repr=False)
class KernelSpec:
    """Base class of the kernel specs; use a subclass or :func:`parse_spec`.

    Subclasses set ``kind`` (the name used in spec strings), ``family`` (the base matrix the
    kernel is derived from: ``"dot"``, ``"sqdist"``, ``"l1"``, ``"chi2"`` or ``"achi2"``) and
    ``param`` (the name of their single parameter, or ``None``).

    Every spec also takes, by keyword, the view it sees: ``columns`` (column indices; ``None``:
    all of them) and ``group`` (the name of the feature group, see the module notes).
    """

    columns: tuple[int, ...] | None = field(default=None, kw_only=True)
    group: str | None = field(default=None, kw_only=True)
    normalize: bool = field(default=False, kw_only=True)
    kind: ClassVar[str] = ""
    family: ClassVar[str] = ""
    param: ClassVar[str | None] = None

    def __post_init__(self):
        if not self.kind:
            raise TypeError(
                "KernelSpec is a base class; use Linear, Polynomial, Gaussian, Laplacian, "
                "ChiSquare or AdditiveChiSquare"
            )
        if self.columns is not None:
            object.__setattr__(self, "columns", check_columns(self.columns, context=self.kind))
        if self.group is not None:
            check_group_name(self.group, context=self.kind)
        if not isinstance(self.normalize, (bool, np.bool_)):
            raise ValueError(f"{self.kind}: normalize must be True or False, got {self.normalize!r}")
        object.__setattr__(self, "normalize", bool(self.normalize))

    @property
    def value(self):
        """The single parameter's value (``None`` for the linear kernel)."""
        return None if self.param is None else getattr(self, self.param)

    @property
    def view(self) -> str:
        """The view's text after ``@`` (``""`` for a kernel on every column)."""
        if self.columns is None:
            return self.group or ""
        ranges = format_columns(self.columns)
        return f"{self.group}={ranges}" if self.group else ranges

    @property
    def base_name(self) -> str:
        """The kernel's name without its view, e.g. ``"gaussian(sigma=0.25)"`` (``+norm`` when
        normalised)."""
        name = self.kind if self.param is None else f"{self.kind}({self.param}={format_number(self.value)})"
        return name + NORM_SUFFIX if self.normalize else name

    @property
    def rescaled(self) -> bool:
        """Whether normalisation changes this kernel's values: a normalised dot-product or additive
        chi-square kernel (the distance kernels have κ(x, x) = 1 already)."""
        return self.normalize and self.family in ("dot", "achi2")

    def normalized(self, normalize: bool = True) -> KernelSpec:
        """The same kernel, normalised (or not)."""
        return replace(self, normalize=normalize)

    @property
    def name(self) -> str:
        """Canonical text, e.g. ``"gaussian(sigma=0.25)"`` or ``"chi2(gamma=1)@fourier=0:76"``;
        :func:`parse_spec` reads it back."""
        return f"{self.base_name}@{self.view}" if self.view else self.base_name

    @property
    def resolved(self) -> bool:
        """False for a spec that names a feature group whose columns it does not know yet."""
        return self.group is None or self.columns is not None

    def on_columns(self, columns, group: str | None = None) -> KernelSpec:
        """The same kernel on the given columns (and group name)."""
        return replace(self, columns=columns, group=group if group is not None else self.group)

    def view_of(self, X: np.ndarray) -> np.ndarray:
        """The columns of ``X`` this kernel sees (``X`` itself without a view)."""
        if self.columns is None:
            if self.group is not None:
                raise ValueError(
                    f"kernel {self.name} sees feature group {self.group!r}, whose columns are not known: pass "
                    "the dataset's feature groups (feature_groups={name: columns}; a multi-view dataset's meta "
                    "records them) or write the columns, e.g. @fourier=0:76"
                )
            return X
        if self.columns[-1] >= X.shape[1]:
            raise ValueError(f"kernel {self.name} sees column {self.columns[-1]}, but X has {X.shape[1]} columns")
        return np.ascontiguousarray(X[:, list(self.columns)])

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        args = [] if self.param is None else [f"{self.param}={self.value!r}"]
        args += [f"{key}={getattr(self, key)!r}" for key in ("columns", "group") if getattr(self, key) is not None]
        args += ["normalize=True"] if self.normalize else []
        return f"{type(self).__name__}({', '.join(args)})"

    @property
    def coef(self) -> float:
        """What the family transform needs: the integer degree, or the scale in exp(−scale·D)."""
        raise NotImplementedError

    def diag(self, X) -> np.ndarray:
        """κ(x, x) for every row of ``X``, shape ``(n,)`` (normalised: 1, or 0 for a zero row)."""
        X = self.view_of(check_array(X, sparse="refuse", non_empty=False))
        if self.family in ("chi2", "achi2"):
            check_nonnegative(X, self.name)
        if self.family == "dot":
            raw = np.einsum("ij,ij->i", X, X) ** int(self.coef)
        elif self.family == "achi2":
            raw = X.sum(axis=1)  # 2x·x/(x+x) = x per feature
        else:
            return np.ones(X.shape[0])
        return (raw > 0).astype(np.float64) if self.normalize else raw

    def evaluate(self, A, B=None, *, sqdist: str = "gemm") -> np.ndarray:
        """Kernel matrix ``K[i, j] = κ(A[i], B[j])``, shape ``(nA, nB)``; ``B=None`` means A.

        Same code path as a one-kernel :class:`~omkl_dist.kernels.pools.KernelPool`
        (:class:`~omkl_dist.kernels.gram.GramEvaluator`).
        """
        return GramEvaluator((self,)).evaluate(A, B, sqdist=sqdist)[0]


@dataclass(frozen=True, repr=False)
class Linear(KernelSpec):
    """Linear kernel ``κ(x, y) = x·y``.

    Examples
    --------
    >>> import numpy as np
    >>> Linear().evaluate(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]))
    array([[11.]])
    """

    kind: ClassVar[str] = "linear"
    family: ClassVar[str] = "dot"

    @property
    def coef(self) -> int:
        return 1


@dataclass(frozen=True, repr=False)
class Polynomial(KernelSpec):
    """Polynomial kernel ``κ(x, y) = (x·y)^p`` (no offset, gamma 1, as in OMKC).

    Parameters
    ----------
    p : int
        Degree, an integer from 1 to :data:`MAX_DEGREE`.

    Examples
    --------
    >>> import numpy as np
    >>> k = Polynomial(p=2)
    >>> k.name
    'polynomial(p=2)'
    >>> k.evaluate(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]))
    array([[121.]])
    >>> k.diag(np.array([[1.0, 2.0]]))
    array([25.])
    """

    p: int
    kind: ClassVar[str] = "polynomial"
    family: ClassVar[str] = "dot"
    param: ClassVar[str] = "p"

    def __post_init__(self):
        p = check_param(
            self.kind,
            "p",
            self.p,
            [Interval(Integral, 1, MAX_DEGREE, closed="both", whole_floats=True)],
            hint=f" (a positive integer up to {MAX_DEGREE}: 1, 2, 3, ...)",
        )
        object.__setattr__(self, "p", p)
        super().__post_init__()

    @property
    def coef(self) -> int:
        return self.p


@dataclass(frozen=True, repr=False)
class Gaussian(KernelSpec):
    """Gaussian (RBF) kernel ``κ(x, y) = exp(−‖x−y‖² / (2σ²))``.

    Equals scikit-learn's ``rbf`` kernel with ``gamma = 1/(2σ²)``.

    Parameters
    ----------
    sigma : float
        Width σ in [2^-64, 2^64].

    Examples
    --------
    >>> import numpy as np
    >>> k = Gaussian(sigma=0.5)
    >>> k.name
    'gaussian(sigma=0.5)'
    >>> k.evaluate(np.array([[0.0, 0.0]]), np.array([[0.0, 0.5]]))  # exp(-0.25 / 0.5)
    array([[0.60653066]])
    """

    sigma: float
    kind: ClassVar[str] = "gaussian"
    family: ClassVar[str] = "sqdist"
    param: ClassVar[str] = "sigma"

    def __post_init__(self):
        sigma = _scale_param(self.kind, "sigma", self.sigma, "0.5 or 2**-3")
        object.__setattr__(self, "sigma", sigma)
        super().__post_init__()

    @property
    def coef(self) -> float:
        return 1.0 / (2.0 * self.sigma * self.sigma)


@dataclass(frozen=True, repr=False)
class Laplacian(KernelSpec):
    """Laplacian kernel ``κ(x, y) = exp(−‖x−y‖₁ / σ)``.

    Equals scikit-learn's ``laplacian`` kernel with ``gamma = 1/σ``.

    Parameters
    ----------
    sigma : float
        Width σ in [2^-64, 2^64].

    Examples
    --------
    >>> import numpy as np
    >>> Laplacian(sigma=2).evaluate(np.array([[0.0, 0.0]]), np.array([[1.0, -1.0]]))
    array([[0.36787944]])
    """

    sigma: float
    kind: ClassVar[str] = "laplacian"
    family: ClassVar[str] = "l1"
    param: ClassVar[str] = "sigma"

    def __post_init__(self):
        sigma = _scale_param(self.kind, "sigma", self.sigma, "0.5 or 2")
        object.__setattr__(self, "sigma", sigma)
        super().__post_init__()

    @property
    def coef(self) -> float:
        return 1.0 / self.sigma


@dataclass(frozen=True, repr=False)
class ChiSquare(KernelSpec):
    """Exponential chi-square kernel ``κ(x, y) = exp(−γ Σ_k (x_k−y_k)² / (x_k+y_k))``.

    scikit-learn's ``chi2_kernel``: terms with ``x_k + y_k = 0`` contribute 0, and every feature
    must be non-negative (a negative one raises ``ValueError``).

    Parameters
    ----------
    gamma : float
        Scale γ in [2^-64, 2^64].

    Examples
    --------
    >>> import numpy as np
    >>> k = ChiSquare(gamma=1)
    >>> k.name
    'chi2(gamma=1)'
    >>> k.evaluate(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]]))  # exp(-1)
    array([[0.36787944]])
    """

    gamma: float
    kind: ClassVar[str] = "chi2"
    family: ClassVar[str] = "chi2"
    param: ClassVar[str] = "gamma"

    def __post_init__(self):
        gamma = _scale_param(self.kind, "gamma", self.gamma, "1 or 0.5")
        object.__setattr__(self, "gamma", gamma)
        super().__post_init__()

    @property
    def coef(self) -> float:
        return self.gamma


@dataclass(frozen=True, repr=False)
class AdditiveChiSquare(KernelSpec):
    """Additive chi-square kernel ``κ(x, y) = Σ_k 2 x_k y_k / (x_k + y_k)`` (for histograms).

    The positive definite form (Vedaldi & Zisserman 2012); terms with ``x_k + y_k = 0``
    contribute 0 and every feature must be non-negative (a negative one raises ``ValueError``).

    Examples
    --------
    >>> import numpy as np
    >>> AdditiveChiSquare().evaluate(np.array([[1.0, 2.0]]), np.array([[1.0, 0.0]]))  # 2·1·1/2 + 0
    array([[1.]])
    """

    kind: ClassVar[str] = "achi2"
    family: ClassVar[str] = "achi2"

    @property
    def coef(self) -> float:
        return 1.0


# ----------------------------------------------------------------------------- names
KERNEL_KINDS: dict[str, type[KernelSpec]] = {
    cls.kind: cls for cls in (Linear, Polynomial, Gaussian, Laplacian, ChiSquare, AdditiveChiSquare)
}
"""Canonical kind name → spec class."""

ALIASES: dict[str, str] = {
    "poly": "polynomial",
    "rbf": "gaussian",
    "laplace": "laplacian",
    "chi-square": "chi2",
    "chi_square": "chi2",
    "chisquare": "chi2",
    "additive-chi2": "achi2",
    "additive_chi2": "achi2",
}
"""Other accepted spellings of the kind names (matched case-insensitively)."""


def unknown_name_error(word: str, extra: dict[str, list[str]] | None = None) -> ValueError:
    """A ValueError for an unknown kernel (or pool) name, listing valid names and close matches."""
    groups = {"kernels": sorted(KERNEL_KINDS), "aliases": sorted(ALIASES)}
    groups.update(extra or {})
    hint = did_you_mean(word.lower(), [name for names in groups.values() for name in names])
    hint = f"; {hint}" if hint else ""
    listing = "; ".join(f"{group}: {', '.join(names)}" for group, names in groups.items() if names)
    return ValueError(f"unknown kernel name {word!r}{hint} (valid {listing})")


def kind_class(word: str, extra: dict[str, list[str]] | None = None) -> type[KernelSpec]:
    """Spec class for a kind name or alias; ``extra`` adds name groups to the error message."""
    key = word.strip().lower()
    key = ALIASES.get(key, key)
    if key not in KERNEL_KINDS:
        raise unknown_name_error(word.strip(), extra)
    return KERNEL_KINDS[key]


def make_spec(cls: type[KernelSpec], value=None) -> KernelSpec:
    """Build a spec of class ``cls`` from its single parameter value (none for linear)."""
    if cls.param is None:
        if value is not None:
            raise ValueError(f"{cls.kind} takes no parameter, got {value!r}")
        return cls()
    if value is None:
        raise ValueError(
            f"{cls.kind} needs its parameter {cls.param}, e.g. {cls.kind}({cls.param}=1) or {cls.kind}:1,2"
        )
    return cls(**{cls.param: value})


def parse_spec(text: str) -> KernelSpec:
    """Read one kernel from its name, e.g. ``"gaussian(sigma=0.5)"``, ``"poly(p=2)"``, ``"linear"``.

    The parameter may be given by keyword or position and as ``2^k``: ``"rbf(2^-3)"``; a view
    follows after ``@`` (``"linear@fourier"``, ``"linear@0:76"``, ``"linear@fourier=0:76"``).

    Examples
    --------
    >>> parse_spec("gaussian(sigma=2^-2)")
    Gaussian(sigma=0.25)
    >>> parse_spec(Gaussian(0.25).name) == Gaussian(0.25)
    True
    >>> parse_spec("chi2(gamma=1)@fourier=0:76").columns[-1]
    75
    """
    body, at, view = text.partition("@")
    if at:
        return parse_spec(body).on_columns(**parse_view(view, context=f"kernel {text!r}"))
    text, normalize = strip_norm(text)
    if normalize:
        return parse_spec(text).normalized()
    call = read_call(text)
    if call is None:
        raise ValueError(
            f"cannot read kernel {text!r}; write e.g. 'gaussian(sigma=0.5)', 'polynomial(p=2)' or 'linear'"
        )
    kind, args = call
    cls = kind_class(kind)
    if not args:
        return make_spec(cls)
    key, sep, raw = args.rpartition("=")
    key = key.strip()
    allowed = [f.name for f in fields(cls) if f.name not in ("columns", "group", "normalize")]
    if sep and key not in allowed:
        expected = f"its parameter is {cls.param!r}" if cls.param else "it takes no parameter"
        raise ValueError(f"{cls.kind} has no parameter {key!r} ({expected}): {text!r}")
    if "," in raw:
        raise ValueError(f"{cls.kind} takes a single parameter, got {args!r} in {text!r}")
    value = parse_number(raw, context=f"kernel {text!r}")
    return make_spec(cls, value)
