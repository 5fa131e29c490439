"""A folder of CSV/TSV files is one table (storage/readers/joined.py): a Spark job's ``part-*.csv`` output or
a folder of daily exports is read as the file its parts make joined in name order with one header row -- the
same numbers, labels and dataset, whole or block by block -- and a bad row is named by its own file and line."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from click.testing import CliRunner
from generated_data import generated

from omkl_dist.pipelines.cli import main
from omkl_dist.storage import DataError, column_names, ingest, read_dataset
from omkl_dist.storage.readers import blocks

HEADER = "f0,f1,f2,label\n"


def _rows(lo: int, hi: int) -> list[str]:
    X, y = generated("generated-multiclass", 240)
    return [",".join(repr(float(v)) for v in X[i, :3]) + f",c{int(y[i])}\n" for i in range(lo, hi)]


@pytest.fixture
def parts(tmp_path):
    """A Spark-like output folder: three parts (one gzipped, one with CRLF line ends, one without a last
    line break) and an empty one, beside _SUCCESS and a hidden checksum file; and the file they make,
    joined by hand."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "part-0.csv").write_text(HEADER + "".join(_rows(0, 80)))
    (folder / "part-1.csv.gz").write_bytes(gzip.compress((HEADER + "".join(_rows(80, 160))).encode()))
    (folder / "part-2.csv").write_bytes((HEADER + "".join(_rows(160, 240))).replace("\n", "\r\n").encode()[:-2])
    (folder / "part-3.csv").write_text("")  # (an empty partition)
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-0.csv.crc").write_bytes(b"\x00\x01")
    (tmp_path / "joined.csv").write_text(HEADER + "".join(_rows(0, 240)))
    return folder


@pytest.mark.parametrize("streamed", [False, True])
def test_a_folder_of_csv_files_reads_as_the_joined_file(parts, tmp_path, monkeypatch, streamed):
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)  # (ingest block by block, or whole)
    ours, joined = read_dataset(parts), read_dataset(tmp_path / "joined.csv")
    np.testing.assert_array_equal(ours.X, joined.X)
    np.testing.assert_array_equal(ours.y, joined.y)
    assert ours.label_map == joined.label_map and ours.feature_names == ["f0", "f1", "f2"]
    assert column_names(parts) == ["f0", "f1", "f2", "label"]
    meta = ingest(parts, tmp_path / "ds")
    assert meta["source"] == str(parts) and meta["n_rows"] == 240
    assert meta["checksums"] == ingest(tmp_path / "joined.csv", tmp_path / "ds2")["checksums"]


def test_headers_rows_and_other_folders(parts, tmp_path):
    """Parts whose header differs are refused, naming both; a bad value is named by its part and line
    there; files without a header are joined whole; a folder of anything else is still a folder."""
    (parts / "part-3.csv").write_text("f0,f2,f1,label\n" + _rows(0, 1)[0])
    with pytest.raises(DataError, match=r"part-3.csv: its header row differs from part-0.csv's \('f0,f2,f1,label'"):
        read_dataset(parts)
    (parts / "part-3.csv").write_text(HEADER + "".join(_rows(0, 3)) + "1.0,oops,2.0,c1\n")
    with pytest.raises(DataError, match=r"part-3.csv, row 5, column 2 \('f1'\): non-numeric value 'oops'"):
        read_dataset(parts)
    bare = tmp_path / "bare"
    bare.mkdir()
    for i, (lo, hi) in enumerate(((0, 100), (100, 240))):
        (bare / f"day-{i}.csv").write_text("".join(_rows(lo, hi)))
    whole = read_dataset(bare, label_column="last")
    np.testing.assert_array_equal(whole.X, read_dataset(tmp_path / "joined.csv").X)
    (bare / "README.md").write_text("days\n")
    with pytest.raises(DataError, match="is a directory, not a data file"):
        read_dataset(bare, label_column="last")


def test_the_command_line_takes_the_folder(parts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = ("run", "om2", "--block-size", 64, "--json", "--data")
    folder = json.loads(CliRunner().invoke(main, [*run, str(parts)]).stdout.splitlines()[-1])
    joined = json.loads(CliRunner().invoke(main, [*run, "joined.csv"]).stdout.splitlines()[-1])
    assert (folder["mistakes"], folder["n"]) == (joined["mistakes"], 240)
    inside = CliRunner().invoke(main, ["data", "ingest", str(parts), "--out", str(parts / "ds")])
    assert inside.exit_code == 2 and "lies inside the source folder" in inside.stderr
