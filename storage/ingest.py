"""Ingest a dataset file into the on-disk layout (zarr features + parquet labels + meta.json).

Features are stored densely (``features.zarr``) or, for wide sparse data, as one CSR triple per
row chunk (``features.csr``; see :mod:`omkl_dist.storage.layout`). ``layout="auto"`` picks csr
exactly when the reader returned a sparse matrix (LIBSVM files with at least
:data:`~omkl_dist.storage.readers.SPARSE_MIN_FEATURES` features, ``.mat`` files holding such a
sparse ``X``).

A table whose columns are imputed or encoded (``categorical``, ``impute``) is read whole, the
:class:`~omkl_dist.preprocessing.ColumnEncoder` fitted on it and recorded in ``meta.json``
(``columns``), so a model learnt from the dataset predicts raw rows with it.

Rows without labels (``label_column="none"``: rows to predict) are ingested as a dataset without
labels (``meta.json`` says ``labelled: false``; no ``labels.parquet``), which ``omkl predict``
scores and every learner refuses (:class:`~omkl_dist.storage.stream.Stream`).

The file is parsed and checked completely before anything is written, then written in
``chunk_rows`` blocks into a temporary directory that is renamed into place only when complete:
a failing ingest leaves nothing behind, and a failing ``overwrite`` keeps the old copy. The
output is checked before parsing starts: it may replace only a dataset (with ``overwrite``), and
never the source file or a folder holding it (:mod:`omkl_dist.storage.outputs`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
import zarr
from numpy.typing import NDArray

from omkl_dist.preprocessing import ColumnEncoder

from .carried import CARRIED, carried_entry, check_carried, kept_names, without_kept, write_carried
from .errors import DataError
from .fetch import local_copy, remote_data
from .id_columns import looks_like_id, warn_id_columns
from .labels import canonical, encode_label_codes, encode_labels, has_no_labels, warn_guessed_labels
from .layout import (
    DEFAULT_CHUNK_ROWS,
    FEATURES,
    FEATURES_CSR,
    LAYOUTS,
    RESTORE,
    CsrFeatures,
    LabelsLastWriter,
    check_dtype,
    layout_of,
    open_features,
    open_labels,
    open_writer,
    read_chunk,
    read_meta,
)
from .location import Location, PathArg, is_url, location
from .outputs import DATASET, Inputs, atomic_output, check_output
from .readers import Dataset, read_dataset
from .readers.blocks import BlockFile, NotStreamed, open_blocks
from .readers.joined import joined_folder, text_files
from .readers.libsvm_blocks import LibsvmBlockFile
from .readers.parquet import read_table
from .registry import resolve_dataset
from .tables import is_table_source, left_out_only, open_table

INGEST_LAYOUTS = ("auto", *LAYOUTS)
# what the reader is asked for under each layout: None = its own choice (sparse for wide LIBSVM)
_READER_SPARSE = {"auto": None, "dense": False, "csr": True}


def ingest(
    source: Any,
    out: PathArg,
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    dtype: str = "float64",
    classes: Iterable[Any] | None = None,
    n_classes: int | None = None,
    fmt: str | None = None,
    overwrite: bool = False,
    data_dir: str | os.PathLike[str] | None = None,
    n_features: int | None = None,
    label_column: str | int | None = None,
    positive_class: object = None,
    features: Iterable[str] | str | None = None,
    views: bool = False,
    feature_groups: Mapping[str, str | Iterable[int]] | None = None,
    layout: str = "auto",
    categorical: str | None = None,
    impute: str | None = None,
    columns: ColumnEncoder | None = None,
    zero_based: bool = False,
    keep: Iterable[str] | str | None = None,
    origin: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Read ``source`` and write it as a dataset directory ``out``.

    Parameters
    ----------
    source : str, Path, pyarrow.Table or pandas.DataFrame
        A data file, a parquet file or folder of parquet files -- here or at a URL (read from a
        temporary local copy, :mod:`.fetch`) --, a folder of CSV/TSV files (one table: their rows
        joined in name order, :mod:`.readers.joined`), a registry name such as ``"codrna"`` or
        ``"a9a/a9a.t.gz"``, or a table in memory.
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
        Input format; detected when omitted (see :func:`omkl_dist.storage.readers.detect_format`).
    overwrite : bool, default False
        Replace an existing dataset ``out`` (atomically: the old copy survives a failure). Anything
        at ``out`` that is not a dataset, and the source itself, are never replaced.
    data_dir : str or Path, optional
        Datasets folder for registry names; default ``$OMKL_DATA_DIR`` or ``../shared/datasets``.
    n_features : int, optional
        LIBSVM: the feature count (indices above it are an error; a split whose rows use fewer
        features is padded with zero columns). Default: the largest index in the file.
    label_column, positive_class : optional
        Where the labels are and which binary label is +1 (see :func:`read_dataset`).
        ``label_column="none"``: the rows have no labels (every column is a feature; a LIBSVM row
        starts with its first ``index:value``); the dataset can be predicted, not learnt from.
    features : list of str or str, optional
        Tables and CSV/TSV files with a header: the feature columns (default: every column but the
        label). A numeric table is read in row batches of at most ``chunk_rows`` rows, never whole.
    categorical, impute : str, optional
        Tables and CSV/TSV files with a header: encode text columns (``"one-hot"``, ``"ordinal"``)
        and fill missing values (``"mean"``, ``"median"``, ``"most_frequent"``); see
        :func:`read_dataset`. The fitted encoder is recorded in ``meta.json`` (``columns``).
    columns : ColumnEncoder, optional
        A fitted encoder (a model's, instead of ``categorical``/``impute``) that makes the features
        of a table, recorded alike: a later window read exactly as the model's first one was.
    zero_based : bool, default False
        LIBSVM: feature indices start at 0.
    keep : list of str or str, optional
        Tables and CSV/TSV files with a header: columns stored as they are (ids), not learnt from,
        in ``carried.parquet`` (:mod:`omkl_dist.storage.carried`); ``omkl predict`` writes them
        beside its predictions. Left out of the features (a large CSV/TSV file is still read block by
        block).
    views : bool, default False
        ``source`` is a multi-view dataset (a folder of aligned files, a registry name such as
        ``"mfeat"``, or ``{view: file}``): its views are stored side by side and ``meta.json``
        records each view's columns as a feature group (:mod:`omkl_dist.storage.views`).
    feature_groups : dict, optional
        Named groups of the file's columns, ``{name: column indices or "lo:hi" ranges}``, recorded
        in ``meta.json`` as with ``views`` (e.g. a file whose columns are several feature types).
    layout : {"auto", "dense", "csr"}, default "auto"
        How the features are stored: ``"csr"`` (one CSR triple per chunk, for wide sparse data;
        dense input is converted chunk by chunk), ``"dense"`` (a sparse file is densified -- and
        refused when its dense form cannot fit in memory), or ``"auto"``: csr exactly when the
        reader returns a sparse matrix (a LIBSVM file with at least
        :data:`~omkl_dist.storage.readers.SPARSE_MIN_FEATURES` features).
    origin : str, optional
        Where a ``source`` file (or folder) that is a local copy came from -- standard input, a URL
        (``omkl data ingest -``, ``s3://...``) --: recorded as the dataset's ``source`` in place of the
        copy's temporary path.
    progress : callable, optional
        Called as a large CSV/TSV or LIBSVM file is read block by block (64 MiB or more), with the
        bytes of the stored (compressed) file read so far and its size.

    Returns
    -------
    dict
        The metadata written to ``out/meta.json``.
    """
    options = {name: value for name, value in locals().items() if name not in ("source", "out")}  # (as given)
    if is_url(source) and origin is None:  # a data file at a URL: ingested from a local copy
        remote = remote_data(source)
        if remote is not None:
            with local_copy(remote) as copy:
                return ingest(copy, out, **{**options, "origin": source})
    folder = Path(source) if isinstance(source, (str, Path)) and not views and Path(source).is_dir() else None
    parts = text_files(folder) if folder is not None and not is_table_source(folder) else None
    if folder is not None and parts is not None:  # a folder of CSV/TSV files: one table
        check_output(out, DATASET, overwrite=overwrite, inputs=[("source folder", folder)])
        with joined_folder(folder, parts) as joined:
            return ingest(joined, out, **{**options, "origin": origin or str(folder.absolute())})
    dtype = check_dtype(dtype)
    chunk_rows = _check_chunk_rows(chunk_rows)
    if layout not in INGEST_LAYOUTS:
        raise ValueError(f"layout must be one of {INGEST_LAYOUTS}, got {layout!r}")
    if has_no_labels(label_column):
        _refuse_label_options(source, views=views, classes=classes, n_classes=n_classes, positive_class=positive_class)
    if features is not None and not isinstance(features, str):
        features = list(features)
    kept = kept_names(keep)
    if kept and views:
        raise ValueError("--keep names a table's columns; a multi-view dataset's views have none to keep")
    encoding: dict[str, Any] = {"categorical": categorical, "impute": impute}
    encoded = columns is not None or any(v is not None for v in encoding.values())
    if encoded and is_table_source(source) and not isinstance(source, (str, Path)):  # a table in memory
        out = check_output(out, DATASET, overwrite=overwrite)
        ds = read_table(
            source,
            classes=classes,
            n_classes=n_classes,
            label_column=label_column,
            positive_class=positive_class,
            features=without_kept(features, kept, "the table"),
            columns=columns if columns is not None else ColumnEncoder(**encoding),
            fmt="table",
            carry=kept,
        )
        table_meta = {"kind": "ingest", "source": ds.path.name, "source_name": type(source).__name__}
        return _write_dataset(
            ds, out, chunk_rows=chunk_rows, dtype=dtype, overwrite=overwrite, inputs=[], meta=table_meta
        )
    if (fmt == "parquet" or is_table_source(source)) and not encoded:
        return _ingest_table(
            source,
            out,
            chunk_rows=chunk_rows,
            dtype=dtype,
            classes=classes,
            n_classes=n_classes,
            overwrite=overwrite,
            label_column=label_column,
            positive_class=positive_class,
            features=without_kept(features, kept, source),
            layout="csr" if layout == "csr" else "dense",
            keep=kept,
            origin=origin,
        )
    if views:
        from .views import format_groups, read_views, view_files

        files = view_files(source, data_dir=data_dir)
        inputs = [(f"view file {name}", path) for name, path in files.items()]
        out = check_output(out, DATASET, overwrite=overwrite, inputs=inputs)
        ds, groups = read_views(files, label_column=label_column)
        return _write_dataset(
            ds,
            out,
            chunk_rows=chunk_rows,
            dtype=dtype,
            overwrite=overwrite,
            inputs=inputs,
            layout=layout,
            meta={
                "kind": "ingest",
                **_source_meta(source, source, origin),
                "views": {name: str(Path(path).absolute()) for name, path in files.items()},
                "feature_groups": format_groups(groups),
            },
        )
    path = resolve_dataset(source, data_dir=data_dir)
    inputs = [("source file", path)]
    out = check_output(out, DATASET, overwrite=overwrite, inputs=inputs)  # before spending time on parsing
    meta: dict[str, Any] = {"kind": "ingest", **_source_meta(Path(path).absolute(), source, origin)}
    left_out = left_out_only(features)  # (every column a feature but these: block by block still)
    if not encoded and left_out is not None and n_features is None and layout != "csr" and not zero_based:
        try:  # a large CSV/TSV or (dense) LIBSVM file: block by block, never whole in memory
            file = open_blocks(
                Path(path),
                fmt=fmt,
                label_column=label_column,
                sparse=_READER_SPARSE[layout],
                leave_out=left_out,
                keep=kept,
                check=False,  # (a CSV/TSV file is checked as its chunks are written)
            )
            return _write_blocks(
                file,
                out,
                labels={"classes": classes, "n_classes": n_classes, "positive_class": positive_class},
                chunk_rows=chunk_rows,
                dtype=dtype,
                overwrite=overwrite,
                meta=meta,
                feature_groups=feature_groups,
                ids=not features,
                progress=progress,
            )
        except NotStreamed:  # (found on opening the file or in its pass: nothing written)
            pass
    ds = read_dataset(
        path,
        fmt=fmt,
        classes=classes,
        n_classes=n_classes,
        n_features=n_features,
        label_column=label_column,
        positive_class=positive_class,
        sparse=_READER_SPARSE[layout],
        optional_labels=True,  # label_column="none": rows to predict
        features=features,
        zero_based=zero_based,
        columns=columns,
        keep=kept,
        **encoding,
    )
    if feature_groups is not None:
        meta["feature_groups"] = _groups(feature_groups, ds.n_features, path)
    return _write_dataset(
        ds, out, chunk_rows=chunk_rows, dtype=dtype, overwrite=overwrite, inputs=inputs, meta=meta, layout=layout
    )


def _groups(feature_groups: Mapping[str, str | Iterable[int]], n_features: int, path: object) -> dict[str, Any]:
    """``feature_groups`` checked against the file's feature count, as meta.json records them."""
    from .views import checked_groups, format_groups

    return format_groups(checked_groups(feature_groups, n_features, path))


def _block_labels(
    file: BlockFile | LibsvmBlockFile, *, classes: Iterable[Any] | None, n_classes: int | None, positive_class: object
) -> tuple[NDArray[np.int64], list[list[Any]]] | None:
    """A file read block by block: its labels encoded (None: rows without labels), as
    :func:`read_dataset` encodes a file's, with its warning of a guessed label column."""
    if file.labels is None:
        return None
    y, label_map = encode_label_codes(
        *file.labels,
        classes=classes,
        n_classes=n_classes,
        positive_class=positive_class,
        path=file.path,
        line_of=file.line_of,
    )
    if not file.label_given and file.names is not None:
        warn_guessed_labels(file.path, file.names, len(y), len(label_map))
    return y, label_map


def _write_blocks(
    file: BlockFile | LibsvmBlockFile,
    out: PathArg,
    *,
    labels: Mapping[str, Any],
    chunk_rows: int,
    dtype: str,
    overwrite: bool,
    meta: Mapping[str, Any],
    feature_groups: Mapping[str, str | Iterable[int]] | None = None,
    ids: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """:func:`_write_dataset` of a file read block by block: the same dataset, its features written
    chunk by chunk in the pass that checks the file (:meth:`BlockFile.checked_chunks`: one parse of
    each block; a LIBSVM file's parse kept on disk for them), its kept columns (if any) beside, then its
    labels encoded as ``labels`` say (the label map needs them all). An error of the file's rows -- or
    :class:`NotStreamed` -- leaves nothing written. ``ids``: warn of feature columns that look like row
    ids (features not chosen); ``progress``: :func:`ingest`'s."""
    inputs = [("source file", file.path)]
    size = file.path.stat().st_size
    read = None if progress is None else (lambda done: progress(done, size))
    with atomic_output(out, kind=DATASET, overwrite=overwrite, inputs=inputs) as tmp:
        writer: LabelsLastWriter | None = None  # (made at the first chunk: a LIBSVM file's width is known then)
        work = tmp / ".first-pass"  # (a LIBSVM file's parsed blocks, for its second pass)
        lo = 0
        unfit: DataError | None = None  # (a value the dtype cannot hold is named after the rows' own errors)
        # the first chunk's columns named like row ids (their warning follows the labels'; an identifier's
        # values are distinct there)
        names = file.feature_names or []
        suspects = [j for j, name in enumerate(names) if looks_like_id(name)] if file.labelled and ids else []
        first: NDArray[np.float64] | None = None
        with _carried_parquet(tmp, bool(file.kept)) as carry:
            for X, kept in file.checked_chunks(chunk_rows, work, read):
                if writer is None:
                    writer = LabelsLastWriter(
                        tmp, n_features=X.shape[1], chunk_rows=chunk_rows, dtype=dtype, labelled=file.labelled
                    )
                try:
                    _check_fits_dtype(X, dtype, file.path, first_row=lo)
                except DataError as exc:
                    unfit = unfit or exc
                if unfit is None:  # (else the rest is only checked)
                    writer.append(X)
                    carry(kept)
                if first is None and suspects:
                    first = X[:, suspects]
                lo += len(X)
        shutil.rmtree(work, ignore_errors=True)
        assert writer is not None  # (a file without rows is not read block by block)
        if feature_groups is not None:
            meta = {**meta, "feature_groups": _groups(feature_groups, file.width - len(file.dropped), file.path)}
        y, label_map = _block_labels(file, **labels) or (None, [])  # (warns of a guessed label column first)
        if unfit is not None:
            raise unfit
        if first is not None:
            warn_id_columns(file.path, first, [names[j] for j in suspects])
        counts = {canonical(original): int(np.count_nonzero(y == internal)) for original, internal in label_map}
        meta = {**meta, "sha256": file.sha256, "format": file.fmt, **_label_meta(label_map, counts)}
        if file.feature_names is not None:
            meta["feature_names"] = file.feature_names
        if file.label_name is not None and y is not None:
            meta["label_column"] = file.label_name
        if file.kept:
            meta["carried"] = carried_entry(tmp, file.n_rows, file.path)
        return writer.close(meta, y)


@contextmanager
def _carried_parquet(directory: Path, wanted: bool) -> Iterator[Callable[[Any], None]]:
    """A function writing each chunk's kept columns to the dataset's carried.parquet (nothing when
    none are ``wanted``), the file closed at the end."""
    if not wanted:
        yield lambda table: None
        return
    import pyarrow.parquet as pq

    writer: list[Any] = []

    def write(table: Any) -> None:
        if not writer:
            writer.append(pq.ParquetWriter(str(directory / CARRIED), table.schema))
        writer[0].write_table(table)

    try:
        yield write
    finally:
        if writer:
            writer[0].close()


def _refuse_label_options(source: Any, *, views: bool, **options: Any) -> None:
    """Rows without labels: options about the labels (or views, which are read labelled) are an error."""
    given = [f"--{name.replace('_', '-')}" for name, value in options.items() if value is not None]
    if views:
        given.append("--views")
    if given:
        raise DataError(
            f"{', '.join(given)} cannot apply to rows without labels (--label-column none)",
            path=source if isinstance(source, (str, Path)) else None,
            fix=f"drop {' and '.join(given)}, or name the label column",
        )


def _label_meta(label_map: list[list[Any]], counts: Mapping[str, int]) -> dict[str, Any]:
    """What meta.json says of the labels: the map, the class count and the rows per class (none
    for rows without labels: an empty map)."""
    return {"label_map": label_map, "n_classes": len(label_map), "class_counts": dict(counts)}


def _write_dataset(
    ds: Dataset,
    out: PathArg,
    *,
    chunk_rows: int,
    dtype: str,
    overwrite: bool,
    inputs: Inputs,
    meta: Mapping[str, Any],
    layout: str = "auto",
) -> dict[str, Any]:
    """Write the parsed dataset ``ds`` with ``meta`` (plus what ``ds`` says of itself), in ``layout``
    ("auto": csr when ``ds.X`` is sparse). Chunks are converted one at a time, never the whole matrix."""
    if layout == "auto":
        layout = "csr" if sp.issparse(ds.X) else "dense"
    _check_fits_dtype(ds.X, dtype, ds.path)
    meta = {
        **meta,
        "sha256": ds.sha256,
        "format": ds.fmt,
        **_label_meta(ds.label_map, {canonical(k): v for k, v in ds.class_counts.items()}),
    }
    if ds.feature_names is not None:
        meta["feature_names"] = ds.feature_names
    if ds.label_name is not None:
        meta["label_column"] = ds.label_name
    if ds.columns is not None:
        meta["columns"] = ds.columns.to_dict()
    if ds.permutations is not None:
        # The permutations are not copied (the source file keeps them); note that they exist.
        meta["n_permutations"] = int(ds.permutations.shape[0])
    with atomic_output(out, kind=DATASET, overwrite=overwrite, inputs=inputs) as tmp:
        writer = open_writer(
            tmp,
            layout=layout,
            n_rows=ds.n_rows,
            n_features=ds.n_features,
            chunk_rows=chunk_rows,
            dtype=dtype,
            labelled=ds.y is not None,
        )
        for lo in range(0, ds.n_rows, chunk_rows):
            writer.append(ds.X[lo : lo + chunk_rows], None if ds.y is None else ds.y[lo : lo + chunk_rows])
        if ds.carried is not None:
            meta["carried"] = write_carried(tmp, ds.carried, ds.n_rows, ds.path, chunk_rows)
        return writer.close(meta)


def _source_meta(read: object, given: object, origin: str | None) -> dict[str, str]:
    """A dataset's recorded ``source`` (the file read) and ``source_name`` (as given); both the
    ``origin`` of a local copy."""
    return {"source": origin, "source_name": origin} if origin else {"source": str(read), "source_name": str(given)}


def _ingest_table(
    source: Any,
    out: PathArg,
    *,
    chunk_rows: int,
    dtype: str,
    classes: Iterable[Any] | None,
    n_classes: int | None,
    overwrite: bool,
    label_column: str | int | None,
    positive_class: object,
    features: Iterable[str] | str | None,
    layout: str = "dense",
    keep: list[str] | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """:func:`ingest` of a table: its label column read first (for the label map), then its
    feature columns in batches of ``chunk_rows`` rows straight into the dataset's chunks."""
    is_path = isinstance(source, (str, Path))
    inputs: list[tuple[str, PathArg | None]] = [("source", Path(source))] if is_path else []
    out = check_output(out, DATASET, overwrite=overwrite, inputs=inputs)
    table = open_table(source, label_column=label_column, features=features)
    y: NDArray[np.int64] | None = None
    label_map: list[list[Any]] = []
    if table.label is not None:
        y, label_map = encode_labels(
            table.labels(), classes=classes, n_classes=n_classes, positive_class=positive_class, path=table.where
        )
        if label_column is None:  # (the default rule chose it, as read_dataset warns)
            warn_guessed_labels(table.where, list(table.dataset.schema.names), len(y), len(label_map))
    counts = {original: int(np.count_nonzero(y == internal)) for original, internal in label_map}
    n_rows = table.n_rows if y is None else len(y)
    if not n_rows:
        raise DataError("the table has no rows", path=table.where, fix="check the export was complete")
    meta = {
        "kind": "ingest",
        **(
            _source_meta(Path(source).absolute(), source, origin)
            if is_path
            else {"source": table.where, "source_name": type(source).__name__}
        ),
        "sha256": table.sha256,
        "format": "parquet" if is_path else "table",
        **_label_meta(label_map, counts),
        "feature_names": list(table.features),
    }
    if table.label is not None:
        meta["label_column"] = table.label
    with atomic_output(out, kind=DATASET, overwrite=overwrite, inputs=inputs) as tmp:
        writer = open_writer(
            tmp,
            layout=layout,
            n_rows=n_rows,
            n_features=len(table.features),
            chunk_rows=chunk_rows,
            dtype=dtype,
            labelled=y is not None,
        )
        for X, lo in table.batches(chunk_rows):
            _check_fits_dtype(X, dtype, table.where, first_row=lo)
            if lo == 0 and y is not None and features is None:
                warn_id_columns(table.where, X, table.features)
            writer.append(X, None if y is None else y[lo : lo + len(X)])
        if keep:
            meta["carried"] = write_carried(tmp, table.dataset.to_table(columns=keep), n_rows, table.where, chunk_rows)
        return writer.close(meta)


def dataset_info(directory: PathArg) -> dict[str, Any]:
    """Metadata of a dataset directory, checked against the arrays it describes.

    Raises
    ------
    DataError
        Not a dataset directory, or its ``meta.json`` is incomplete or disagrees with the data.
    """
    directory = location(directory)
    meta = read_meta(directory)  # checked against the schema of meta.json: types, keys and ranges
    names = meta.get("feature_names")
    if names is not None and len(names) != meta["n_features"]:
        raise DataError(
            f"meta.json names {len(names)} features but says n_features={meta['n_features']}",
            path=directory / "meta.json",
            fix="re-ingest the dataset with --overwrite",
        )
    _check_arrays(directory, meta)
    _check_labels_meta(directory, meta)
    check_carried(directory, meta)
    return meta


def verify_dataset(directory: PathArg) -> dict[str, Any]:
    """Full check of a dataset directory: :func:`dataset_info`, then every chunk read and compared
    with its checksums (features and labels). Returns the metadata; raises DataError naming the
    first damaged chunk."""
    meta = dataset_info(directory)
    features = open_features(directory, meta)
    for c in range(len(meta["checksums"]["features"])):
        read_chunk(directory, features, meta, c)
    check_carried(location(directory), meta, full=True)
    return meta


def format_info(meta: Mapping[str, Any]) -> str:
    """A human summary of dataset metadata (as returned by :func:`ingest` or :func:`dataset_info`)."""
    n_rows, chunk_rows = meta.get("n_rows"), meta.get("chunk_rows")
    counts = meta.get("class_counts") or {}
    lines = [
        f"rows:      {_num(n_rows)}",
        f"features:  {_num(meta.get('n_features'))}",
        "labels:    none (rows to predict: omkl predict scores them, no learner takes them)"
        if meta.get("labelled") is False
        else f"classes:   {meta.get('n_classes')}  (original -> internal: rows)",
    ]
    for original, internal in meta.get("label_map", []):
        count = counts.get(str(original))
        lines.append(f"  {str(original):>12} -> {internal:>2}" + (f": {_num(count)}" if count is not None else ""))
    chunking = f"{_num(chunk_rows)} rows per chunk"
    if isinstance(n_rows, int) and isinstance(chunk_rows, int) and chunk_rows > 0:
        chunking += f", {-(-n_rows // chunk_rows)} chunk(s)"
    for name, columns in (meta.get("feature_groups") or {}).items():
        lines.append(f"group:     {name} (columns {columns})")
    if meta.get("carried"):
        lines.append(f"kept:      {', '.join(meta['carried']['columns'])} (not features: omkl predict writes them out)")
    lines += [
        f"layout:    {_layout_line(meta)}",
        f"dtype:     {meta.get('dtype')}",
        f"chunking:  {chunking}",
        f"kind:      {meta.get('kind')}" + (f" (format {meta['format']})" if meta.get("format") else ""),
    ]
    for key in ("source", "sha256"):
        if meta.get(key):
            lines.append(f"{key + ':':<10} {meta[key]}")
    lines.append(f"created:   {meta.get('created')}")
    return "\n".join(lines)


def _layout_line(meta: Mapping[str, Any]) -> str:
    """ "dense", or "csr" with the non-zero count and the density (what the csr layout saves)."""
    if layout_of(meta) != "csr":
        return f"{layout_of(meta)} ({FEATURES})"
    nnz: Any = meta.get("nnz")
    n_rows: Any = meta.get("n_rows")
    n_features: Any = meta.get("n_features")
    line = f"csr ({FEATURES_CSR}), {_num(nnz)} non-zeros"
    if all(isinstance(v, int) for v in (nnz, n_rows, n_features)) and n_rows * n_features > 0:
        line += f", density {100 * nnz / (n_rows * n_features):.4f} %"
        if n_rows:
            line += f" ({nnz / n_rows:,.1f} per row)"
    return line


def _num(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _check_chunk_rows(chunk_rows: object) -> int:
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return int(chunk_rows)


def _check_fits_dtype(X: Any, dtype: str, path: object, first_row: int = 0) -> None:
    """float32 storage must not turn large values into inf (``X``'s first row: data row ``first_row``)."""
    if dtype != "float32" or X.size == 0:
        return
    found = _too_big(X, np.finfo(np.float32).max)
    if found is not None:
        value, row, col = found
        raise DataError(
            f"value {value!r} overflows float32 (data row {first_row + row + 1}, feature {col + 1})",
            path=path,
            fix="ingest with dtype float64 (--dtype float64) or rescale the feature",
        )


def _too_big(X: Any, limit: float | np.floating[Any]) -> tuple[float, int, int] | None:
    """The first ``(value, row, column)`` of ``X`` (dense or sparse) above ``limit`` in magnitude."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        big = np.flatnonzero(np.abs(X.data) > limit)
        if not len(big):
            return None
        return float(X.data[big[0]]), int(np.searchsorted(X.indptr, big[0], side="right")) - 1, int(X.indices[big[0]])
    too_big = np.abs(X) > limit
    if not too_big.any():
        return None
    row, col = (int(v) for v in np.argwhere(too_big)[0])
    return float(X[row, col]), row, col


def _check_arrays(directory: Location, meta: Mapping[str, Any]) -> None:
    if layout_of(meta) == "csr":
        _check_csr(directory, meta)
    else:
        _check_dense(directory, meta)
    _check_label_rows(directory, meta)


def _check_dense(directory: Location, meta: Mapping[str, Any]) -> None:
    features = cast("zarr.Array[Any]", open_features(directory, meta))  # the dense layout's
    expected = (meta["n_rows"], meta["n_features"])
    if tuple(features.shape) != expected:
        raise DataError(
            f"features.zarr has shape {tuple(features.shape)} but meta.json says {expected}",
            path=directory,
            fix="re-ingest the dataset with --overwrite",
        )
    if str(features.dtype) != meta["dtype"]:
        raise DataError(
            f"features.zarr is {features.dtype} but meta.json says {meta['dtype']}",
            path=directory,
            fix="re-ingest the dataset with --overwrite",
        )
    rows_per_chunk = min(meta["chunk_rows"], max(meta["n_rows"], 1))
    if tuple(features.chunks) != (rows_per_chunk, max(meta["n_features"], 1)):
        raise DataError(
            f"features.zarr has chunks {tuple(features.chunks)} but meta.json says {meta['chunk_rows']} rows per chunk",
            path=directory,
            fix="re-ingest the dataset with --overwrite",
        )
    n_chunks = -(-meta["n_rows"] // rows_per_chunk)
    _check_checksum_count(directory, meta, n_chunks)
    stored = features.nchunks_initialized
    if stored != n_chunks:
        raise DataError(
            f"{n_chunks - stored} of the {n_chunks} feature chunk files are missing",
            path=directory / "features.zarr",
            fix=RESTORE,
        )


def _check_csr(directory: Location, meta: Mapping[str, Any]) -> None:
    """features.csr agrees with meta.json, and every row chunk's folder is there (one listing; the
    files inside are checked when a chunk is read)."""
    features = cast(CsrFeatures, open_features(directory, meta))  # the csr layout's
    attrs = features.attrs
    for key in ("n_rows", "n_features", "chunk_rows", "dtype", "index_dtype"):
        if attrs.get(key) != meta[key]:
            raise DataError(
                f"{FEATURES_CSR} records {key}={attrs.get(key)!r} but meta.json says {meta[key]!r}",
                path=directory,
                fix="re-ingest the dataset with --overwrite",
            )
    n_chunks = -(-meta["n_rows"] // max(meta["chunk_rows"], 1))
    _check_checksum_count(directory, meta, n_chunks, parts=("features", "labels", "csr_parts"))
    present = features.chunk_names()
    missing = [c for c in range(n_chunks) if str(c) not in present]
    if missing:
        raise DataError(
            f"{len(missing)} of the {n_chunks} feature chunks are missing (chunk {missing[0]} first)",
            path=directory / FEATURES_CSR / str(missing[0]),
            fix=RESTORE,
        )


def _check_checksum_count(
    directory: Location, meta: Mapping[str, Any], n_chunks: int, parts: tuple[str, ...] = ("features", "labels")
) -> None:
    sums = meta["checksums"]
    want = {part: n_chunks if part != "labels" or meta["labelled"] else 0 for part in parts}  # no labels: no sums
    if any(not isinstance(sums.get(part), list) or len(sums[part]) != n for part, n in want.items()):
        raise DataError(
            f"meta.json's checksums do not list one per chunk ({n_chunks})",
            path=directory / "meta.json",
            fix="re-ingest the dataset with --overwrite",
        )


def _check_label_rows(directory: Location, meta: Mapping[str, Any]) -> None:
    if not meta["labelled"]:
        return
    try:
        n_labels = open_labels(directory).metadata.num_rows
    except Exception as exc:  # pyarrow's errors name no file
        raise DataError(
            f"labels.parquet cannot be read ({type(exc).__name__}: {exc})",
            path=directory / "labels.parquet",
            fix=RESTORE,
        ) from None
    if n_labels != meta["n_rows"]:
        raise DataError(
            f"labels.parquet has {n_labels} rows but meta.json says {meta['n_rows']}",
            path=directory,
            fix="re-ingest the dataset with --overwrite",
        )


def _check_labels_meta(directory: Location, meta: Mapping[str, Any]) -> None:
    internals = sorted(pair[1] for pair in meta["label_map"])
    k = meta["n_classes"]
    if not meta["labelled"]:
        if k or internals or meta.get("class_counts"):
            raise DataError(
                "meta.json says the rows have no labels but records classes",
                path=directory / "meta.json",
                fix="re-ingest the dataset with --overwrite",
            )
        return
    want = [-1, 1] if k == 2 else list(range(k))
    if len(meta["label_map"]) != k or internals != want:
        raise DataError(
            f"label_map {meta['label_map']} does not match n_classes={k}",
            path=directory / "meta.json",
            fix="re-ingest the dataset with --overwrite",
        )
    counts = meta.get("class_counts")
    if counts is not None and sum(counts.values()) != meta["n_rows"]:
        raise DataError(
            f"class_counts add up to {sum(counts.values())}, not n_rows={meta['n_rows']}",
            path=directory / "meta.json",
            fix="re-ingest the dataset with --overwrite",
        )
