"""A spreadsheet's CSV export in a European locale -- ';'-separated, decimal commas (Excel in German,
French, Spanish...) -- and a '|'-separated file with a header are read as they are (``ssv_header``,
``psv_header``: by name, through pyarrow), into the same dataset as the comma-separated file. Before,
each was an error whose fix converted it with pandas first. A workbook (.xlsx, .ods, .xls) is refused
as such, with how to save it as CSV: an .xlsx was "a zip archive of 3 files; unzip it"."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from omkl_dist.pipelines.cli import main
from omkl_dist.storage import DataError, detect_format, ingest, load_arrays, read_dataset
from omkl_dist.storage.readers import blocks


def _frame(n=120):
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.normal(size=(n, 3)) * [1.0, 100.0, 0.001], columns=["Alter", "Umsatz", "Quote"])
    frame["Kündigung"] = np.where(frame.Alter > 0, "ja", "nein")
    return frame


@pytest.fixture()
def files(tmp_path):
    frame = _frame()
    frame.to_csv(tmp_path / "comma.csv", index=False)
    frame.to_csv(tmp_path / "excel.csv", sep=";", decimal=",", index=False, encoding="utf-8")
    frame.to_csv(tmp_path / "points.csv", sep=";", index=False)
    frame.to_csv(tmp_path / "pipes.txt", sep="|", index=False)
    return tmp_path


def test_detected_by_content(files):
    assert detect_format(files / "excel.csv", (files / "excel.csv").read_bytes()) == "ssv_header"
    assert detect_format(files / "points.csv", (files / "points.csv").read_bytes()) == "ssv_header"
    assert detect_format(files / "pipes.txt", (files / "pipes.txt").read_bytes()) == "psv_header"
    assert detect_format(files / "comma.csv", (files / "comma.csv").read_bytes()) == "csv_header"


@pytest.mark.parametrize("name", ["excel.csv", "points.csv", "pipes.txt"])
def test_the_same_dataset_as_the_comma_separated_file(files, name):
    want = read_dataset(files / "comma.csv", label_column="Kündigung")
    got = read_dataset(files / name, label_column="Kündigung")
    assert np.array_equal(got.X, want.X) and np.array_equal(got.y, want.y)  # (the same bits: exact parsing)
    assert got.label_map == want.label_map and got.feature_names == want.feature_names
    assert got.label_name == "Kündigung" and got.fmt == detect_format(files / name, (files / name).read_bytes())
    ingest(files / name, files / f"{name}-ds", label_column="Kündigung")
    X, y, meta = load_arrays(files / f"{name}-ds")
    assert np.array_equal(X, want.X) and meta["label_column"] == "Kündigung"


def test_run_and_predict_such_a_file(files):
    """The whole path a user takes: learn from the export, score a second export of ids and features."""
    run = CliRunner().invoke(main, ["run", "spa", "--data", str(files / "excel.csv"), "--label-column", "Kündigung",
                                    "--model-out", str(files / "m"), "--quiet", "--json"])  # fmt: skip
    assert run.exit_code == 0, run.output
    rows = _frame(30).drop(columns="Kündigung")
    rows.insert(0, "Kunde", [f"K{i}" for i in range(30)])
    rows.to_csv(files / "neu.csv", sep=";", decimal=",", index=False)
    scored = CliRunner().invoke(main, ["predict", "--model-dir", str(files / "m"), "--data", str(files / "neu.csv"),
                                       "--out", str(files / "p.csv")])  # fmt: skip
    assert scored.exit_code == 0, scored.output
    written = pd.read_csv(files / "p.csv")
    assert written.columns.tolist() == ["row", "label", "decision", "Kunde"] and set(written.label) <= {"ja", "nein"}


def test_bad_values_and_empty_files_are_named(tmp_path):
    (tmp_path / "text.csv").write_text("a;b;label\n1,5;x;ja\n2,5;3,0;nein\n")
    with pytest.raises(DataError, match="feature column 'b' is .*, not numeric"):
        read_dataset(tmp_path / "text.csv")
    (tmp_path / "header.csv").write_text("a;b;label\n")
    with pytest.raises(DataError, match="only a header row, no data rows"):
        read_dataset(tmp_path / "header.csv")
    (tmp_path / "missing.csv").write_text("a;b;label\n1,5;;ja\n2,5;3,0;nein\n")
    with pytest.raises(DataError, match="missing value in feature column 'b'"):
        read_dataset(tmp_path / "missing.csv")
    assert read_dataset(tmp_path / "missing.csv", impute="mean").X[0, 1] == 3.0


def _zip(path, members: dict):
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("streamed", [False, True])
def test_workbooks_are_refused_as_such(tmp_path, monkeypatch, streamed):
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
    xlsx = _zip(tmp_path / "book.xlsx", {"[Content_Types].xml": "<x/>", "xl/workbook.xml": "<x/>",
                                         "xl/worksheets/sheet1.xml": "<x/>"})  # fmt: skip
    ods = _zip(tmp_path / "book.ods", {"mimetype": "application/vnd.oasis.opendocument.spreadsheet",
                                       "content.xml": "<x/>"})  # fmt: skip
    xls = tmp_path / "book.xls"
    xls.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    for path, what in ((xlsx, "an Excel workbook \\(.xlsx\\)"), (ods, "an OpenDocument spreadsheet \\(.ods\\)"),
                       (xls, "a Microsoft Office file \\(an Excel 97-2003 workbook\\?\\)")):  # fmt: skip
        for read in (lambda: read_dataset(path), lambda: ingest(path, tmp_path / "ds")):
            with pytest.raises(DataError, match=f"{what}, not a data file. Fix: save the sheet as CSV"):
                read()
    assert not (tmp_path / "ds").exists()
    pages = {  # a web page saved in the data's place: plain, gzipped, after a byte-order mark and a comment
        "page.csv": b"<!DOCTYPE html>\n<html><body>1,2</body></html>\n",
        "page.csv.gz": gzip.compress(b"  <html lang='en'>\n<p>1,2</p></html>\n"),
        "page.tsv": b"\xef\xbb\xbf<!-- saved -->\n<HTML>\n<body>a\tb</body></HTML>\n",
    }
    for name, content in pages.items():
        (tmp_path / name).write_bytes(content)
        for read in (lambda: read_dataset(tmp_path / name), lambda: ingest(tmp_path / name, tmp_path / "ds")):
            with pytest.raises(DataError, match="a web page \\(HTML\\), not a data file. Fix: .* Raw button"):
                read()
    (tmp_path / "html.csv").write_text("html,label\n1,0\n2,1\n")  # (a column named html is data)
    assert read_dataset(tmp_path / "html.csv").feature_names == ["html"]
    archive = _zip(tmp_path / "two.zip", {"a.csv": "a,b\n1,2\n", "b.csv": "a,b\n1,2\n"})  # (a real archive)
    with pytest.raises(DataError, match="the zip archive holds 2 files"):
        read_dataset(archive)
