"""Hostile input, second round: what a writing command may replace, delete and leave behind.

Each test failed before its fix: ``omkl report --out`` and ``retrain --report-dir`` replaced any
PNG (a user's ``mistakes.png``); the sweep and the lock deleted a user's ``.NAME.lock`` and
``.NAME.tmp-PID`` and renamed a user's ``.NAME.old-PID`` into place; a file output replaced an
empty folder; SIGHUP left the temporary output behind; an existing file where the report folder
goes surfaced as ``[Errno 17] File exists``; a trace of the wrong shape gave a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bad_input_cases import tree_state
from click.testing import CliRunner

from omkl_dist.pipelines.cli import main
from omkl_dist.pipelines.report import write_report
from omkl_dist.storage import DataError
from omkl_dist.storage.outputs import (
    PLOT_MARKER,
    PREDICTIONS,
    REPORT,
    check_output,
    output_lock,
    recognise,
    write_json_report,
    write_plot,
)

PNG = b"\x89PNG\r\n\x1a\n"


def trace_document(n: int = 5) -> dict:
    """A small run trace, as ``omkl run --trace-out`` writes one (two kernels)."""
    return {
        "report": {"algo": "spa"},
        "trace": {
            "n_seen": [100 * (i + 1) for i in range(n)],
            "mistake_rate": [0.3 - 0.01 * i for i in range(n)],
            "block_ends": [100 * (i + 1) for i in range(n)],
            "sampled_at": [100 * (i + 1) for i in range(n)],
            "n_support": [[10 + i, 20 + 2 * i] for i in range(n)],
            "weights": [[0.5 + 0.01 * i, 0.5 - 0.01 * i] for i in range(n)],
            "instances_per_second": [1000.0 + i for i in range(n)],
            "kernel_names": ["gaussian(sigma=1)", "polynomial(p=2)"],
        },
    }


@pytest.fixture
def trace(tmp_path) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace_document()))
    return path


def users_png(path: Path) -> Path:
    """A PNG image the user made with matplotlib (no omkl-dist marker)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([1, 2, 3])
    fig.savefig(path, format="png")
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Errno" not in lines[0] and "Traceback" not in result.output, result.output
    return lines[0]


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


# ---------------------------------------------------------------------------------------------
# 1. only a PNG or report folder of ours is replaced


def test_report_never_replaces_a_users_png_or_folder(tmp_path, trace):
    figs = tmp_path / "figs"
    figs.mkdir()
    users_png(figs / "mistakes.png")
    (figs / "notes.txt").write_text("mine")
    before = tree_state(tmp_path)
    line = one_error_line(invoke("report", trace, "--out", figs))
    assert str(figs) in line and "--out" in line and "Fix:" in line
    assert tree_state(tmp_path) == before


def test_retrain_refuses_a_users_report_dir_before_any_work(tmp_path):
    from omkl_dist.pipelines.retrain import retrain

    figs = tmp_path / "figs"
    figs.mkdir()
    users_png(figs / "mistakes.png")
    before = tree_state(tmp_path)
    with pytest.raises(DataError, match="--report-dir exists and is a folder without omkl-dist's report.json"):
        retrain(tmp_path / "store", "m", tmp_path / "no-data-yet", algo="spa", report_dir=figs)
    assert tree_state(tmp_path) == before  # (not even the store was created)


def test_a_report_folder_of_ours_holding_a_users_png_is_refused(tmp_path, trace):
    figs = tmp_path / "figs"
    assert invoke("report", trace, "--out", figs).exit_code == 0
    users_png(figs / "mistakes.png")  # the user drew over our plot: now it is theirs
    before = tree_state(tmp_path)
    with pytest.raises(DataError, match="--report-dir .*mistakes.png"):
        write_report(json.loads((figs / "report.json").read_text()), figs, option="--report-dir")
    assert tree_state(tmp_path) == before


def test_report_folders_and_plots_carry_our_marker_and_are_replaced(tmp_path, trace):
    figs = tmp_path / "figs"
    for _ in range(2):  # the second run replaces the first's folder
        result = invoke("report", trace, "--out", figs)
        assert result.exit_code == 0, result.output
    assert recognise(figs, REPORT) is None
    pngs = sorted(figs.glob("*.png"))
    assert len(pngs) == 4 and all(PLOT_MARKER in p.read_bytes()[:200] for p in pngs)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_report_folder_may_hold_a_report_folder_of_ours(tmp_path, trace):
    figs = tmp_path / "figs"  # the Airflow DAG draws the history report into the retrain's report folder
    for out in (figs, figs / "history", figs):
        assert invoke("report", trace, "--out", out).exit_code == 0
    (figs / "mine").mkdir()
    (figs / "mine" / "notes.txt").write_text("mine")
    before = tree_state(tmp_path)
    assert "also holds other files (mine)" in one_error_line(invoke("report", trace, "--out", figs))
    assert tree_state(tmp_path) == before


def test_a_plot_replaces_only_a_plot_of_ours(tmp_path):
    plot = users_png(tmp_path / "study.png")
    before = plot.read_bytes()
    with pytest.raises(DataError, match="not a PNG plot written by omkl-dist"):
        write_plot(plot, users_png)
    assert plot.read_bytes() == before
    ours = write_plot(tmp_path / "ours.png", users_png)
    write_plot(ours, users_png)  # ours: replaced
    assert PLOT_MARKER in ours.read_bytes()


# ---------------------------------------------------------------------------------------------
# 2. the lock and the sweep touch only what they can prove is theirs


@pytest.mark.parametrize("make", ["file", "empty file", "folder", "link"])
def test_a_users_file_named_like_the_lock_is_refused_never_removed(tmp_path, make):
    lock = tmp_path / ".r.json.lock"
    if make == "file":
        lock.write_text("my notes")
    elif make == "empty file":
        lock.touch()
    elif make == "folder":
        lock.mkdir()
        (lock / "inside").write_text("mine")
    else:
        (tmp_path / "target").write_text("mine")
        lock.symlink_to(tmp_path / "target")
    before = tree_state(tmp_path)
    with pytest.raises(DataError, match=r"\.r\.json\.lock.*not omkl-dist's lock file.*Fix: move or delete"):
        write_json_report(tmp_path / "r.json", {"a": 1})
    assert tree_state(tmp_path) == before


def test_users_files_named_like_a_writers_leftovers_are_never_touched(tmp_path):
    pid = dead_pid()
    users = {
        f".r.json.tmp-{pid}": "a",
        f".r.json.old-{pid}": "b",  # was renamed into place as r.json
        f".r.json.tmp-{pid}-abcd1234/junk": "c",  # was deleted
        f".r.json.tmp-{pid}-1-0123456789abcdef/junk": "d",  # our name's shape, without our marker
        f".r.json.tmp-{pid}-1-fedcba9876543210/.omkl-work.json": "{}",  # our marker's name, not its content
    }
    for name, content in users.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(content)
    before = tree_state(tmp_path)
    write_json_report(tmp_path / "r.json", {"a": 1})
    after = tree_state(tmp_path)
    assert {k: after.get(k) for k in before} == before
    assert set(after) - set(before) == {"r.json"} and json.loads((tmp_path / "r.json").read_text())["a"] == 1


def test_a_lock_left_by_a_killed_writer_is_reused_and_removed(tmp_path):
    out = tmp_path / "r.json"
    child = os.fork()
    if child == 0:  # a writer killed while holding the lock: its release never runs
        with output_lock(out):
            os._exit(9)
    assert os.waitpid(child, 0)[1] >> 8 == 9 and (tmp_path / ".r.json.lock").is_file()
    write_json_report(out, {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_the_lock_still_serialises_writers(tmp_path):
    out = tmp_path / "r.json"
    with output_lock(out):
        result = invoke("report", "--help")  # (a command that writes nothing still works)
        assert result.exit_code == 0
        with pytest.raises(Exception, match="another process is writing"):
            write_json_report(out, {"a": 1})
    write_json_report(out, {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


# ---------------------------------------------------------------------------------------------
# 3. a file output never replaces a folder


def test_a_file_output_never_replaces_a_folder_even_an_empty_one(tmp_path):
    empty = tmp_path / "pred"
    empty.mkdir()
    for overwrite in (False, True):
        with pytest.raises(DataError, match="is a folder; a predictions file is a file and never replaces a folder"):
            check_output(empty, PREDICTIONS, overwrite=overwrite)
    with pytest.raises(DataError, match="never replaces a folder"):
        write_json_report(empty, {"a": 1})
    assert empty.is_dir() and not any(empty.iterdir())


def test_an_empty_folder_still_receives_a_folder_output(tmp_path, trace):
    figs = tmp_path / "figs"
    figs.mkdir()
    assert invoke("report", trace, "--out", figs).exit_code == 0
    assert (figs / "report.json").is_file()


# ---------------------------------------------------------------------------------------------
# 4. SIGHUP and SIGQUIT clean up like SIGTERM


def _wait_for_work_folder(folder: Path, name: str, proc, timeout=60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.name.startswith(f".{name}.tmp-") for p in folder.iterdir()):
            return True
        time.sleep(0.02)
    return False


def _synth(out: Path, **popen):
    args = ["data", "synth", "--rows", 2_000_000, "--features", 4, "--chunk-rows", 5_000, "--out", out]
    command = [sys.executable, "-m", "omkl_dist.pipelines.cli", *map(str, args)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **popen)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGQUIT])
def test_sighup_and_sigquit_during_a_write_leave_nothing_behind(tmp_path, signum):
    out = tmp_path / "s"
    proc = _synth(out)
    try:
        assert _wait_for_work_folder(tmp_path, out.name, proc), "the write never started"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    time.sleep(0.3)  # a library thread still writing would recreate the folder now
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_an_ignored_sighup_stays_ignored_nohup(tmp_path):
    out = tmp_path / "s"
    proc = _synth(out, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        assert _wait_for_work_folder(tmp_path, out.name, proc), "the write never started"
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert os.listdir(tmp_path) == ["s"]


# ---------------------------------------------------------------------------------------------
# 5. no raw [Errno 17]


def test_a_file_where_the_report_folder_goes_is_a_clear_error(tmp_path, trace):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    for out in (afile, afile / "sub"):
        line = one_error_line(invoke("report", trace, "--out", out))
        assert str(out) in line
    assert afile.read_text() == "mine"


def test_a_deeply_nested_json_file_at_the_output_is_refused_not_a_recursion_error(tmp_path):
    deep = tmp_path / "r.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError, match="not a JSON report written by omkl-dist"):
        write_json_report(deep, {"a": 1})
    assert deep.read_text().startswith("[[[")


def test_a_dangling_link_where_a_folder_goes_is_a_clear_error(tmp_path):
    (tmp_path / "gone").symlink_to(tmp_path / "missing")
    with pytest.raises(DataError, match="gone"):
        write_json_report(tmp_path / "gone" / "r.json", {"a": 1})


# ---------------------------------------------------------------------------------------------
# 6. a trace of the wrong shape: one error naming the file and the key


def _edited(edit) -> dict:
    doc = trace_document()
    edit(doc)
    return doc


_REPORT_DOCUMENT = {"kind": "run", "summary": {}, "window": [0, 1], "split": None, "alarms": [], "history": []}
_REPORT_DOCUMENT["curves"] = {}
_VERSION = {"version": 1, "challenger": 0.1, "champion": None, "promoted": True}


@pytest.mark.parametrize(
    "content,key",
    [
        (json.dumps(trace_document())[:150], "not complete JSON"),
        ("[1, 2]", "document.kind"),
        ('{"trace": {"n_seen": 5}}', "document.trace.kernel_names"),
        (json.dumps(_edited(lambda d: d["trace"].update(n_seen="abc"))), "document.trace.n_seen"),
        (json.dumps(_edited(lambda d: d["trace"]["mistake_rate"].pop())), "document.trace.mistake_rate"),
        (json.dumps(_edited(lambda d: d["trace"]["n_support"][2].append(3))), "document.trace.n_support"),
        (json.dumps(_edited(lambda d: d["trace"]["weights"].__setitem__(1, ["x", 1]))), "document.trace.weights[1][0]"),
        (json.dumps(_edited(lambda d: d.update(report=[1]))), "document.report"),
        (json.dumps({"kind": "retrain", "summary": {}}), "document.window"),
        (json.dumps({**_REPORT_DOCUMENT, "curves": 3}), "document.curves"),
        (json.dumps({**_REPORT_DOCUMENT, "history": [{**_VERSION, "version": "1"}]}), "document.history[0].version"),
        ("[" * 100_000 + "]" * 100_000, "cannot be read"),
    ],
)
def test_a_bad_trace_is_one_error_naming_the_file_and_key(tmp_path, content, key):
    path = tmp_path / "t.json"
    path.write_text(content)
    line = one_error_line(invoke("report", path, "--out", tmp_path / "out"))
    assert str(path) in line and key in line and "Fix:" in line, line
    assert sorted(os.listdir(tmp_path)) == ["t.json"]


@pytest.mark.slow
def test_a_closed_stdout_pipe_ends_quietly_like_sigpipe(tmp_path):
    """`omkl ... | head`: the output is complete; the exit is 141 (128 + SIGPIPE), not an error line."""
    out = tmp_path / "s"
    command = [sys.executable, "-m", "omkl_dist.pipelines.cli", "data", "synth", "--rows", "10", "--features", "2"]
    proc = subprocess.Popen([*command, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the command prints
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 128 + signal.SIGPIPE and "error" not in err, err
    assert sorted(os.listdir(tmp_path)) == ["s"] and (out / "meta.json").is_file()
