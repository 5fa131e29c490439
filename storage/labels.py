"""Label normalisation: binary -> {-1, +1}, multi-class -> 0..K-1, with the mapping kept.

The mapping is an ordered list of ``[original, internal]`` pairs. Originals are stored as the
canonical string of the value (``"1"`` for 1.0, ``"-1"`` for -1, ``"g"`` for "g"), so a label map
round-trips through JSON and can be re-applied to a matching test split.
"""

from __future__ import annotations

import numpy as np

from .errors import DataError


def canonical(value) -> str:
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


def _sort_key(label: str):
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


def build_label_map(originals, *, n_classes: int | None = None, path=None) -> list[list]:
    """Build the original->internal map for the given distinct original labels.

    ``originals`` are the declared classes (``--classes``) or the classes found in the data.
    Two classes map (in numeric/lexical order) to -1 and +1; K > 2 classes map to 0..K-1.
    """
    labels = sorted({canonical(v) for v in originals}, key=_sort_key)
    k = len(labels)
    if n_classes is not None and k > n_classes:
        raise DataError(
            f"found {k} classes {labels} but {n_classes} were requested",
            path=path,
            fix=f"pass n_classes={k} (--n-classes {k}) or remove the extra classes from the file",
        )
    if k == 2:
        return [[labels[0], -1], [labels[1], 1]]
    if k < 2:
        raise DataError(
            f"only one class {labels} present; a classifier needs two",
            path=path,
            fix="declare the classes explicitly (--classes -1,1, or the label map of the matching "
            "training split) if this is a one-class test split",
        )
    return [[lab, i] for i, lab in enumerate(labels)]


def apply_label_map(y_raw, label_map, *, path=None) -> np.ndarray:
    """Map original labels to internal integer labels; unknown labels are an error."""
    lookup = {orig: internal for orig, internal in label_map}
    keys = [canonical(v) for v in np.asarray(y_raw).ravel()]
    out = np.empty(len(keys), dtype=np.int64)
    for i, key in enumerate(keys):
        try:
            out[i] = lookup[key]
        except KeyError:
            raise DataError(
                f"label {key!r} is not one of the declared classes {list(lookup)}",
                path=path,
                row=i + 1,
                fix="declare all classes (--classes) or correct the label",
            ) from None
    return out
