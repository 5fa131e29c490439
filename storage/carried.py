"""Columns a dataset keeps beside its features (``omkl data ingest --keep customer_id``): ids and the
like, as they were read, in ``carried.parquet`` (row for row with the features). No learner reads
them; ``omkl predict`` writes them beside its predictions, so the scores of an ingested dataset --
on a cluster too -- join back to their rows. meta.json records the columns and the file's sha256
(``carried``), which ``dataset_info`` and ``verify_dataset`` check."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import DataError
from .location import Location, is_remote
from .tables import listed

CARRIED = "carried.parquet"
_RESTORE = "re-ingest the dataset with --overwrite (and the same --keep)"


def kept_names(keep: Iterable[str] | str | None) -> list[str]:
    """``keep`` as a list of column names (``"a,b"`` or a list; None: none)."""
    if keep is None:
        return []
    names = [str(n).strip() for n in listed(keep)]
    if not all(names):
        raise ValueError(f"--keep names columns, comma-separated; got {keep!r}")
    return names


def without_kept(features: list[str] | str | None, kept: list[str], path: object) -> list[str] | str | None:
    """The features but the ``kept`` columns: every other column but the label (``-name`` each), or
    the columns listed, which must not be kept ones."""
    if not kept:
        return features
    names = None if features is None else listed(features)
    if names is None or all(f.startswith("-") for f in names):
        return [*(names or []), *(f"-{name}" for name in kept)]
    both = [name for name in kept if name in names]
    if both:
        raise DataError(
            f"{both[0]!r} is both kept (--keep) and a feature (--features)",
            path=path,
            fix="keep it, or learn from it, not both",
        )
    return names


def write_carried(directory: Location, table: Any, n_rows: int, where: object, chunk_rows: int) -> dict[str, Any]:
    """Write ``table`` (a pyarrow Table of ``n_rows`` rows) as the dataset's carried columns in
    ``directory`` (the folder being written), a row group per chunk of ``chunk_rows`` rows (the same
    bytes as the block reader's, which writes a chunk at a time); returns meta.json's ``carried`` entry."""
    import pyarrow.parquet as pq

    pq.write_table(table, str(directory / CARRIED), row_group_size=chunk_rows)
    return carried_entry(directory, n_rows, where)


def carried_entry(directory: Location, n_rows: int, where: object) -> dict[str, Any]:
    """meta.json's ``carried`` entry of the carried columns written in ``directory``, which must have
    the features' ``n_rows`` rows."""
    parquet = _open(directory)
    found = parquet.metadata.num_rows
    if found != n_rows:
        raise DataError(
            f"the kept columns {parquet.schema_arrow.names} have {found:,} rows, the features {n_rows:,}",
            path=where,
            fix="keep columns of a table whose every row is a data row (no rows spanning lines in quotes)",
        )
    return {"columns": list(parquet.schema_arrow.names), "sha256": _digest(directory)}


def check_carried(directory: Location, meta: Mapping[str, Any], *, full: bool = False) -> None:
    """The carried columns meta.json lists are in the folder, with its rows; ``full``: the file's
    sha256 too."""
    entry = meta.get("carried")
    if entry is None:
        return
    path = directory / CARRIED
    try:
        parquet = _open(directory)
        n_rows, names = parquet.metadata.num_rows, list(parquet.schema_arrow.names)
    except Exception as exc:  # pyarrow's errors name no file; a missing file is one too
        raise DataError(f"{CARRIED} cannot be read ({type(exc).__name__}: {exc})", path=path, fix=_RESTORE) from None
    if n_rows != meta["n_rows"] or names != entry["columns"]:
        raise DataError(
            f"{CARRIED} holds {n_rows:,} rows of {names}; meta.json says {meta['n_rows']:,} rows of {entry['columns']}",
            path=path,
            fix=_RESTORE,
        )
    if full and _digest(directory) != entry["sha256"]:
        raise DataError(f"{CARRIED} does not match its checksum in meta.json", path=path, fix=_RESTORE)


def read_carried(directory: Location, meta: Mapping[str, Any]) -> Any:
    """The dataset's carried columns (a pyarrow Table), or None when it keeps none."""
    return None if meta.get("carried") is None else _open(directory).read()


def _open(directory: Location) -> Any:
    import pyarrow.parquet as pq

    path = directory / CARRIED
    return pq.ParquetFile(path.open("rb") if is_remote(path) else str(path))


def _digest(directory: Location) -> str:
    h = hashlib.sha256()
    with (directory / CARRIED).open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
