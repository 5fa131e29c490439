"""A job's rows as a block stream: ``--data`` (a registry name, a data file or an ingested dataset)
opened, windowed, ordered with the job's seed and scaled.

Wide sparse data (a csr dataset, or a LIBSVM file read as a CSR matrix) stays sparse all the way:
the blocks are ``scipy.sparse.csr_matrix``, the scaler is fitted without densifying and a scaling
that would densify them is refused before the job starts (:meth:`Scaler.check_sparse_transform`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from omkl_dist._validation import MAX_FEATURES
from omkl_dist.defaults import Settings, resolve_settings
from omkl_dist.preprocessing import ColumnEncoder, Scaler, fit_head

from .layout import DEFAULT_CHUNK_ROWS, META, read_labels
from .location import is_remote, is_url, location
from .readers import read_dataset
from .registry import resolve_dataset
from .stream import chunk_visits, open_stream, shuffle_group, shuffled_rows
from .views import feature_groups, is_multiview, read_views


@dataclass
class JobData:
    """A job's input: an iterable of (X, y) blocks plus what the report needs to say about it."""

    blocks: object
    n_rows: int
    n_features: int
    name: str
    scaler: Scaler
    load_seconds: float
    label_map: list
    spans: tuple | None  # raw features: (min, max) per feature over the scaling prefix
    feature_groups: dict | None = None  # a multi-view dataset's views: {name: column indices}
    sparse: bool = False  # rows come as scipy.sparse CSR blocks
    feature_names: list | None = None  # the feature columns' names, when the data has them
    label_name: str | None = None  # the label column's name, when the data's columns have names
    columns: ColumnEncoder | None = None  # how the raw columns became the features (imputed, encoded)
    settings: Settings | None = None  # the job's settings as decided on the head (fit_head)
    mixing_advice: str | None = None  # (JobRows.mixing_advice)

    @property
    def classes(self) -> list:
        """The internal labels (-1/+1, or 0..K-1 for K > 2 classes) in order."""
        return sorted(internal for _, internal in self.label_map)


def scaling_advice(spans, scaling: str, ratio: float = 100.0) -> str | None:
    """A one-line hint when raw features span very different ranges (a kernel on them is ruled by
    the widest ones): the widest and narrowest spans, and the ``--scaling`` to try."""
    if scaling != "none" or spans is None:
        return None
    lo, hi = (np.asarray(a, dtype=np.float64) for a in spans)
    width = hi - lo
    varying = np.flatnonzero(width > 0)
    if len(varying) < 2:
        return None
    wide, narrow = varying[np.argmax(width[varying])], varying[np.argmin(width[varying])]
    if width[wide] < ratio * width[narrow]:
        return None
    return (
        f"raw feature ranges differ {width[wide] / width[narrow]:,.0f}-fold (feature {wide + 1} spans "
        f"{lo[wide]:g}..{hi[wide]:g}, feature {narrow + 1} {lo[narrow]:g}..{hi[narrow]:g}): kernels on them follow "
        "the widest features; try --scaling standard or minmax (without --paper-settings the default, auto, races them)"
    )


#: a part of the rows whose labels are at least this far (total variation distance) from the whole
#: dataset's: the rows are sorted or grouped by label, not mixed (a shuffled file's chunks: ~0.01)
UNMIXED = 0.4

_SHUFFLE_IT = "shuffle the file's rows once (a header line kept first) and learn from that file"


def mixing_advice(y, start: int, stop: int, seed, n_features: int, chunk_rows: int, label_map: list) -> str | None:
    """A one-line hint when a shuffled job would not learn a mix of the labels: ``y`` are the
    internal labels of the whole dataset in its stored order, the job learns rows ``start:stop``
    shuffled with ``seed``. Either the window (``--limit``: the first rows) holds far other labels
    than the dataset, or a part a shuffle mixes at once (a group of storage chunks,
    :func:`~storage.stream.chunk_visits`) holds far other labels than the window, as in a long file
    sorted by label: the job then learns that part's rows together."""
    if stop <= start:
        return None
    classes = np.array(sorted(internal for _, internal in label_map))
    names = {internal: original for original, internal in label_map}
    code = np.searchsorted(classes, y)
    whole = np.bincount(code, minlength=len(classes)) / len(y)
    window = np.bincount(code[start:stop], minlength=len(classes)) / (stop - start)
    over = int(np.argmax(window - whole))
    if 0.5 * np.abs(window - whole).sum() >= UNMIXED:
        return (
            f"the window is not a sample of the data: rows {start + 1:,}-{stop:,} are {window[over]:.0%} label "
            f"{names[int(classes[over])]!r} (all rows: {whole[over]:.0%}); a window (--limit N) is the first rows, "
            f"of few labels in a file grouped by label; {_SHUFFLE_IT}"
        )
    group = shuffle_group(n_features, chunk_rows)
    parts = [spans for spans, _ in chunk_visits(start, stop, chunk_rows, np.random.default_rng(seed), group)]
    if len(parts) == 1:
        return None  # one part: shuffled uniformly
    shares = np.array(
        [np.bincount(np.concatenate([code[lo:hi] for _, lo, hi in spans]), minlength=len(classes)) for spans in parts]
    )
    rows = shares.sum(axis=1)
    shares = shares / rows[:, None]
    distance = 0.5 * np.abs(shares - window).sum(axis=1)
    worst = int(np.argmax(distance))
    if distance[worst] < UNMIXED:
        return None
    over = int(np.argmax(shares[worst] - window))
    spans = parts[worst]
    which = (
        f"rows {spans[0][1] + 1:,}-{spans[0][2]:,}"
        if len(spans) == 1
        else f"{rows[worst]:,} rows of {len(spans)} chunks"
    )
    return (
        f"the rows are grouped by label, not mixed: a shuffle mixes {group * chunk_rows:,} rows at a time, and "
        f"{which} are {shares[worst, over]:.0%} label {names[int(classes[over])]!r} (all rows learnt: "
        f"{window[over]:.0%}), so the job learns them together; {_SHUFFLE_IT}"
    )


def stream_mixing_advice(stream) -> str | None:
    """:func:`mixing_advice` on a shuffled stream (its dataset's labels read, not its features);
    None for an unshuffled one."""
    if not stream.shuffle or stream.n_rows == 0:
        return None
    labels = read_labels(stream.directory)
    return mixing_advice(
        labels, stream.start, stream.stop, stream.seed, stream.n_features, stream.chunk_rows, stream.label_map
    )


class _ArrayBlocks:
    """Consecutive row blocks of an in-memory ``X`` (an array or a CSR matrix: both slice by rows),
    the first one ``first`` rows when given."""

    def __init__(self, X, y, rows, first=None):
        self.X, self.y, self.rows, self.first = X, y, rows, first or rows

    def __iter__(self):
        lo, n = 0, self.first
        while lo < len(self.y):
            yield self.X[lo : lo + n], self.y[lo : lo + n]
            lo, n = lo + n, self.rows


class _FirstBlock:
    """A stream's rows in its blocks' size, the first block ``first`` rows."""

    def __init__(self, stream, first):
        self.stream, self.first = stream, first
        self.label_map, self.n_classes = stream.label_map, stream.n_classes

    def __iter__(self):
        cursor, n, left = self.stream.cursor(), self.first, self.stream.n_rows
        while left > 0:
            X, y = cursor.take(min(n, left))
            yield X, y
            left, n = left - len(y), self.stream.block_size


def is_ingested(path) -> bool:
    """Whether ``path`` names an ingested dataset: a folder with meta.json, here or at a URL (any URL
    was taken for one: a data file there, or a folder a job was to ingest a file into)."""
    return (path / META).is_file() if is_remote(path) else path.is_dir() and (path / META).is_file()


def refuse_label_options(data, labels: dict) -> None:
    if labels:
        raise ValueError(
            f"{data} is an ingested dataset: its label and feature columns were chosen at ingest; "
            "drop --label-column/--positive-class/--features/--categorical/--impute/--zero-based/--n-features (or "
            "re-ingest with them)"
        )


@dataclass
class JobRows:
    """A job's rows opened, windowed and in the job's order, not scaled yet: a data file parsed
    once into memory (``X``, ``y``), or an ingested dataset's ``stream`` (read block by block). A
    race reads its head (:meth:`head`), :func:`load_job_data` scales and blocks it: the file is
    parsed once whoever reads it."""

    name: str
    label_map: list
    n_rows: int
    n_features: int
    sparse: bool
    load_seconds: float
    X: Any = None  # a file's rows in memory (an array or a CSR matrix)
    y: Any = None
    stream: Any = None  # an ingested dataset's (a Stream)
    feature_groups: dict | None = None
    feature_names: list | None = None
    label_name: str | None = None
    columns: ColumnEncoder | None = None
    mixing_advice: str | None = None  # (mixing_advice: a window, or a part a shuffle mixes, far from mixed)

    @property
    def classes(self) -> list:
        """The internal labels (-1/+1, or 0..K-1 for K > 2 classes) in order."""
        return sorted(internal for _, internal in self.label_map)

    def head(self, n: int):
        """The first ``n`` rows (all if fewer) as ``(X, y)``."""
        if self.stream is None:
            return self.X[:n], self.y[:n]
        return self.stream.cursor().take(min(n, self.n_rows))


def open_job_rows(
    data: str,
    *,
    feed_rows: int,
    seed: int,
    permute: bool = True,
    start: int = 0,
    stop: int | None = None,
    labels: dict | None = None,
    reading=None,
) -> JobRows:
    """Open rows ``start:stop`` of ``data`` for an online job, fed ``feed_rows`` rows at a time.
    ``reading``: a large file's parsing ``progress`` (:func:`~.readers.read_dataset`).

    A file or registry name is parsed into memory, an ingested directory is streamed from zarr;
    either way the window comes first and ``permute`` then orders its rows as a stream of the
    ingested file does (:func:`~storage.stream.shuffled_rows`: the 65,536-row storage chunks in a
    seeded order, a group of them at a time, each group's rows permuted), so a job learns the same
    rows in the same order in-process and on a cluster.
    """
    t0 = time.perf_counter()
    labels = {k: v for k, v in (labels or {}).items() if v is not None}
    path = location(data)  # (a URL: an ingested dataset streamed from there, or a data file read from a copy)
    if is_ingested(path):
        refuse_label_options(data, labels)
        stream = open_stream(path, block_size=feed_rows, shuffle=permute, seed=seed, start=start, stop=stop)
        return JobRows(
            path.name,
            stream.label_map,
            stream.n_rows,
            stream.n_features,
            stream.sparse,
            time.perf_counter() - t0,
            stream=stream,
            feature_groups=feature_groups(stream.meta),
            feature_names=stream.meta.get("feature_names"),
            label_name=stream.meta.get("label_column"),
            columns=None if "columns" not in stream.meta else ColumnEncoder.from_dict(stream.meta["columns"]),
            mixing_advice=stream_mixing_advice(stream),
        )
    groups = None
    if is_multiview(data):
        ds, groups = read_views(data, **{k: v for k, v in labels.items() if k == "label_column"})
    else:
        ds = read_dataset(data if is_url(data) else resolve_dataset(data), **labels, progress=reading)
    X, y = ds.X, ds.labels
    stop = len(y) if stop is None else min(stop, len(y))
    advice = mixing_advice(y, start, stop, seed, X.shape[1], DEFAULT_CHUNK_ROWS, ds.label_map) if permute else None
    # the window first, then the order an ingested copy's stream reads it in (submit ingests a file)
    rows = shuffled_rows(start, stop, seed, X.shape[1]) if permute else slice(start, stop)
    X, y = X[rows], y[rows]
    return JobRows(
        Path(str(ds.path)).name,
        ds.label_map,
        len(y),
        X.shape[1],
        sp.issparse(X),
        time.perf_counter() - t0,
        X=X,
        y=y,
        feature_groups=groups,
        feature_names=ds.feature_names,
        label_name=ds.label_name,
        columns=ds.columns,
        mixing_advice=advice,
    )


def load_job_data(
    data,
    *,
    feed_rows: int,
    seed: int = 0,
    permute: bool = True,
    settings: Settings | None = None,
    start: int = 0,
    stop: int | None = None,
    labels: dict | None = None,
    scaler: Scaler | None = None,
    first: int | None = None,
) -> JobData:
    """The rows of ``data`` (a :class:`JobRows` opened already, or what :func:`open_job_rows`
    opens with ``seed``, ``permute``, ``start``, ``stop`` and ``labels``) as blocks of
    ``feed_rows`` rows (the first block ``first`` rows, if given: a model that has seen a part of a
    block already), scaled: ``settings`` (default: raw features) are decided on the head and their
    scaler fitted there (:func:`omkl_dist.preprocessing.fit_head`: the first ``scale_rows`` rows, the
    0/1 rule, the rule for sparse rows); ``scaler``: a fitted scaler to apply instead (a model's
    own, when it learns further).
    """
    t0 = time.perf_counter()
    rows = data
    if not isinstance(rows, JobRows):
        rows = open_job_rows(
            data, feed_rows=feed_rows, seed=seed, permute=permute, start=start, stop=stop, labels=labels
        )
    settings = settings or resolve_settings(scaling="none", kernels_given=True)
    blocks: Any
    if rows.stream is not None:
        stream = rows.stream
        prefix = min(stream.n_rows, settings.scale_rows)
        if scaler is None:  # (also for "none": it learns the feature count it checks)
            settings, scaler = fit_head(settings, stream, prefix, sparse=stream.sparse)
        if stream.sparse:
            scaler.check_sparse_transform()  # a scaling that would densify the stream: refused now
        spans = None
        # the advice on raw ranges: one more read of the prefix, and per-column ranges (not for data
        # too wide to keep them, which is learnt unscaled: the estimators size nothing by the width)
        if scaler.method == "none" and stream.n_features <= MAX_FEATURES:
            ranges = Scaler("minmax").fit_prefix(stream, prefix)
            spans = (ranges.min_, ranges.max_)
        blocks = _Transformed(stream if first is None else _FirstBlock(stream, first), scaler)
    else:
        head = rows.X[: settings.scale_rows]
        if scaler is None:
            settings, scaler = fit_head(settings, head, settings.scale_rows)
        if rows.sparse:
            scaler.check_sparse_transform()
        spans = _spans(head) if scaler.method == "none" else None
        blocks = _ArrayBlocks(scaler.transform(rows.X), rows.y, feed_rows, first)
    return JobData(
        blocks,
        rows.n_rows,
        rows.n_features,
        rows.name,
        scaler,
        rows.load_seconds + time.perf_counter() - t0,
        rows.label_map,
        spans,
        rows.feature_groups,
        sparse=rows.sparse,
        feature_names=rows.feature_names,
        label_name=rows.label_name,
        columns=rows.columns,
        settings=settings,
        mixing_advice=rows.mixing_advice,
    )


def _spans(X) -> tuple:
    """Per-feature (min, max) of ``X``; of a sparse X without densifying it (zeros included)."""
    if sp.issparse(X):
        ranges = Scaler("minmax").fit(X)
        return ranges.min_, ranges.max_
    return X.min(axis=0), X.max(axis=0)


class _Transformed:
    """Apply a fitted scaler to each block as it streams by."""

    def __init__(self, stream, scaler):
        self.stream, self.scaler = stream, scaler
        self.label_map, self.n_classes = stream.label_map, stream.n_classes

    def __iter__(self):
        for X, y in self.stream:
            yield self.scaler.transform(X), y
