"""Tables as input: parquet files, folders of parquet files (partitioned datasets included),
pyarrow Tables and pandas DataFrames, read with pyarrow in row batches.

A table names its label column (``label_column``: a column name; default the column named
``target``, ``label``, ``class`` or ``y`` (the first found, any case), else the first -- the rule of text files
too, :func:`~omkl_dist.storage.labels.default_label_column`; ``"none"``: rows without labels) and
its feature columns (``features``: default every other column). A feature column is numeric
(integers, floats or booleans); a string or nested column, or a missing value, is an error naming
the column (and the row) -- unless the table is read to be encoded (``numeric_only=False``: its raw
columns, :meth:`TableSource.columns`, go to a :class:`~omkl_dist.preprocessing.ColumnEncoder`).
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omkl_dist._validation import user_stacklevel

from .dates import DATE_FIX
from .errors import DataError
from .labels import has_no_labels, is_label_name, label_column_name, row_names_column

BATCH_ROWS = 65_536
PARQUET_MAGIC = b"PAR1"


def is_table_source(source: object) -> bool:
    """A pyarrow Table, a pandas DataFrame, a parquet file or a folder holding parquet files."""
    if _in_memory(source) is not None:
        return True
    if not isinstance(source, (str, Path)):
        return False
    path = Path(source)
    if path.is_dir():  # a folder of parquet files, not an ingested dataset (which holds labels.parquet)
        return not (path / "meta.json").exists() and any(path.rglob("*.parquet"))
    if path.suffix == ".parquet":
        return True
    if not path.is_file():  # a FIFO or device is not sniffed: opening one may block, reading it consumes it
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def _in_memory(source: object) -> Any:
    """``source`` as a pyarrow Table when it is one (or a pandas DataFrame), else None."""
    import pyarrow as pa

    if isinstance(source, pa.Table):
        return source
    if type(source).__name__ == "DataFrame" and hasattr(source, "to_records"):  # pandas, without importing it
        return pa.Table.from_pandas(source, preserve_index=False)
    return None


@dataclass
class TableSource:
    """The chosen columns of a table, read batch by batch (never whole)."""

    dataset: Any  # pyarrow.dataset.Dataset (pyarrow has no type information)
    label: str | None  # None: the table has no labels (rows to predict)
    features: list[str]
    where: str  # for messages: the path, or "the table"
    sha256: str

    @property
    def n_rows(self) -> int:
        return int(self.dataset.count_rows())

    def labels(self) -> NDArray[Any]:
        """The label column (the only one read), as numbers or strings."""
        parts: list[NDArray[Any]] = []
        offset = 0
        for batch in self.dataset.to_batches(columns=[self.label], batch_size=BATCH_ROWS):
            column = batch.column(0)
            if column.null_count:
                row = offset + int(np.flatnonzero(np.asarray(column.is_null()))[0])
                raise DataError(
                    f"missing label in column {self.label!r}",
                    path=self.where,
                    row=row + 1,
                    fix="fill in the label or drop the row",
                )
            parts.append(column.to_numpy(zero_copy_only=False))
            offset += len(column)
        if not parts:
            raise DataError("the table has no rows", path=self.where, fix="check the export was complete")
        values = np.concatenate(parts)
        return _as_text(values, self.where, str(self.label)) if values.dtype.kind == "O" else values

    def columns(self) -> dict[str, NDArray[Any]]:
        """The feature columns as read, whole, by name: numbers (a missing one NaN) or objects (text,
        a missing one None) -- what a :class:`~omkl_dist.preprocessing.ColumnEncoder` takes."""
        table = self.dataset.to_table(columns=self.features)
        if not table.num_rows:
            raise DataError("the table has no rows", path=self.where, fix="check the export was complete")
        return {name: table.column(name).to_numpy(zero_copy_only=False) for name in self.features}

    def batches(self, rows: int = BATCH_ROWS) -> Iterator[tuple[NDArray[np.float64], int]]:
        """``(X float64, first row)`` per batch of at most ``rows`` rows, in order."""
        offset = 0
        for batch in self.dataset.to_batches(columns=self.features, batch_size=rows):
            X = np.empty((batch.num_rows, len(self.features)))
            for j, column in enumerate(batch.columns):
                if column.null_count:
                    row = offset + int(np.flatnonzero(np.asarray(column.is_null()))[0])
                    raise DataError(
                        f"missing value in feature column {self.features[j]!r}",
                        path=self.where,
                        row=row + 1,
                        fix="impute it (--impute mean, median or most_frequent; impute=...) or drop the row",
                    )
                X[:, j] = column.to_numpy(zero_copy_only=False)
            if not np.isfinite(X).all():
                r, c = np.argwhere(~np.isfinite(X))[0]
                raise DataError(
                    f"non-finite value {X[r, c]!r} in feature column {self.features[c]!r}",
                    path=self.where,
                    row=offset + int(r) + 1,
                    fix="impute or drop it before ingesting",
                )
            yield X, offset
            offset += batch.num_rows


def open_table(
    source: object,
    *,
    label_column: str | int | None = None,
    features: Iterable[str] | str | None = None,
    numeric_only: bool = True,
    where: str | None = None,
    sha256: str | None = None,
) -> TableSource:
    """Open ``source`` (see :func:`is_table_source`) with its label and feature columns checked.

    ``numeric_only=False``: feature columns of any kind (text ones are encoded, not streamed). A
    table in memory is named ``where`` in messages (default "the table") and identified by
    ``sha256`` (default: the digest of its contents), as when it was read from a file.

    Raises
    ------
    DataError
        No such file, no parquet data, an unknown or missing label column, a feature column that
        is not numeric.
    """
    dataset, where, table = _dataset(source, where)
    digest = sha256 or (_table_digest(table) if table is not None else _files_digest(dataset.files))
    names, index, row_numbers = _columns(dataset, where)
    data = [n for n in names if n not in row_numbers]  # what the default rules choose from
    named = _named(label_column, row_numbers)
    label = named if named is not None else label_column_name(label_column, data, where)
    chosen = None if features is None else listed(features)
    if chosen is None and not has_no_labels(label_column):
        _note_named_index([n for n in index if n not in row_numbers and n != label], where)
    chosen = (
        [n for n in data if n != label] if chosen is None else _but_left_out(list(chosen), names, data, label, where)
    )
    unknown = [n for n in chosen if n not in names]
    if unknown:
        raise DataError(
            f"no feature column named {unknown[0]!r}; the columns are {names}",
            path=where,
            fix="name existing columns (--features a,b,c)",
        )
    if label in chosen:
        raise DataError(
            f"the label column {label!r} is also listed as a feature", path=where, fix="drop it from --features"
        )
    if not chosen:
        raise DataError("no feature columns besides the label", path=where, fix="name them (--features a,b,c)")
    # a label column the default rule took for want of a name it knows (the first): a text one may be the labels
    guessed = label_column is None and label is not None and not is_label_name(label)
    for name in chosen if numeric_only else ():
        kind = dataset.schema.field(name).type
        if not _numeric(kind):
            labels = f"if {name!r} holds the labels, pass --label-column {name} (label_column={name!r}); else "
            labels = labels if guessed else ""
            fix = (
                f"{labels}encode it (--categorical one-hot or ordinal, categorical=...), or leave it out "
                f"(--features -{name})"
            )
            raise DataError(
                f"feature column {name!r} is {kind}, not numeric",
                path=where,
                fix=DATE_FIX.format(leave=f"--features -{name}") if _temporal(kind) else fix,
            )
    _check_every_file_has(dataset, [*([label] if label is not None else []), *chosen])
    return TableSource(dataset, label, chosen, where, digest)


def listed(spec: Iterable[str] | str) -> list[str]:
    """Column names given as ``"a,b,c"`` (each stripped) or as a list."""
    return [name.strip() for name in spec.split(",")] if isinstance(spec, str) else list(spec)


def left_out_only(features: Iterable[str] | str | None) -> list[str] | None:
    """The columns ``features`` leaves out when it only leaves columns out (``[]`` for None: every
    column is a feature), else None (it lists the features)."""
    if features is None:
        return []
    names = listed(features)
    return [f[1:].strip() for f in names] if all(f.startswith("-") for f in names) else None


def _but_left_out(chosen: list[str], names: list[str], data: list[str], label: str | None, where: str) -> list[str]:
    """The feature columns ``chosen`` names: the columns listed, or, when every item is ``-name`` (a
    column to leave out: ``--features -customer_id``), every column but the label and those."""
    left_out = [n[1:].strip() for n in chosen if n.startswith("-") and n not in names]
    if not left_out:
        return chosen
    if len(left_out) < len(chosen):
        raise DataError(
            f"--features lists columns to read and columns to leave out (-name) at once: {chosen}",
            path=where,
            fix="list the features (--features a,b,c), or only the columns to leave out (--features -id,-region)",
        )
    unknown = [n for n in left_out if n not in names]
    if unknown:
        raise DataError(
            f"no column named {unknown[0]!r} to leave out (or keep); the columns are {names}",
            path=where,
            fix="name existing columns (--features -id,-region; --keep id)",
        )
    return [n for n in data if n != label and n not in left_out]


def _check_every_file_has(dataset: Any, columns: list[str]) -> None:
    """A folder's every file holds the columns read: one without a column was read as that column's
    missing values ("row 2001: missing value in feature column 'b'", which ``--impute`` would fill
    silently) -- the file is named instead. Reads each file's footer (not its rows)."""
    files = getattr(dataset, "files", [])
    if len(files) < 2:
        return
    for fragment in dataset.get_fragments():
        lacking = [c for c in columns if c not in fragment.physical_schema.names]
        if lacking:
            raise DataError(
                f"this file of the folder has no column {lacking[0]!r}"
                + (f" (nor {lacking[1:]})" if len(lacking) > 1 else "")
                + f"; the folder's schema (its first file) has {list(dataset.schema.names)}",
                path=fragment.path,
                fix="give every file of the folder the same columns, or move that file out",
            )


def table_columns(source: object) -> list[str]:
    """The columns of ``source`` (see :func:`is_table_source`) the default rules choose from -- its
    names but pandas' row numbers (:func:`open_table`) -- from its schema alone: no row read, no file
    hashed (a caller that only needs the names hashed every file's bytes, then again to read them)."""
    dataset, where, _ = _dataset(source, None)
    names, _, row_numbers = _columns(dataset, where)
    return [n for n in names if n not in row_numbers]


def _dataset(source: object, where: str | None) -> tuple[Any, str, Any]:
    """``(pyarrow dataset, name for messages, the pyarrow Table of a table in memory or None)`` of a
    table in memory or a parquet file or folder."""
    import pyarrow.dataset as pads

    table = _in_memory(source)
    if table is not None:
        return pads.dataset(table), where or "the table", table
    path = Path(source)  # type: ignore[arg-type]  # is_table_source said: a str or Path
    if not path.exists():
        raise DataError("no such file or folder", path=path, fix="check the path")
    try:
        return pads.dataset(str(path), format="parquet", partitioning="hive"), str(path), None
    except Exception as exc:  # pyarrow's errors name no file
        if "duplicate field names" in str(exc):
            raise DataError(
                f"two columns share a name ({exc})", path=path, fix="give every column its own name"
            ) from None
        raise DataError(
            f"not readable as parquet ({type(exc).__name__}: {exc})",
            path=path,
            fix="check the file is parquet (a folder: that it holds only parquet files)",
        ) from None


def _columns(dataset: Any, where: str) -> tuple[list[str], list[str], list[str]]:
    """``(names, pandas' index columns, row numbers)``: row numbers -- pandas' unnamed index, a CSV's
    unnamed first column -- are never taken for a feature or the labels by a default rule."""
    names = list(dataset.schema.names)
    check_distinct_names(names, where)
    index = _pandas_index_columns(dataset.schema)
    row_names = [names[0]] if row_names_column(names) == 0 else []  # (a CSV's unnamed first column)
    return names, index, [n for n in index if _UNNAMED_INDEX.fullmatch(n)] + row_names


def check_distinct_names(names: list[str], where: object, what: str = "the schema") -> None:
    """A name given to two columns is an error: features are matched by name (a model fitted on a CSV's
    columns 'a', 'a' was saved, and its folder then refused as damaged)."""
    for j, name in enumerate(names):
        if name and name in names[:j]:
            raise DataError(
                f"{what} names two columns {name!r} (columns {names.index(name) + 1} and {j + 1})",
                path=where,
                fix="give every column its own name",
            )


def _pandas_index_columns(schema: Any) -> list[str]:
    """The columns a pandas DataFrame's index was stored in: ``df.to_parquet()`` keeps an index other
    than 0, 1, 2, ... (a filtered or sampled frame's) as ``__index_level_0__``, a named one under its
    name."""
    meta = schema.pandas_metadata or {}
    return [c for c in meta.get("index_columns", []) if isinstance(c, str) and c in schema.names]


# pandas' column for an index without a name: row numbers, not data -- no default rule takes it for a
# feature (the numbers of a sampled frame's rows were learnt as one) or the labels; naming it still does
_UNNAMED_INDEX = re.compile(r"__index_level_\d+__")


def _note_named_index(named_index: list[str], where: str) -> None:
    """Warn that a named index column is read as a feature: often an identifier (a customer, a time)."""
    if named_index:
        warnings.warn(
            f"{where}: {', '.join(map(repr, named_index))} is the index the pandas DataFrame was saved with, "
            "read as a feature like the other columns; if it identifies rows rather than measures them, "
            f"leave it out (--features {','.join('-' + n for n in named_index)}; features=...)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _named(label_column: str | int | None, columns: list[str]) -> str | None:
    """``label_column`` if it names one of ``columns``."""
    return label_column if isinstance(label_column, str) and label_column in columns else None


def _temporal(kind: Any) -> bool:
    import pyarrow.types as pat

    return bool(pat.is_temporal(kind))


def _numeric(kind: Any) -> bool:
    import pyarrow.types as pat

    return bool(pat.is_integer(kind) or pat.is_floating(kind) or pat.is_boolean(kind) or pat.is_decimal(kind))


def _files_digest(files: Iterable[str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(Path(name).name.encode())
        with open(name, "rb") as fh:
            for block in iter(lambda: fh.read(2**20), b""):
                h.update(block)
    return h.hexdigest()


def _table_digest(table: Any) -> str:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def _as_text(values: NDArray[Any], where: str, column: str) -> NDArray[np.str_]:
    """Labels of a string or binary column as str; binary labels must be UTF-8 (numpy would
    decode them as ASCII and fail naming nothing)."""
    try:
        return values.astype(str)
    except UnicodeDecodeError:
        pass
    texts = []
    for row, value in enumerate(values):
        try:
            texts.append(value.decode("utf-8") if isinstance(value, bytes) else str(value))
        except UnicodeDecodeError as exc:
            raise DataError(
                f"the label in column {column!r} is {value[:20]!r}, not UTF-8 text (byte {exc.start})",
                path=where,
                row=row + 1,
                fix="store the labels as UTF-8 strings or numbers",
            ) from None
    return np.array(texts, dtype=str)
