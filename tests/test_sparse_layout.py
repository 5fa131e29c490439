"""The csr layout for wide sparse data (rcv1-shaped: 47,236 features, 0.16 % non-zero), on generated
files only: the reader keeps wide LIBSVM sparse, ingest stores it per chunk as CSR with checksums,
streams (blocks, row ranges, shuffles, cursors) give back exactly the parsed matrix as CSR blocks,
damage is a DataError naming the chunk, rows and file, a failed ingest leaves an existing dataset
byte-identical, ``--layout`` chooses the storage, the scaler works on sparse input without
densifying (and refuses a scaling that would), and the rcv1 generator is what it says."""

from __future__ import annotations

import hashlib
import json
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

from omkl_dist.defaults import resolve_settings
from omkl_dist.pipelines.cli import main
from omkl_dist.preprocessing import Scaler
from omkl_dist.storage import (
    DataError,
    dataset_info,
    format_info,
    ingest,
    load_arrays,
    open_stream,
    read_dataset,
    verify_dataset,
)
from omkl_dist.storage.job_data import load_job_data
from omkl_dist.storage.layout import meta_digest
from omkl_dist.storage.readers import SPARSE_MIN_FEATURES
from omkl_dist.storage.synth_sparse import RCV1_FEATURES, iter_sparse_blocks, write_sparse_libsvm

ROWS, CHUNK = 3000, 700  # 5 chunks, the last one 200 rows
WHERE = {2: "chunk 2 (rows 1400..2099)", 4: "chunk 4 (rows 2800..2999)"}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def same_csr(A, B) -> bool:
    """Equal as canonical CSR matrices: shape, row pointers, column indices and values, bit for bit."""
    return (
        A.shape == B.shape
        and np.array_equal(A.indptr, B.indptr)
        and np.array_equal(A.indices, B.indices)
        and np.array_equal(A.data, B.data)
    )


def tree_digest(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """A 3,000-row rcv1-shaped LIBSVM file, its parsed matrix and its csr dataset (700-row chunks)."""
    root = tmp_path_factory.mktemp("wide")
    info = write_sparse_libsvm(root / "wide.svm", rows=ROWS, seed=1)
    ds = read_dataset(root / "wide.svm")
    meta = ingest(root / "wide.svm", root / "ds", chunk_rows=CHUNK)
    return {"root": root, "file": root / "wide.svm", "info": info, "ds": ds, "dir": root / "ds", "meta": meta}


def damaged_copy(wide, tmp_path) -> Path:
    shutil.copytree(wide["dir"], tmp_path / "ds")
    return tmp_path / "ds"


# --------------------------------------------------------------------------------------------
# reader and ingest


def test_reader_keeps_wide_libsvm_sparse_and_narrow_dense(wide, tmp_path):
    X = wide["ds"].X
    assert isinstance(X, sp.csr_matrix) and X.shape == (ROWS, RCV1_FEATURES) and X.dtype == np.float64
    assert X.has_canonical_format and (X.data > 0).all() and X.nnz == wide["info"]["nnz"]
    narrow = tmp_path / "narrow.svm"
    narrow.write_text("1 1:0.5 3:2\n-1 2:1\n1 3:0 1:4\n".replace("3:0 1:4", "1:4 3:0"))
    dense = read_dataset(narrow)
    assert isinstance(dense.X, np.ndarray) and dense.X.shape == (3, 3)
    forced = read_dataset(narrow, sparse=True)  # --layout csr on narrow data
    assert isinstance(forced.X, sp.csr_matrix) and forced.X.nnz == 4  # the stored 3:0 is not a non-zero
    np.testing.assert_array_equal(forced.X.toarray(), dense.X)
    assert SPARSE_MIN_FEATURES == 10_000


def test_mat_with_a_wide_sparse_x_stays_sparse(tmp_path):
    X = sp.random(40, 12_000, density=0.01, format="csc", random_state=0)
    y = np.arange(40) % 2
    scipy.io.savemat(tmp_path / "w.mat", {"X": X, "y": y.reshape(-1, 1)})
    ds = read_dataset(tmp_path / "w.mat")
    assert isinstance(ds.X, sp.csr_matrix) and same_csr(ds.X, sp.csr_matrix(X))
    assert isinstance(read_dataset(tmp_path / "w.mat", sparse=False).X, np.ndarray)


def test_ingest_writes_the_csr_layout(wide):
    meta, d = wide["meta"], wide["dir"]
    assert meta["layout"] == "csr" and meta["nnz"] == wide["ds"].X.nnz and meta["index_dtype"] == "int32"
    assert (d / "features.csr").is_dir() and not (d / "features.zarr").exists()
    assert sorted(p.name for p in (d / "features.csr").iterdir()) == ["0", "1", "2", "3", "4", "zarr.json"]
    assert sorted(p.name for p in (d / "features.csr" / "0").iterdir()) == ["data", "indices", "indptr", "zarr.json"]
    assert len(meta["checksums"]["features"]) == 5 and dataset_info(d) == meta
    assert verify_dataset(d)["nnz"] == meta["nnz"]
    text = format_info(meta)
    assert f"layout:    csr (features.csr), {meta['nnz']:,} non-zeros, density 0.15" in text, text


def test_dense_datasets_keep_their_meta(tmp_path):
    src = tmp_path / "d.csv"
    src.write_text("1,0.5,2\n-1,1,0\n")
    meta = ingest(src, tmp_path / "ds")
    assert "layout" not in meta and "nnz" not in meta and "layout:    dense (features.zarr)" in format_info(meta)
    X, _ = next(iter(open_stream(tmp_path / "ds")))
    assert isinstance(X, np.ndarray)


def test_info_and_verify_on_the_command_line(wide):
    res = invoke("data", "info", wide["dir"])
    assert res.exit_code == 0 and "layout:    csr (features.csr)" in res.output and "non-zeros" in res.output
    assert "density" in res.output and "per row" in res.output
    res = invoke("data", "verify", wide["dir"])
    assert res.exit_code == 0 and "5 chunk(s)" in res.output


# --------------------------------------------------------------------------------------------
# streaming


@pytest.mark.parametrize("block_size", [250, CHUNK, 1024, ROWS])
def test_blocks_are_csr_and_equal_the_parsed_matrix(wide, block_size):
    blocks = list(open_stream(wide["dir"], block_size=block_size))
    for X, y in blocks:
        assert isinstance(X, sp.csr_matrix) and X.dtype == np.float64 and y.dtype == np.int64
        assert X.shape[1] == RCV1_FEATURES and X.shape[0] == len(y) <= block_size
    X = sp.vstack([b[0] for b in blocks], format="csr")
    assert same_csr(X, wide["ds"].X)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in blocks]), wide["ds"].y)


def test_row_range_across_chunk_boundaries(wide):
    stream = open_stream(wide["dir"], block_size=300, start=650, stop=2150)
    X = sp.vstack([b[0] for b in stream], format="csr")
    assert stream.sparse and same_csr(X, wide["ds"].X[650:2150])
    np.testing.assert_array_equal(X[:5].toarray(), wide["ds"].X[650:655].toarray())


def _row_ids(X, reference) -> np.ndarray:
    """Each row of X as its row number in ``reference`` (rows identified by their content)."""

    def key(M, i):
        a, b = M.indptr[i], M.indptr[i + 1]
        return M.indices[a:b].tobytes() + M.data[a:b].tobytes()

    where = {key(reference, i): i for i in range(reference.shape[0])}
    return np.array([where[key(X, i)] for i in range(X.shape[0])])


def test_shuffle_is_chunk_local_and_keeps_rows_paired(wide):
    stream = open_stream(wide["dir"], block_size=512, shuffle=True, seed=7, start=100, stop=2900)
    blocks = list(stream)
    X, y = sp.vstack([b[0] for b in blocks], format="csr"), np.concatenate([b[1] for b in blocks])
    ids = _row_ids(X, wide["ds"].X)
    assert sorted(ids) == list(range(100, 2900)) and not np.array_equal(ids, np.arange(100, 2900))
    np.testing.assert_array_equal(y, wide["ds"].y[ids])
    chunks = ids // CHUNK
    assert (np.diff(chunks) != 0).sum() == len(set(chunks)) - 1  # each chunk's rows come together
    again = sp.vstack([b[0] for b in stream], format="csr")
    assert same_csr(again, X)  # the same seed, the same order
    cursor = stream.cursor(offset=1000)
    Xc, yc = cursor.take(900)
    assert isinstance(Xc, sp.csr_matrix) and same_csr(Xc, X[1000:1900])
    np.testing.assert_array_equal(yc, y[1000:1900])
    rest, _ = cursor.take(10_000)
    assert rest.shape[0] == 2800 - 1900
    empty, y_empty = cursor.take(5)
    assert isinstance(empty, sp.csr_matrix) and empty.shape == (0, RCV1_FEATURES) and len(y_empty) == 0


def test_load_arrays_gives_one_csr_matrix(wide):
    X, y, meta = load_arrays(wide["dir"])
    assert isinstance(X, sp.csr_matrix) and same_csr(X, wide["ds"].X) and meta["layout"] == "csr"
    np.testing.assert_array_equal(y, wide["ds"].y)


def test_float32_storage_streams_float64_csr(wide, tmp_path):
    ingest(wide["file"], tmp_path / "f32", chunk_rows=CHUNK, dtype="float32")
    X, _ = next(iter(open_stream(tmp_path / "f32", block_size=ROWS)))
    assert X.dtype == np.float64 and X.nnz == wide["ds"].X.nnz
    np.testing.assert_array_equal(X.data, wide["ds"].X.data.astype(np.float32).astype(np.float64))


def test_streaming_a_chunk_never_densifies_it(wide):
    stream = open_stream(wide["dir"], block_size=CHUNK)
    tracemalloc.start()
    try:
        X, _ = next(iter(stream))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    dense_bytes = CHUNK * RCV1_FEATURES * 8  # 265 MB
    assert isinstance(X, sp.csr_matrix) and X.shape == (CHUNK, RCV1_FEATURES)
    assert X.data.nbytes + X.indices.nbytes + X.indptr.nbytes < dense_bytes / 300
    assert peak < dense_bytes / 20, peak  # what reading the chunk allocated at most


# --------------------------------------------------------------------------------------------
# damage


def _first_error(directory) -> str:
    with pytest.raises(DataError) as info:
        for _ in open_stream(directory, block_size=1000):
            pass
    with pytest.raises(DataError):
        verify_dataset(directory)
    return str(info.value)


def test_a_flipped_byte_names_the_chunk_rows_and_file(wide, tmp_path):
    d = damaged_copy(wide, tmp_path)
    target = d / "features.csr" / "2" / "data" / "c" / "0"
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    target.write_bytes(bytes(raw))
    message = _first_error(d)
    # the part's file named: by its changed digest, or by the codec failing on it (either way the data part)
    assert WHERE[2] in message and str(d / "features.csr" / "2" / "data") in message, message
    assert "its data file is damaged" in message or "cannot be read (data:" in message, message
    res = invoke("data", "verify", d)
    assert res.exit_code == 2 and WHERE[2] in res.output and "omkl data verify" in res.output


@pytest.mark.parametrize("part", ["indptr", "indices", "data"])
def test_a_missing_chunk_file_names_it(wide, tmp_path, part):
    d = damaged_copy(wide, tmp_path)
    (d / "features.csr" / "4" / part / "c" / "0").unlink()
    message = _first_error(d)
    assert WHERE[4] in message and "missing" in message and str(d / "features.csr" / "4" / part / "c" / "0") in message


def test_a_truncated_chunk_file_names_it(wide, tmp_path):
    d = damaged_copy(wide, tmp_path)
    target = d / "features.csr" / "2" / "indices" / "c" / "0"
    target.write_bytes(target.read_bytes()[:100])
    message = _first_error(d)
    assert WHERE[2] in message and str(d / "features.csr" / "2" / "indices") in message, message


def test_a_missing_chunk_folder_or_edited_meta_is_found_by_info(wide, tmp_path):
    d = damaged_copy(wide, tmp_path)
    shutil.rmtree(d / "features.csr" / "3")
    with pytest.raises(DataError, match=r"1 of the 5 feature chunks are missing \(chunk 3 first\)"):
        dataset_info(d)
    d2 = tmp_path / "edited"
    shutil.copytree(wide["dir"], d2)
    meta = json.loads((d2 / "meta.json").read_text())
    edited = {**meta, "n_features": meta["n_features"] + 1}
    (d2 / "meta.json").write_text(json.dumps({**edited, "meta_sha256": meta_digest(edited)}))
    with pytest.raises(DataError, match="features.csr records n_features=47236 but meta.json says 47237"):
        dataset_info(d2)
    edited = {k: v for k, v in meta.items() if k != "nnz"}
    (d2 / "meta.json").write_text(json.dumps({**edited, "meta_sha256": meta_digest(edited)}))
    with pytest.raises(DataError, match="meta.json: nnz is missing"):
        dataset_info(d2)


def test_damaged_labels_of_a_csr_chunk(wide, tmp_path):
    d = damaged_copy(wide, tmp_path)
    meta = json.loads((d / "meta.json").read_text())
    meta["checksums"]["labels"][4] = "0" * 64
    meta["meta_sha256"] = meta_digest(meta)
    (d / "meta.json").write_text(json.dumps(meta))
    assert f"the labels of {WHERE[4]} do not match their checksum" in _first_error(d)


# --------------------------------------------------------------------------------------------
# bad input over an existing dataset, and --layout


def _wide_line(label, pairs):
    return f"{label} " + " ".join(f"{i}:{v}" for i, v in pairs)


_GOOD = [_wide_line(1, [(3, 0.5), (12_000, 1)]), _wide_line(-1, [(7, 2), (11_500, 0.25)])]
BAD_WIDE = {
    "stray index": ([*_GOOD, _wide_line(1, [(2, 1), (1_000_000_000, 1)])], {}, "far above the largest index"),
    "above n_features": (_GOOD, {"n_features": 11_000}, "above n_features=11000"),
    "nan value": ([*_GOOD, _wide_line(1, [(5, "nan"), (10_500, 1)])], {}, "non-finite feature value"),
    "float32 overflow": ([*_GOOD, _wide_line(-1, [(5, "1e39")])], {"dtype": "float32"}, "overflows float32"),
    "unsorted indices": ([*_GOOD, _wide_line(1, [(12_000, 1), (4, 1)])], {}, "not strictly increasing"),
    "bad token": ([*_GOOD, "1 10001:0.5 oops"], {}, "is not `index:value`"),
    "one class": ([_wide_line(1, [(3, 1), (12_000, 1)])], {"n_classes": 2, "classes": ["-1", "1", "2"]}, "classes"),
}


@pytest.mark.parametrize("case", sorted(BAD_WIDE))
def test_bad_wide_input_over_an_existing_csr_dataset_changes_nothing(wide, tmp_path, case):
    lines, options, match = BAD_WIDE[case]
    shutil.copytree(wide["dir"], tmp_path / "ds")
    source = tmp_path / "bad.svm"
    source.write_text("\n".join(lines) + "\n")
    before = tree_digest(tmp_path)
    with pytest.raises(DataError, match=match):
        ingest(source, tmp_path / "ds", overwrite=True, **options)
    assert tree_digest(tmp_path) == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_good_wide_input_replaces_it_empty_chunks_included(wide, tmp_path):
    shutil.copytree(wide["dir"], tmp_path / "ds")
    source = tmp_path / "good.svm"
    source.write_text("\n".join([*_GOOD, "1", "-1", _GOOD[0]]) + "\n")  # rows 2-3: no features at all
    meta = ingest(source, tmp_path / "ds", overwrite=True, chunk_rows=2)
    assert meta["layout"] == "csr" and meta["n_rows"] == 5 and meta["nnz"] == 6 and meta["n_features"] == 12_000
    assert verify_dataset(tmp_path / "ds")["n_rows"] == 5
    X, y = next(iter(open_stream(tmp_path / "ds", block_size=5)))
    assert same_csr(X, read_dataset(source).X) and X[2:4].nnz == 0 and list(y) == [1, -1, 1, -1, 1]


def test_csr_dataset_at_a_url(wide):
    url = "memory://omkl-test-sparse/ds"
    meta = ingest(wide["file"], url, chunk_rows=CHUNK)
    try:
        assert meta["layout"] == "csr" and verify_dataset(url)["nnz"] == meta["nnz"]
        X = sp.vstack([b[0] for b in open_stream(url, block_size=900, start=500)], format="csr")
        assert same_csr(X, wide["ds"].X[500:])
    finally:
        import fsspec

        fsspec.filesystem("memory").rm("/omkl-test-sparse", recursive=True)


def test_stray_index_accepted_with_n_features(tmp_path):
    source = tmp_path / "s.svm"
    source.write_text("\n".join([*_GOOD, _wide_line(1, [(2, 1), (20_000_000, 1)])]) + "\n")
    ds = read_dataset(source, n_features=20_000_000)
    assert isinstance(ds.X, sp.csr_matrix) and ds.X.shape == (3, 20_000_000)


def test_layout_dense_refuses_huge_sparse_input_and_suggests_csr(wide, tmp_path):
    res = invoke("data", "ingest", wide["file"], "--out", tmp_path / "d", "--layout", "dense")
    assert res.exit_code == 2 and "GiB" in res.output and "--layout csr" in res.output, res.output
    assert not (tmp_path / "d").exists()


def test_layout_dense_and_csr_options(tmp_path):
    small = tmp_path / "small.svm"
    write_sparse_libsvm(small, rows=150, features=12_000, density=0.004, seed=2)
    res = invoke("data", "ingest", small, "--out", tmp_path / "dense", "--layout", "dense", "--chunk-rows", 64)
    assert res.exit_code == 0 and "layout:    dense" in res.output, res.output
    X_dense, _, meta = load_arrays(tmp_path / "dense")
    assert isinstance(X_dense, np.ndarray) and "layout" not in meta
    np.testing.assert_array_equal(X_dense, read_dataset(small).X.toarray())

    csv = tmp_path / "narrow.csv"
    rng = np.random.default_rng(0)
    rows = np.where(rng.random((50, 6)) < 0.3, rng.normal(size=(50, 6)).round(3), 0.0)
    csv.write_text("".join(f"{1 if i % 2 else -1}," + ",".join(map(str, r)) + "\n" for i, r in enumerate(rows)))
    res = invoke("data", "ingest", csv, "--out", tmp_path / "csr", "--layout", "csr", "--chunk-rows", 16)
    assert res.exit_code == 0 and "layout:    csr" in res.output, res.output
    X, y, meta = load_arrays(tmp_path / "csr")
    assert isinstance(X, sp.csr_matrix) and meta["nnz"] == np.count_nonzero(rows) == X.nnz
    np.testing.assert_array_equal(X.toarray(), rows)
    assert invoke("data", "ingest", csv, "--out", tmp_path / "x", "--layout", "zarr").exit_code == 2
    import pandas as pd

    frame = pd.DataFrame(rows, columns=[f"f{j}" for j in range(6)]).assign(y=np.where(np.arange(50) % 2, 1, -1))
    meta = ingest(frame, tmp_path / "table", label_column="y", layout="csr", chunk_rows=16)
    assert meta["layout"] == "csr" and meta["nnz"] == X.nnz and same_csr(load_arrays(tmp_path / "table")[0], X)


# --------------------------------------------------------------------------------------------
# scaling and the job data path


def test_scaler_on_a_sparse_stream(wide):
    stream = open_stream(wide["dir"], block_size=400)
    none = Scaler("none").fit_prefix(stream, 1000)
    X, _ = next(iter(stream))
    out = none.transform(X)
    assert isinstance(out, sp.csr_matrix) and out is not X and same_csr(out, X)
    minmax = Scaler("minmax").fit_prefix(stream, 1000)
    assert (minmax.min_ == 0).all()  # tf-idf: every column has zeros in the prefix
    scaled = minmax.transform(X)
    assert isinstance(scaled, sp.csr_matrix) and scaled.nnz == X.nnz and 0 < scaled.data.max() <= 1.0
    standard = Scaler("standard").fit_prefix(stream, 1000)
    np.testing.assert_allclose(standard.mean_, np.asarray(wide["ds"].X[:1000].mean(axis=0)).ravel(), atol=1e-15)
    with pytest.raises(ValueError, match=r"densify a sparse X .* use --scaling none"):
        standard.transform(X)
    with pytest.raises(ValueError, match="--scaling none"):
        Scaler("minmax", feature_range=(-1, 1)).fit_prefix(stream, 1000).transform(X)


@pytest.mark.parametrize("source", ["dir", "file"])
def test_job_data_delivers_csr_blocks(wide, source):
    data = str(wide[source])
    for scaling in ("none", "minmax"):
        job = load_job_data(data, feed_rows=256, seed=0, settings=resolve_settings(scaling=scaling), stop=1200)
        blocks = list(job.blocks)
        assert job.n_rows == 1200 and job.n_features == RCV1_FEATURES
        assert all(isinstance(X, sp.csr_matrix) for X, _ in blocks) and sum(len(y) for _, y in blocks) == 1200
    with pytest.raises(ValueError, match="--scaling none"):
        load_job_data(data, feed_rows=256, seed=0, settings=resolve_settings(scaling="standard"), stop=1200)


def test_run_refuses_standard_scaling_of_a_sparse_stream(wide, tmp_path):
    res = invoke(
        "run",
        "perceptron",
        "--data",
        wide["dir"],
        "--scaling",
        "standard",
        "--limit",
        300,
        "--quiet",
        "--trace-out",
        tmp_path / "t.json",
    )
    assert res.exit_code == 2 and "--scaling none" in res.output and "densify" in res.output, res.output


# --------------------------------------------------------------------------------------------
# the rcv1-shaped generator


def test_generator_is_rcv1_shaped_deterministic_and_learnable(wide, tmp_path):
    X, y = wide["ds"].X, wide["ds"].y
    per_row = np.diff(X.indptr)
    assert 70 < per_row.mean() < 80 and per_row.min() >= 1  # density 0.0016 of 47,236
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A.ravel(), 1.0, atol=1e-5)  # L2 rows
    assert 0.4 < (y == 1).mean() < 0.6
    assert X.shape[1] == RCV1_FEATURES  # the most popular column is the last one
    again = write_sparse_libsvm(tmp_path / "again.svm", rows=ROWS, seed=1)
    assert again["sha256"] == wide["info"]["sha256"]  # same seed, same bytes
    assert write_sparse_libsvm(tmp_path / "other.svm", rows=ROWS, seed=2)["sha256"] != again["sha256"]
    first = next(iter_sparse_blocks(rows=5000, seed=1))  # a longer stream starts with the shorter one
    assert same_csr(first[0][:ROWS], next(iter_sparse_blocks(rows=ROWS, seed=1))[0])
    from sklearn.linear_model import Perceptron

    model = Perceptron(random_state=0).fit(X[:2400], y[:2400])
    assert (model.predict(X[2400:]) != y[2400:]).mean() < 0.4  # a linear model learns it (chance: 0.5)


def test_synth_command_writes_the_libsvm_file(tmp_path):
    out = tmp_path / "wide.svm.gz"
    res = invoke(
        "data",
        "synth",
        "--shape",
        "rcv1",
        "--rows",
        300,
        "--features",
        20_000,
        "--density",
        0.004,
        "--seed",
        3,
        "--out",
        out,
    )
    assert res.exit_code == 0 and "300 x 20,000 rcv1-shaped LIBSVM file" in res.output, res.output
    ds = read_dataset(out)
    assert isinstance(ds.X, sp.csr_matrix) and ds.X.shape == (300, 20_000) and 60 < ds.X.nnz / 300 < 90
    assert invoke("data", "synth", "--shape", "rcv1", "--rows", 300, "--out", out).exit_code == 2  # exists
    assert invoke("data", "synth", "--shape", "rcv1", "--rows", 30, "--out", out, "--overwrite").exit_code == 0
    assert read_dataset(out).n_rows == 30
    other = tmp_path / "mine.svm"
    other.write_text("1 1:1\n-1 2:1\n")
    res = invoke("data", "synth", "--shape", "rcv1", "--rows", 30, "--out", other, "--overwrite")
    assert res.exit_code == 2 and "not a LIBSVM file generated by omkl-dist" in res.output
    assert other.read_text() == "1 1:1\n-1 2:1\n"
    res = invoke("data", "synth", "--shape", "rcv1", "--rows", 30, "--out", tmp_path / "x.svm", "--chunk-rows", 10)
    assert res.exit_code == 2 and "--chunk-rows is for --shape nonlinear" in res.output
    assert invoke("data", "synth", "--rows", 30, "--out", tmp_path / "n").exit_code == 2  # nonlinear needs --features
