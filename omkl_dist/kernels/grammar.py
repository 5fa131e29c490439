"""The text of kernel and pool specs: numbers, column ranges, views, the ``+norm`` suffix, value lists.

Only text is read and written here; what the words mean (which kernel a kind names, which pool a
name stands for) is :mod:`omkl_dist.kernels.specs`'s, :mod:`omkl_dist.kernels.pool_text`'s and
:mod:`omkl_dist.kernels.pools`'s, which build on this module (so the imports run one way: grammar <-
specs <- pool_text <- pools).

Forms:

- a number: ``0.5``, ``1e-3`` or ``2^-6`` (a power of two with an integer exponent);
- a kernel call: ``kind``, ``kind()``, ``kind(value)`` or ``kind(param=value)``;
- a view after ``@``: a feature group's name (``fourier``), column ranges (``0:76,80``, end
  exclusive) or both (``fourier=0:76``);
- a pool item: ``kind:values`` runs separated by commas, optionally ``+norm`` and ``@ view``,
  where values are numbers and ranges (``2^-6..2^6`` steps one power of two, ``1..3`` steps one).

Bounds, checked on the text before anything of that size is built: a pool names at most
:data:`MAX_KERNELS` kernels, a power of two stays within float64 (``2^-1074`` to ``2^1023``) and a
view lists at most :data:`MAX_VIEW_COLUMNS` columns, each below
:data:`~omkl_dist._validation.MAX_FEATURES` (views compute on dense rows).
"""

from __future__ import annotations

import math
import numbers
import re

from omkl_dist._validation import MAX_FEATURES

__all__ = [
    "NORM_SUFFIX",
    "MAX_KERNELS",
    "MAX_VIEW_COLUMNS",
    "check_kernel_count",
    "format_number",
    "parse_number",
    "check_group_name",
    "check_columns",
    "format_columns",
    "parse_columns",
    "parse_view",
    "strip_norm",
    "read_call",
    "split_item",
    "split_runs",
    "parse_values",
    "format_values",
    "power_of_two",
    "two_to",
]

NORM_SUFFIX = "+norm"  # the text of a normalised kernel: polynomial(p=2)+norm, poly:1,2,3+norm, omkc16+norm


# ----------------------------------------------------------------------------- numbers
def format_number(x: float) -> str:
    """Shortest text that reads back as exactly ``x`` (``repr``), without a trailing ``.0``."""
    text = repr(float(x)) if not isinstance(x, numbers.Integral) else str(int(x))
    return text[:-2] if text.endswith(".0") else text


_POWER_RE = re.compile(r"^\s*2\s*\^\s*([+-]?\d{1,18})\s*$")  # at most 18 digits: a bounded int()
_INT_RE = re.compile(r"^\s*[+-]?\d{1,18}\s*$")
MAX_KERNELS = 1024  # kernels in one pool: each costs a pass over every block and its own model state
MAX_VIEW_COLUMNS = 1 << 18  # columns one view lists (kept as a tuple; a kernel on all columns needs no view)
_MIN_EXPONENT, _MAX_EXPONENT = -1074, 1023  # the powers of two a float64 holds (the lowest subnormal)


def check_kernel_count(n: int, what: str) -> None:
    """Refuse ``n`` > :data:`MAX_KERNELS` kernels, before they are built; ``what`` names the spec."""
    if n > MAX_KERNELS:
        raise ValueError(
            f"{what} gives {n} kernels; a pool holds at most {MAX_KERNELS}: name fewer "
            "(e.g. gaussian:2^-6..2^6 is 13 widths)"
        )


def two_to(exponent: int) -> float:
    """2 ** exponent, exactly; a ValueError outside float64's range (it would overflow, or be 0)."""
    if not _MIN_EXPONENT <= exponent <= _MAX_EXPONENT:
        raise ValueError(f"2^{exponent} is outside the numbers a float holds (2^{_MIN_EXPONENT} to 2^{_MAX_EXPONENT})")
    return math.ldexp(1.0, exponent)


def parse_number(text: str, *, context: str) -> float:
    """Read ``"0.5"``, ``"1e-3"`` or ``"2^-6"`` (a power of two with an integer exponent); text beyond
    the float range reads as ``inf`` (or 0), which the kernel's parameter check refuses."""
    match = _POWER_RE.match(text)
    if match:
        try:
            return two_to(int(match.group(1)))
        except ValueError as exc:
            raise ValueError(f"{context}: {exc}") from None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{context}: cannot read {text.strip()!r} as a number; write e.g. 0.5, 1e-3 or 2^-6") from None


def power_of_two(x) -> int | None:
    """Exponent e if ``x == 2**e`` exactly, else None."""
    if not isinstance(x, float) or x <= 0.0:
        return None
    mantissa, exp = math.frexp(x)
    return exp - 1 if mantissa == 0.5 else None


def format_values(values: list) -> list[str]:
    """Numbers as text, with runs of ≥3 consecutive powers of two as ``2^a..2^b``."""
    exps = [power_of_two(v) for v in values]
    texts, i = [], 0
    while i < len(values):
        j = i
        if exps[i] is not None:
            step = None
            while j + 1 < len(values) and exps[j + 1] is not None:
                diff = exps[j + 1] - exps[j]
                if diff not in (1, -1) or (step is not None and diff != step):
                    break
                step, j = diff, j + 1
        if j - i >= 2:
            texts.append(f"2^{exps[i]}..2^{exps[j]}")
            i = j + 1
        else:
            texts.append(format_number(values[i]))
            i += 1
    return texts


def parse_values(text: str, item: str) -> list[float]:
    """A pool item's comma list of numbers and ranges (``0.5,2^-6..2^6,1..3``), in order; at most
    :data:`MAX_KERNELS` of them, counted before a range is expanded."""
    values: list[float] = []
    for piece in text.split(","):
        if not piece.strip():
            raise ValueError(f"empty value in {item!r}; write e.g. gaussian:0.5,1,2")
        if ".." not in piece:
            values.append(parse_number(piece, context=f"pool item {item!r}"))
        else:
            values.extend(_parse_range(piece.strip(), item, len(values)))
        check_kernel_count(len(values), f"{item.strip()!r}")
    return values


def _parse_range(piece: str, item: str, before: int) -> list[float]:
    """The values of one range ``2^a..2^b`` or ``a..b``; ``before``: values the item already has."""
    lo, _, hi = piece.partition("..")
    pow_lo, pow_hi = _POWER_RE.match(lo), _POWER_RE.match(hi)
    if pow_lo and pow_hi:
        a, b, as_value = int(pow_lo.group(1)), int(pow_hi.group(1)), two_to
    elif _INT_RE.match(lo) and _INT_RE.match(hi):
        a, b, as_value = int(lo), int(hi), float
    else:
        raise ValueError(
            f"cannot read range {piece!r} in {item!r}: both ends must be powers of two "
            "(2^-6..2^6, one power of two per step) or both integers (1..3)"
        )
    check_kernel_count(abs(b - a) + 1, f"range {piece!r} in {item!r}")
    check_kernel_count(before + abs(b - a) + 1, f"{item.strip()!r}")
    step = 1 if b >= a else -1
    try:
        return [as_value(e) for e in range(a, b + step, step)]
    except (ValueError, OverflowError) as exc:  # 2^2000, or an integer too large for a float
        raise ValueError(f"range {piece!r} in {item!r}: {exc}") from None


# ----------------------------------------------------------------------------- views
_GROUP_RE = re.compile(r"^[A-Za-z_][\w.-]*$")
_RANGE_RE = re.compile(r"^\s*(\d{1,18})\s*(?::\s*(\d{1,18})\s*)?$")  # 18 digits: a bounded int()


def check_group_name(name, *, context: str = "feature group") -> str:
    """A feature group's name: a letter or ``_`` then letters, digits, ``_``, ``.`` or ``-``."""
    if not isinstance(name, str) or not _GROUP_RE.match(name):
        raise ValueError(
            f"{context}: {name!r} is not a feature group name; use letters, digits, '_', '.' "
            "and '-', starting with a letter (e.g. 'fourier')"
        )
    return name


def _column_bound_error(context: str, what: str) -> ValueError:
    """``what`` (a column) is beyond the widest data a view may see."""
    return ValueError(
        f"{context}: {what} is beyond the widest data a view may see ({MAX_FEATURES:,} columns: kernels on "
        "views compute on dense rows); give the view's columns of the data, e.g. @ 0:76"
    )


def _view_size_error(context: str, n_columns: int) -> ValueError:
    return ValueError(
        f"{context}: a view of {n_columns:,} columns is more than the {MAX_VIEW_COLUMNS:,} a view may list; "
        "leave the view out for a kernel on every column"
    )


def check_columns(columns, *, context: str = "columns") -> tuple[int, ...]:
    """Sorted distinct column indices in ``[0, MAX_FEATURES)`` as a tuple (at least one, at most
    :data:`MAX_VIEW_COLUMNS`: a longer collection is refused before it is read)."""
    if hasattr(columns, "__len__") and len(columns) > MAX_VIEW_COLUMNS:
        raise _view_size_error(context, len(columns))
    try:
        values = [int(c) for c in columns]
        exact = all(int(c) == c for c in columns)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{context}: columns must be integers, got {columns!r}") from None
    if not exact or not values or min(values) < 0:
        raise ValueError(f"{context}: columns must be at least one non-negative integer index, got {columns!r}")
    if max(values) >= MAX_FEATURES:
        raise _column_bound_error(context, f"column {max(values)}")
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
            raise ValueError(
                f"{context}: cannot read column range {piece.strip()!r}; write e.g. 0:76 (columns 0 to 75) or 0:76,80"
            )
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo + 1
        if hi <= lo:
            raise ValueError(f"{context}: column range {piece.strip()!r} is empty (the end is exclusive)")
        if hi > MAX_FEATURES:  # before the range is expanded
            raise _column_bound_error(context, f"column {hi - 1}")
        if len(columns) + hi - lo > MAX_VIEW_COLUMNS:
            raise _view_size_error(context, len(columns) + hi - lo)
        columns.extend(range(lo, hi))
    return check_columns(columns, context=context)


def parse_view(text: str, *, context: str) -> dict:
    """``"fourier"``, ``"0:76"`` or ``"fourier=0:76"`` → ``{"group": ..., "columns": ...}``."""
    name, sep, ranges = text.strip().partition("=")
    if sep:
        return {
            "group": check_group_name(name.strip(), context=context),
            "columns": parse_columns(ranges, context=context),
        }
    if _GROUP_RE.match(name):
        return {"group": name, "columns": None}
    return {"group": None, "columns": parse_columns(name, context=context)}


# ----------------------------------------------------------------------------- kernels and items
def strip_norm(text: str) -> tuple[str, bool]:
    """``(text without a trailing +norm, whether it had one)``."""
    body = text.rstrip()
    if body.lower().endswith(NORM_SUFFIX):
        return body[: -len(NORM_SUFFIX)], True
    return text, False


_CALL_RE = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:\(\s*(.*?)\s*\))?\s*$")


def read_call(text: str) -> tuple[str, str | None] | None:
    """``"kind(args)"`` → ``(kind, args)`` (``args`` None or ``""`` without arguments); None when
    ``text`` is not of that form."""
    match = _CALL_RE.match(text)
    return None if match is None else (match.group(1), match.group(2))


def split_item(item: str) -> tuple[str, bool, str | None]:
    """A pool item as ``(kernels text, whether it ends in +norm, view text or None)``."""
    body, at, view = item.rpartition("@") if "@" in item else (item, "", "")
    body, normalize = strip_norm(body)  # "poly:1,2,3+norm", "omkc16+norm": every kernel of the item
    return body, normalize, view if at else None


_KIND_START_RE = re.compile(r"^\s*[A-Za-z]")


def split_runs(word: str) -> list[str]:
    """``kind:values`` runs separated by commas (``linear,poly:2,3,chi2,gaussian:2^0``): a piece
    that starts with a letter begins a kernel kind, the others are more values of the last one."""
    runs: list[str] = []
    for piece in word.split(","):
        if runs and not _KIND_START_RE.match(piece):
            runs[-1] += "," + piece
        else:
            runs.append(piece)
    return [run.strip() for run in runs]
