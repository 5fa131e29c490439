"""A request's rows and labels, checked against the model that will take them.

A body is JSON (``{"rows": [...], "labels": [...]}``; a row is a list in the model's feature order
or an object keyed by its feature names), an Arrow IPC stream or CSV/TSV text with a header row (one
column per feature, and the labels' column for learning: :mod:`.tables`). Everything is checked here
-- the width, the names, numbers that are finite, labels the model knows -- so a bad request is
refused with a :class:`BadRequest` naming the row and column, and nothing reaches the model or the
write-ahead log. Keys and columns named by none of the model's features (ids, a region) are not
learnt from: they are carried back in the answer, as ``omkl predict`` writes them beside its
predictions.

A model with a column encoder (trained with ``--categorical``/``--impute``) takes raw columns: text,
and missing values (``null``) when it imputes; its encoder is the check, and the encoded rows must
be finite.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from omkl_dist.preprocessing import names_differ
from omkl_dist.storage.labels import canonical

from .errors import BadRequest

JSON = "application/json"
ARROW = "application/vnd.apache.arrow.stream"
CSV = "text/csv"
TSV = "text/tab-separated-values"


@dataclass(frozen=True)
class Batch:
    """Rows as the model's ``predict`` takes them (a float64 matrix, or raw columns by name for a
    model with a column encoder) and, for learning, the labels as the model's own class values;
    ``carried``: the values of the keys or columns that are no feature, by name (a row without one: None)."""

    X: Any
    n_rows: int
    y: np.ndarray | None = None
    carried: dict[str, list[Any]] | None = None


def media_type(content_type: str | None, where: str) -> str:
    """The body's media type (JSON, Arrow, CSV or TSV), or 415 naming those accepted."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind in (JSON, ARROW, CSV, TSV):
        return kind
    raise BadRequest(
        415,
        f"content type {content_type or 'none'!r} is not accepted",
        where=where,
        fix=f"send JSON with 'Content-Type: {JSON}' (or an Arrow IPC stream with 'Content-Type: {ARROW}', or "
        f"CSV/TSV text with a header row with 'Content-Type: {CSV}' or '{TSV}')",
    )


def _no_constant(token: str) -> float:
    raise ValueError(f"{token} is not a number JSON holds")


def parse_json(body: bytes, where: str) -> dict[str, Any]:
    """The body as a JSON object (NaN and Infinity refused: they are not JSON)."""
    try:
        doc = json.loads(body, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"the body is not valid JSON ({exc})", where=where, fix="send a JSON object") from None
    if not isinstance(doc, dict):
        raise BadRequest(
            400, f"the body is a JSON {type(doc).__name__}, not an object", where=where, fix='send {"rows": [...]}'
        )
    return doc


def json_batch(doc: dict[str, Any], model, *, learn: bool, max_rows: int, where: str) -> Batch:
    """The rows (and labels, to learn) of a JSON body, checked."""
    rows = doc.get("rows")
    if not isinstance(rows, list) or not rows:
        raise BadRequest(
            400,
            "the body has no 'rows' list" if not isinstance(rows, list) else "'rows' is empty",
            where=where,
            fix='send {"rows": [[x1, x2, ...], ...]} (a list of rows, each a list or an object by feature name)',
        )
    check_count(len(rows), max_rows, where)
    names = model.raw_names
    width = len(names or []) or model.n_features_in_
    cells = [_row_cells(row, i, names, width, where) for i, row in enumerate(rows)]
    X = _columns(cells, names, model, where) if model.columns is not None else _matrix(cells, names, where)
    y = labels_of(doc.get("labels"), len(rows), model, where) if learn else None
    return Batch(X, len(rows), y, _extra_keys(rows, names or []))


def _extra_keys(rows: list[Any], names: list[str]) -> dict[str, list[Any]] | None:
    """The values of the object rows' keys that are no feature, by key in order of first appearance."""
    extra = dict.fromkeys(key for row in rows if isinstance(row, dict) for key in row if key not in names)
    if not extra:
        return None
    return {key: [row.get(key) if isinstance(row, dict) else None for row in rows] for key in extra}


def check_count(n: int, max_rows: int, where: str) -> None:
    if n > max_rows:
        raise BadRequest(
            413,
            f"{n:,} rows is more than this service takes in one request ({max_rows:,})",
            where=where,
            fix=f"send at most {max_rows:,} rows per request (or start omkl serve with a larger --max-rows)",
        )


def _row_cells(row: object, i: int, names: list[str] | None, width: int, where: str) -> list[Any]:
    """One row's values in the model's order (a list as given, an object by name)."""
    if isinstance(row, dict):
        if names is None:
            raise BadRequest(
                422,
                "the row is an object but the model has no feature names",
                where=where,
                row=i,
                fix=f"send each row as a list of {width} numbers in the model's feature order",
            )
        if not row.keys() >= set(names):  # (other keys are carried back, not learnt from)
            raise BadRequest(
                422,
                f"the row's names are not the model's features ({names_differ(names, list(row))})",
                where=where,
                row=i,
                fix=f"key each row by the model's features {names}",
            )
        return [row[n] for n in names]
    if not isinstance(row, list):
        raise BadRequest(
            422,
            f"the row is a JSON {type(row).__name__}, not a list or an object",
            where=where,
            row=i,
            fix=f"send each row as a list of {width} values (or an object keyed by the feature names)",
        )
    if len(row) != width:
        raise BadRequest(
            422,
            f"the row has {len(row)} values; the model takes {width}",
            where=where,
            row=i,
            fix=f"send {width} values per row" + (f", in the order {names}" if names else ""),
        )
    return row


def _cell_error(problem: str, i: int, j: int, names: list[str] | None, where: str, fix: str) -> BadRequest:
    """A 422 naming row ``i`` and column ``j`` (by the model's name for it when it has names)."""
    return BadRequest(422, problem, where=where, row=i, column=names[j] if names else j, fix=fix)


def _matrix(cells: list[list[Any]], names: list[str] | None, where: str) -> np.ndarray:
    """The rows as float64, every value a finite JSON number (not text, null or true/false)."""
    if not set(map(type, itertools.chain.from_iterable(cells))) <= {int, float}:  # (one pass in C; bool is no number)
        i, j, value = next(
            (i, j, v) for i, row in enumerate(cells) for j, v in enumerate(row) if type(v) not in (int, float)
        )
        fix = "send numbers (this model takes no text or missing values)"
        raise _cell_error(f"{json.dumps(value)} is not a number", i, j, names, where, fix)
    try:
        X = np.array(cells, dtype=np.float64)
    except OverflowError:  # an integer beyond float64
        X = np.array([[float(v) if abs(v) < 1e308 else math.inf for v in row] for row in cells])
    check_finite(X, names, where)
    return X


def check_finite(X: np.ndarray, names: list[str] | None, where: str) -> None:
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        fix = "send finite numbers (no NaN, no infinity, nothing beyond 1.8e308)"
        raise _cell_error(f"the value {X[i, j]} is not a finite number", i, j, names, where, fix)


def _columns(cells: list[list[Any]], names: list[str] | None, model, where: str) -> dict[str, np.ndarray]:
    """Raw columns by name for a model's column encoder: each value of the kind its column holds
    (a number, text; ``null`` where the model imputes), then checked by encoding them."""
    assert names is not None  # (a column encoder always has its raw names)
    text, imputes = set(model.columns.text_), model.columns.impute is not None
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            if value is None and imputes:
                continue
            if names[j] in text and type(value) is not str:
                fix = f"send column {names[j]!r} as text (one of its categories)" + (", or null" if imputes else "")
                raise _cell_error(f"{json.dumps(value)} is not text", i, j, names, where, fix)
            if names[j] not in text and type(value) not in (int, float):  # (bool is no number)
                fix = f"send column {names[j]!r} as a number" + (", or null" if imputes else "")
                raise _cell_error(f"{json.dumps(value)} is not a number", i, j, names, where, fix)
    X = {name: np.array([row[j] for row in cells], dtype=object) for j, name in enumerate(names)}
    check_encoded(model, X, where)
    return X


def check_encoded(model, X: dict[str, np.ndarray], where: str) -> None:
    try:
        encoded = model.transform(X)
    except (ValueError, TypeError) as exc:
        raise BadRequest(
            422, f"the rows cannot be encoded ({exc})", where=where, fix="send the columns the model was trained on"
        ) from None
    check_finite(np.asarray(encoded, dtype=np.float64), list(model.feature_names or []) or None, where)


def labels_of(labels: object, n_rows: int, model, where: str) -> np.ndarray:
    """The labels as the model's own class values, each one the model knows."""
    if not isinstance(labels, list) or len(labels) != n_rows:
        got = f"{len(labels)} labels" if isinstance(labels, list) else "no 'labels' list"
        raise BadRequest(
            400,
            f"{got} for {n_rows} rows",
            where=where,
            fix='send one label per row: {"rows": [...], "labels": [...]}',
        )
    classes = model.classes_
    known = {canonical(c): k for k, c in enumerate(classes.tolist())}
    index = np.empty(n_rows, dtype=np.intp)
    for i, label in enumerate(labels):
        key = canonical(label) if isinstance(label, (str, int, float)) and not isinstance(label, bool) else None
        if key is None or key not in known:
            raise BadRequest(
                422,
                f"label {json.dumps(label)} is not one of the model's classes",
                where=where,
                row=i,
                fix=f"use one of {classes.tolist()}",
            )
        index[i] = known[key]
    return classes[index]
