"""`omkl predict`: parquet (or CSV/TSV) predictions from a store version or a model folder, streamed
block by block with bounded memory, original labels, multi-class scores, and the bad inputs."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from omkl_dist.persistence import load_model
from omkl_dist.pipelines.retrain import retrain
from omkl_dist.storage import open_stream
from omkl_dist.storage.layout import meta_digest
from omkl_dist.storage.model_store import ModelStore
from omkl_dist.storage.outputs import PREDICTIONS_MARKER
from omkl_dist.storage.synth import synthesize

from omkl_cli import OMKL, last_json, omkl, omkl_here

# end to end through the `omkl` command (a Python process per call): the full suite only
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("p")
    synthesize(root / "stream", rows=50_000, features=4, seed=1, noise=0.02, chunk_rows=8192)
    retrain(root / "store", "m", root / "stream", rows="0:10000", algo="spa", block_size=256, scaling="minmax")
    return root


def test_predictions_of_a_store_version(stored, tmp_path):
    out = tmp_path / "pred.parquet"
    result = json.loads(
        omkl(
            "predict",
            "--store",
            stored / "store",
            "--model",
            "m",
            "--data",
            stored / "stream",
            "--out",
            out,
            "--block-rows",
            8000,
            "--json",
        ).stdout
    )
    assert result["rows"] == 50_000 and result["version"] == 1
    table = pq.read_table(out)
    assert table.column_names == ["row", "label", "decision", "true_label"]
    meta = pq.ParquetFile(out).metadata
    assert meta.num_row_groups == 7  # one row group per block: written as it streamed
    record = json.loads(pq.read_schema(out).metadata[PREDICTIONS_MARKER])
    assert (record["model"], record["version"], record["n_rows"]) == ("m", 1, 50_000)
    model = load_model(ModelStore(stored / "store", "m").path(1))
    X, y = next(iter(open_stream(stored / "stream", block_size=50_000)))
    decision = model.decision_function(X)  # raw rows: the model applies its scaler
    np.testing.assert_array_equal(table["decision"].to_numpy(), decision)
    np.testing.assert_array_equal(table["row"].to_numpy(), np.arange(50_000))
    labels = np.where(decision >= 0, "1", "-1")
    assert (model.predict(X) == labels).all()
    assert (table["label"].to_numpy(zero_copy_only=False) == labels).all()
    assert (table["true_label"].to_numpy(zero_copy_only=False) == y.astype(str)).all()
    assert result["accuracy"] == pytest.approx(np.mean(labels == y.astype(str)))
    # the same from the model folder itself; an existing output needs --overwrite
    again = omkl_here(
        "predict",
        "--model-dir",
        ModelStore(stored / "store", "m").path(1),
        "--data",
        stored / "stream",
        "--out",
        out,
        check=False,
    )
    assert again.returncode == 2 and "--overwrite" in again.stderr
    omkl_here(
        "predict",
        "--model-dir",
        ModelStore(stored / "store", "m").path(1),
        "--data",
        stored / "stream",
        "--out",
        out,
        "--overwrite",
    )
    np.testing.assert_array_equal(pq.read_table(out)["decision"].to_numpy(), decision)


def test_predictions_as_csv_and_gzipped_tsv(stored, tmp_path):
    """--out's suffix chooses the format: .csv and .tsv.gz hold parquet's columns and every float's
    bits (shortest round-trip text); an existing one of ours is replaced with --overwrite, a user's CSV
    never; a suffix omkl predict does not write is refused before any work (it wrote parquet)."""
    import pandas as pd

    def predict(out, *extra, check=True):
        args = ("predict", "--store", stored / "store", "--model", "m", "--data", stored / "stream", "--out", out)
        return omkl_here(*args, "--block-rows", 16384, "--proba", *extra, check=check)

    predict(tmp_path / "p.parquet")
    expected = pd.read_parquet(tmp_path / "p.parquet")
    for name, sep in (("p.csv", ","), ("p.tsv.gz", "\t")):
        predict(tmp_path / name)
        got = pd.read_csv(tmp_path / name, sep=sep, dtype={"label": str, "true_label": str})
        assert list(got.columns) == ["row", "label", "decision", "proba_-1", "proba_1", "true_label"]
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert (tmp_path / "p.csv").read_text().startswith("row,label,decision,proba_-1,proba_1,true_label\n")
    predict(tmp_path / "p.csv", "--overwrite")
    (tmp_path / "mine.csv").write_text("row,label\n0,1\n")
    refused = predict(tmp_path / "mine.csv", "--overwrite", check=False)
    assert refused.returncode != 0 and "not a predictions file" in refused.stderr
    assert (tmp_path / "mine.csv").read_text() == "row,label\n0,1\n"
    text = predict(tmp_path / "p.txt", check=False)
    assert text.returncode != 0 and "'.txt' is neither" in text.stderr and ".csv" in text.stderr
    assert not (tmp_path / "p.txt").exists()


def test_predictions_to_standard_output(stored, tmp_path, monkeypatch):
    """--out - writes the CSV file's text to standard output and the summary to stderr (it wrote parquet
    into a file named '-'); down a pipe its reader may leave early, and the command ends quietly."""
    monkeypatch.chdir(tmp_path)
    args = ("predict", "--store", stored / "store", "--model", "m", "--data", stored / "stream", "--proba")
    omkl_here(*args, "--out", tmp_path / "p.csv")
    piped = omkl_here(*args, "--out", "-", "--block-rows", 4096)
    assert piped.stdout == (tmp_path / "p.csv").read_text()
    assert "50,000 predictions of m v1 -> standard output" in piped.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]
    both = omkl_here(*args, "--out", "-", "--json", check=False)
    assert both.returncode == 2 and "--json prints to standard output" in both.stderr
    line = " ".join(shlex.quote(str(a)) for a in [*OMKL, *args, "--out", "-", "--block-rows", 1000])
    head = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line} | head -n 2"], capture_output=True, text=True, timeout=600
    )
    assert head.stdout == "".join((tmp_path / "p.csv").read_text().splitlines(keepends=True)[:2])
    assert head.returncode == 141 and head.stderr == ""  # (SIGPIPE's status, as a Unix tool's)


def test_multiclass_model_from_a_file_with_word_labels(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 3))
    names = np.array(["cat", "dog", "emu"])[np.argmax(X @ rng.normal(size=(3, 3)), axis=1)]
    data = tmp_path / "animals.csv"
    data.write_text("".join(f"{a:.17g},{b:.17g},{c:.17g},{n}\n" for n, (a, b, c) in zip(names, X)))
    omkl_here(
        "run",
        "om2",
        "--data",
        data,
        "--label-column",
        "last",
        "--model-out",
        tmp_path / "model",
        "--quiet",
        "--no-permute",
        "--trace-out",
        tmp_path / "trace.json",
    )
    out = tmp_path / "p.parquet"
    omkl_here("predict", "--model-dir", tmp_path / "model", "--data", data, "--label-column", "last", "--out", out)
    table = pq.read_table(out)
    assert table.column_names == [
        "row",
        "label",
        "decision",
        "decision_cat",
        "decision_dog",
        "decision_emu",
        "true_label",
    ]
    scores = np.column_stack([table[f"decision_{k}"].to_numpy() for k in ("cat", "dog", "emu")])
    assert (table["label"].to_numpy(zero_copy_only=False) == np.array(["cat", "dog", "emu"])[scores.argmax(1)]).all()
    np.testing.assert_array_equal(table["decision"].to_numpy(), scores.max(axis=1))
    assert (table["true_label"].to_numpy(zero_copy_only=False) == names).all()
    accuracy = np.mean(table["label"].to_numpy(zero_copy_only=False) == names)
    assert accuracy > 0.8
    # rows labelled with a class the model never learnt: counted as mistakes, and said so
    new = tmp_path / "new.csv"
    new.write_text(data.read_text().replace(",emu\n", ",yak\n", 7))
    args = ["predict", "--model-dir", tmp_path / "model", "--data", new, "--label-column", "last", "--overwrite"]
    assert last_json(omkl_here(*args, "--out", tmp_path / "q.csv", "--json"))["unseen_labels"] == {"yak": 7}
    note = (
        "labels of no class the model learnt count as mistakes: 'yak' (7 rows); its classes are ['cat', 'dog', 'emu']"
    )
    assert note in omkl_here(*args, "--out", tmp_path / "q.csv").stderr


def test_bad_inputs(stored, tmp_path):
    store = stored / "store"
    proc = omkl_here(
        "predict",
        "--store",
        store,
        "--model",
        "m",
        "--version",
        "canary",
        "--data",
        stored / "stream",
        "--out",
        tmp_path / "p.parquet",
        check=False,
    )
    assert proc.returncode == 2 and "no alias 'canary'" in proc.stderr
    mine = tmp_path / "mine.parquet"
    mine.write_text("a user's file")
    proc = omkl_here(
        "predict",
        "--store",
        store,
        "--model",
        "m",
        "--data",
        stored / "stream",
        "--out",
        mine,
        "--overwrite",
        check=False,
    )
    assert proc.returncode == 2 and "not a predictions file of omkl-dist" in proc.stderr
    assert mine.read_text() == "a user's file"
    synthesize(tmp_path / "wide", rows=100, features=6, seed=0)
    proc = omkl_here(
        "predict",
        "--store",
        store,
        "--model",
        "m",
        "--data",
        tmp_path / "wide",
        "--out",
        tmp_path / "w.parquet",
        check=False,
    )
    assert proc.returncode == 2 and "6 feature columns, the model takes 4" in proc.stderr
    assert not (tmp_path / "w.parquet").exists()
    # a model written by a future omkl-dist (an unknown schema version) is refused, not misread
    future = tmp_path / "future"
    import shutil

    shutil.copytree(ModelStore(store, "m").path(1), future)
    meta = json.loads((future / "model.json").read_text())
    meta["schema_version"] = 99
    meta["meta_sha256"] = meta_digest(meta)
    (future / "model.json").write_text(json.dumps(meta))
    proc = omkl_here(
        "predict", "--model-dir", future, "--data", stored / "stream", "--out", tmp_path / "f.parquet", check=False
    )
    assert proc.returncode == 2 and "model schema version 99, this omkl-dist reads 2" in proc.stderr


def test_memory_stays_bounded_by_the_block(stored, tmp_path):
    """Peak memory of the predicting process, measured by the kernel (ru_maxrss), for 50,000 rows
    and for the same rows in small blocks: the block, not the data, sets it."""
    script = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    peak = {}
    for rows in (1_000, 50_000):
        out = tmp_path / f"p{rows}.parquet"
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                script,
                *OMKL,
                "predict",
                "--store",
                str(stored / "store"),
                "--model",
                "m",
                "--data",
                str(stored / "stream"),
                "--out",
                str(out),
                "--block-rows",
                str(rows),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        peak[rows] = int(proc.stdout.split()[-1]) * 1024
    assert peak[1_000] < 1 << 30
    assert peak[1_000] < peak[50_000]
