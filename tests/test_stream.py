"""Streaming: order, block sizes across chunk boundaries, row ranges, chunk-by-chunk reads,
seeded shuffles that keep X and y paired, parameter checks, and codrna read back exactly."""

from __future__ import annotations

import shutil
import threading
import time

import numpy as np
import pytest
import zarr

from omkl_dist.storage import DataError, ingest, load_arrays, open_stream, read_dataset, resolve_dataset
from omkl_dist.storage import stream as stream_module
from omkl_dist.storage.stream import shuffled_rows

N, D, CHUNK = 1000, 3, 64


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Rows whose first feature is the row id, and whose label is a function of it (pairing check)."""
    root = tmp_path_factory.mktemp("stream")
    ids = np.arange(N)
    y = np.where(ids % 3 == 0, 1, -1)
    lines = [f"{lab} {i} {i * 0.5} {-i}" for i, lab in zip(ids, y)]
    src = root / "ids.txt"
    src.write_text("\n".join(lines) + "\n")
    ingest(src, root / "ds", chunk_rows=CHUNK)
    return root / "ds"


def collect(stream):
    blocks = list(stream)
    return blocks, np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])


def expected_y(ids):
    return np.where(ids % 3 == 0, 1, -1)


@pytest.mark.parametrize("block_size", [1, 50, 64, 100, 200, N, 5000])
def test_in_order_blocks(dataset, block_size):
    stream = open_stream(dataset, block_size=block_size)
    blocks, X, y = collect(stream)
    sizes = [len(b[1]) for b in blocks]
    assert all(s == block_size for s in sizes[:-1]) and 0 < sizes[-1] <= block_size
    assert len(blocks) == len(stream) == -(-N // block_size)
    np.testing.assert_array_equal(X[:, 0], np.arange(N))
    np.testing.assert_array_equal(y, expected_y(np.arange(N)))
    for Xb, yb in blocks:
        assert Xb.dtype == np.float64 and yb.dtype == np.int64 and Xb.shape[1] == D and Xb.flags.c_contiguous


def test_reiterable(dataset):
    stream = open_stream(dataset, block_size=128)
    first, second = collect(stream)[1], collect(stream)[1]
    np.testing.assert_array_equal(first, second)


def test_properties(dataset):
    stream = open_stream(dataset, block_size=100, start=10, stop=110)
    assert (stream.n_rows, stream.n_features, stream.n_classes, stream.block_size) == (100, D, 2, 100)
    assert stream.label_map == [["-1", -1], ["1", 1]]
    assert stream.meta["n_rows"] == N and stream.chunk_rows == CHUNK
    assert "rows 10:110" in repr(stream)


def test_row_range(dataset):
    _, X, y = collect(open_stream(dataset, block_size=30, start=70, stop=333))
    np.testing.assert_array_equal(X[:, 0], np.arange(70, 333))
    np.testing.assert_array_equal(y, expected_y(np.arange(70, 333)))
    assert list(open_stream(dataset, start=5, stop=5)) == []


class _RecordingArray:
    """Wraps the zarr array to record which row ranges the stream reads."""

    def __init__(self, array):
        self.array, self.reads = array, []
        self.chunks = array.chunks

    def __getitem__(self, key):
        self.reads.append((key.start, key.stop))
        return self.array[key]


@pytest.mark.parametrize("shuffle", [False, True])
def test_reads_one_storage_chunk_at_a_time(dataset, shuffle):
    stream = open_stream(dataset, block_size=500, shuffle=shuffle, seed=0, start=3, stop=990)
    stream._features = recorder = _RecordingArray(stream._features)
    collect(stream)
    for lo, hi in recorder.reads:
        assert hi - lo <= CHUNK and lo // CHUNK == (hi - 1) // CHUNK
    covered = sorted(recorder.reads)
    # whole chunks (each is checked against its checksum), each read once, exactly those in [3, 990)
    assert all(lo % CHUNK == 0 and hi == min(lo + CHUNK, N) for lo, hi in covered)
    assert covered[0][0] == 0 and covered[-1][1] == N == 15 * CHUNK + 40
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))


def test_shuffle_deterministic_distinct_and_paired(dataset):
    runs = {seed: collect(open_stream(dataset, block_size=100, shuffle=True, seed=seed))[1:] for seed in (7, 8)}
    again = collect(open_stream(dataset, block_size=100, shuffle=True, seed=7))[1:]
    np.testing.assert_array_equal(runs[7][0], again[0])
    np.testing.assert_array_equal(runs[7][1], again[1])
    assert not np.array_equal(runs[7][0], runs[8][0])
    original, _, _ = load_arrays(dataset)
    for X, y in runs.values():
        ids = X[:, 0].astype(int)
        assert not np.array_equal(ids, np.arange(N))
        np.testing.assert_array_equal(np.sort(ids), np.arange(N))  # a permutation of the rows
        np.testing.assert_array_equal(X, original[ids])  # every row intact
        np.testing.assert_array_equal(y, expected_y(ids))  # labels still with their rows


def test_shuffle_same_seed_every_epoch_and_epoch_seeds(dataset):
    stream = open_stream(dataset, block_size=100, shuffle=True, seed=3)
    np.testing.assert_array_equal(collect(stream)[1], collect(stream)[1])
    e0 = collect(open_stream(dataset, block_size=100, shuffle=True, seed=(3, 0)))[1]
    e1 = collect(open_stream(dataset, block_size=100, shuffle=True, seed=(3, 1)))[1]
    assert not np.array_equal(e0, e1)


def test_shuffle_within_a_single_chunk_is_a_full_permutation(dataset):
    _, X, y = collect(open_stream(dataset, block_size=7, shuffle=True, seed=1, start=CHUNK, stop=2 * CHUNK))
    ids = X[:, 0].astype(int)
    np.testing.assert_array_equal(np.sort(ids), np.arange(CHUNK, 2 * CHUNK))
    np.testing.assert_array_equal(y, expected_y(ids))


@pytest.mark.parametrize("start, stop", [(0, N), (0, 300), (37, 901), (CHUNK, 2 * CHUNK), (500, 501)])
@pytest.mark.parametrize("seed", [0, (5, 1)])
@pytest.mark.parametrize("group", [1, 3, 1000])
def test_shuffled_rows_is_the_order_a_shuffled_stream_reads(dataset, monkeypatch, start, stop, seed, group):
    """What a file in memory is ordered by (``omkl run FILE``) is what its ingested copy streams
    (``omkl submit FILE``): the window's rows in the stream's order, any window, seed and group."""
    monkeypatch.setattr(stream_module, "SHUFFLE_BYTES", 8 * D * CHUNK * group)
    _, X, _ = collect(open_stream(dataset, block_size=100, shuffle=True, seed=seed, start=start, stop=stop))
    np.testing.assert_array_equal(X[:, 0].astype(int), shuffled_rows(start, stop, seed, D, chunk_rows=CHUNK))


def test_a_shuffle_mixes_a_group_of_chunks_at_a_time(dataset, monkeypatch):
    """Rows are permuted uniformly within a group of storage chunks (in memory together), the
    groups one after another: the whole window when it fits in one (a file sorted by label is
    then learnt mixed), a chunk at a time when rows are wide."""
    assert stream_module.shuffle_group(300, 65_536) == 1 and stream_module.shuffle_group(18, 65_536) == 14
    assert stream_module.shuffle_group(D, CHUNK) > N // CHUNK  # this dataset: one group
    _, X, _ = collect(open_stream(dataset, block_size=100, shuffle=True, seed=2))
    assert len(set(X[:CHUNK, 0].astype(int) // CHUNK)) > 8  # its first rows from all over
    monkeypatch.setattr(stream_module, "SHUFFLE_BYTES", 8 * D * CHUNK * 3)  # three chunks at a time
    _, X, _ = collect(open_stream(dataset, block_size=100, shuffle=True, seed=2))
    ids, pos = X[:, 0].astype(int), 0
    for spans, _ in stream_module.chunk_visits(0, N, CHUNK, np.random.default_rng(2), 3):
        n = sum(hi - lo for _, lo, hi in spans)
        assert len(spans) <= 3 and set(ids[pos : pos + n] // CHUNK) == {c for c, _, _ in spans}
        pos += n
    assert pos == N


def test_shuffle_without_seed_is_still_a_permutation(dataset):
    _, X, _ = collect(open_stream(dataset, block_size=256, shuffle=True))
    np.testing.assert_array_equal(np.sort(X[:, 0]), np.arange(N))


@pytest.mark.parametrize("block_size", [0, -5, 2.5, True, "10"])
def test_bad_block_size(dataset, block_size):
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        open_stream(dataset, block_size=block_size)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"start": -1}, "start"), ({"stop": N + 1}, "stop"), ({"start": 20, "stop": 10}, "must not exceed")],
)
def test_bad_row_range(dataset, kwargs, match):
    with pytest.raises(ValueError, match=match):
        open_stream(dataset, **kwargs)


def test_not_a_dataset_directory(tmp_path):
    with pytest.raises(DataError, match="not an ingested dataset directory"):
        open_stream(tmp_path)


def test_float32_dataset_streams_float64(tmp_path, dataset):
    src = tmp_path / "f.txt"
    src.write_text("1 0.1 0.2\n-1 0.3 0.4\n")
    ingest(src, tmp_path / "ds", dtype="float32")
    ((X, y),) = list(open_stream(tmp_path / "ds", block_size=10))
    assert X.dtype == np.float64 and y.tolist() == [1, -1]
    np.testing.assert_allclose(X, [[0.1, 0.2], [0.3, 0.4]], rtol=1e-6)


def test_codrna_stream_equals_reader(tmp_path, data_dir):
    path = resolve_dataset("codrna", data_dir=data_dir)
    ingest(path, tmp_path / "codrna", chunk_rows=8192)
    _, X, y = collect(open_stream(tmp_path / "codrna", block_size=1000))
    ds = read_dataset(path)
    assert X.shape == (59_535, 8)
    np.testing.assert_array_equal(X, ds.X)
    np.testing.assert_array_equal(y, ds.y)


def test_a_shuffle_reads_a_groups_chunks_at_once(dataset, monkeypatch):
    """A group's chunks are read on several threads (each read mostly waits on zarr's I/O loop and
    decompression), the rows as a read one at a time puts them."""
    expected = collect(open_stream(dataset, block_size=100, shuffle=True, seed=4))[1:]
    stream = open_stream(dataset, block_size=100, shuffle=True, seed=4)
    lock, reading, most = threading.Lock(), [0], [0]
    read = stream._read

    def slow_read(c, lo, hi):
        with lock:
            reading[0] += 1
            most[0] = max(most[0], reading[0])
        time.sleep(0.01)
        try:
            return read(c, lo, hi)
        finally:
            with lock:
                reading[0] -= 1

    monkeypatch.setattr(stream, "_read", slow_read)
    X, y = collect(stream)[1:]
    assert most[0] == stream_module.READ_THREADS
    np.testing.assert_array_equal(X, expected[0])
    np.testing.assert_array_equal(y, expected[1])


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_damaged_chunk_is_refused_naming_it(dataset, tmp_path, shuffle):
    """A chunk rewritten behind the dataset's back stops the stream with its rows named; with a
    shuffle's group read on threads, the first damaged chunk of the group's order."""
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    features = zarr.open_array(str(copy / "features.zarr"), mode="r+")
    for c in (2, 9):
        features[c * CHUNK] = -features[c * CHUNK]
    visits = stream_module.chunk_visits(0, N, CHUNK, np.random.default_rng(0) if shuffle else None, N // CHUNK + 1)
    first = next(c for spans, _ in visits for c, _, _ in spans if c in (2, 9))
    rows = f"rows {first * CHUNK}..{first * CHUNK + CHUNK - 1}"
    with pytest.raises(DataError, match=rf"chunk {first} \({rows}\) of the features does not match its checksum"):
        collect(open_stream(copy, block_size=100, shuffle=shuffle, seed=0))
