"""Feature columns that look like row identifiers (``customer_id``, ``ID``): learnt as a feature,
an identifier measures nothing about a row -- a kernel learner then splits its attention with a
column of noise (1 point more mistakes on a churn table of 2,000 rows) -- so reading one warns."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from omkl_dist._validation import user_stacklevel

#: an identifier's name: id, uuid, guid, key, index, idx (any case), or ending in _id, -id, .id, " id",
#: or camel-case Id/ID (customerId, CustomerID)
_ID_NAME = re.compile(r"(?i:^(id|uuid|guid|key|index|idx)$|[_\-. ]id$)|[a-z]I[dD]$")
#: the rows looked at: an identifier's values are distinct integers in the first of them already
CHECKED_ROWS = 65_536


def looks_like_id(name: str) -> bool:
    """Whether a column's name is an identifier's (see :data:`_ID_NAME`)."""
    return bool(_ID_NAME.search(name.strip()))


def id_columns(X: Any, names: Sequence[str] | None) -> list[str]:
    """The feature columns of rows ``X`` (their first :data:`CHECKED_ROWS`) named like identifiers whose
    values are distinct integers there (a dense array; sparse rows have no names)."""
    if names is None or not hasattr(X, "ndim") or X.ndim != 2 or len(X) < 2:
        return []
    head = X[:CHECKED_ROWS]
    found = []
    for j, name in enumerate(names):
        if looks_like_id(name):
            column = np.asarray(head[:, j])
            if np.array_equal(column, np.round(column)) and len(np.unique(column)) == len(column):
                found.append(name)
    return found


def warn_id_columns(where: object, X: Any, names: Sequence[str] | None) -> None:
    """Warn of the feature columns :func:`id_columns` finds, naming the option that leaves them out."""
    found = id_columns(X, names)
    if not found:
        return
    left_out = ",".join(f"-{n}" for n in found)
    many = len(found) > 1
    warnings.warn(
        f"{where}: feature column{'s' if many else ''} {', '.join(map(repr, found))} "
        f"{'look like row identifiers' if many else 'looks like a row identifier'} (named so, a distinct integer on "
        f"every row) and {'are' if many else 'is'} learnt as {'features' if many else 'a feature'}, which "
        f"{'measure' if many else 'measures'} nothing; leave {'them' if many else 'it'} out: --features {left_out} "
        f"(features={left_out!r})",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
