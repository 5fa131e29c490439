"""On-disk layout of an ingested (or generated) dataset, written atomically.

::

    DIR/
      features.zarr/   zarr v3 array (n_rows, n_features), chunked by rows        (layout "dense")
      features.csr/    zarr v3 group, one subgroup per row chunk                    (layout "csr")
        zarr.json        attributes: layout, n_rows, n_features, chunk_rows, dtype, index_dtype
        0/ 1/ ...        chunk c (rows c*chunk_rows ...): zarr v3 arrays of one zarr chunk each,
          indptr/          int64 (rows + 1): row pointers relative to the chunk (start at 0)
          indices/         int32 (int64 above 2**31 - 1 features): sorted columns of each row
          data/            the stored dtype: the non-zero values
      labels.parquet   one int64 column ``y`` (internal labels: +-1 binary, 0..K-1 multi-class);
                       absent from a dataset without labels
      meta.json        schema_version, kind, source, sha256, format, labelled, label_map, n_rows,
                       n_features, n_classes, class_counts, dtype, chunk_rows, created,
                       checksums (sha256 of every chunk's features and labels), meta_sha256;
                       csr datasets also layout = "csr", nnz, index_dtype and checksums.csr_parts
                       (a dense dataset has no layout key, so datasets written before the csr
                       layout read as they were and keep their meta_sha256)

A dataset without labels (rows to predict: ``omkl data ingest --label-column none``) records
``labelled: false``, an empty ``label_map``, ``n_classes: 0`` and no label checksums, and has no
``labels.parquet``: no placeholder label can be learnt from by mistake. Its chunks read as
``(X, None)``; :class:`~omkl_dist.storage.stream.Stream` refuses it to every learner.

The csr layout is for wide, mostly-zero data (LIBSVM files such as rcv1: 47,236 features, 0.16 %
non-zero), whose dense chunks would be hundreds of times larger than their values. A row chunk is
stored as its own CSR triple, so it is read without touching the others. A chunk's features
checksum is the sha256 of its three parts' sha256 hex digests -- the row pointers relative to the
chunk, the column indices, the values, each little-endian in its stored type -- so it covers the
chunk's whole content wherever the chunk sits; the part digests are recorded too
(``checksums.csr_parts[c]``), so a mismatch names the very file that changed.

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
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp
import zarr
from numpy.typing import ArrayLike, NDArray

from .errors import DataError
from .location import Location, PathArg, is_remote, location
from .outputs import uninterrupted
from .schema import Schema, array, boolean, check, integer, obj, read_json, string, tuple_of

SCHEMA_VERSION = 3  # 2: per-chunk checksums and meta_sha256; 3: labelled (datasets without labels)
FEATURES = "features.zarr"
FEATURES_CSR = "features.csr"
LAYOUTS = ("dense", "csr")
CSR_PARTS = ("indptr", "indices", "data")
LABELS = "labels.parquet"
META = "meta.json"
DEFAULT_CHUNK_ROWS = 65_536
DTYPES = ("float64", "float32")
RESTORE = "restore the dataset from a copy, or re-ingest it (--overwrite)"  # the fix for a damaged dataset
REINGEST = "re-ingest the dataset with --overwrite"  # the fix for a meta.json that does not describe one
MAX_COUNT = 2**48  # rows, features, non-zeros: far above any real dataset, far below int64 overflow
_HEX64 = string(min_length=64, max_length=64)
_COUNT = integer(minimum=0, maximum=MAX_COUNT)
#: meta.json of every dataset (both layouts, every kind); other keys (a generator's parameters) may follow
META_SCHEMA = obj(
    required={
        "schema_version": integer(),
        "kind": string(),
        "n_rows": _COUNT,
        "n_features": _COUNT,
        "dtype": string(DTYPES),
        "chunk_rows": integer(minimum=1, maximum=MAX_COUNT),
        "labelled": boolean(),
        "label_map": array(tuple_of(string(), integer(minimum=-1, maximum=MAX_COUNT))),
        "n_classes": _COUNT,
        "checksums": obj(
            required={"algorithm": string(("sha256",)), "features": array(_HEX64), "labels": array(_HEX64)},
            optional={"csr_parts": array(tuple_of(_HEX64, _HEX64, _HEX64))},
        ),
        "meta_sha256": _HEX64,
    },
    optional={
        "layout": string(LAYOUTS),
        "nnz": _COUNT,
        "index_dtype": string(("int32", "int64")),
        "created": string(),
        "source": string(),
        "source_name": string(),
        "sha256": string(),
        "format": string(),
        "class_counts": obj(values=_COUNT),
        "feature_names": array(string()),
        "feature_groups": obj(values=string()),
        "views": obj(values=string()),
        "label_column": string(),
        # columns kept beside the features, as read (storage/carried.py): ids omkl predict writes out
        "carried": obj(required={"columns": array(string()), "sha256": _HEX64}),
        "n_permutations": _COUNT,
        "columns": obj(),  # ColumnEncoder.to_dict(): how the raw columns were imputed and encoded
    },
)
_INGEST_KEYS = ("source", "sha256", "format", "class_counts")  # what an ingested dataset also records
_CSR_KEYS = ("nnz", "index_dtype")
#: zarr.json attributes of features.csr (compared with meta.json's by dataset_info)
CSR_ATTRS_SCHEMA = obj(
    required={
        "layout": string(("csr",)),
        "n_rows": _COUNT,
        "n_features": _COUNT,
        "chunk_rows": integer(minimum=1, maximum=MAX_COUNT),
        "dtype": string(DTYPES),
        "index_dtype": string(("int32", "int64")),
    }
)


def check_dtype(dtype: str) -> str:
    if str(dtype) not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return str(dtype)


class _Writer:
    """What both layouts' writers share: labels as parquet row groups, the per-chunk checksums and
    ``meta.json``. Subclasses store the features and add each finished chunk's two digests.
    ``labelled=False``: rows without labels (appended with ``y=None``; no labels file)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        n_rows: int,
        n_features: int,
        chunk_rows: int,
        dtype: str,
        labelled: bool = True,
    ) -> None:
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows}")
        self.directory = Path(directory)
        self.n_rows, self.n_features = int(n_rows), int(n_features)
        self.chunk_rows, self.dtype = int(chunk_rows), check_dtype(dtype)
        self.labelled = bool(labelled)
        self.rows_written = 0
        self._digests: dict[str, list[Any]] = {"features": [], "labels": []}  # per chunk: hex digests
        self._labels: pq.ParquetWriter | None = None

    def _open_labels(self) -> None:
        if self.labelled:
            self._labels = pq.ParquetWriter(str(self.directory / LABELS), pa.schema([("y", pa.int64())]))

    def _check_block(self, X: Any, y: NDArray[np.int64] | None) -> tuple[int, int]:
        if (y is None) == self.labelled:
            raise ValueError("labels must be given exactly when the dataset is labelled")
        if X.ndim != 2 or X.shape[1] != self.n_features or (y is not None and len(y) != X.shape[0]):
            shapes = f"{X.shape} / {None if y is None else y.shape}"
            raise ValueError(f"block shape {shapes} does not match ({self.n_features} features)")
        lo, hi = self.rows_written, self.rows_written + X.shape[0]
        if hi > self.n_rows:
            raise ValueError(f"writing rows {lo}:{hi} past the declared {self.n_rows} rows")
        return lo, hi

    def append(self, X: Any, y: ArrayLike | None) -> None:
        """Add the rows of ``X`` and their labels ``y`` (None: unlabelled; each layout stores them its own way)."""
        raise NotImplementedError

    def _write_labels(self, y: NDArray[np.int64] | None) -> None:
        if self._labels is not None and y is not None:
            self._labels.write_table(pa.table({"y": y}))

    def _layout_meta(self) -> dict[str, Any]:
        return {}

    def close(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """Finish the files and write ``meta.json``; returns the full metadata written."""
        if self._labels is not None:
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
            **self._layout_meta(),
            **meta,
            "labelled": self.labelled,
            "checksums": {"algorithm": "sha256", **self._digests},
        }
        full["meta_sha256"] = meta_digest(full)
        (self.directory / META).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
        return full


class DatasetWriter(_Writer):
    """Append row blocks to ``features.zarr`` and ``labels.parquet`` in a (temporary) directory.

    Memory stays bounded by the block being written: zarr gets the rows, parquet a row group.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        n_rows: int,
        n_features: int,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        dtype: str = "float64",
        labelled: bool = True,
    ) -> None:
        super().__init__(
            directory, n_rows=n_rows, n_features=n_features, chunk_rows=chunk_rows, dtype=dtype, labelled=labelled
        )
        with uninterrupted():  # zarr writes from its own thread: let it finish before a Ctrl-C cleans up
            self._features = self._create_features(self.n_rows)
            self._open_labels()
        self._open_chunk = (hashlib.sha256(), hashlib.sha256())

    def _create_features(self, n_rows: int) -> Any:
        """``features.zarr``, ``n_rows`` long, in chunks of ``chunk_rows`` rows (one chunk when fewer)."""
        return zarr.create_array(
            store=str(self.directory / FEATURES),
            shape=(n_rows, self.n_features),
            chunks=(min(self.chunk_rows, max(n_rows, 1)), max(self.n_features, 1)),
            dtype=self.dtype,
            fill_value=0.0,
            # an all-zero chunk is stored too: a chunk file that is missing is then always damage
            config={"write_empty_chunks": True},
        )

    def append(self, X: Any, y: ArrayLike | None) -> None:
        """Write the rows of ``X`` (an array, or a sparse matrix of at most a few chunks, densified)."""
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        y = None if y is None else np.asarray(y, dtype=np.int64)
        lo, hi = self._check_block(X, y)
        X = np.ascontiguousarray(X, dtype=self.dtype)
        with uninterrupted():
            self._features[lo:hi] = X
            self._write_labels(y)
        self._hash_rows(X, y, lo)
        self.rows_written = hi

    def _hash_rows(self, X: NDArray[Any], y: NDArray[np.int64] | None, lo: int) -> None:
        """Feed rows [lo, lo + len(X)) to the checksums of the chunks they fall in."""
        pos = 0
        while pos < len(X):
            take = min(len(X) - pos, self.chunk_rows - (lo + pos) % self.chunk_rows)
            hx, hy = self._open_chunk
            hx.update(X[pos : pos + take].tobytes())
            if y is not None:
                hy.update(np.ascontiguousarray(y[pos : pos + take], dtype="<i8").tobytes())
            pos += take
            if (lo + pos) % self.chunk_rows == 0 or lo + pos == self.n_rows:
                self._digests["features"].append(hx.hexdigest())
                if self.labelled:
                    self._digests["labels"].append(hy.hexdigest())
                self._open_chunk = (hashlib.sha256(), hashlib.sha256())


class LabelsLastWriter(DatasetWriter):
    """:class:`DatasetWriter` of rows whose count and labels are known only once their features have
    been written: a file checked in the same pass that reads its features (the label map needs every
    label). :meth:`append` takes whole chunks of features (the last may be shorter), :meth:`close` the
    labels. The files are those :class:`DatasetWriter` writes of the same rows, byte for byte."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        n_features: int,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        dtype: str = "float64",
        labelled: bool = True,
    ) -> None:
        # (the array grows as the rows come; made chunk_rows long, its chunks are those of a longer array)
        super().__init__(
            directory, n_rows=chunk_rows, n_features=n_features, chunk_rows=chunk_rows, dtype=dtype, labelled=labelled
        )

    def append(self, X: Any, y: ArrayLike | None = None) -> None:
        """Write the rows of ``X``: a chunk (``chunk_rows`` rows), or the last, shorter one."""
        if y is not None:
            raise ValueError("the labels are given to close()")
        X = np.ascontiguousarray(X, dtype=self.dtype)
        if X.ndim != 2 or X.shape[1] != self.n_features or not 0 < len(X) <= self.chunk_rows:
            raise ValueError(f"block shape {X.shape} is not a chunk of {self.chunk_rows} rows x {self.n_features}")
        if self.rows_written % self.chunk_rows:
            raise ValueError("rows after the last, shorter chunk")
        lo, hi = self.rows_written, self.rows_written + len(X)
        with uninterrupted():
            self._features.resize((hi, self.n_features))
            self._features[lo:hi] = X
        self._digests["features"].append(hashlib.sha256(X.tobytes()).hexdigest())
        self.rows_written = self.n_rows = hi

    def close(self, meta: Mapping[str, Any], y: ArrayLike | None = None) -> dict[str, Any]:
        """Write the labels ``y`` of every row (None: unlabelled), then :meth:`_Writer.close`."""
        if (y is None) == self.labelled:
            raise ValueError("labels must be given exactly when the dataset is labelled")
        if self.rows_written < self.chunk_rows:  # (one chunk, as long as the rows: DatasetWriter's shape)
            self._rewrite_as_one_chunk()
        if y is not None:
            y = np.asarray(y, dtype=np.int64)
            if len(y) != self.rows_written:
                raise ValueError(f"{len(y)} labels for {self.rows_written} rows")
            for lo in range(0, len(y), self.chunk_rows):
                part = y[lo : lo + self.chunk_rows]
                with uninterrupted():
                    self._write_labels(part)
                digest = hashlib.sha256(np.ascontiguousarray(part, dtype="<i8").tobytes())
                self._digests["labels"].append(digest.hexdigest())
        return super().close(meta)

    def _rewrite_as_one_chunk(self) -> None:
        X = self._features[: self.rows_written]
        with uninterrupted():
            shutil.rmtree(self.directory / FEATURES)
            self._features = self._create_features(len(X))
            self._features[:] = X


class CsrDatasetWriter(_Writer):
    """Append row blocks to ``features.csr`` (one CSR triple per row chunk) and ``labels.parquet``.

    Rows are held until their chunk is complete, then the chunk is written as three zarr arrays of
    one zarr chunk each: memory stays bounded by one chunk's non-zeros. Dense blocks are accepted
    too (``--layout csr`` on dense input) and converted a block at a time.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        n_rows: int,
        n_features: int,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        dtype: str = "float64",
        labelled: bool = True,
    ) -> None:
        super().__init__(
            directory, n_rows=n_rows, n_features=n_features, chunk_rows=chunk_rows, dtype=dtype, labelled=labelled
        )
        self.index_dtype = index_dtype(self.n_features)
        self._digests["csr_parts"] = []
        self.nnz = 0
        self._held: list[tuple[sp.csr_matrix, NDArray[np.int64] | None]] = []  # rows of the chunk being filled
        self._held_rows = 0
        with uninterrupted():
            self._root = zarr.open_group(
                str(self.directory / FEATURES_CSR), mode="w-", zarr_format=3, attributes=self._attributes()
            )
            self._open_labels()

    def _attributes(self) -> dict[str, Any]:
        return {
            "layout": "csr",
            "n_rows": self.n_rows,
            "n_features": self.n_features,
            "chunk_rows": self.chunk_rows,
            "dtype": self.dtype,
            "index_dtype": self.index_dtype,
        }

    def append(self, X: Any, y: ArrayLike | None) -> None:
        """Add the rows of ``X`` (sparse or dense); full chunks are written as they complete."""
        X = canonical_csr(X, self.dtype)
        y = None if y is None else np.asarray(y, dtype=np.int64)
        lo, hi = self._check_block(X, y)
        pos = 0
        while pos < X.shape[0]:
            take = min(X.shape[0] - pos, self.chunk_rows - self._held_rows)
            self._held.append((X[pos : pos + take], None if y is None else y[pos : pos + take]))
            self._held_rows += take
            pos += take
            if self._held_rows == self.chunk_rows or lo + pos == self.n_rows:
                self._write_chunk()
        self.rows_written = hi

    def _write_chunk(self) -> None:
        X = sp.vstack([p[0] for p in self._held], format="csr") if len(self._held) > 1 else self._held[0][0]
        labels = [p[1] for p in self._held if p[1] is not None]
        y = np.concatenate(labels) if self.labelled else None
        parts = csr_parts(X, self.index_dtype, self.dtype)
        c = len(self._digests["features"])
        with uninterrupted():
            group = self._root.create_group(str(c))
            for name, values in zip(CSR_PARTS, parts):
                array = group.create_array(
                    name,
                    shape=values.shape,
                    chunks=(max(len(values), 1),),
                    dtype=values.dtype,
                    fill_value=0,
                    config={"write_empty_chunks": True},
                )
                if len(values):
                    array[:] = values
            self._write_labels(y)
        chunk_digest, part_digests = csr_digest(*parts)
        self._digests["features"].append(chunk_digest)
        self._digests["csr_parts"].append(part_digests)
        if y is not None:
            self._digests["labels"].append(hashlib.sha256(np.ascontiguousarray(y, dtype="<i8").tobytes()).hexdigest())
        self.nnz += len(parts[2])
        self._held, self._held_rows = [], 0

    def _layout_meta(self) -> dict[str, Any]:
        return {"layout": "csr", "nnz": int(self.nnz), "index_dtype": self.index_dtype}


def open_writer(directory: str | os.PathLike[str], *, layout: str = "dense", **kwargs: Any) -> _Writer:
    """The writer of ``layout`` ("dense" or "csr")."""
    return (CsrDatasetWriter if check_layout(layout) == "csr" else DatasetWriter)(directory, **kwargs)


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def layout_of(meta: Mapping[str, Any]) -> str:
    """A dataset's layout: ``meta["layout"]``, "dense" when absent (every dataset written before csr)."""
    return str(meta.get("layout", "dense"))


def index_dtype(n_features: int) -> str:
    return "int32" if n_features <= np.iinfo(np.int32).max else "int64"


def canonical_csr(X: Any, dtype: str = "float64") -> sp.csr_matrix:
    """``X`` (sparse or dense) as a canonical ``csr_matrix`` of ``dtype``: sorted column indices, no
    duplicates, no stored zeros -- the one form whose bytes (and so checksums) a matrix has."""
    X = sp.csr_matrix(X, dtype=dtype)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if (X.data == 0).any():
        X = X.copy()
        X.eliminate_zeros()
    return X


def csr_parts(X: sp.csr_matrix, index_dtype_: str, dtype: str) -> tuple[NDArray[np.int64], NDArray[Any], NDArray[Any]]:
    """The stored triple of a chunk: row pointers relative to its first row (int64), column indices
    and values, each little-endian in its stored type."""
    indptr = np.ascontiguousarray(X.indptr - X.indptr[0], dtype="<i8")
    span = slice(int(X.indptr[0]), int(X.indptr[-1]))
    indices = np.ascontiguousarray(X.indices[span], dtype=np.dtype(index_dtype_).newbyteorder("<"))
    data = np.ascontiguousarray(X.data[span], dtype=np.dtype(dtype).newbyteorder("<"))
    return indptr, indices, data


def csr_digest(indptr: NDArray[Any], indices: NDArray[Any], data: NDArray[Any]) -> tuple[str, list[str]]:
    """A chunk's features checksum and its parts' (row pointers, indices, values; little-endian):
    the chunk's is the sha256 of the three part digests, so the content is hashed once."""
    parts = [
        hashlib.sha256(np.ascontiguousarray(part, dtype=part.dtype.newbyteorder("<")).tobytes()).hexdigest()
        for part in (indptr, indices, data)
    ]
    return hashlib.sha256("".join(parts).encode()).hexdigest(), parts


def meta_digest(meta: Mapping[str, Any]) -> str:
    """sha256 of meta.json's content other than itself (canonical JSON)."""
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def read_meta(directory: PathArg) -> dict[str, Any]:
    """Metadata of an ingested dataset directory, with a clear error when it is not one.

    meta.json is read bounded, its version and hash are checked, and then its content against
    :data:`META_SCHEMA` (plus the keys its kind and layout need): every size and count in it is
    then an integer in range, ready to be compared with the arrays it describes.
    """
    directory = location(directory)
    meta_path = directory / META
    has_features = (directory / FEATURES).exists() or (directory / FEATURES_CSR).exists()
    if not meta_path.is_file() or not has_features:
        raise DataError(
            "not an ingested dataset directory (needs meta.json, features.zarr or features.csr, and labels.parquet "
            "unless it has no labels)",
            path=directory,
            fix="create it with `omkl data ingest FILE --out DIR` or `omkl data synth ... --out DIR`",
        )
    meta: dict[str, Any] = read_json(meta_path, fix=REINGEST, schema=obj())
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise DataError(
            f"dataset schema version {meta.get('schema_version')!r}, this omkl-dist reads {SCHEMA_VERSION}",
            path=directory,
            fix="re-ingest the dataset with this version of omkl-dist (--overwrite)",
        )
    if meta.get("meta_sha256") != meta_digest(meta):
        raise DataError(
            "meta.json does not match its recorded hash (meta_sha256): it was edited or damaged "
            "after the dataset was written",
            path=meta_path,
            fix="restore meta.json from a copy, or re-ingest the dataset (--overwrite)",
        )
    check(meta, _meta_schema(meta), path=meta_path, fix=REINGEST)
    if meta["labelled"] and not (directory / LABELS).is_file():
        raise DataError(f"{LABELS} is missing", path=directory / LABELS, fix=RESTORE)
    return meta


def _meta_schema(meta: Mapping[str, Any]) -> Schema:
    """:data:`META_SCHEMA` with the keys of ``meta``'s kind (ingest) and layout (csr) required."""
    needed = (_INGEST_KEYS if meta.get("kind") == "ingest" else ()) + (_CSR_KEYS if meta.get("layout") == "csr" else ())
    required = {**META_SCHEMA.required, **{key: META_SCHEMA.optional[key] for key in needed}}
    return obj(required=required, optional=META_SCHEMA.optional)


class CsrFeatures:
    """Read access to ``features.csr``: the layout's attributes and one row chunk at a time.

    Offers what readers use of a dense zarr array -- ``shape``, ``dtype``, ``chunks`` (rows per
    chunk, features) -- so a stream treats both layouts alike until it reads a chunk.
    """

    def __init__(self, path: Location, group: zarr.Group) -> None:
        self.path, self.group = path, group
        attrs: dict[str, Any] = dict(group.attrs)
        check(attrs, CSR_ATTRS_SCHEMA, path=path / "zarr.json", fix=RESTORE, key="attributes")
        self.attrs = attrs
        n_rows, n_features = attrs["n_rows"], attrs["n_features"]
        self.shape = (n_rows, n_features)
        self.dtype = np.dtype(attrs["dtype"])
        self.index_dtype = str(attrs["index_dtype"])
        self.chunks = (min(attrs["chunk_rows"], max(n_rows, 1)), max(n_features, 1))

    def chunk_names(self) -> set[str]:
        """Names of the row-chunk folders present (one listing, not one request per chunk)."""
        return {entry.name for entry in self.path.iterdir() if entry.name.isdigit()}

    def read_part(self, c: int, name: str) -> NDArray[Any]:
        """One stored array (``indptr``, ``indices`` or ``data``) of chunk ``c``, unchecked."""
        return np.ascontiguousarray(self._array(c, name)[:])

    def _array(self, c: int, name: str) -> zarr.Array[Any]:
        # each part of a chunk is written as an array (CsrDatasetWriter._write_chunk)
        return cast("zarr.Array[Any]", self.group[f"{c}/{name}"])

    def missing_files(self, c: int) -> list[Location]:
        """Chunk files of chunk ``c`` that should exist and do not (an array of 0 values has none)."""
        missing: list[Location] = []
        for name in CSR_PARTS:
            part = self.path / str(c) / name
            try:
                size = self._array(c, name).shape[0]
            except Exception:  # noqa: BLE001 - the array itself is gone or unreadable
                missing.append(part)
                continue
            if size and not (part / "c" / "0").exists():
                missing.append(part / "c" / "0")
        return missing


#: A dataset's features, read-only: the zarr array of a dense dataset, or CsrFeatures.
Features: TypeAlias = "zarr.Array[Any] | CsrFeatures"


def open_features(directory: PathArg, meta: Mapping[str, Any] | None = None) -> Features:
    """The features, read-only: the zarr array of a dense dataset, a :class:`CsrFeatures` of a csr
    one. The layout is ``meta``'s, or the one on disk when no metadata is given."""
    directory = location(directory)
    layout = (
        layout_of(meta)
        if meta is not None
        else ("csr" if (directory / FEATURES_CSR).exists() and not (directory / FEATURES).exists() else "dense")
    )
    if layout == "csr":
        path = directory / FEATURES_CSR
        try:
            group = zarr.open_group(str(path), mode="r", zarr_format=3)
        except Exception as exc:  # zarr's errors name no file
            raise DataError(
                f"{FEATURES_CSR} cannot be opened ({type(exc).__name__}: {exc})", path=path, fix=RESTORE
            ) from None
        return CsrFeatures(path, group)
    path = directory / FEATURES
    try:
        return zarr.open_array(str(path), mode="r")
    except Exception as exc:  # zarr's errors name no file
        raise DataError(
            f"features.zarr cannot be opened ({type(exc).__name__}: {exc})", path=path, fix=RESTORE
        ) from None


def read_chunk(
    directory: PathArg, features: Features, meta: Mapping[str, Any], c: int
) -> tuple[NDArray[Any] | sp.csr_matrix, NDArray[np.int64] | None]:
    """Chunk ``c`` as ``(X in the stored dtype, y int64)``, checked against its checksums. ``X`` is
    an ndarray for a dense dataset, a canonical ``scipy.sparse.csr_matrix`` for a csr one; ``y`` is
    None for a dataset without labels.

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
    if layout_of(meta) == "csr":
        X = _read_csr_chunk(cast(CsrFeatures, features), meta, c, hi - lo, where, fix)
    else:
        try:
            X = np.ascontiguousarray(cast("zarr.Array[Any]", features)[lo:hi])
        except Exception as exc:  # zarr/codec errors name no file
            raise DataError(
                f"{where} of the features cannot be read ({type(exc).__name__}: {exc})",
                path=directory / FEATURES,
                fix=fix,
            ) from None
        if hashlib.sha256(X.data).hexdigest() != sums["features"][c]:  # (X is C-contiguous: hashed without a copy)
            raise DataError(
                f"{where} of the features does not match its checksum (a chunk file is missing or damaged)",
                path=directory / FEATURES,
                fix=fix,
            )
    if not meta["labelled"]:
        return X, None
    try:
        y = read_labels(directory, lo, hi)
    except Exception as exc:  # pyarrow errors name no row group
        raise DataError(
            f"the labels of {where} cannot be read ({type(exc).__name__}: {exc})", path=directory / LABELS, fix=fix
        ) from None
    if hashlib.sha256(np.ascontiguousarray(y, dtype="<i8").tobytes()).hexdigest() != sums["labels"][c]:
        raise DataError(f"the labels of {where} do not match their checksum", path=directory / LABELS, fix=fix)
    _check_label_values(y, meta, where, directory / LABELS, fix)
    return X, y


def _check_label_values(y: NDArray[np.int64], meta: Mapping[str, Any], where: str, path: Location, fix: str) -> None:
    """Internal labels index per-class arrays in compiled code: each must be one of the label map's."""
    internals = np.array([internal for _, internal in meta["label_map"]], dtype=np.int64)
    bad = np.flatnonzero(~np.isin(y, internals))
    if len(bad):
        raise DataError(
            f"the labels of {where} hold {int(y[bad[0]])}, which is not an internal label of meta.json's label_map",
            path=path,
            fix=fix,
        )


def _read_csr_chunk(
    features: CsrFeatures, meta: Mapping[str, Any], c: int, rows: int, where: str, fix: str
) -> sp.csr_matrix:
    """Chunk ``c`` of a csr dataset, its triple checked against the chunk's checksum before a matrix
    is built from it (so a damaged chunk never reaches scipy). A missing chunk file reads as zeros
    in zarr: the checksum catches it, and the message names the file."""
    parts: list[NDArray[Any]] = []
    for name in CSR_PARTS:
        try:
            parts.append(features.read_part(c, name))
        except Exception as exc:  # zarr/codec errors name no file
            missing = features.missing_files(c)
            raise DataError(
                f"{where} of the features cannot be read ({name}: {type(exc).__name__}: {exc})",
                path=missing[0] if missing else features.path / str(c) / name,
                fix=fix,
            ) from None
    indptr, indices, data = parts
    chunk_digest, part_digests = csr_digest(indptr, indices, data)
    if chunk_digest != meta["checksums"]["features"][c]:
        missing = features.missing_files(c)
        recorded = meta["checksums"].get("csr_parts", [])
        changed = [
            name
            for name, now, then in zip(CSR_PARTS, part_digests, recorded[c] if c < len(recorded) else [])
            if now != then
        ]
        problem = (
            "its file is missing"
            if missing
            else f"its {changed[0]} file is damaged"
            if changed
            else "a chunk file is damaged"
        )
        path = (
            missing[0]
            if missing
            else features.path / str(c) / changed[0] / "c" / "0"
            if changed
            else features.path / str(c)
        )
        raise DataError(f"{where} of the features does not match its checksum ({problem})", path=path, fix=fix)
    _check_csr_structure(indptr, indices, data, rows, meta["n_features"], f"{where} of {features.path}", fix)
    return sp.csr_matrix((data, indices, indptr), shape=(rows, int(meta["n_features"])), copy=False)


def _check_csr_structure(
    indptr: NDArray[Any], indices: NDArray[Any], data: NDArray[Any], rows: int, n_features: int, where: str, fix: str
) -> None:
    """A chunk's triple is a CSR matrix of ``rows`` x ``n_features``: its row pointers and column
    indices reach compiled kernels as offsets, so a chunk rewritten with matching checksums must
    not point outside its arrays."""
    problem = None
    if indptr.ndim != 1 or len(indptr) != rows + 1 or indptr[0] != 0:
        problem = f"its row pointers are not {rows + 1} offsets starting at 0"
    elif np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices) or len(indices) != len(data):
        problem = "its row pointers do not step through its column indices and values"
    elif len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= n_features):
        problem = f"a column index is outside 0..{n_features - 1}"
    if problem is not None:
        raise DataError(f"{where} is not a valid sparse chunk ({problem})", fix=fix)


def open_labels(directory: PathArg) -> pq.ParquetFile:
    """The labels' parquet file (its row groups are read on demand)."""
    path = location(directory) / LABELS
    return pq.ParquetFile(path.open("rb") if is_remote(path) else str(path))


def read_labels(directory: PathArg, start: int = 0, stop: int | None = None) -> NDArray[np.int64]:
    """Internal labels of rows [start, stop), read from parquet row groups (not the whole file)."""
    pf = open_labels(directory)
    n = pf.metadata.num_rows
    stop = n if stop is None else min(stop, n)
    if start >= stop:
        return np.empty(0, dtype=np.int64)
    parts: list[NDArray[Any]] = []
    offset = 0
    for g in range(pf.num_row_groups):
        g_rows = pf.metadata.row_group(g).num_rows
        g_lo, g_hi = offset, offset + g_rows
        offset = g_hi
        if g_hi <= start or g_lo >= stop:
            continue
        col = pf.read_row_group(g, columns=["y"]).column("y").to_numpy()
        parts.append(col[max(start, g_lo) - g_lo : min(stop, g_hi) - g_lo])
    return np.concatenate(parts).astype(np.int64, copy=False)
