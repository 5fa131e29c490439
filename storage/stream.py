"""Stream an ingested dataset as ``(X_block, y_block)`` pairs, one storage chunk at a time (a
shuffled stream: a group of chunks, :data:`SHUFFLE_BYTES`).

Only that (plus the rows of the block being assembled) is in memory at once, so a stream over a
dataset far larger than RAM works the same as over a small one.

A dense dataset yields C-contiguous float64 arrays; a csr dataset (wide sparse data, see
:mod:`omkl_dist.storage.layout`) yields canonical float64 ``scipy.sparse.csr_matrix`` blocks and
never densifies a chunk.

A stream is what every learner reads a dataset through, so it is where a dataset without labels
(``omkl data ingest --label-column none``) is refused, with one message for every command; only
prediction opens one (``optional_labels=True``), and its blocks are then ``(X, None)``.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator, Sequence
from typing import Any, TypeAlias

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .errors import DataError
from .ingest import dataset_info
from .layout import DEFAULT_CHUNK_ROWS, layout_of, open_features, read_chunk
from .location import PathArg, location

#: Rows as ``(X float64, y int64)``: X an ndarray, or a csr_matrix for a dataset in the csr layout;
#: y None for a dataset without labels.
Block: TypeAlias = tuple[NDArray[np.float64] | sp.csr_matrix, NDArray[np.int64] | None]


class Stream:
    """Re-iterable stream of ``(X_block, y_block)`` over rows ``[start, stop)`` of a dataset.

    Parameters
    ----------
    directory : str or Path
        An ingested (or generated) dataset directory.
    block_size : int, default 1024
        Rows per block; every block has this many rows except possibly the last. Blocks may
        span storage chunks.
    shuffle : bool, default False
        Visit the storage chunks in a random order, as many at a time as hold
        :data:`SHUFFLE_BYTES` of features (:func:`shuffle_group`: 14 chunks of 65,536 rows of 18
        features), and permute each group's rows uniformly. A window that fits in one group (most
        datasets: ~900,000 rows of 18 features) is permuted uniformly; a longer one group by
        group -- a uniform permutation of all rows would need random access to the whole dataset.
    seed : int or sequence of int, optional
        Seed of the shuffle. The same seed gives the same order on every iteration; use e.g.
        ``seed=(seed, epoch)`` for a different but reproducible order per epoch. With
        ``shuffle=True`` and no seed every iteration draws a fresh order.
    start, stop : int, optional
        Row range (stop defaults to the number of rows); lets workers stream disjoint parts.
    optional_labels : bool, default False
        Whether a dataset without labels may be opened (rows to predict; its blocks' ``y`` is
        None); else it is refused, since every other reader learns from the labels.

    Attributes
    ----------
    n_rows, n_features, n_classes, block_size, chunk_rows : int
    sparse : bool
        The dataset is stored in the csr layout: blocks are ``scipy.sparse.csr_matrix``.
    labelled : bool
        The dataset has labels (False only with ``optional_labels``).
    meta : dict
        The dataset's ``meta.json``.
    label_map : list of [str, int]
        Original -> internal label pairs.

    Examples
    --------
    >>> for X, y in open_stream("data/codrna", block_size=1000):  # doctest: +SKIP
    ...     model.partial_fit(X, y)
    """

    def __init__(
        self,
        directory: PathArg,
        block_size: int = 1024,
        *,
        shuffle: bool = False,
        seed: int | Sequence[int] | None = None,
        start: int = 0,
        stop: int | None = None,
        optional_labels: bool = False,
    ) -> None:
        self.directory = location(directory)
        self.block_size = _positive_int(block_size, "block_size")
        self.meta = dataset_info(self.directory)
        self.labelled = bool(self.meta["labelled"])
        if not (self.labelled or optional_labels):
            raise DataError(
                "the dataset has no labels (it was ingested with --label-column none): its rows can be "
                "predicted, not learnt from",
                path=self.directory,
                fix="learn from a labelled dataset (omkl data ingest FILE --label-column NAME --out DIR); "
                f"score this one with omkl predict --data {self.directory}",
            )
        total = int(self.meta["n_rows"])
        self.start = _row_index(start, "start", total)
        self.stop = total if stop is None else _row_index(stop, "stop", total)
        if self.start > self.stop:
            raise ValueError(f"start ({self.start}) must not exceed stop ({self.stop})")
        self.shuffle, self.seed = bool(shuffle), seed
        self._features = open_features(self.directory, self.meta)
        self.chunk_rows = int(self._features.chunks[0])
        self.group = shuffle_group(self.n_features, self.chunk_rows)  # chunks a shuffle mixes at once
        self.sparse = layout_of(self.meta) == "csr"

    @property
    def n_rows(self) -> int:
        return self.stop - self.start

    @property
    def n_features(self) -> int:
        return int(self.meta["n_features"])

    @property
    def n_classes(self) -> int:
        return int(self.meta["n_classes"])

    @property
    def label_map(self) -> list[list[Any]]:
        label_map: list[list[Any]] = self.meta["label_map"]
        return label_map

    def __len__(self) -> int:
        """Number of blocks one pass yields."""
        return -(-self.n_rows // self.block_size)

    def __repr__(self) -> str:
        return (
            f"Stream({str(self.directory)!r}, rows {self.start}:{self.stop}, block_size={self.block_size}, "
            f"shuffle={self.shuffle}, seed={self.seed!r})"
        )

    def __iter__(self) -> Iterator[Block]:
        pieces: list[Block] = []
        have = 0
        for X, y in self._chunks():
            pos = 0
            while pos < X.shape[0]:
                take = min(self.block_size - have, X.shape[0] - pos)
                pieces.append(_rows((X, y), pos, pos + take))
                have, pos = have + take, pos + take
                if have == self.block_size:
                    yield _join(pieces)
                    pieces, have = [], 0
        if have:
            yield _join(pieces)

    def cursor(self, offset: int = 0) -> "RowCursor":
        """A reader that hands out the stream's rows in order, any number at a time, starting at
        row ``offset`` of the (shuffled) order; whole chunks before it are skipped unread."""
        X = sp.csr_matrix((0, self.n_features)) if self.sparse else np.empty((0, 0))
        empty = (X, np.empty(0, dtype=np.int64) if self.labelled else None)
        return RowCursor(self._chunks(skip=_row_index(offset, "offset", self.n_rows)), empty=empty)

    def _chunks(self, skip: int = 0) -> Iterator[Block]:
        """Rows [start, stop) as arrays, a storage chunk (shuffled: a group of chunks) at a time, in
        (shuffled) order, without the first ``skip`` rows of that order."""
        rng = np.random.default_rng(self.seed) if self.shuffle else None
        for spans, perm in chunk_visits(self.start, self.stop, self.chunk_rows, rng, self.group):
            n = sum(hi - lo for _, lo, hi in spans)
            if skip >= n:
                skip -= n
                continue
            if perm is None or self.sparse:
                block = _join([self._read(c, lo, hi) for c, lo, hi in spans])
                block = block if perm is None else (block[0][perm], None if block[1] is None else block[1][perm])
            else:
                block = self._read_permuted(spans, perm)
            if skip:
                block, skip = _rows(block, skip, n), 0
            yield block

    def _read_permuted(self, spans: list[tuple[int, int, int]], perm: NDArray[np.intp]) -> Block:
        """The dense rows of ``spans`` one after another, in the order ``perm``: each chunk read is
        put straight where its rows go, so a group takes its own size in memory and
        :data:`READ_THREADS` chunks'. The chunks are read on that many threads: a read mostly waits
        on zarr's I/O loop, decompression and hashing, which release the GIL (a 917,504-row group
        of 18 features: 0.80 s on one thread, 0.27 s on four, on 2 cores)."""
        to = np.empty(len(perm), dtype=np.intp)
        to[perm] = np.arange(len(perm))  # row i of the spans goes to row to[i] of the block
        X = np.empty((len(perm), self.n_features))
        y = np.empty(len(perm), dtype=np.int64) if self.labelled else None
        starts = np.cumsum([0] + [hi - lo for _, lo, hi in spans])

        def place(i: int) -> None:  # (each chunk's rows go to rows no other chunk's do)
            Xc, yc = self._read(*spans[i])
            X[to[starts[i] : starts[i + 1]]] = Xc
            if y is not None and yc is not None:
                y[to[starts[i] : starts[i + 1]]] = yc

        with concurrent.futures.ThreadPoolExecutor(min(READ_THREADS, len(spans))) as pool:
            for _ in pool.map(place, range(len(spans))):  # (a chunk's error raised here, in chunk order)
                pass
        return X, y

    def _read(self, c: int, lo: int, hi: int) -> Block:
        """Rows [lo, hi) of the dataset, all in storage chunk ``c``, as float64."""
        X, y = read_chunk(self.directory, self._features, self.meta, c)  # checked against its checksums
        X, y = _rows((X, y), lo - c * self.chunk_rows, hi - c * self.chunk_rows)
        return _float64(X), y


#: Threads a shuffled stream reads a group's chunks on (:meth:`Stream._read_permuted`).
READ_THREADS = 4

#: A shuffle mixes the rows of as many storage chunks at once as hold this many bytes of float64
#: features (at least one chunk): a window of up to ~128 MB is permuted uniformly, a longer one
#: group by group (a file sorted by label is then learnt a group at a time).
SHUFFLE_BYTES = 1 << 27


def shuffle_group(n_features: int, chunk_rows: int) -> int:
    """Storage chunks a shuffle mixes at once (:data:`SHUFFLE_BYTES`): 14 chunks of 65,536 rows
    of 18 features, one of rows wider than 128 features."""
    return max(1, SHUFFLE_BYTES // (8 * max(int(n_features), 1) * chunk_rows))


def chunk_visits(
    start: int, stop: int, chunk_rows: int, rng: np.random.Generator | None, group: int = 1
) -> Iterator[tuple[list[tuple[int, int, int]], NDArray[np.intp] | None]]:
    """The storage chunks that meet rows ``[start, stop)``, in the order a stream reads them, as
    ``(spans, perm)``: ``spans`` a list of ``(chunk, lo, hi)``, the chunk's rows ``[lo, hi)`` of the
    dataset. Without ``rng`` a chunk at a time in storage order (``perm`` None); with ``rng`` the
    chunks in a random order, ``group`` at a time, and ``perm`` the order of the group's rows (their
    spans' rows one after another), drawn also for a group a reader skips: the draws alone fix the
    order."""
    order = np.arange(start // chunk_rows, -(-stop // chunk_rows))
    if rng is not None:
        order = rng.permutation(order)
    spans = [(int(c), max(int(c) * chunk_rows, start), min((int(c) + 1) * chunk_rows, stop)) for c in order]
    spans = [span for span in spans if span[1] < span[2]]
    step = 1 if rng is None else group
    for i in range(0, len(spans), step):
        part = spans[i : i + step]
        yield part, None if rng is None else rng.permutation(sum(hi - lo for _, lo, hi in part))


def shuffled_rows(
    start: int, stop: int, seed: Any, n_features: int, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> NDArray[np.intp]:
    """Rows ``[start, stop)`` of a dataset of ``n_features`` features, as indices, in the order a
    shuffled :class:`Stream` with ``seed`` reads them when the dataset is stored in
    ``chunk_rows``-row chunks (as ``omkl data ingest`` and ``omkl submit`` store a file). A file read
    into memory is ordered by this, so a job learns a file's rows in one order whether it runs
    in-process or ingested on a cluster."""
    rng = np.random.default_rng(seed)
    group = shuffle_group(n_features, chunk_rows)
    pieces = [
        np.concatenate([np.arange(lo, hi) for _, lo, hi in spans])[perm]
        for spans, perm in chunk_visits(start, stop, chunk_rows, rng, group)
        if perm is not None
    ]
    return np.concatenate(pieces) if pieces else np.empty(0, dtype=np.intp)


class RowCursor:
    """Consecutive rows of a stream, ``take(n)`` at a time (one storage chunk, or a shuffle's group
    of chunks, in memory)."""

    def __init__(self, chunks: Iterator[Block], empty: Block) -> None:
        self._chunks = chunks
        self._empty = empty  # the rows of an exhausted stream
        self._block: Block | None = None  # the chunk being handed out
        self._pos = 0

    def take(self, n: int) -> Block:
        """The next ``n`` rows as ``(X, y)``; fewer only at the end of the stream."""
        pieces: list[Block] = []
        while n > 0:
            if self._block is None or self._pos == self._block[0].shape[0]:
                self._block, self._pos = next(self._chunks, None), 0
                if self._block is None:
                    break
            k = min(n, self._block[0].shape[0] - self._pos)
            pieces.append(_rows(self._block, self._pos, self._pos + k))
            self._pos += k
            n -= k
        if not pieces:
            return self._empty
        return _join(pieces)


def open_stream(
    directory: PathArg,
    block_size: int = 1024,
    *,
    shuffle: bool = False,
    seed: int | Sequence[int] | None = None,
    start: int = 0,
    stop: int | None = None,
    optional_labels: bool = False,
) -> Stream:
    """Open a dataset directory as a :class:`Stream` of ``(X_block, y_block)``.

    See :class:`Stream` for the parameters and the shuffle semantics; a dataset without labels is
    refused unless ``optional_labels`` (prediction).

    Raises
    ------
    ValueError
        ``block_size`` < 1, or ``start``/``stop`` outside the dataset.
    DataError
        ``directory`` is not a valid dataset directory, or has no labels (without ``optional_labels``).
    """
    return Stream(
        directory, block_size, shuffle=shuffle, seed=seed, start=start, stop=stop, optional_labels=optional_labels
    )


def load_arrays(
    directory: PathArg, *, optional_labels: bool = False
) -> tuple[NDArray[np.float64] | sp.csr_matrix, NDArray[np.int64] | None, dict[str, Any]]:
    """Load a whole (small) dataset: ``(X float64 (n, d), y int64 (n,), meta)``; ``X`` is a
    ``scipy.sparse.csr_matrix`` for a csr dataset. ``optional_labels``: as for :class:`Stream` (y
    is None for a dataset without labels).

    Use :func:`open_stream` for data that may not fit in memory.
    """
    meta = Stream(directory, optional_labels=optional_labels).meta  # a dataset without labels refused there
    features = open_features(directory, meta)
    chunks = [read_chunk(directory, features, meta, c) for c in range(len(meta["checksums"]["features"]))]
    labels = [y for _, y in chunks if y is not None]
    y = np.concatenate(labels) if meta["labelled"] else None
    if layout_of(meta) == "csr":
        X = sp.vstack([X for X, _ in chunks], format="csr") if chunks else sp.csr_matrix((0, meta["n_features"]))
        return _float64(X), y, meta
    X = np.ascontiguousarray(np.concatenate([X for X, _ in chunks]), dtype=np.float64)
    return X, y, meta


def _float64(X: Any) -> NDArray[np.float64] | sp.csr_matrix:
    """A chunk's rows as float64: an ndarray (no copy when already one), or a csr_matrix."""
    if sp.issparse(X):
        return X if X.dtype == np.float64 else X.astype(np.float64)
    return np.asarray(X, dtype=np.float64)


def _rows(block: Block, lo: int, hi: int) -> Block:
    """Rows ``lo:hi`` of a block (views, not copies)."""
    X, y = block
    return X[lo:hi], None if y is None else y[lo:hi]


def _join(pieces: list[Block]) -> Block:
    labels = [p[1] for p in pieces if p[1] is not None]
    if len(pieces) == 1:
        X, y = pieces[0]
        return (X if sp.issparse(X) else np.ascontiguousarray(X)), None if y is None else np.ascontiguousarray(y)
    y = np.concatenate(labels) if labels else None
    if sp.issparse(pieces[0][0]):
        return sp.vstack([p[0] for p in pieces], format="csr"), y
    return np.concatenate([p[0] for p in pieces]), y


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _row_index(value: object, name: str, total: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= total:
        raise ValueError(f"{name} must be an integer in [0, {total}], got {value!r}")
    return int(value)
