"""A request body that is a table: an Arrow IPC stream, or CSV/TSV text with a header row (what a
spreadsheet or ``df.to_csv`` writes), checked as :mod:`.rows` checks JSON rows.

The columns are matched to the model's features by name; for learning, the labels' column is the
one ``?label_column=`` names, else the model's own (the table it was trained on, sent as it is) when
the body has it, else ``label``. Every other column (ids, a region) is carried back in the answer
as it is -- a CSV column as the text it holds (``00123`` stays ``00123``) -- and never learnt from.
"""

from __future__ import annotations

import csv
import math
from typing import Any

import numpy as np

from omkl_dist.preprocessing import names_differ
from omkl_dist.storage.readers.delimited import arrow_read_csv

from .errors import BadRequest
from .rows import Batch, check_count, check_encoded, check_finite, labels_of


def arrow_batch(body: bytes, model, *, learn: bool, label_column: str | None, max_rows: int, where: str) -> Batch:
    """The rows (and the labels' column, to learn) of an Arrow IPC stream, checked."""
    import pyarrow as pa  # (lazy: only table bodies need it)

    try:
        table = pa.ipc.open_stream(pa.BufferReader(body)).read_all()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise BadRequest(
            400,
            f"the body is not an Arrow IPC stream ({exc})",
            where=where,
            fix="write it with pyarrow.ipc.new_stream (the stream format, not the file format)",
        ) from None
    return table_batch(table, model, learn=learn, label_column=label_column, max_rows=max_rows, where=where)


def csv_batch(
    body: bytes, delimiter: str, model, *, learn: bool, label_column: str | None, max_rows: int, where: str
) -> Batch:
    """The rows (and the labels' column, to learn) of CSV or TSV text with a header row, checked: the
    features' cells read as numbers (text for a model's text columns; empty, ``NA``, ``null`` missing),
    the other columns as the text they hold."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    kind = "CSV" if delimiter == "," else "TSV"
    first = body.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")
    try:
        raw = next(csv.reader([first], delimiter=delimiter), [])
    except csv.Error as exc:  # (binary data: a compressed file sent without its Content-Encoding)
        raise BadRequest(
            400,
            f"the {kind} body's first row is not a header row of text ({exc})",
            where=where,
            fix="send the text itself; a compressed file with its Content-Encoding header (gzip)",
        ) from None
    header = [name.strip() for name in raw]
    if not any(header):
        raise BadRequest(
            400, f"the {kind} body has no header row", where=where, fix="send a first row naming the columns"
        )
    if b"\n" not in body.rstrip():
        raise BadRequest(400, f"the {kind} body has a header row and no rows", where=where, fix="send at least one row")
    categories = set(model.columns.text_) if model.columns is not None else set()
    # ids and the labels as the text they hold, a text column's categories as text ("02134" no number); a
    # model without names takes every column as a feature (the labels' column, to learn, as it is)
    named = model.raw_names is not None
    text = [r for r, n in zip(raw, header) if (named and n not in model.raw_names) or n in categories]
    try:
        table = arrow_read_csv(
            body,
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(text, pa.string()), strings_can_be_null=True
            ),
        )
    except pa.ArrowException as exc:
        raise BadRequest(
            400,
            f"the {kind} body could not be read ({exc})",
            where=where,
            fix="send a header row naming the columns, then a value (maybe empty) for each column on every row",
        ) from None
    table = table.rename_columns([name.strip() for name in table.column_names])
    return table_batch(table, model, learn=learn, label_column=label_column, max_rows=max_rows, where=where)


def table_batch(table, model, *, learn: bool, label_column: str | None, max_rows: int, where: str) -> Batch:
    """The rows of a pyarrow Table (and the labels' column, to learn), checked; the columns that are no
    feature carried."""
    check_count(table.num_rows, max_rows, where)
    if table.num_rows == 0:
        raise BadRequest(400, "the table has no rows", where=where, fix="send at least one row")
    given = list(table.column_names)
    if len(set(given)) != len(given):
        twice = sorted({name for name in given if given.count(name) > 1})
        raise BadRequest(400, f"the table names columns twice: {twice}", where=where, fix="name each column once")
    y = None
    if learn:
        if label_column is None:
            label_column = model.label_name if model.label_name in given else "label"
        if label_column not in given:
            also = f" (nor {model.label_name!r}, the model's)" if model.label_name not in (None, label_column) else ""
            raise BadRequest(
                400,
                f"the table has no labels' column {label_column!r}{also}",
                where=where,
                fix=f"add a column {label_column!r} (or name yours with ?label_column=NAME)",
            )
        y = labels_of(table.column(label_column).to_pylist(), table.num_rows, model, where)
        given.remove(label_column)
    names = model.raw_names
    if names is None:  # (no names: every column a feature, in the model's order)
        names = given
        if len(given) != model.n_features_in_:
            raise BadRequest(
                422,
                f"the table has {len(given)} feature columns; the model takes {model.n_features_in_}",
                where=where,
                fix=f"send {model.n_features_in_} columns, in the model's feature order",
            )
    elif not set(given) >= set(names):
        raise BadRequest(
            422,
            f"the table's columns are not the model's features ({names_differ(names, given)})",
            where=where,
            fix=f"send the columns {names}",
        )
    values = [table.column(n).to_numpy(zero_copy_only=False) for n in names]
    if model.columns is not None:
        _check_kinds(table.schema, names, set(model.columns.text_), where)
        X: Any = dict(zip(names, [np.asarray(v, dtype=object) for v in values], strict=True))
        check_encoded(model, X, where)
    else:
        for name, column in zip(names, values, strict=True):
            nulls = table.column(name).is_null().to_numpy(zero_copy_only=False)
            if nulls.any():
                raise BadRequest(
                    422,
                    "a missing value",
                    where=where,
                    row=int(np.flatnonzero(nulls)[0]),
                    column=name,
                    fix="send a number (this model imputes nothing: one trained with --impute fills missing values)",
                )
            if column.dtype.kind not in "iuf":
                raise BadRequest(
                    422,
                    f"column {name!r} holds {column.dtype} values, not numbers",
                    where=where,
                    fix="send numeric columns (int or float)",
                )
        X = np.column_stack(values).astype(np.float64)
        check_finite(X, names, where)
    carried = {name: _json_values(table.column(name).to_pylist()) for name in given if name not in names}
    return Batch(X, table.num_rows, y, carried or None)


def _json_values(values: list[Any]) -> list[Any]:
    """A carried column's values as JSON holds them: a NaN or infinity null, a date or decimal its text."""
    return [
        None
        if isinstance(v, float) and not math.isfinite(v)
        else v
        if v is None or isinstance(v, (str, int, float, bool))
        else str(v)
        for v in values
    ]


def _check_kinds(schema, names: list[str], text: set[str], where: str) -> None:
    """An encoder model's columns each of its kind, as JSON values are (:func:`.rows.json_batch`): text for
    a text column (an int64 'city' was scored as an unknown category), numbers for the others; a column
    of nulls only is the encoder's to judge (filled where it imputes)."""
    import pyarrow.types as pat

    for name in names:
        kind = schema.field(name).type
        value = kind.value_type if pat.is_dictionary(kind) else kind
        if pat.is_null(value):
            continue
        wanted = "text" if name in text else "numbers"
        if name in text and not (pat.is_string(value) or pat.is_large_string(value)):
            fix = f"send column {name!r} as strings (its categories)"
        elif name not in text and not (pat.is_integer(value) or pat.is_floating(value)):
            fix = f"send column {name!r} as int or float"
        else:
            continue
        raise BadRequest(422, f"column {name!r} holds {kind} values, not {wanted}", where=where, fix=fix)
