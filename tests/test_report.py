"""`omkl report`: the plots of a run trace, of a retrain's report.json and of a store's history;
`omkl models import|promote|rollback|gc|show` on the command line."""

from __future__ import annotations

import json

import pytest

from omkl_dist.storage.model_store import ModelStore
from omkl_dist.storage.synth import synthesize

from omkl_cli import omkl, omkl_here

# end to end through the `omkl` command (a Python process per call): the full suite only
pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("r")
    synthesize(root / "stream", rows=30_000, features=4, seed=3, noise=0.02, chunk_rows=5000)
    omkl(
        "run",
        "spa",
        "--data",
        root / "stream",
        "--block-size",
        512,
        "--quiet",
        "--trace-out",
        root / "trace.json",
        "--model-out",
        root / "model",
    )
    return root


def test_report_of_a_run_trace(run, tmp_path):
    out = omkl_here("report", run / "trace.json", "--out", tmp_path / "rep").stdout
    assert "4 plot(s): mistakes.png, support.png, weights.png, speed.png" in out
    for name in ("mistakes.png", "support.png", "weights.png", "speed.png"):
        assert (tmp_path / "rep" / name).read_bytes()[:8] == PNG
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert doc["kind"] == "run" and doc["curves"]["run"]["rows"][-1] == 30_000
    bad = tmp_path / "x.json"
    bad.write_text('{"a": 1}')
    proc = omkl_here("report", bad, "--out", tmp_path / "rep2", check=False)
    assert proc.returncode == 2 and "not a report" in proc.stderr


def test_import_a_saved_model_then_promote_rollback_and_gc_by_command(run, tmp_path):
    store = tmp_path / "store"
    first = json.loads(omkl_here("models", "import", "--store", store, "spa", run / "model").stdout)
    assert (first["status"], first["version"], first["promoted"]) == ("imported", 1, True)
    again = json.loads(omkl_here("models", "import", "--store", store, "spa", run / "model").stdout)
    assert (again["status"], again["version"]) == ("exists", 1)
    # the imported champion continues on a new window like any other
    synthesize(tmp_path / "next", rows=10_000, features=4, seed=3, noise=0.02, first_row=30_000)
    retrained = json.loads(
        omkl_here(
            "retrain", "--store", store, "--model", "spa", "--data", tmp_path / "next", "--quiet"
        ).stdout.splitlines()[-1]
    )
    assert retrained["version"] == 2 and retrained["parent"] == 1
    shown = json.loads(omkl_here("models", "show", "--store", store, "spa", "2").stdout)
    assert shown["provenance"]["lineage"]["parent"] == 1 and shown["algorithm"] == "SPA"
    assert "champion -> v1" in omkl_here("models", "promote", "--store", store, "spa", "1").stdout
    assert "champion -> v2" in omkl_here("models", "promote", "--store", store, "spa", "2").stdout
    assert "champion -> v1 (rolled back from v2)" in omkl_here("models", "rollback", "--store", store, "spa").stdout
    assert "deleted 1 version(s): 2" in omkl_here("models", "gc", "--store", store, "spa", "--keep", "0").stdout
    assert ModelStore(store, "spa").versions() == [1]
    hist = omkl_here("report", "--store", store, "--model", "spa", "--out", tmp_path / "hist").stdout
    assert "history.png" in hist
    proc = omkl_here("models", "rollback", "--store", store, "spa", check=False)
    # v2 was the champion before v1 (deleted now), or the only one before v1 (when the gate kept v1)
    assert proc.returncode == 2 and ("was deleted" in proc.stderr or "no earlier champion" in proc.stderr)
