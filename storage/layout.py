"""On-disk layout of an ingested (or generated) dataset, written atomically.

::

    DIR/
      features.zarr/   zarr v3 array (n_rows, n_features), chunked by rows
      labels.parquet   one int64 column ``y`` (internal labels: +-1 binary, 0..K-1 multi-class)
      meta.json        schema_version, kind, source, sha256, format, label_map, n_rows,
                       n_features, n_classes, class_counts, dtype, chunk_rows, created

A dataset is built in a temporary sibling directory and renamed into place only when complete,
so a failed ingest leaves nothing behind and an ``--overwrite`` never loses the old copy early.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

from .errors import DataError

SCHEMA_VERSION = 1
FEATURES = "features.zarr"
LABELS = "labels.parquet"
META = "meta.json"
DEFAULT_CHUNK_ROWS = 65_536
DTYPES = ("float64", "float32")


def check_dtype(dtype: str) -> str:
    if str(dtype) not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return str(dtype)


@contextlib.contextmanager
def atomic_output_dir(out, *, overwrite: bool = False):
    """Yield a fresh temporary directory that becomes ``out`` only if the block succeeds.

    An existing ``out`` is refused unless ``overwrite``; with ``overwrite`` the old copy is moved
    aside, the new one renamed in, and only then the old one deleted.
    """
    out = Path(out).absolute()
    if out.exists() and not overwrite:
        raise FileExistsError(
            f"{out} already exists; pass --overwrite (overwrite=True) to replace it, or choose another --out"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        if old is not None:
            os.replace(old, out)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class DatasetWriter:
    """Append row blocks to ``features.zarr`` and ``labels.parquet`` in a (temporary) directory.

    Memory stays bounded by the block being written: zarr gets the rows, parquet a row group.
    """

    def __init__(self, directory, *, n_rows: int, n_features: int, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                 dtype: str = "float64"):
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows}")
        self.directory = Path(directory)
        self.n_rows, self.n_features = int(n_rows), int(n_features)
        self.chunk_rows, self.dtype = int(chunk_rows), check_dtype(dtype)
        self._features = zarr.create_array(
            store=str(self.directory / FEATURES),
            shape=(self.n_rows, self.n_features),
            chunks=(min(self.chunk_rows, max(self.n_rows, 1)), max(self.n_features, 1)),
            dtype=self.dtype,
            fill_value=0.0,
        )
        self._labels = pq.ParquetWriter(str(self.directory / LABELS), pa.schema([("y", pa.int64())]))
        self.rows_written = 0

    def append(self, X: np.ndarray, y: np.ndarray) -> None:
        X = np.asarray(X)
        y = np.asarray(y, dtype=np.int64)
        if X.ndim != 2 or X.shape[1] != self.n_features or len(y) != len(X):
            raise ValueError(f"block shape {X.shape} / {y.shape} does not match ({self.n_features} features)")
        lo, hi = self.rows_written, self.rows_written + len(X)
        if hi > self.n_rows:
            raise ValueError(f"writing rows {lo}:{hi} past the declared {self.n_rows} rows")
        self._features[lo:hi] = X.astype(self.dtype, copy=False)
        self._labels.write_table(pa.table({"y": y}))
        self.rows_written = hi

    def close(self, meta: dict) -> dict:
        """Finish the files and write ``meta.json``; returns the full metadata written."""
        self._labels.close()
        if self.rows_written != self.n_rows:
            raise ValueError(f"wrote {self.rows_written} rows but declared {self.n_rows}")
        full = {
            "schema_version": SCHEMA_VERSION,
            "n_rows": self.n_rows,
            "n_features": self.n_features,
            "dtype": self.dtype,
            "chunk_rows": self.chunk_rows,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            **meta,
        }
        (self.directory / META).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
        return full


def read_meta(directory) -> dict:
    """Metadata of an ingested dataset directory, with a clear error when it is not one."""
    directory = Path(directory)
    meta_path = directory / META
    if not meta_path.is_file() or not (directory / FEATURES).exists() or not (directory / LABELS).is_file():
        raise DataError(
            "not an ingested dataset directory (needs meta.json, features.zarr and labels.parquet)",
            path=directory,
            fix="create it with `omkl data ingest FILE --out DIR` or `omkl data synth ... --out DIR`",
        )
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"meta.json is not valid JSON ({exc})", path=meta_path,
                        fix="re-ingest the dataset with --overwrite") from None
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise DataError(
            f"dataset schema version {meta.get('schema_version')!r}, this omkl-dist reads {SCHEMA_VERSION}",
            path=directory, fix="re-ingest the dataset with this version of omkl-dist (--overwrite)")
    return meta


def open_features(directory):
    """The zarr feature array (read-only)."""
    return zarr.open_array(str(Path(directory) / FEATURES), mode="r")


def read_labels(directory, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Internal labels of rows [start, stop), read from parquet row groups (not the whole file)."""
    pf = pq.ParquetFile(str(Path(directory) / LABELS))
    n = pf.metadata.num_rows
    stop = n if stop is None else min(stop, n)
    if start >= stop:
        return np.empty(0, dtype=np.int64)
    parts, offset = [], 0
    for g in range(pf.num_row_groups):
        g_rows = pf.metadata.row_group(g).num_rows
        g_lo, g_hi = offset, offset + g_rows
        offset = g_hi
        if g_hi <= start or g_lo >= stop:
            continue
        col = pf.read_row_group(g, columns=["y"]).column("y").to_numpy()
        parts.append(col[max(start, g_lo) - g_lo: min(stop, g_hi) - g_lo])
    return np.concatenate(parts).astype(np.int64, copy=False)
