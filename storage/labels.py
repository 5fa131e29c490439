"""Label normalisation: binary -> {-1, +1}, multi-class -> 0..K-1, with the mapping kept.

The mapping is an ordered list of ``[original, internal]`` pairs. Originals are stored as the
canonical string of the value (``"1"`` for 1.0, ``"-1"`` for -1, ``"g"`` for "g"), so a label map
round-trips through JSON and can be re-applied to a matching test split.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from omkl_dist._validation import did_you_mean, user_stacklevel

from .errors import DataError, UnknownLabelError


def canonical(value: Any) -> str:
    """Canonical string of an original label: integral floats lose their ``.0``."""
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode()
    if isinstance(value, str):
        s = value.strip()
        try:
            value = float(s)
        except ValueError:
            return s
    f = float(value)
    if np.isfinite(f) and f == int(f):
        return str(int(f))
    return repr(f)


def _sort_key(label: str) -> tuple[int, float, str]:
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


def build_label_map(
    originals: Iterable[Any],
    *,
    n_classes: int | None = None,
    path: object = None,
    positive_class: object = None,
    one_class: bool = False,
) -> list[list[Any]]:
    """Build the original->internal map for the given distinct original labels.

    ``originals`` are the declared classes (``--classes``) or the classes found in the data.
    Two classes map (in numeric/lexical order) to -1 and +1, or ``positive_class`` to +1 and the
    other to -1; K > 2 classes map to 0..K-1. One class is refused (nothing learns from it), unless
    ``one_class``: rows scored against a model's predictions (a file of positives), mapped to +1.
    """
    labels = sorted({canonical(v) for v in originals}, key=_sort_key)
    k = len(labels)
    if positive_class is not None:
        positive = canonical(positive_class)
        if k != 2:
            raise DataError(
                f"a positive class is chosen for binary data; this has {k} class(es) {labels}",
                path=path,
                fix="drop --positive-class (positive_class=...)",
            )
        if positive not in labels:
            raise DataError(
                f"positive class {positive!r} is not one of the classes {labels}",
                path=path,
                fix="name one of them (--positive-class)",
            )
        labels = [lab for lab in labels if lab != positive] + [positive]
    if n_classes is not None and k > n_classes:
        raise DataError(
            f"found {k} classes {labels} but {n_classes} were requested",
            path=path,
            fix=f"pass n_classes={k} (--n-classes {k}) or remove the extra classes from the file",
        )
    if k == 2:
        return [[labels[0], -1], [labels[1], 1]]
    if k == 1 and one_class:
        return [[labels[0], 1]]
    if k < 2:
        raise DataError(
            f"only one class {labels} present; a classifier needs two",
            path=path,
            fix="declare the classes explicitly (--classes -1,1, or the label map of the matching "
            "training split) if this is a one-class test split",
        )
    return [[lab, i] for i, lab in enumerate(labels)]


def apply_label_map(y_raw: ArrayLike, label_map: Iterable[list[Any]], *, path: object = None) -> NDArray[np.int64]:
    """Map original labels to internal integer labels; unknown labels are an error."""
    lookup = {orig: internal for orig, internal in label_map}
    keys = [canonical(v) for v in np.asarray(y_raw).ravel()]
    out = np.empty(len(keys), dtype=np.int64)
    for i, key in enumerate(keys):
        try:
            out[i] = lookup[key]
        except KeyError:
            raise UnknownLabelError(
                f"label {key!r} is not one of the declared classes {list(lookup)}",
                label=key,
                classes=list(lookup),
                path=path,
                row=i + 1,
                fix="declare all classes (--classes) or correct the label",
            ) from None
    return out


def encode_labels(
    y_raw: ArrayLike,
    *,
    classes: Iterable[Any] | None = None,
    n_classes: int | None = None,
    positive_class: object = None,
    path: object = None,
    line_of: Callable[[int], int] = lambda i: i + 1,
    one_class: bool = False,
) -> tuple[NDArray[np.int64], list[list[Any]]]:
    """Original labels -> ``(internal int64 labels, label map)``, canonicalising each distinct value
    once (not once per row); ``line_of`` maps a row index to the row named in errors; ``one_class``:
    see :func:`build_label_map`."""
    y_raw = np.asarray(y_raw)
    if y_raw.dtype.kind == "f" and not np.isfinite(y_raw).all():
        row = int(np.flatnonzero(~np.isfinite(y_raw))[0])
        raise nonfinite_label(float(y_raw[row]), path, line_of(row))
    uniques, inverse = np.unique(y_raw, return_inverse=True)
    return encode_label_codes(
        uniques,
        inverse.ravel(),
        classes=classes,
        n_classes=n_classes,
        positive_class=positive_class,
        path=path,
        line_of=line_of,
        one_class=one_class,
    )


def encode_label_codes(
    uniques: NDArray[Any],
    codes: NDArray[np.integer[Any]],
    *,
    classes: Iterable[Any] | None = None,
    n_classes: int | None = None,
    positive_class: object = None,
    path: object = None,
    line_of: Callable[[int], int] = lambda i: i + 1,
    one_class: bool = False,
) -> tuple[NDArray[np.int64], list[list[Any]]]:
    """:func:`encode_labels` of labels given as their sorted distinct values and each row's index
    among them (what a file read block by block keeps of its labels)."""
    keys = [canonical(u) for u in uniques]
    label_map = build_label_map(
        classes if classes is not None else keys,
        n_classes=n_classes,
        path=path,
        positive_class=positive_class,
        one_class=one_class,
    )
    lookup = dict((original, internal) for original, internal in label_map)
    unknown = [i for i, k in enumerate(keys) if k not in lookup]
    if unknown:
        row = int(np.flatnonzero(codes == unknown[0])[0])
        raise UnknownLabelError(
            f"label {keys[unknown[0]]!r} is not one of the declared classes {list(lookup)}",
            label=keys[unknown[0]],
            classes=list(lookup),
            path=path,
            row=line_of(row),
            fix="declare all classes (classes=..., --classes) or correct the label",
        )
    mapped = np.array([lookup[k] for k in keys], dtype=np.int64)
    return mapped[codes], label_map


def nonfinite_label(value: float, path: object, row: int) -> DataError:
    """The error of a missing (NaN) or infinite label on ``row``."""
    return DataError(
        f"missing or non-finite label {value!r}", path=path, row=row, fix="fill in the label or drop the row"
    )


NO_LABELS = "none"  # the label column of data that has no labels (rows to predict)
#: the names (any case) of the default label column of a table or a text file with a header, in
#: order of precedence: ``x,y,target`` is labelled by ``target`` (``y`` is a coordinate there)
LABEL_NAMES = ("target", "label", "class", "y")


def is_label_name(name: str) -> bool:
    """Whether a column's name is one of :data:`LABEL_NAMES` (any case): the default rule found it by
    its name, not for want of one (the first column)."""
    return name.strip().lower() in LABEL_NAMES


def warn_guessed_labels(where: object, names: list[str], n_rows: int, n_classes: int) -> None:
    """Warn when the default rule took a named table's first column (``names``: its columns) for the
    labels for want of a label name, and it looks like a feature: more than 10 classes and more than
    one per 20 rows (an age, an amount): a run would learn it, and its mistake rate say nothing clear."""
    first = names[default_label_column(names)]
    if is_label_name(first) or n_classes <= max(10, n_rows / 20):
        return
    others = [name for name in names if name != first]
    hint = f"--label-column {others[-1]}" if others else "--label-column NAME"
    warnings.warn(
        f"{where}: the labels are the first column, {first!r} (no column is named target, label, class or y): "
        f"{n_classes} classes in {n_rows} rows, more like a feature; if another column holds the labels, pass "
        f"{hint} (label_column=...)",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def default_label_column(names: list[str] | None) -> int:
    """The 0-based label column when none is chosen, one rule for every format with columns (CSV,
    TSV, dense text, parquet, in-memory tables): the first of :data:`LABEL_NAMES` (any case) that
    names a column, else the first column (after a column of row names, :func:`row_names_column`)."""
    lowered = [name.strip().lower() for name in names or ()]
    first = 1 if row_names_column(names) == 0 else 0
    return next((lowered.index(name) for name in LABEL_NAMES if name in lowered), first)


def label_column_name(label_column: str | int | None, names: list[str], where: object) -> str | None:
    """The name of the label column ``label_column`` (None: the default rule's; ``"none"``: None) of
    columns ``names``."""
    if has_no_labels(label_column):
        return None
    if label_column is not None:
        return names[resolve_label_column(label_column, names, len(names), where)]
    return names[default_label_column(names)]


def row_names_column(names: list[str] | None) -> int | None:
    """0 if a header names every column but the first: the row names a table was written with
    (pandas' ``df.to_csv()`` writes its index so, R's ``write.csv`` its row names), which no default
    rule takes for a feature or the labels (a sampled frame's row numbers were learnt as a feature);
    else None."""
    named = names is not None and len(names) > 1 and not names[0].strip() and all(n.strip() for n in names[1:])
    return 0 if named else None


def has_no_labels(label_column: object) -> bool:
    """Whether ``label_column`` says the data has no labels (``"none"``, any case)."""
    return isinstance(label_column, str) and label_column.strip().lower() == NO_LABELS


def resolve_label_column(spec: str | int, names: list[str] | None, width: int, path: object = None) -> int:
    """The 0-based column of ``spec``: ``"first"``, ``"last"``, an index (negative from the end,
    also as text) or a header name (exact, else case-insensitive)."""
    text = str(spec).strip()
    if text.lower() in ("first", "last"):
        return 0 if text.lower() == "first" else width - 1
    try:
        index = int(text)
    except ValueError:
        index = None
    if index is not None:
        if not -width <= index < width:
            raise DataError(
                f"label column {index} is outside the file's {width} columns",
                path=path,
                fix=f"pass first, last, an index in 0..{width - 1} or a header name (--label-column)",
            )
        return index % width
    if names:
        lowered = [n.lower() for n in names]
        if text in names:
            return names.index(text)
        if text.lower() in lowered:
            return lowered.index(text.lower())
        hint = did_you_mean(text, names)
        hint = f"; {hint}" if hint else f"; the columns are {names}"
        raise DataError(f"no column named {text!r}{hint}", path=path, fix="name a header column (--label-column)")
    raise DataError(
        f"the file has no header, so no column is named {text!r}",
        path=path,
        fix="pass first, last or a 0-based column index (--label-column)",
    )
