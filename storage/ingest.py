"""Ingest a dataset file into the on-disk layout (zarr features + parquet labels + meta.json).

The file is parsed and checked completely before anything is written, then written in
``chunk_rows`` blocks into a temporary directory that is renamed into place only when complete:
a failing ingest leaves nothing behind, and a failing ``overwrite`` keeps the old copy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import DataError
from .labels import canonical
from .layout import DEFAULT_CHUNK_ROWS, DatasetWriter, atomic_output_dir, check_dtype, open_features, read_meta
from .readers import read_dataset
from .registry import resolve_dataset

_REQUIRED = {"n_rows": int, "n_features": int, "dtype": str, "chunk_rows": int, "label_map": list,
             "n_classes": int, "kind": str}
_REQUIRED_INGEST = {"source": str, "sha256": str, "format": str, "class_counts": dict}


def ingest(source, out, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, dtype: str = "float64", classes=None,
           n_classes: int | None = None, fmt: str | None = None, overwrite: bool = False,
           data_dir=None) -> dict:
    """Read ``source`` and write it as a dataset directory ``out``.

    Parameters
    ----------
    source : str or Path
        A data file, or a registry name such as ``"codrna"`` or ``"a9a/a9a.t.gz"``.
    out : str or Path
        The dataset directory to create.
    chunk_rows : int, default 65536
        Rows per zarr chunk (and per parquet row group): the unit a stream reads at a time.
    dtype : {"float64", "float32"}, default "float64"
        Storage type of the features.
    classes : sequence, optional
        Declared original classes (needed for a one-class split such as ``svmguide3.t``).
    n_classes : int, optional
        Refuse data with more classes than this.
    fmt : str, optional
        Input format; detected when omitted (see :func:`storage.readers.detect_format`).
    overwrite : bool, default False
        Replace an existing ``out`` (atomically: the old copy survives a failure).
    data_dir : str or Path, optional
        Datasets folder for registry names; default ``$OMKL_DATA_DIR`` or ``../shared/datasets``.

    Returns
    -------
    dict
        The metadata written to ``out/meta.json``.
    """
    dtype = check_dtype(dtype)
    chunk_rows = _check_chunk_rows(chunk_rows)
    out = Path(out).absolute()
    if out.exists() and not overwrite:  # fail before spending time on parsing
        raise FileExistsError(f"{out} already exists; pass --overwrite (overwrite=True) to replace it, "
                              "or choose another --out")
    path = resolve_dataset(source, data_dir=data_dir)
    ds = read_dataset(path, fmt=fmt, classes=classes, n_classes=n_classes)
    _check_fits_dtype(ds.X, dtype, path)
    meta = {
        "kind": "ingest",
        "source": str(Path(path).absolute()),
        "source_name": str(source),
        "sha256": ds.sha256,
        "format": ds.fmt,
        "label_map": ds.label_map,
        "n_classes": ds.n_classes,
        "class_counts": {canonical(k): v for k, v in ds.class_counts.items()},
    }
    if ds.feature_names is not None:
        meta["feature_names"] = ds.feature_names
    if ds.permutations is not None:
        # The permutations are not copied (the source file keeps them); note that they exist.
        meta["n_permutations"] = int(ds.permutations.shape[0])
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        writer = DatasetWriter(tmp, n_rows=ds.n_rows, n_features=ds.n_features, chunk_rows=chunk_rows, dtype=dtype)
        for lo in range(0, ds.n_rows, chunk_rows):
            writer.append(ds.X[lo:lo + chunk_rows], ds.y[lo:lo + chunk_rows])
        return writer.close(meta)


def dataset_info(directory) -> dict:
    """Metadata of a dataset directory, checked against the arrays it describes.

    Raises
    ------
    DataError
        Not a dataset directory, or its ``meta.json`` is incomplete or disagrees with the data.
    """
    directory = Path(directory)
    meta = read_meta(directory)
    required = dict(_REQUIRED, **(_REQUIRED_INGEST if meta.get("kind") == "ingest" else {}))
    for key, kind in required.items():
        if not isinstance(meta.get(key), kind):
            raise DataError(f"meta.json field {key!r} is missing or not a {kind.__name__}",
                            path=directory / "meta.json",
                            fix="re-ingest the dataset with --overwrite")
    _check_arrays(directory, meta)
    _check_labels_meta(directory, meta)
    return meta


def format_info(meta: dict) -> str:
    """A human summary of dataset metadata (as returned by :func:`ingest` or :func:`dataset_info`)."""
    n_rows, chunk_rows = meta.get("n_rows"), meta.get("chunk_rows")
    counts = meta.get("class_counts") or {}
    lines = [f"rows:      {_num(n_rows)}", f"features:  {_num(meta.get('n_features'))}",
             f"classes:   {meta.get('n_classes')}  (original -> internal: rows)"]
    for original, internal in meta.get("label_map", []):
        count = counts.get(str(original))
        lines.append(f"  {str(original):>12} -> {internal:>2}" + (f": {_num(count)}" if count is not None else ""))
    chunking = f"{_num(chunk_rows)} rows per chunk"
    if isinstance(n_rows, int) and isinstance(chunk_rows, int) and chunk_rows > 0:
        chunking += f", {-(-n_rows // chunk_rows)} chunk(s)"
    lines += [f"dtype:     {meta.get('dtype')}", f"chunking:  {chunking}",
              f"kind:      {meta.get('kind')}" + (f" (format {meta['format']})" if meta.get("format") else "")]
    for key in ("source", "sha256"):
        if meta.get(key):
            lines.append(f"{key + ':':<10} {meta[key]}")
    lines.append(f"created:   {meta.get('created')}")
    return "\n".join(lines)


def _num(value) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _check_chunk_rows(chunk_rows) -> int:
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return int(chunk_rows)


def _check_fits_dtype(X: np.ndarray, dtype: str, path) -> None:
    """float32 storage must not turn large values into inf."""
    if dtype != "float32" or X.size == 0:
        return
    limit = np.finfo(np.float32).max
    too_big = np.abs(X) > limit
    if too_big.any():
        row, col = (int(v) for v in np.argwhere(too_big)[0])
        raise DataError(f"value {float(X[row, col])!r} overflows float32 (data row {row + 1}, feature {col + 1})",
                        path=path,
                        fix="ingest with dtype float64 (--dtype float64) or rescale the feature")


def _check_arrays(directory: Path, meta: dict) -> None:
    import pyarrow.parquet as pq

    features = open_features(directory)
    expected = (meta["n_rows"], meta["n_features"])
    if tuple(features.shape) != expected:
        raise DataError(f"features.zarr has shape {tuple(features.shape)} but meta.json says {expected}",
                        path=directory, fix="re-ingest the dataset with --overwrite")
    if str(features.dtype) != meta["dtype"]:
        raise DataError(f"features.zarr is {features.dtype} but meta.json says {meta['dtype']}",
                        path=directory, fix="re-ingest the dataset with --overwrite")
    n_labels = pq.ParquetFile(str(directory / "labels.parquet")).metadata.num_rows
    if n_labels != meta["n_rows"]:
        raise DataError(f"labels.parquet has {n_labels} rows but meta.json says {meta['n_rows']}",
                        path=directory, fix="re-ingest the dataset with --overwrite")


def _check_labels_meta(directory: Path, meta: dict) -> None:
    internals = sorted(pair[1] for pair in meta["label_map"])
    k = meta["n_classes"]
    want = [-1, 1] if k == 2 else list(range(k))
    if len(meta["label_map"]) != k or internals != want:
        raise DataError(f"label_map {meta['label_map']} does not match n_classes={k}", path=directory / "meta.json",
                        fix="re-ingest the dataset with --overwrite")
    counts = meta.get("class_counts")
    if counts is not None and sum(counts.values()) != meta["n_rows"]:
        raise DataError(f"class_counts add up to {sum(counts.values())}, not n_rows={meta['n_rows']}",
                        path=directory / "meta.json", fix="re-ingest the dataset with --overwrite")
