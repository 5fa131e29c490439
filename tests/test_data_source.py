"""``--data -``: the data from standard input (pipelines/data_source.py; a file at a URL:
test_object_storage.py) is read as the same bytes in a file are, by every command that takes a data file;
refused from a terminal or when empty; no copy left behind."""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import shlex
import subprocess
import threading

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from generated_data import generated

from omkl_dist.persistence import load_model
from omkl_dist.pipelines.cli import main

from omkl_cli import OMKL


@pytest.fixture
def table(tmp_path, monkeypatch):
    """A named CSV table (words for labels) and the same rows without their labels; commands run in
    ``tmp_path``, with it as the temporary folder (where standard input is saved)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    X, y = generated("generated-binary", 240)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame.insert(0, "label", np.where(y > 0, "yes", "no"))
    frame.to_csv("rows.csv", index=False)
    frame.drop(columns="label").to_csv("new.csv", index=False)
    return tmp_path


def _omkl(*args, stdin: bytes = b"", check=True):
    result = CliRunner().invoke(main, [str(a) for a in args], input=stdin, catch_exceptions=False)
    if check:
        assert result.exit_code == 0, result.stderr
    return result


def _learnt_from(model_dir) -> str:
    """The data a saved model's job records it learnt from."""
    return load_model(model_dir).job["data"]["location"]


def _left_behind(root) -> list[str]:
    return sorted(p.name for p in (root / "tmp").iterdir())


def test_run_fit_and_ingest_read_standard_input_as_the_file(table):
    """`omkl run`, `fit` and `data ingest` given the file's bytes on standard input (plain and gzipped)
    learn and store what they do from the file: the same mistakes, model and dataset checksum."""
    data = (table / "rows.csv").read_bytes()
    run = ("run", "spa", "--block-size", 64, "--json")
    from_file = json.loads(_omkl(*run, "--data", "rows.csv").stdout.splitlines()[-1])
    piped = json.loads(
        _omkl(*run, "--data", "-", "--model-out", "m", stdin=gzip.compress(data)).stdout.splitlines()[-1]
    )
    assert piped["mistakes"] == from_file["mistakes"] and piped["n_support"] == from_file["n_support"]
    assert piped["trace_path"].endswith("trace-spa-stdin-seed0.json")
    assert _learnt_from("m") == "standard input"  # (not the temporary copy's path)
    fit = ("fit", "--algo", "svc", "--data")
    piped = _omkl(*fit, "-", stdin=data).stdout.splitlines()
    from_file = _omkl(*fit, "rows.csv").stdout.splitlines()
    assert piped[0] == from_file[0].replace("svc on rows.csv", "svc on standard input")
    assert piped[1].split("fit")[0] == from_file[1].split("fit")[0]  # (the test accuracy line up to its timings)
    _omkl("data", "ingest", "rows.csv", "--out", "a")
    _omkl("data", "ingest", "-", "--out", "b", stdin=data)
    meta = [json.loads((table / d / "meta.json").read_text()) for d in ("a", "b")]
    assert meta[0]["checksums"] == meta[1]["checksums"]
    assert _left_behind(table) == []


def test_refused_when_empty_and_named_in_errors(table):
    """Nothing on standard input is refused as such; a bad row is named as on "standard input", not
    the temporary file's path; and the saved copy is removed either way."""
    empty = _omkl("run", "spa", "--data", "-", check=False)
    assert empty.exit_code == 2 and "standard input was empty" in empty.stderr
    rows = (table / "rows.csv").read_text().splitlines(keepends=True)
    rows[5] = "," + rows[5].split(",", 1)[1]  # the file's line 6: no label
    bad = _omkl("run", "spa", "--data", "-", stdin="".join(rows).encode(), check=False)
    assert bad.exit_code == 2 and "error: standard input, row 6, column 1: empty label" in bad.stderr
    assert "omkl-stdin" not in bad.stderr
    assert _left_behind(table) == []


@pytest.mark.slow  # (child processes: the subject is a real pipe into and out of the command)
def test_a_pipe_through_predict(table):
    """`zcat new.csv.gz | omkl predict --data - --out -` writes what `--data new.csv --out p.csv` writes."""
    _omkl("run", "spa", "--data", "rows.csv", "--model-out", "m")
    _omkl("predict", "--model-dir", "m", "--data", "new.csv", "--out", "p.csv")
    (table / "new.csv.gz").write_bytes(gzip.compress((table / "new.csv").read_bytes()))
    line = " ".join(shlex.quote(str(a)) for a in [*OMKL, "predict", "--model-dir", "m", "--data", "-", "--out", "-"])
    piped = subprocess.run(
        ["bash", "-c", f"set -o pipefail; zcat new.csv.gz | {line}"], capture_output=True, text=True, timeout=600
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (table / "p.csv").read_text()
    assert "240 predictions of m -> standard output" in piped.stderr
    assert _left_behind(table) == []


@pytest.fixture
def web(table):
    """A web server on 127.0.0.1 serving the table's folder (stopped at the end)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(table))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_data_file_at_a_web_address(table, web):
    """`--data http://...` reads the file served there as the local file (plain and gzipped); the
    server's page of the folder is refused as a web page, with where the data file is."""
    (table / "rows.csv.gz").write_bytes(gzip.compress((table / "rows.csv").read_bytes()))
    run = ("run", "spa", "--block-size", 64, "--json", "--data")
    local = json.loads(_omkl(*run, "rows.csv").stdout.splitlines()[-1])
    for name in ("rows.csv", "rows.csv.gz"):
        served = json.loads(_omkl(*run, f"{web}/{name}", "--model-out", f"m-{name}").stdout.splitlines()[-1])
        assert (served["mistakes"], served["n_support"], served["data"]) == (
            local["mistakes"],
            local["n_support"],
            f"{web}/{name}",
        )
        assert _learnt_from(f"m-{name}") == f"{web}/{name}"
    page = _omkl("run", "spa", "--data", f"{web}/", check=False)
    assert page.exit_code == 2 and f"error: {web}/: a web page (HTML), not a data file" in page.stderr
    missing = _omkl("run", "spa", "--data", f"{web}/none.csv", check=False)
    assert missing.exit_code == 2 and f"nothing at {web}/none.csv" in missing.stderr
    assert _left_behind(table) == []
