"""Large CSV/TSV files ingested block by block (storage/readers/blocks.py): the same dataset, the same
errors and warnings as the whole-file reader, in memory that does not grow with the file.

Each case is ingested twice: whole (the block reader's size threshold above the file) and block by
block (threshold 0, blocks of a few dozen bytes, so that rows, blank lines and line ends fall on
every kind of block boundary)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import warnings

import numpy as np
import pytest
from ingest_memory import ingest_growth

from omkl_dist.storage import DataError, ingest, read_dataset
from omkl_dist.storage.readers import blocks


def _ingest(path, out, monkeypatch, *, streamed, block=37, **options):
    """``(meta or the DataError's text, warnings' texts, whether blocks were read)``."""
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", block)
    used = []
    real = blocks.BlockFile.checked_chunks

    def spied(self, *args):  # (read to its end: a block it does not read alike ends it; the file is read whole)
        yield from real(self, *args)
        used.append(1)

    monkeypatch.setattr(blocks.BlockFile, "checked_chunks", spied)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            meta = ingest(path, out, chunk_rows=4, **options)
        except DataError as exc:
            meta = str(exc)
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in ("created", "meta_sha256")}
    return meta, [str(w.message) for w in caught], bool(used)


def _both(tmp_path, monkeypatch, content, name="data.csv", *, compress=None, expect_blocks=True, **options):
    data = content.encode() if isinstance(content, str) else content
    path = tmp_path / name
    path.write_bytes(compress(data) if compress else data)
    whole, whole_warned, _ = _ingest(path, tmp_path / "whole", monkeypatch, streamed=False, **options)
    streamed, warned, used = _ingest(path, tmp_path / "blocks", monkeypatch, streamed=True, **options)
    assert streamed == whole
    assert warned == whole_warned
    if isinstance(whole, dict):
        assert used == expect_blocks  # read block by block, not whole
    if isinstance(whole, dict):
        for part in ("features.zarr", "labels.parquet"):
            a, b = (tmp_path / d / part for d in ("whole", "blocks"))
            assert a.exists() == b.exists()
    return whole


def _rows(n, label=lambda i: str(1 - 2 * (i % 2)), sep=",", start=0):
    rng = np.random.default_rng(n)
    return "".join(
        sep.join([label(i), *(repr(float(v)) for v in rng.normal(size=3))]) + "\n" for i in range(start, start + n)
    )


NUMERIC = "label,a,b,c\n" + _rows(23)
WORDS = "label,a,b,c\n" + _rows(23, label=lambda i: ["yes", "no", "maybe"][i % 3])


CASES = [
    (NUMERIC, {}),
    (WORDS, {}),
    # numbers for many blocks, then a word: every label is text (as the whole file reads it)
    ("label,a,b,c\n" + _rows(30) + _rows(1, label=lambda i: "other", start=30), {}),
    ("a,b,label,c\n" + "".join(f"{i}.5,{i},{'ab'[i % 2]},-{i}\n" for i in range(40)), {}),
    ("a,b,label,c\n" + "".join(f"{i}.5,{i},{'ab'[i % 2]},-{i}\n" for i in range(40)), {"label_column": 2}),
    ("a,b,label,c\n" + "".join(f"{i}.5,{i},{i % 3},-{i}\n" for i in range(40)), {"label_column": "c"}),
    (",label,a,b,c\n" + "".join(f"{i},{_rows(1, start=i)}" for i in range(30)), {}),  # pandas' row numbers
    (",label,a,b,c\n" + "".join(f"id-{i},{_rows(1, start=i)}" for i in range(30)), {}),  # pandas' text index
    (",a,b\n" + "".join(f"s{i},{i},{-i}\n" for i in range(30)), {"label_column": "none"}),  # rows to predict
    (_rows(25), {}),  # headerless CSV
    (_rows(25), {"label_column": "last", "fmt": "csv"}),
    ("label\ta\tb\tc\n" + _rows(25, sep="\t"), {}),  # TSV
    ("\n\nlabel,a,b,c\n" + _rows(5) + "\n\n" + _rows(9, start=5) + "\n" + _rows(9, start=14), {}),  # blank lines
    (NUMERIC.replace("\n", "\r\n"), {}),
    (NUMERIC.rstrip("\n"), {}),  # no line end at the end
    ("\ufefflabel,a,b,c\n" + _rows(20), {}),  # a spreadsheet's byte-order mark
    ("a,b,c\n" + "".join(f"{i},{i * 2},{-i}\n" for i in range(30)), {"label_column": "none"}),
    (WORDS, {"classes": ["yes", "no", "maybe", "never"]}),
    ("label,a,b,c\n" + _rows(30, label=lambda i: ["up", "down"][i % 2]), {"positive_class": "down"}),
    ("age,a,b\n" + "".join(f"{20 + i},{i},{-i}\n" for i in range(60)), {}),  # a guessed label column: warned
    # ... and a column of row ids: both warned, in the same order
    ("age,customer_id,b\n" + "".join(f"{20 + i},{1000 + i},{-i}\n" for i in range(60)), {}),
    ("label,a,b,c\n" + _rows(30, label=lambda i: f"{i % 2}.0"), {}),
    (NUMERIC, {"dtype": "float32", "feature_groups": {"first": "0:2", "last": [2]}}),
    # R's write.csv: every name, row name and text quoted
    (
        '"","a","b","label"\n'
        + "".join(f'"{i + 1}",{i * 0.37:.6f},{-i * 1.3e-3!r},"{["yes", "no"][i % 2]}"\n' for i in range(40)),
        {},
    ),
    ('"label","a","b"\n' + "".join(f'"{i % 3}",{i}.25,"{-i}"\n' for i in range(40)), {}),
    # R's write.csv of a frame whose row names are text
    ('"","a","label"\n' + "".join(f'"s{i}",{i * 0.37:.6f},"{["yes", "no"][i % 2]}"\n' for i in range(40)), {}),
    ('"","a","label"\n' + "".join(f'"s{i}",{i * 0.37:.6f},{i % 2}\n' for i in range(40)), {}),
    ('"a"\t"label"\n' + "".join(f'{i}.5\t"{["up", "down"][i % 2]}"\n' for i in range(40)), {}),
]


@pytest.mark.parametrize(("content", "options"), CASES)
def test_the_blocks_read_what_the_whole_file_reads(tmp_path, monkeypatch, content, options):
    meta = _both(tmp_path, monkeypatch, content, **options)
    assert isinstance(meta, dict), meta


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_compressed_files_are_read_block_by_block(tmp_path, monkeypatch, compress):
    meta = _both(tmp_path, monkeypatch, WORDS, name="data.csv.x", compress=compress)
    assert meta["n_rows"] == 23


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("label,a,b,c\n" + _rows(30) + "1,2,3\n" + _rows(3), "ragged row"),
        ("label,a,b,c\n" + _rows(30) + "1,2,x,3\n" + _rows(3), "non-numeric value"),
        # the count of rows missing a value is the whole file's, not the block's
        ("label,a,b,c\n" + "1,2,,3\n" + _rows(30) + "1,2,,3\n" + _rows(3) + "-1,4,,5\n", "empty field"),
        ("label,a,b,c\n" + _rows(30) + ",2,3,4\n", "empty"),
        ("label,a,b,c\n" + _rows(30) + "nan,2,3,4\n", "non-finite label"),
        # a non-finite value early, a bad row late: the bad row is named, as by the whole-file reader
        ("label,a,b,c\n1,inf,2,3\n" + _rows(30) + "1,2,3\n", "ragged row"),
        ("label,a,b,c\n" + _rows(30) + "1,2,-inf,3\n" + _rows(3), "non-finite feature value -inf"),
        ("label,a,b,c\n" + _rows(30) + "1,2,3,1e300\n", None),
        (_rows(30) + "1,2\n", "ragged row"),  # headerless: compared with the file's first row
        ("when,label,a\n" + "".join(f"2024-01-{i + 1:02d},1,{i}\n" for i in range(30)), "non-numeric value"),
        ("label,a,b,c\n" + _rows(30, label=lambda i: ["yes", "no"][i % 2]) + "no,1,2,x\n", "non-numeric value"),
    ],
)
def test_the_blocks_name_the_problems_the_whole_file_reader_names(tmp_path, monkeypatch, content, problem):
    result = _both(tmp_path, monkeypatch, content, dtype="float32")
    if problem is None:
        assert "overflows float32 (data row 31" in result
    else:
        assert isinstance(result, str) and problem in result, result


@pytest.mark.parametrize(
    ("content", "read"),
    [
        ('label,a,b,c\n"1,5",2,3,4\n' + _rows(30, label=lambda i: "x"), True),  # a delimiter inside quotes
        ("label,a,b,c\r" + _rows(30).replace("\n", "\r"), True),  # old Mac line ends
        ("label,a,b,c\n", False),  # a header alone: an error
        ("", False),
    ],
)
def test_what_the_blocks_do_not_read_alike_is_read_whole(tmp_path, monkeypatch, content, read):
    meta = _both(tmp_path, monkeypatch, content, expect_blocks=False)
    assert isinstance(meta, dict) == read, meta


def test_a_zip_archive_is_read_whole(tmp_path, monkeypatch):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data.csv", NUMERIC)
    _both(tmp_path, monkeypatch, buffer.getvalue(), name="data.csv.zip", expect_blocks=False)


def _read(path, monkeypatch, *, streamed, **options):
    """``(the dataset's parts or the DataError's text, warnings' texts)`` of read_dataset."""
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 41)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ds = read_dataset(path, optional_labels=True, **options)
            got = (ds.X.tobytes(), ds.X.shape, None if ds.y is None else ds.y.tolist(), ds.label_map)
            got += (ds.feature_names, ds.fmt, ds.sha256)
        except DataError as exc:
            got = str(exc)
    return got, [str(w.message) for w in caught]


@pytest.mark.parametrize(
    ("content", "options"),
    [(c, {k: v for k, v in o.items() if k not in ("dtype", "feature_groups")}) for c, o in CASES]
    + [
        # rows to predict: the label column decided by a model's features
        ("a,b,c\n" + "".join(f"{i},{i * 2},{-i}\n" for i in range(30)), {"feature_names": ["a", "b", "c"]}),
        ("a,outcome,b,c\n" + "".join(f"{i},x,{i * 2},{-i}\n" for i in range(30)), {"feature_names": ["a", "b", "c"]}),
        (",a,b,c\n" + "".join(f"{i},{i},{i * 2},{-i}\n" for i in range(30)), {"feature_names": ["a", "b", "c"]}),
        (NUMERIC, {"n_features": 4}),
        ("label,a,b,c\n" + _rows(30, label=lambda i: "yes"), {"one_class": True}),
        ("label,a,b,c\n" + _rows(30, label=lambda i: "yes"), {}),
    ],
)
def test_read_dataset_reads_a_large_file_block_by_block_into_the_same_dataset(tmp_path, monkeypatch, content, options):
    path = tmp_path / "data.csv"
    path.write_text(content)
    whole = _read(path, monkeypatch, streamed=False, **options)
    assert _read(path, monkeypatch, streamed=True, **options) == whole


def test_a_matrix_beyond_the_memory_is_refused_with_the_ingest_fix(tmp_path, monkeypatch):
    path = tmp_path / "data.csv"
    path.write_text(NUMERIC)
    monkeypatch.setattr(blocks.textio, "memory_budget", lambda: 100)
    _, _ = _read(path, monkeypatch, streamed=False)  # (read whole: no block matrix)
    got, _ = _read(path, monkeypatch, streamed=True)
    assert "23 rows x 3 features take" in got and "omkl data ingest FILE --out DIR" in got


@pytest.mark.parametrize("budget", [None, 23 * 3 * 8 - 1])
def test_a_matrix_is_filled_as_the_file_is_checked(tmp_path, monkeypatch, budget):
    """`omkl run`/`predict` of a large file: the pass that checks every row fills the matrix (each block
    parsed once, not again for the features), the same bytes as the whole-file reader's; rows that
    outgrow the memory a matrix may take are refused as before (reserving the space cannot fail the read)."""
    path = tmp_path / "data.csv"
    path.write_text(NUMERIC)
    whole, _ = _read(path, monkeypatch, streamed=False)
    parses = []
    real = blocks.arrow_cells
    monkeypatch.setattr(blocks, "arrow_cells", lambda *a, **k: parses.append(1) or real(*a, **k))
    if budget is not None:
        monkeypatch.setattr(blocks.textio, "memory_budget", lambda: budget)
    got, _ = _read(path, monkeypatch, streamed=True)
    with_rows = [block for block, line in blocks.line_blocks(path) if line > 1 or block.count(b"\n") > 1]
    if budget is None:
        assert got == whole and len(parses) == len(with_rows) > 5
    else:
        assert "23 rows x 3 features take" in got


@pytest.mark.slow
def test_a_large_file_is_ingested_in_memory_that_does_not_grow_with_it(tmp_path):
    """A 200 MB CSV: the whole-file reader holds the file's content, pyarrow's table of it and the
    matrix at once (about five times the file); block by block the process grows by less than the
    file (a few blocks, and 16 bytes a row for the labels)."""
    path = tmp_path / "big.csv"
    rng = np.random.default_rng(0)
    values = rng.normal(size=(5_000, 12)).round(6)
    rows = "".join(f"{'yes' if i % 3 else 'no'}," + ",".join(map(str, v)) + "\n" for i, v in enumerate(values))
    copies = 200 * 2**20 // len(rows)
    with open(path, "w") as fh:
        fh.write("outcome," + ",".join(f"f{j}" for j in range(12)) + "\n")
        for _ in range(copies):
            fh.write(rows)
    size_kb = path.stat().st_size // 1024
    report = ingest_growth(path, tmp_path / "ds")
    assert report["rows"] == 5_000 * copies
    assert report["grew_kb"] < 0.8 * size_kb, (report, size_kb)


def test_n_features_given_for_a_text_file_must_be_its_width(tmp_path):
    """(Checked only for a format no reader has: a CSV of 3 features was read with n_features=4.)"""
    path = tmp_path / "data.csv"
    path.write_text(NUMERIC)
    with pytest.raises(DataError, match="the file has 3 feature columns, n_features says 4"):
        read_dataset(path, n_features=4)
    assert read_dataset(path, n_features=3).n_features == 3


def test_columns_left_out_and_kept_are_read_block_by_block(tmp_path, monkeypatch):
    """``--features -region`` and ``--keep customer_id`` no longer send a large file to the whole-file
    reader: the same dataset, the same kept ids as their text ('00123', '', 'NA' as written), the same
    carried.parquet bytes (meta.json's checksum)."""
    ids = ["00123", "", "NA", "7", "x y", "007", "1e3", "-0"]
    rows = "".join(f"{ids[i % 8]},{i % 3 - 1}.5,north,{i * 0.25},{'yes' if i % 3 else 'no'}\n" for i in range(41))
    content = "customer_id,a,region,b,churn\n" + rows
    options = {"label_column": "churn", "features": "-region", "keep": "customer_id"}
    path = tmp_path / "data.csv"
    path.write_text(content)
    whole, _, _ = _ingest(path, tmp_path / "whole", monkeypatch, streamed=False, block=29, **options)
    streamed, _, used = _ingest(path, tmp_path / "blocks", monkeypatch, streamed=True, block=29, **options)
    assert used and streamed == whole and whole["feature_names"] == ["a", "b"]
    assert whole["carried"]["columns"] == ["customer_id"]
    import pyarrow.parquet as pq

    for folder in ("whole", "blocks"):
        assert pq.read_table(tmp_path / folder / "carried.parquet")["customer_id"].to_pylist() == [
            ids[i % 8] for i in range(41)
        ]
    # labels that are numbers for many blocks, then a word: the rows before it are written once, ids and all
    late = (
        content.replace("yes", "1").replace("no", "0").rstrip("\n").rsplit("\n", 1)[0] + "\n00999,1.5,north,2,maybe\n"
    )
    path.write_text(late)
    whole, _, _ = _ingest(path, tmp_path / "whole", monkeypatch, streamed=False, block=29, **options, overwrite=True)
    streamed, _, used = _ingest(
        path, tmp_path / "blocks", monkeypatch, streamed=True, block=29, **options, overwrite=True
    )
    assert used and streamed == whole and len(whole["label_map"]) == 3
    for folder in ("whole", "blocks"):
        assert pq.read_table(tmp_path / folder / "carried.parquet")["customer_id"].to_pylist()[-3:] == [
            ids[38 % 8],
            ids[39 % 8],
            "00999",
        ]
    (tmp_path / "left").mkdir()
    left_out = _both(tmp_path / "left", monkeypatch, content, label_column="churn", features="-region,-customer_id")
    assert left_out["feature_names"] == ["a", "b"] and "carried" not in left_out
    for streamed in (False, True):  # read to learn from (omkl run): the same rows either way
        monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
        ds = read_dataset(path, label_column="churn", features="-region,-customer_id")
        assert ds.feature_names == ["a", "b"] and ds.X.shape == (41, 2) and ds.X[3, 1] == 0.75


def test_an_ingest_parses_each_block_once(tmp_path, monkeypatch):
    """The pass that checks every row also hands its features to the writer (the labels, which the
    label map needs whole, are written last): each block is parsed once, not once to check it and
    again for its features; a bad row late in the file leaves an ingested dataset it would replace
    as it was, and nothing else behind."""
    path = tmp_path / "data.csv"
    path.write_text(NUMERIC)
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 37)
    parses = []
    real = blocks.arrow_cells
    monkeypatch.setattr(blocks, "arrow_cells", lambda *a, **k: parses.append(1) or real(*a, **k))
    meta = ingest(path, tmp_path / "ds", chunk_rows=4)
    with_rows = [
        block for block, line in blocks.line_blocks(path) if line > 1 or block.count(b"\n") > 1
    ]  # (not the header alone)
    assert meta["n_rows"] == 23 and len(parses) == len(with_rows) > 5
    before = sorted((p.relative_to(tmp_path), p.read_bytes()) for p in (tmp_path / "ds").rglob("*") if p.is_file())
    path.write_text(NUMERIC + "1,2,x,3\n")
    with pytest.raises(DataError, match="row 25, column 3 .'b'.: non-numeric value 'x'"):
        ingest(path, tmp_path / "ds", chunk_rows=4, overwrite=True)
    after = sorted((p.relative_to(tmp_path), p.read_bytes()) for p in (tmp_path / "ds").rglob("*") if p.is_file())
    assert after == before and sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "ds"]


@pytest.mark.parametrize("compress", [None, gzip.compress])
def test_an_ingest_read_by_blocks_reports_its_progress(tmp_path, monkeypatch, compress):
    """`omkl data ingest` of a large file shows a bar of the stored file's bytes read (a 6 GB export
    takes minutes), on standard error, to 100 %; `--quiet`, none. In Python, ``ingest(progress=)``."""
    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    path = tmp_path / ("data.csv.gz" if compress else "data.csv")
    # (gzip reads its file 8 KB at a time: a compressed file of a few reads)
    words = "label,a,b,c\n" + _rows(1500, label=lambda i: ["yes", "no", "maybe"][i % 3]) if compress else WORDS
    path.write_bytes(compress(words.encode()) if compress else words.encode())
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 4096 if compress else 37)
    reports = []
    ingest(path, tmp_path / "ds", progress=lambda done, total: reports.append((done, total)))
    size = path.stat().st_size
    assert reports[-1] == (size, size) and len(reports) > 1
    assert all(a[0] <= b[0] for a, b in zip(reports, reports[1:]))
    shown = CliRunner().invoke(main, ["data", "ingest", str(path), "--out", str(tmp_path / "a")])
    assert shown.exit_code == 0 and f"ingesting {path.name}: 100%" in shown.stderr
    quiet = CliRunner().invoke(main, ["data", "ingest", str(path), "--out", str(tmp_path / "b"), "--quiet"])
    assert quiet.exit_code == 0 and "ingesting" not in quiet.stderr and "ingested" in quiet.stdout


def test_a_retrain_shows_the_bar_of_its_window_file_read(tmp_path, monkeypatch):
    """`omkl retrain --data FILE` ingests a large file first (so does `omkl submit`): the same bar."""
    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    path = tmp_path / "day.csv"
    path.write_text("label,a,b,c\n" + _rows(800))
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 4096)
    args = ["retrain", "--store", str(tmp_path / "store"), "--model", "m", "--algo", "spa", "--no-plots"]
    done = CliRunner().invoke(main, [*args, "--data", str(path)])
    assert done.exit_code == 0, done.stderr
    assert "ingesting day.csv: 100%" in done.stderr


def test_a_run_and_a_prediction_show_the_bars_of_their_file_read(tmp_path, monkeypatch):
    """`omkl run` and `omkl predict` of a large file: a bar of the file's bytes read (into memory), then
    one of the rows learnt or predicted, on stderr (the predictions may be on stdout); `--quiet`, none."""
    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    path = tmp_path / "rows.csv"
    path.write_text("label,a,b,c\n" + _rows(300))
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 1024)
    run = CliRunner().invoke(main, ["run", "spa", "--data", str(path), "--model-out", str(tmp_path / "m")])
    assert run.exit_code == 0, run.stderr
    assert "reading rows.csv: 100%" in run.stderr and "spa on rows.csv: 100%" in run.stderr
    run = CliRunner().invoke(main, ["run", "spa", "--data", str(path), "--quiet"])
    assert run.exit_code == 0 and "reading" not in run.stderr
    args = ["predict", "--model-dir", str(tmp_path / "m"), "--data", str(path), "--block-rows", "64"]
    shown = CliRunner().invoke(main, [*args, "--out", "-"])
    assert shown.exit_code == 0, shown.stderr
    assert "reading rows.csv: 100%" in shown.stderr and "predicting: 100%" in shown.stderr
    assert shown.stdout.count("\n") == 301  # (the header and a line a row: the bars are not in the predictions)
    quiet = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "p.csv"), "--quiet"])
    assert quiet.exit_code == 0 and "reading" not in quiet.stderr and "predicting" not in quiet.stderr
    # the bars end their lines before the summary: a terminal (both streams) shows the JSON on a line of its own
    summary = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "q.csv"), "--json"])
    assert "predicting: 100%" in summary.stderr and json.loads(summary.output.splitlines()[-1])["rows"] == 300
    one_go = CliRunner().invoke(main, [*args[:-2], "--out", str(tmp_path / "r.csv")])  # one block: no bar flashes
    assert one_go.exit_code == 0 and "predicting" not in one_go.stderr
