"""Large LIBSVM files read block by block (storage/readers/libsvm_blocks.py): the same dataset and the
same errors as the whole-file reader, in memory that does not grow with the densified matrix.

Each case is read twice: whole (the block reader's size threshold above the file) and block by block
(threshold 0, blocks of a few dozen bytes, so that rows, comments and blank lines fall on every kind
of block boundary)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re

import numpy as np
import pytest
import scipy.sparse as sp
from ingest_memory import ingest_growth

from omkl_dist.storage import DataError, ingest, read_dataset
from omkl_dist.storage.readers import blocks
from omkl_dist.storage.readers.libsvm_blocks import LibsvmBlockFile


def _spy(monkeypatch, *, streamed, block=29) -> list:
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", block)
    used: list = []
    real = LibsvmBlockFile.feature_chunks
    monkeypatch.setattr(LibsvmBlockFile, "feature_chunks", lambda self, rows: used.append(1) or real(self, rows))
    return used


def _ingest(path, out, monkeypatch, *, streamed, **options):
    """``(meta or the DataError's text, whether blocks were read)``."""
    used = _spy(monkeypatch, streamed=streamed)
    try:
        meta = ingest(path, out, chunk_rows=4, **options)
    except DataError as exc:
        return str(exc), bool(used)
    return {k: v for k, v in meta.items() if k not in ("created", "meta_sha256")}, bool(used)


def _read(path, monkeypatch, *, streamed, **options):
    used = _spy(monkeypatch, streamed=streamed)
    try:
        ds = read_dataset(path, **options)
    except DataError as exc:
        return str(exc), bool(used)
    return (ds.X, ds.y, ds.label_map, ds.fmt, ds.sha256), bool(used)


def _file(tmp_path, content, name="data.svm", compress=None):
    data = content.encode()
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    path.write_bytes(compress(data) if compress else data)
    return path


def _both(tmp_path, monkeypatch, content, *, expect_blocks=True, name="data.svm", compress=None, **options):
    """Ingested and read whole and block by block: the same dataset (or error); ``expect_blocks``:
    whether the block reader takes the file."""
    path = _file(tmp_path, content, name, compress)
    whole, _ = _ingest(path, tmp_path / "whole", monkeypatch, streamed=False, **options)
    streamed, used = _ingest(path, tmp_path / "blocks", monkeypatch, streamed=True, **options)
    assert _same_memory(streamed) == _same_memory(whole)
    if isinstance(whole, dict):
        assert used == expect_blocks
    read_options = {k: v for k, v in options.items() if k not in ("dtype", "feature_groups", "layout")}
    if "layout" in options:
        read_options["sparse"] = options["layout"] == "csr"
    if options.get("label_column") == "none":
        read_options["optional_labels"] = True
    whole_read, _ = _read(path, monkeypatch, streamed=False, **read_options)
    streamed_read, used = _read(path, monkeypatch, streamed=True, **read_options)
    if isinstance(whole_read, str):
        assert _same_memory(streamed_read) == _same_memory(whole_read)
    else:
        X, y, *rest = streamed_read
        assert X.dtype == whole_read[0].dtype and type(X) is type(whole_read[0])
        if sp.issparse(X):
            X, whole_read = X.toarray(), (whole_read[0].toarray(), *whole_read[1:])
        np.testing.assert_array_equal(X, whole_read[0])
        assert (y is None) == (whole_read[1] is None) and rest == list(whole_read[2:])
        if y is not None:
            np.testing.assert_array_equal(y, whole_read[1])
        assert used == expect_blocks
    return whole


def _same_memory(outcome):
    """An error's text with the memory available (measured when it was raised) left out."""
    return (
        re.sub(r"[\d.]+ GiB of memory available", "(some) GiB of memory available", outcome)
        if isinstance(outcome, str)
        else outcome
    )


def _rows(n, label=lambda i: "+1" if i % 2 else "-1", start=0, width=9):
    rng = np.random.default_rng(n + start)
    lines = []
    for i in range(start, start + n):
        idx = np.sort(rng.choice(width, 3, replace=False)) + 1
        lines.append(" ".join([label(i), *(f"{j}:{rng.normal():.6g}" for j in idx)]))
    return "\n".join(lines) + "\n"


CASES = [
    (_rows(30), {}),
    (_rows(30, label=lambda i: str(i % 4)), {}),  # four classes
    (_rows(30, label=lambda i: f"{i % 2}.0"), {}),
    ("# written by hand\n" + _rows(9) + "\n\n" + _rows(9, start=9) + "# a comment\n" + _rows(9, start=18), {}),
    (_rows(12) + "1 2:0.5 # a note after a row\n-1\n" + _rows(12, start=12), {}),  # a row of no features
    (_rows(30).replace("\n", "\r\n"), {}),
    (_rows(30).rstrip("\n"), {}),  # no line end at the end
    (_rows(30, label=lambda i: str(i % 3)), {"classes": [0, 1, 2, 3]}),
    (_rows(30), {"positive_class": -1}),
    (_rows(30), {"dtype": "float32", "feature_groups": {"first": "0:4", "last": [8]}}),
    (_rows(30), {"layout": "dense"}),
    # rows to predict: without labels (some rows may keep theirs; none is read)
    ("\n".join(line.split(" ", 1)[1] for line in _rows(30).splitlines()) + "\n", {"label_column": "none"}),
    (_rows(5) + "3:1.5 7:2\n" + _rows(20, start=5), {"label_column": "none"}),
]


@pytest.mark.parametrize(("content", "options"), CASES)
def test_the_blocks_read_what_the_whole_file_reads(tmp_path, monkeypatch, content, options):
    meta = _both(tmp_path, monkeypatch, content, **options)
    assert isinstance(meta, dict), meta


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_compressed_files_are_read_block_by_block(tmp_path, monkeypatch, compress):
    meta = _both(tmp_path, monkeypatch, _rows(40), name="data.svm.x", compress=compress)
    assert meta["n_rows"] == 40


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (_rows(20) + "1 1:0.5 2:x\n" + _rows(5, start=20), "row 21, column 2: value 'x' is not a number"),
        (_rows(20) + "yes 1:0.5\n" + _rows(5, start=20), "row 21: label 'yes' is not a number"),
        (_rows(20) + "1 3:0.5 2:1\n" + _rows(5, start=20), "not strictly increasing"),
        (_rows(20) + "1 0:0.5\n" + _rows(5, start=20), "feature index 0 in a 1-based LIBSVM file"),
        (_rows(20) + "1 2:nan\n" + _rows(5, start=20), "non-finite feature value nan"),
        (_rows(20) + "nan 2:1\n" + _rows(5, start=20), "label"),
        (_rows(20) + "1 2:1 3:inf\n" + _rows(5, start=20) + "nan 1:1\n", "non-finite feature value inf"),
        # a stray index: 14,000 rows 9,999 wide would be 1.0 GiB dense at 0.01 % non-zero
        ("1 1:1\n" * 14_000 + "1 9999:1\n", "makes the dense feature matrix 14,001 x 9,999"),
        ("3:1.5 7:2\n" + _rows(20), "the rows have no labels"),  # rows to learn from, without labels
    ],
)
def test_a_bad_file_is_the_same_error_naming_the_same_line(tmp_path, monkeypatch, content, problem):
    error = _both(tmp_path, monkeypatch, content)
    assert isinstance(error, str) and problem in error, error


@pytest.mark.parametrize("change", ["grown", "shrunk", "wider"])
def test_a_file_changed_between_the_passes_is_an_error(tmp_path, monkeypatch, change):
    path = _file(tmp_path, _rows(30))
    _spy(monkeypatch, streamed=True)
    file = blocks.open_blocks(path)
    if change == "grown":
        path.write_text(_rows(31))
    elif change == "shrunk":
        path.write_text(_rows(29))
    else:
        path.write_text(_rows(30, width=15))
    with pytest.raises(DataError, match="the file changed while it was read"):
        list(file.feature_chunks(7))


def test_sparse_features_are_read_whole_and_kept_sparse(tmp_path, monkeypatch):
    content = _rows(10) + "1 12000:1\n" + _rows(10, start=10)
    meta = _both(tmp_path, monkeypatch, content, expect_blocks=False)
    assert meta["layout"] == "csr" and meta["n_features"] == 12_000
    _both(tmp_path / "dense", monkeypatch, content, layout="dense")  # asked dense: by blocks, 12,000 wide


def test_options_the_block_reader_does_not_take_read_the_file_whole(tmp_path, monkeypatch):
    content = _rows(30)
    for name, options in {"csr": {"layout": "csr"}, "zero": {"zero_based": True}}.items():
        _both(tmp_path / name, monkeypatch, content, expect_blocks=False, **options)


def test_n_features_widens_the_blocks_or_names_the_index_above_it(tmp_path, monkeypatch):
    meta = _both(tmp_path / "wide", monkeypatch, _rows(30), n_features=12)
    assert meta["n_features"] == 12
    error = _both(tmp_path / "narrow", monkeypatch, _rows(30), expect_blocks=False, n_features=5)
    assert "feature index 9 is above n_features=5" in error and "row " in error


@pytest.mark.slow
def test_a_large_file_is_ingested_in_memory_that_does_not_grow_with_its_matrix(tmp_path):
    """A 70 MB LIBSVM file of a9a's shape (123 binary features, 14 set a row), 0.95 GB dense: the
    whole-file reader holds its text, scikit-learn's sparse matrix and the matrix at once (the process
    grows by 1.5 GB); block by block it grows by a chunk or two (and scikit-learn's import): 0.3 GB,
    under half the matrix."""
    rng = np.random.default_rng(0)
    rows = "".join(
        ("+1 " if i % 3 else "-1 ") + " ".join(f"{j}:1" for j in np.sort(rng.choice(123, 14, replace=False)) + 1) + "\n"
        for i in range(5_000)
    )
    path = tmp_path / "big.svm"
    copies = 70 * 2**20 // len(rows)
    with open(path, "w") as fh:
        for _ in range(copies):
            fh.write(rows)
    size_kb = path.stat().st_size // 1024
    report = ingest_growth(path, tmp_path / "ds")
    assert report["rows"] == 5_000 * copies
    matrix_kb = report["rows"] * 123 * 8 // 1024
    assert report["grew_kb"] < matrix_kb / 2, (report, size_kb, matrix_kb)


def test_an_ingest_parses_each_block_once(tmp_path, monkeypatch):
    """The first pass keeps each block's parse on disk beside the dataset being written (its width, the
    largest index, is known only at the end): the chunks are made from it, not from a second parse, and
    the dataset holds no trace of it."""
    path = _file(tmp_path, _rows(30))
    _spy(monkeypatch, streamed=True)
    parses = []
    real = LibsvmBlockFile.parsed_block
    monkeypatch.setattr(LibsvmBlockFile, "parsed_block", lambda self, *a: parses.append(1) or real(self, *a))
    meta = ingest(path, tmp_path / "ds", chunk_rows=4)
    assert meta["n_rows"] == 30 and len(parses) == len(list(blocks.line_blocks(path))) > 5
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["features.zarr", "labels.parquet", "meta.json"]
    whole = _ingest(path, tmp_path / "whole", monkeypatch, streamed=False)[0]
    assert {k: v for k, v in meta.items() if k not in ("created", "meta_sha256")} == whole
