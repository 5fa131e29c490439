"""Ingest: round trip, metadata, chunking, atomicity (nothing left behind on failure, an
overwrite that fails keeps the old copy), dataset_info validation and format_info."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from omkl_dist.storage import DataError, dataset_info, format_info, ingest, load_arrays, read_dataset
from omkl_dist.storage.layout import DatasetWriter, meta_digest, open_features

ROWS = 10


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(ROWS, 3))
    y = np.where(np.arange(ROWS) % 3 == 0, "+1", "-1")
    path = tmp_path / "src" / "small.csv"
    path.parent.mkdir()
    path.write_text("".join(f"{lab}," + ",".join(repr(float(v)) for v in row) + "\n" for lab, row in zip(y, X)))
    return path


def leftovers(parent):
    """Anything in ``parent`` besides the source folder: temp dirs of a failed ingest would show here."""
    return sorted(p.name for p in parent.iterdir() if p.name != "src")


def test_round_trip_and_meta(tmp_path, csv_file):
    out = tmp_path / "ds"
    meta = ingest(csv_file, out, chunk_rows=4)
    X, y, on_disk = load_arrays(out)
    ds = read_dataset(csv_file)
    np.testing.assert_array_equal(X, ds.X)
    np.testing.assert_array_equal(y, ds.y)
    assert on_disk == meta == dataset_info(out)
    assert meta["kind"] == "ingest"
    assert meta["source"] == str(csv_file.absolute())
    assert meta["sha256"] == ds.sha256
    assert meta["format"] == "csv"
    assert meta["label_map"] == [["-1", -1], ["1", 1]]
    assert meta["n_classes"] == 2
    assert meta["class_counts"] == {"-1": 6, "1": 4}
    assert (meta["n_rows"], meta["n_features"], meta["chunk_rows"], meta["dtype"]) == (ROWS, 3, 4, "float64")
    assert meta["created"]


def test_chunking_matches_chunk_rows(tmp_path, csv_file):
    out = tmp_path / "ds"
    ingest(csv_file, out, chunk_rows=3)
    assert open_features(out).chunks == (3, 3)
    pf = pq.ParquetFile(out / "labels.parquet")
    assert [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)] == [3, 3, 3, 1]


def test_float32_storage(tmp_path, csv_file):
    meta = ingest(csv_file, tmp_path / "ds", dtype="float32")
    X, _, _ = load_arrays(tmp_path / "ds")
    assert meta["dtype"] == "float32" and str(open_features(tmp_path / "ds").dtype) == "float32"
    assert X.dtype == np.float64
    np.testing.assert_allclose(X, read_dataset(csv_file).X, rtol=1e-6)


def test_float32_overflow_refused(tmp_path):
    src = tmp_path / "src" / "big.txt"
    src.parent.mkdir()
    src.write_text("1 1e300\n-1 2\n")
    with pytest.raises(DataError, match="overflows float32.*--dtype float64"):
        ingest(src, tmp_path / "ds", dtype="float32")
    assert leftovers(tmp_path) == []


def test_float32_overflow_in_a_table_names_its_row_in_the_table(tmp_path):
    """A table is written batch by batch (chunk_rows rows): the row named is the table's, not the batch's."""
    import pandas as pd

    frame = pd.DataFrame({"label": [1, -1] * 5, "a": [0.5] * 6 + [1e300] + [0.5] * 3})
    with pytest.raises(DataError, match=r"overflows float32 \(data row 7, feature 1\)"):
        ingest(frame, tmp_path / "ds", dtype="float32", chunk_rows=4)


def test_declared_classes_for_one_class_split(tmp_path):
    src = tmp_path / "src" / "pos.csv"
    src.parent.mkdir()
    src.write_text("1,0.5\n+1,0.25\n")
    with pytest.raises(DataError, match="only one class"):
        ingest(src, tmp_path / "ds")
    meta = ingest(src, tmp_path / "ds", classes=["-1", "1"])
    assert meta["class_counts"] == {"-1": 0, "1": 2} and meta["n_classes"] == 2


def test_failed_ingest_leaves_nothing(tmp_path):
    src = tmp_path / "src" / "bad.csv"
    src.parent.mkdir()
    src.write_text("1,2\n-1,x\n")
    with pytest.raises(DataError, match="non-numeric"):
        ingest(src, tmp_path / "ds")
    assert leftovers(tmp_path) == []


def test_failure_while_writing_leaves_nothing(tmp_path, csv_file, monkeypatch):
    calls = []

    def failing_append(self, X, y):
        calls.append(len(X))
        if len(calls) == 2:
            raise OSError("disk full (simulated)")
        return original(self, X, y)

    original = DatasetWriter.append
    monkeypatch.setattr(DatasetWriter, "append", failing_append)
    with pytest.raises(OSError, match="disk full"):
        ingest(csv_file, tmp_path / "ds", chunk_rows=4)
    assert calls == [4, 4]
    assert leftovers(tmp_path) == []


def test_existing_out_refused_without_overwrite(tmp_path, csv_file):
    ingest(csv_file, tmp_path / "ds")
    with pytest.raises(FileExistsError, match="overwrite"):
        ingest(csv_file, tmp_path / "ds")


def test_overwrite_replaces(tmp_path, csv_file):
    out = tmp_path / "ds"
    ingest(csv_file, out, chunk_rows=4)
    meta = ingest(csv_file, out, chunk_rows=5, overwrite=True)
    assert dataset_info(out)["chunk_rows"] == 5 == meta["chunk_rows"]
    assert leftovers(tmp_path) == ["ds"]


def test_failed_overwrite_keeps_old_copy(tmp_path, csv_file):
    out = tmp_path / "ds"
    ingest(csv_file, out, chunk_rows=4)
    before = (out / "meta.json").read_text()
    bad = tmp_path / "src" / "bad.csv"
    bad.write_text("1,2\n-1,2,3\n")
    with pytest.raises(DataError, match="ragged"):
        ingest(bad, out, overwrite=True)
    assert (out / "meta.json").read_text() == before
    X, _, _ = load_arrays(out)
    np.testing.assert_array_equal(X, read_dataset(csv_file).X)
    assert leftovers(tmp_path) == ["ds"]


@pytest.mark.parametrize("kwargs, match", [({"chunk_rows": 0}, "chunk_rows"), ({"dtype": "int8"}, "dtype")])
def test_bad_parameters_create_nothing(tmp_path, csv_file, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ingest(csv_file, tmp_path / "ds", **kwargs)
    assert leftovers(tmp_path) == []


def test_registry_name_as_source(tmp_path, data_dir):
    meta = ingest("fourclass", tmp_path / "ds", data_dir=data_dir)
    assert meta["source"] == str((data_dir / "fourclass" / "fourclass_scale.gz").absolute())
    assert meta["source_name"] == "fourclass"
    assert (meta["n_rows"], meta["n_features"]) == (862, 2)


def test_unknown_source(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        ingest(tmp_path / "missing.csv", tmp_path / "ds")


def test_dataset_info_rejects_non_dataset_and_tampering(tmp_path, csv_file):
    with pytest.raises(DataError, match="not an ingested dataset directory"):
        dataset_info(tmp_path)
    out = tmp_path / "ds"
    ingest(csv_file, out)
    meta = json.loads((out / "meta.json").read_text())
    for field, value, match in [
        ("n_rows", 11, r"shape \(10, 3\) but meta.json says \(11, 3\)"),
        ("n_classes", 3, "does not match n_classes=3"),
        ("class_counts", {"-1": 1, "1": 1}, "add up to 2"),
        ("sha256", None, r"sha256 is null \(null\), expected a string"),
        ("dtype", "float32", "is float64 but meta.json says float32"),
    ]:
        edited = {**meta, field: value}
        (out / "meta.json").write_text(json.dumps(edited))
        with pytest.raises(DataError, match="does not match its recorded hash"):  # any hand edit
            dataset_info(out)
        # an edit whose hash was recomputed still has to agree with the arrays it describes
        (out / "meta.json").write_text(json.dumps({**edited, "meta_sha256": meta_digest(edited)}))
        with pytest.raises(DataError, match=match):
            dataset_info(out)


def test_format_info_summary(tmp_path, csv_file):
    meta = ingest(csv_file, tmp_path / "ds", chunk_rows=4)
    text = format_info(meta)
    for expected in [
        "rows:      10",
        "features:  3",
        "classes:   2",
        "-1 -> -1: 6",
        "1 ->  1: 4",
        "dtype:     float64",
        "4 rows per chunk, 3 chunk(s)",
        "format csv",
        str(csv_file.absolute()),
        meta["sha256"],
        meta["created"],
    ]:
        assert expected in text, (expected, text)
    assert format_info({"n_rows": 5, "kind": "synth"})  # partial metadata (other writers) still prints


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_rows_without_labels_make_a_dataset_without_labels(tmp_path, layout):
    """``label_column="none"``: no labels.parquet, ``labelled: false``, an empty label map; the rows
    stream back as ``(X, None)`` for prediction; options about labels are refused; a labelled
    dataset whose labels file is lost is damaged, not unlabelled."""
    import pandas as pd

    X = np.random.default_rng(2).normal(size=(ROWS, 3))
    out = tmp_path / "ds"
    meta = ingest(pd.DataFrame(X, columns=["a", "b", "c"]), out, label_column="none", chunk_rows=4, layout=layout)
    assert meta == dataset_info(out) and not (out / "labels.parquet").exists()
    assert (meta["labelled"], meta["label_map"], meta["n_classes"], meta["checksums"]["labels"]) == (False, [], 0, [])
    assert "label_column" not in meta and meta["feature_names"] == ["a", "b", "c"]
    assert "labels:    none" in format_info(meta) and "classes:" not in format_info(meta)
    rows, y, _ = load_arrays(out, optional_labels=True)
    np.testing.assert_array_equal(rows.toarray() if layout == "csr" else rows, X)
    assert y is None
    with pytest.raises(DataError, match="--classes, --positive-class cannot apply to rows without labels"):
        ingest(pd.DataFrame(X), tmp_path / "x", label_column="none", classes=["a", "b"], positive_class="a")
    labelled = tmp_path / "labelled"
    ingest(pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=np.arange(ROWS) % 2), labelled)
    assert dataset_info(labelled)["labelled"] is True
    (labelled / "labels.parquet").unlink()
    with pytest.raises(DataError, match="labels.parquet is missing"):
        dataset_info(labelled)


@pytest.mark.parametrize("n_rows", [3, 4, 11])
def test_a_labels_last_writer_writes_the_files_of_the_dataset_writer(tmp_path, n_rows):
    """Features first in chunks, then the labels (a file checked as it is read): the same bytes in every
    file as rows and labels written together -- one chunk as long as the rows when they are fewer than
    a chunk's."""
    from omkl_dist.storage.layout import LabelsLastWriter

    rng = np.random.default_rng(n_rows)
    X, y = rng.normal(size=(n_rows, 3)), np.where(rng.random(n_rows) < 0.5, -1, 1)
    together = DatasetWriter(tmp_path / "a", n_rows=n_rows, n_features=3, chunk_rows=4)
    labels_last = LabelsLastWriter(tmp_path / "b", n_features=3, chunk_rows=4)
    for lo in range(0, n_rows, 4):
        together.append(X[lo : lo + 4], y[lo : lo + 4])
        labels_last.append(X[lo : lo + 4])
    metas = [together.close({}), labels_last.close({}, y)]
    assert [{k: v for k, v in m.items() if k not in ("created", "meta_sha256")} for m in metas][0] == {
        k: v for k, v in metas[1].items() if k not in ("created", "meta_sha256")
    }
    files = [
        {p.relative_to(tmp_path / d): p.read_bytes() for p in (tmp_path / d).rglob("*") if p.is_file()}
        for d in ("a", "b")
    ]
    assert files[0].keys() == files[1].keys()
    assert all(files[0][name] == files[1][name] for name in files[0] if name.name != "meta.json")
