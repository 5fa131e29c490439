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
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from dataclasses import dataclass, field, fields, replace
from typing import ClassVar

import numpy as np

__all__ = [
    "KernelSpec",
    "Linear",
    "Polynomial",
    "Gaussian",
    "Laplacian",
    "ChiSquare",
    "AdditiveChiSquare",
    "KERNEL_KINDS",
    "parse_spec",
]


# ----------------------------------------------------------------------------- numbers
def format_number(x: float) -> str:
    """Shortest text that reads back as exactly ``x`` (``repr``), without a trailing ``.0``."""
    text = repr(float(x)) if not isinstance(x, numbers.Integral) else str(int(x))
    return text[:-2] if text.endswith(".0") else text


_POWER_RE = re.compile(r"^\s*2\s*\^\s*([+-]?\d+)\s*$")


def parse_number(text: str, *, context: str) -> float:
    """Read ``"0.5"``, ``"1e-3"`` or ``"2^-6"`` (a power of two with an integer exponent)."""
    match = _POWER_RE.match(text)
    if match:
        return math.ldexp(1.0, int(match.group(1)))
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"{context}: cannot read {text.strip()!r} as a number; write e.g. 0.5, 1e-3 or 2^-6"
        ) from None


def _positive_real(value, *, kind: str, param: str, example: str) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = math.isfinite(value) and value > 0.0
    if not ok:
        raise ValueError(
            f"{kind}: {param} must be a finite real number > 0 (e.g. {example}), got {value!r}"
        )
    return value


def _positive_int(value, *, kind: str, param: str) -> int:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok and not isinstance(value, numbers.Integral):
        ok = math.isfinite(float(value)) and float(value).is_integer()
    if ok:
        value = int(value)
        ok = value >= 1
    if not ok:
        raise ValueError(
            f"{kind}: {param} must be a positive integer (1, 2, 3, ...), got {value!r}"
        )
    return value


# ----------------------------------------------------------------------------- input checks
def check_matrix(X, what: str = "X") -> np.ndarray:
    """Return ``X`` as a C-contiguous 2-D float64 array, or raise a message saying how to fix it."""
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise TypeError(
            f"{what} is a sparse matrix; the kernel layer works on dense rows: "
            f"pass {what}.toarray()"
        )
    arr = np.ascontiguousarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(
            f"{what} must be 2-D (n_samples, n_features), got shape {arr.shape}; "
            "for a single point use x.reshape(1, -1)"
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} contains NaN or infinite values; kernels need finite features")
    return arr


def check_nonnegative(X: np.ndarray, kernel: str, what: str = "X") -> None:
    """Raise if ``X`` has a negative entry (the chi-square kernel is undefined there)."""
    if X.size and X.min() < 0.0:
        row, col = np.unravel_index(int(np.argmin(X)), X.shape)
        raise ValueError(
            f"{kernel} needs non-negative features but {what}[{row}, {col}] = {X[row, col]!r}; "
            "rescale the features to [0, 1] (e.g. sklearn MinMaxScaler) "
            "or use a pool without chi2 kernels"
        )


# ----------------------------------------------------------------------------- views
_GROUP_RE = re.compile(r"^[A-Za-z_][\w.-]*$")
_RANGE_RE = re.compile(r"^\s*(\d+)\s*(?::\s*(\d+)\s*)?$")


def check_group_name(name, *, context: str = "feature group") -> str:
    """A feature group's name: a letter or ``_`` then letters, digits, ``_``, ``.`` or ``-``."""
    if not isinstance(name, str) or not _GROUP_RE.match(name):
        raise ValueError(f"{context}: {name!r} is not a feature group name; use letters, digits, '_', '.' "
                         "and '-', starting with a letter (e.g. 'fourier')")
    return name


def check_columns(columns, *, context: str = "columns") -> tuple[int, ...]:
    """Sorted distinct non-negative column indices as a tuple (at least one)."""
    try:
        values = [int(c) for c in columns]
        exact = all(int(c) == c for c in columns)
    except (TypeError, ValueError):
        raise ValueError(f"{context}: columns must be integers, got {columns!r}") from None
    if not exact or not values or min(values) < 0:
        raise ValueError(f"{context}: columns must be at least one non-negative integer index, got {columns!r}")
    return tuple(sorted(set(values)))


def format_columns(columns: tuple[int, ...]) -> str:
    """Columns as half-open ranges, ``"0:76,80"`` for 0..75 and 80."""
    parts, start = [], 0
    while start < len(columns):
        stop = start
        while stop + 1 < len(columns) and columns[stop + 1] == columns[stop] + 1:
            stop += 1
        lo, hi = columns[start], columns[stop] + 1
        parts.append(str(lo) if hi == lo + 1 else f"{lo}:{hi}")
        start = stop + 1
    return ",".join(parts)


def parse_columns(text: str, *, context: str) -> tuple[int, ...]:
    """Read ``"0:76,80"`` (half-open ranges and single indices) into column indices."""
    columns = []
    for piece in text.split(","):
        match = _RANGE_RE.match(piece)
        if not match:
            raise ValueError(f"{context}: cannot read column range {piece.strip()!r}; write e.g. 0:76 (columns 0 to "
                             "75) or 0:76,80")
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo + 1
        if hi <= lo:
            raise ValueError(f"{context}: column range {piece.strip()!r} is empty (the end is exclusive)")
        columns.extend(range(lo, hi))
    return check_columns(columns, context=context)


def parse_view(text: str, *, context: str) -> dict:
    """``"fourier"``, ``"0:76"`` or ``"fourier=0:76"`` → ``{"group": ..., "columns": ...}``."""
    name, sep, ranges = text.strip().partition("=")
    if sep:
        return {"group": check_group_name(name.strip(), context=context),
                "columns": parse_columns(ranges, context=context)}
    if _GROUP_RE.match(name):
        return {"group": name, "columns": None}
    return {"group": None, "columns": parse_columns(name, context=context)}


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
        X = self.view_of(check_matrix(X))
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

        Same code path as a one-kernel :class:`~omkl_dist.kernels.pools.KernelPool`.
        """
        from omkl_dist.kernels.pools import KernelPool  # pools imports specs

        return KernelPool((self,)).evaluate(A, B, sqdist=sqdist)[0]


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
        Degree, a positive integer.

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
        object.__setattr__(self, "p", _positive_int(self.p, kind=self.kind, param="p"))
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
        Width σ > 0.

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
        sigma = _positive_real(self.sigma, kind=self.kind, param="sigma", example="0.5 or 2**-3")
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
        Width σ > 0.

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
        sigma = _positive_real(self.sigma, kind=self.kind, param="sigma", example="0.5 or 2")
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
        Scale γ > 0.

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
        gamma = _positive_real(self.gamma, kind=self.kind, param="gamma", example="1 or 0.5")
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
    every = [name for names in groups.values() for name in names]
    close = difflib.get_close_matches(word.lower(), every, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
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
            f"{cls.kind} needs its parameter {cls.param}, e.g. {cls.kind}({cls.param}=1) "
            f"or {cls.kind}:1,2"
        )
    return cls(**{cls.param: value})


NORM_SUFFIX = "+norm"  # the text of a normalised kernel: polynomial(p=2)+norm, poly:1,2,3+norm, omkc16+norm


def strip_norm(text: str) -> tuple[str, bool]:
    """``(text without a trailing +norm, whether it had one)``."""
    body = text.rstrip()
    if body.lower().endswith(NORM_SUFFIX):
        return body[: -len(NORM_SUFFIX)], True
    return text, False


_CALL_RE = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:\(\s*(.*?)\s*\))?\s*$")


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
    match = _CALL_RE.match(text)
    if not match:
        raise ValueError(
            f"cannot read kernel {text!r}; write e.g. 'gaussian(sigma=0.5)', 'polynomial(p=2)' "
            "or 'linear'"
        )
    cls = kind_class(match.group(1))
    args = match.group(2)
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
