"""Scheduled retraining for real: the Airflow DAG parsed without Airflow (its arguments, tasks and
order), the same DAG loaded by a real Airflow (pinned, in its own cached venv) and run with
`airflow dags test`, and the crontab line of `omkl schedule cron` executed through `sh -c`."""

from __future__ import annotations

import ast
import datetime as dt
import fcntl
import json
import os
import runpy
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import omkl_dist.pipelines as pipelines
from omkl_dist.storage.model_store import ModelStore
from omkl_dist.storage.synth import iter_blocks

from airflow_env import ensure

# end to end through the `omkl` command (a Python process per call): the full suite only
pytestmark = pytest.mark.slow

DAG_FILE = Path(pipelines.__file__).with_name("airflow_dag.py")
OMKL_BIN = Path(sys.executable).with_name("omkl")
OMKL = [sys.executable, "-m", "omkl_dist.pipelines.cli"]


def window_csv(path: Path, rows: int = 2000, first_row: int = 0) -> Path:
    X, y = map(np.concatenate, zip(*iter_blocks(rows=rows, features=4, seed=0, noise=0.01, first_row=first_row)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{label}," + ",".join(f"{v:.17g}" for v in row) + "\n" for label, row in zip(y, X)))
    return path


# ------------------------------------------------------------------------------------------------ the DAG file
class _Recorder:
    """Stand-ins for the three Airflow names the DAG file uses: they record what it declares."""

    def __init__(self):
        self.dag_kwargs, self.tasks, self.edges = None, [], []
        recorder = self

        class DAG:
            def __init__(self, **kwargs):
                recorder.dag_kwargs = kwargs

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        class BashOperator:
            def __init__(self, *, task_id, bash_command, **kwargs):
                self.task_id, self.bash_command, self.kwargs = task_id, bash_command, kwargs
                recorder.tasks.append(self)

            def __rshift__(self, other):
                recorder.edges.append((self.task_id, other.task_id))
                return other

        self.modules = {
            "airflow": types.ModuleType("airflow"),
            "airflow.sdk": types.ModuleType("airflow.sdk"),
            "airflow.providers": types.ModuleType("airflow.providers"),
            "airflow.providers.standard": types.ModuleType("airflow.providers.standard"),
            "airflow.providers.standard.operators": types.ModuleType("x"),
            "airflow.providers.standard.operators.bash": types.ModuleType("y"),
        }
        self.modules["airflow.sdk"].DAG = DAG
        self.modules["airflow.providers.standard.operators.bash"].BashOperator = BashOperator


def test_dag_file_parses_without_airflow(monkeypatch):
    recorder = _Recorder()
    for name, module in recorder.modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("OMKL_BIN", "/opt/omkl/bin/omkl")
    monkeypatch.setenv("OMKL_STORE", "/srv/store")
    monkeypatch.setenv("OMKL_SOURCE", "/srv/in/{date}.csv")
    runpy.run_path(str(DAG_FILE))
    kwargs = recorder.dag_kwargs
    assert kwargs["dag_id"] == "omkl_retrain" and kwargs["schedule"] == "30 2 * * *"
    assert kwargs["catchup"] is False and kwargs["max_active_runs"] == 1
    assert kwargs["start_date"].tzinfo is not None
    assert [t.task_id for t in recorder.tasks] == ["arrived", "retrain", "report"]
    assert recorder.edges == [("arrived", "retrain"), ("retrain", "report")]
    arrived, retrain, report = (t.bash_command for t in recorder.tasks)
    assert arrived.startswith("/opt/omkl/bin/omkl schedule arrived") and "--date {{ ds }}" in arrived
    assert "/srv/in/{date}.csv" in arrived
    assert "retrain --store /srv/store" in retrain and "xcom_pull(task_ids='arrived')" in retrain
    assert "{{ ds }}" in retrain and "{{ ds }}" in report
    # no heavy imports at the top (Airflow parses the file often), no wall clock
    tree = ast.parse(DAG_FILE.read_text())
    imported = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "os", "shlex", "datetime", "airflow"}
    assert "now(" not in DAG_FILE.read_text()


def test_the_dag_passes_mlflow_through_when_its_variable_is_set(monkeypatch, tmp_path):
    recorder = _Recorder()
    for name, module in recorder.modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    shows_args = tmp_path / "omkl"  # stands in for omkl: prints each argument it gets as [ARG]
    shows_args.write_text('#!/bin/sh\nfor a in "$@"; do echo "[$a]"; done\n')
    shows_args.chmod(0o755)
    monkeypatch.setenv("OMKL_BIN", str(shows_args))
    runpy.run_path(str(DAG_FILE))
    retrain = recorder.tasks[1]
    assert retrain.kwargs["append_env"] is True
    assert retrain.kwargs["env"]["OMKL_MLFLOW_URI"] == "{{ var.value.get('omkl_mlflow_uri', '') }}"
    # the command as Airflow renders it (the Variables into env), run by bash
    command = retrain.bash_command.replace("{{ ti.xcom_pull(task_ids='arrived') }}", "/w/d").replace("{{ ds }}", "d")

    def args(**variables):
        env = {**os.environ, "OMKL_MLFLOW_URI": "", "OMKL_MLFLOW_EXPERIMENT": "", **variables}
        return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, check=True).stdout

    assert "[--mlflow]" not in args() and args().endswith("[--quiet]\n")
    uri = "http://127.0.0.1:5000/a b"
    told = args(OMKL_MLFLOW_URI=uri, OMKL_MLFLOW_EXPERIMENT="nightly runs").splitlines()
    assert told[-5:] == ["[--mlflow]", "[--mlflow-uri]", f"[{uri}]", "[--experiment]", "[nightly runs]"]


@pytest.mark.slow
def test_the_dag_runs_for_real_in_airflow(tmp_path):
    venv, why = ensure()
    if venv is None:
        pytest.skip(f"apache-airflow could not be installed here: {why}")
    day = "2026-11-24"
    window_csv(tmp_path / "incoming" / f"{day}.csv")
    dags = tmp_path / "dags"
    dags.mkdir()
    shutil.copy(DAG_FILE, dags / "omkl_retrain.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV"))}
    env.update(
        AIRFLOW_HOME=str(tmp_path / "airflow"),
        AIRFLOW__CORE__DAGS_FOLDER=str(dags),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        OMKL_BIN=str(OMKL_BIN),
        OMKL_STORE=str(tmp_path / "store"),
        OMKL_MODEL="nightly",
        OMKL_SOURCE=str(tmp_path / "incoming" / "{date}.csv"),
        OMKL_WORK=str(tmp_path / "work"),
        OMKL_RETRAIN_ARGS="--algo perceptron-u --block-size 64",
    )
    airflow = str(venv / "bin" / "airflow")

    def run(*args):
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc

    run(airflow, "db", "migrate")
    loaded = run(
        str(venv / "bin" / "python"),
        "-c",
        f"from airflow.dag_processing.dagbag import DagBag; b = DagBag({str(dags)!r}); "
        "print(b.import_errors); print(sorted(b.dag_ids))",
    )
    assert loaded.stdout.splitlines()[-2:] == ["{}", "['omkl_retrain']"]
    done = run(airflow, "dags", "test", "omkl_retrain", day)
    assert "state=success" in done.stdout + done.stderr
    store = ModelStore(tmp_path / "store", "nightly")
    assert store.versions() == [1] and store.aliases() == {"champion": 1}
    # the day's file ingested into the store by the retrain (once: by its content)
    assert Path(store.lineage(1)["window"]["source"]).parent == tmp_path / "store" / "nightly" / "windows"
    reports = tmp_path / "work" / "reports" / day
    assert (reports / "report.json").is_file() and (reports / "history" / "history.png").is_file()


# ------------------------------------------------------------------------------------------------ cron
def test_the_cron_line_runs_under_sh(tmp_path):
    work, store = tmp_path / "work", tmp_path / "store"
    line = subprocess.run(
        [
            *OMKL,
            "schedule",
            "cron",
            "--store",
            str(store),
            "--model",
            "nightly",
            "--source",
            str(tmp_path / "in" / "{date}.csv"),
            "--work",
            str(work),
            "--at",
            "15 3 * * *",
            "--retrain-args",
            "--algo perceptron-u --block-size 64",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMKL_BIN": str(OMKL_BIN)},
    )
    entry = line.stdout.strip()
    fields = entry.split(" ", 5)
    assert fields[:5] == ["15", "3", "*", "*", "*"] and "flock -n -E 75" in entry and "\\%F" in entry
    command = fields[5]
    yesterday = (dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)).isoformat()
    window_csv(tmp_path / "in" / f"{yesterday}.csv")
    subprocess.run(["sh", "-c", command], check=True, timeout=300)
    runs = [json.loads(x) for x in (work / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 1 and runs[0]["status"] == "promoted" and runs[0]["date"] == yesterday
    assert ModelStore(store, "nightly").versions() == [1]
    # a second run of the same night: one more JSON line, the same version
    subprocess.run(["sh", "-c", command], check=True, timeout=300)
    runs = [json.loads(x) for x in (work / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 2 and (runs[1]["status"], runs[1]["version"]) == ("exists", 1)
    # a run that overlaps one still running is not started (flock exits 75)
    with open(work / ".omkl-schedule.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        overlap = subprocess.run(["sh", "-c", command], timeout=60)
    assert overlap.returncode == 75
    assert len((work / "runs.jsonl").read_text().splitlines()) == 2
    # a night whose file has not arrived: one JSON line saying so, exit 2
    (tmp_path / "in" / f"{yesterday}.csv").unlink()
    missing = subprocess.run(["sh", "-c", command], timeout=60)
    assert missing.returncode == 2
    last = json.loads((work / "runs.jsonl").read_text().splitlines()[-1])
    assert last["status"] == "error" and "has not arrived" in last["error"]


def test_scheduled_windows_are_read_with_the_retrain_options(tmp_path):
    """A night's file whose labels are words in a named column and one of whose features is text
    needs reading options: the scheduled run hands the file to retrain, which takes them from
    --retrain-args (the same every night) and reads a later night with the champion's encoder. An
    older crontab line's --work and DAG copy's `schedule ingest` still run."""
    rng = np.random.default_rng(5)
    for day in ("2026-11-27", "2026-11-28"):
        X = rng.normal(size=(600, 3))
        city = rng.choice(["oslo", "rome", "lima"], 600)
        outcome = np.where(X[:, 0] + X[:, 1] + (city == "rome") > 0.5, "churned", "stayed")
        lines = ["a,b,city,outcome,c", *(f"{r[0]},{r[1]},{c},{o},{r[2]}" for r, c, o in zip(X, city, outcome))]
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"{day}.csv").write_text("\n".join(lines) + "\n")

    def night(day, *extra):
        args = ["--store", str(tmp_path / "store"), "--model", "churn", "--source", str(tmp_path / "in" / "{date}.csv")]
        reading = "--algo spa --block-size 64 --label-column outcome --categorical one-hot"
        done = subprocess.run(
            [*OMKL, "schedule", "window", *args, "--date", day, "--retrain-args", reading, *extra],
            capture_output=True,
            text=True,
            timeout=300,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = night("2026-11-27")
    assert first["status"] == "promoted", first
    second = night("2026-11-28", "--work", str(tmp_path / "work"))  # (an older crontab line's option)
    assert second["status"] in ("promoted", "kept") and second["parent"] == 1, second
    lineage = ModelStore(tmp_path / "store", "churn").lineage(second["version"])
    assert lineage["label_map"] == [["churned", -1], ["stayed", 1]]
    arrived = subprocess.run(
        [
            *OMKL,
            "schedule",
            "ingest",
            "--source",
            str(tmp_path / "in" / "{date}.csv"),
            "--work",
            "w",
            "--date",
            "2026-11-28",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        check=True,
    )
    assert arrived.stdout.strip().splitlines()[-1] == str(tmp_path / "in" / "2026-11-28.csv")
