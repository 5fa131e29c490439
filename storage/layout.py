"""On-disk layout of an ingested (or generated) dataset, written atomically.

::

    DIR/
      features.zarr/   zarr v3 array (n_rows, n_features), chunked by rows
      labels.parquet   one int64 column ``y`` (internal labels: +-1 binary, 0..K-1 multi-class)
      meta.json        schema_version, kind, source, sha256, format, label_map, n_rows,
                       n_features, n_classes, class_counts, dtype, chunk_rows, created,
                       checksums (sha256 of every chunk's features and labels), meta_sha256

A dataset is built in a temporary sibling directory and renamed into place only when complete
(:func:`omkl_dist.storage.outputs.atomic_output`), so a failed ingest leaves nothing behind and an
``--overwrite`` never loses the old copy early. Every chunk is checked against its checksum when
it is read (:func:`read_chunk`) -- a damaged or missing chunk is an error, never zeros -- and
``meta_sha256`` covers the rest of meta.json (the label map included) and the chunk checksums.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

from .errors import DataError
from .location import is_remote, location
from .outputs import uninterrupted

SCHEMA_VERSION = 2  # 2: per-chunk checksums and meta_sha256
FEATURES = "features.zarr"
LABELS = "labels.parquet"
META = "meta.json"
DEFAULT_CHUNK_ROWS = 65_536
DTYPES = ("float64", "float32")
RESTORE = "restore the dataset from a copy, or re-ingest it (--overwrite)"  # the fix for a damaged dataset


def check_dtype(dtype: str) -> str:
    if str(dtype) not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return str(dtype)


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
        with uninterrupted():  # zarr writes from its own thread: let it finish before a Ctrl-C cleans up
            self._features = zarr.create_array(
                store=str(self.directory / FEATURES),
                shape=(self.n_rows, self.n_features),
                chunks=(min(self.chunk_rows, max(self.n_rows, 1)), max(self.n_features, 1)),
                dtype=self.dtype,
                fill_value=0.0,
                # an all-zero chunk is stored too: a chunk file that is missing is then always damage
                config={"write_empty_chunks": True},
            )
            self._labels = pq.ParquetWriter(str(self.directory / LABELS), pa.schema([("y", pa.int64())]))
        self.rows_written = 0
        self._digests = {"features": [], "labels": []}
        self._open_chunk = (hashlib.sha256(), hashlib.sha256())

    def append(self, X: np.ndarray, y: np.ndarray) -> None:
        X = np.asarray(X)
        y = np.asarray(y, dtype=np.int64)
        if X.ndim != 2 or X.shape[1] != self.n_features or len(y) != len(X):
            raise ValueError(f"block shape {X.shape} / {y.shape} does not match ({self.n_features} features)")
        lo, hi = self.rows_written, self.rows_written + len(X)
        if hi > self.n_rows:
            raise ValueError(f"writing rows {lo}:{hi} past the declared {self.n_rows} rows")
        X = np.ascontiguousarray(X, dtype=self.dtype)
        with uninterrupted():
            self._features[lo:hi] = X
            self._labels.write_table(pa.table({"y": y}))
        self._hash_rows(X, y, lo)
        self.rows_written = hi

    def _hash_rows(self, X, y, lo):
        """Feed rows [lo, lo + len(X)) to the checksums of the chunks they fall in."""
        pos = 0
        while pos < len(X):
            take = min(len(X) - pos, self.chunk_rows - (lo + pos) % self.chunk_rows)
            hx, hy = self._open_chunk
            hx.update(X[pos:pos + take].tobytes())
            hy.update(np.ascontiguousarray(y[pos:pos + take], dtype="<i8").tobytes())
            pos += take
            if (lo + pos) % self.chunk_rows == 0 or lo + pos == self.n_rows:
                self._digests["features"].append(hx.hexdigest())
                self._digests["labels"].append(hy.hexdigest())
                self._open_chunk = (hashlib.sha256(), hashlib.sha256())

    def close(self, meta: dict) -> dict:
        """Finish the files and write ``meta.json``; returns the full metadata written."""
        with uninterrupted():
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
            "checksums": {"algorithm": "sha256", **self._digests},
        }
        full["meta_sha256"] = meta_digest(full)
        (self.directory / META).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
        return full


def meta_digest(meta: dict) -> str:
    """sha256 of meta.json's content other than itself (canonical JSON)."""
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def read_meta(directory) -> dict:
    """Metadata of an ingested dataset directory, with a clear error when it is not one."""
    directory = location(directory)
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
    if meta.get("meta_sha256") != meta_digest(meta):
        raise DataError("meta.json does not match its recorded hash (meta_sha256): it was edited or damaged "
                        "after the dataset was written", path=meta_path,
                        fix="restore meta.json from a copy, or re-ingest the dataset (--overwrite)")
    return meta


def open_features(directory):
    """The zarr feature array (read-only)."""
    path = location(directory) / FEATURES
    try:
        return zarr.open_array(str(path), mode="r")
    except Exception as exc:  # zarr's errors name no file
        raise DataError(f"features.zarr cannot be opened ({type(exc).__name__}: {exc})", path=path,
                        fix=RESTORE) from None


def read_chunk(directory, features, meta: dict, c: int) -> tuple[np.ndarray, np.ndarray]:
    """Chunk ``c`` as ``(X in the stored dtype, y int64)``, checked against its checksums.

    Raises
    ------
    DataError
        The chunk is missing, unreadable or not what was written (naming the file and the rows).
    """
    directory = location(directory)
    chunk_rows, n_rows = int(meta["chunk_rows"]), int(meta["n_rows"])
    lo, hi = c * chunk_rows, min(n_rows, (c + 1) * chunk_rows)
    where = f"chunk {c} (rows {lo}..{hi - 1})"
    fix = RESTORE + "; `omkl data verify DIR` checks every chunk"
    sums = meta["checksums"]
    try:
        X = np.ascontiguousarray(features[lo:hi])
    except Exception as exc:  # zarr/codec errors name no file
        raise DataError(f"{where} of the features cannot be read ({type(exc).__name__}: {exc})",
                        path=directory / FEATURES, fix=fix) from None
    if hashlib.sha256(X.tobytes()).hexdigest() != sums["features"][c]:
        raise DataError(f"{where} of the features does not match its checksum (a chunk file is missing or damaged)",
                        path=directory / FEATURES, fix=fix)
    try:
        y = read_labels(directory, lo, hi)
    except Exception as exc:  # pyarrow errors name no row group
        raise DataError(f"the labels of {where} cannot be read ({type(exc).__name__}: {exc})",
                        path=directory / LABELS, fix=fix) from None
    if hashlib.sha256(np.ascontiguousarray(y, dtype="<i8").tobytes()).hexdigest() != sums["labels"][c]:
        raise DataError(f"the labels of {where} do not match their checksum", path=directory / LABELS, fix=fix)
    return X, y


def open_labels(directory) -> pq.ParquetFile:
    """The labels' parquet file (its row groups are read on demand)."""
    path = location(directory) / LABELS
    return pq.ParquetFile(path.open("rb") if is_remote(path) else str(path))


def read_labels(directory, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Internal labels of rows [start, stop), read from parquet row groups (not the whole file)."""
    pf = open_labels(directory)
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
