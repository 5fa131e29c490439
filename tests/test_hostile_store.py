"""The model store against hostile folders and files (issue 38): a store is made only in a new or
empty folder, with its marker; gc deletes only its own version folders and follows no link; every
store file is checked against its schema; a publish and its promotion are one critical section, so
a signal at any step either changes nothing or ends in a complete, reported version."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.algorithms import KernelPerceptron
from omkl_dist.persistence import save_model
from omkl_dist.pipelines import report as report_module
from omkl_dist.pipelines import retrain as retrain_module
from omkl_dist.pipelines.cli import main
from omkl_dist.pipelines.retrain import retrain
from omkl_dist.storage import model_store
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.model_store import EVENTS, MARKER, REFS, ModelStore
from omkl_dist.storage.synth import synthesize


def _publish(store: ModelStore, seed: int, promote: bool = True) -> int:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    staged = store.staging_dir()
    save_model(KernelPerceptron().fit(X, np.where(X[:, 0] > 0, 1, -1)), staged / "model")
    done = store.publish(
        staged / "model", reason="test", promote=promote, expect_champion=store.aliases().get("champion")
    )
    shutil.rmtree(staged, ignore_errors=True)
    return done["version"]


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def two(tmp_path):
    """A store with versions 1 and 2 (2 the champion)."""
    store = ModelStore(tmp_path / "store", "m")
    _publish(store, 1)
    _publish(store, 2)
    return store


# --------------------------------------------------------------------------------------------
# class 1: only what the store made is written or deleted


def test_gc_never_deletes_a_users_folder_in_versions(two):
    notes = two.dir / "versions" / "0"
    notes.mkdir()
    (notes / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match=r"versions/0.*not a version of omkl-dist"):
        two.gc(keep=0)
    assert (notes / "notes.txt").read_text() == "mine" and two.path(1).is_dir()
    shutil.rmtree(notes)
    (two.path(1) / "notes.txt").write_text("mine too")  # a note left inside a version
    with pytest.raises(DataError, match=r"versions/1.*holds other files \(notes.txt\).*nothing was deleted"):
        two.gc(keep=0)
    assert (two.path(1) / "notes.txt").exists()


def test_gc_follows_no_symlink(two, tmp_path):
    mine = tmp_path / "mine"
    shutil.copytree(two.dir / "versions", mine)
    (mine / "keep.txt").write_text("x")
    shutil.rmtree(two.dir / "versions")
    (two.dir / "versions").symlink_to(mine)
    proc = _cli("models", "gc", "--store", two.root, "m", "--keep", "0")
    assert proc.exit_code == 2 and "symbolic link" in proc.output and "Traceback" not in proc.output
    assert sorted(p.name for p in mine.iterdir()) == ["1", "2", "keep.txt"]
    (two.dir / "versions").unlink()
    shutil.copytree(mine, two.dir / "versions", ignore=shutil.ignore_patterns("*.txt"))
    shutil.rmtree(two.path(1))
    (two.dir / "versions" / "1").symlink_to(mine / "1")  # a version that is a link
    with pytest.raises(DataError, match="symbolic link named '1'"):
        two.gc(keep=0)
    assert (mine / "1" / "model.json").exists()


def test_a_store_is_made_only_in_a_new_or_empty_folder(tmp_path, monkeypatch):
    user = tmp_path / "user"
    (user / "m").mkdir(parents=True)
    (user / "m" / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match=r"not omkl-dist's model store.*new or empty folder"):
        _publish(ModelStore(user, "m"), 1)
    (user / "m" / "notes.txt").unlink()
    (user / "todo.txt").write_text("mine")
    with pytest.raises(DataError, match="has no store.json"):
        _publish(ModelStore(user, "m"), 1)
    assert sorted(p.name for p in user.iterdir()) == ["m", "todo.txt"] and not any((user / "m").iterdir())
    empty = tmp_path / "empty"
    empty.mkdir()
    _publish(ModelStore(empty, "m"), 1)
    assert json.loads((empty / MARKER).read_text()) == {"kind": "omkl-model-store", "schema_version": 1}
    assert json.loads((empty / "m" / MARKER).read_text())["name"] == "m"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    for root in (tmp_path / "home", tmp_path):
        with pytest.raises(DataError, match="home folder"):
            _publish(ModelStore(root, "m"), 1)
    assert not (tmp_path / "home" / "m").exists()


def test_a_store_from_before_the_markers_keeps_working_and_gets_them(two):
    for marker in (two.root / MARKER, two.dir / MARKER):
        marker.unlink()
    assert two.versions() == [1, 2] and two.aliases() == {"champion": 2}
    assert _publish(two, 3) == 3
    assert (two.root / MARKER).is_file() and (two.dir / MARKER).is_file()
    assert two.verify()["problems"] == []


def test_promote_rollback_gc_make_no_store(tmp_path):
    for args in (["promote", "m", "1"], ["rollback", "m"], ["gc", "m", "--keep", "0"]):
        proc = _cli("models", args[0], "--store", tmp_path / "none", *args[1:])
        assert proc.exit_code == 2 and "has no versions in this store" in proc.output, proc.output
    assert not (tmp_path / "none").exists()


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    out = tmp_path_factory.mktemp("stream") / "data"
    synthesize(out, rows=600, features=4, seed=0, noise=0.01, chunk_rows=300)
    return out


def test_retrain_store_may_not_be_or_hold_its_input(stream, tmp_path, monkeypatch):
    cases = [(stream, "--store is the dataset"), (stream / "inside", "--store lies inside the dataset")]
    cases.append((stream.parent, "--store contains the dataset"))
    for root, message in cases:
        before = sorted(os.listdir(stream))
        with pytest.raises(DataError, match=message):
            retrain(root, "m", stream, algo="perceptron")
        assert sorted(os.listdir(stream)) == before and not (stream / "m").exists()
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(DataError, match="your home folder"):
        retrain(tmp_path, "m", stream, algo="perceptron")


# --------------------------------------------------------------------------------------------
# class 3 and 4: silently wrong, and errors that name no file


def test_verify_sees_missing_versions_and_damaged_refs(two):
    shutil.rmtree(two.path(1))  # deleted by hand
    problems = two.verify()["problems"]
    assert any("version 1 was published" in p and "missing" in p for p in problems), problems
    (two.dir / REFS).write_text(json.dumps({"champion": True}))
    result = two.verify()
    assert any("refs.json is damaged" in p for p in result["problems"])
    for refs, message in [
        ({"aliases": {"champion": True}, "last_version": 2}, "points at True, not a version number"),
        ({"aliases": {"champion": "2"}, "last_version": 2}, "points at '2'"),
        ({"aliases": {}, "last_version": 2.0}, "'last_version' is 2.0"),
        ({"aliases": {}, "last_version": 2, "x": 1}, "unknown keys"),
    ]:
        (two.dir / REFS).write_text(json.dumps(refs))
        with pytest.raises(DataError, match=rf"refs.json: refs.json is damaged: .*{message}"):
            two.resolve("champion")
    (two.dir / REFS).write_text(json.dumps({"aliases": {"champion": True}, "last_version": 2}))
    proc = _cli("predict", "--store", two.root, "--model", "m", "--data", "x", "--out", two.root / "p.parquet")
    assert proc.exit_code == 2 and "refs.json is damaged" in proc.output and "vTrue" not in proc.output


def test_events_without_versions_and_damaged_lines(two):
    with open(two.dir / EVENTS, "a") as fh:
        fh.write(json.dumps({"event": "promote", "alias": "champion", "version": 9}) + "\n")
    assert any("names version 9, which it never published" in p for p in two.verify()["problems"])
    for line, message in [
        ("[1, 2]", "not a JSON object"),
        ('{"version": 1}', "'event' is None"),
        ('{"event": "publish"}', "needs 'version'"),
    ]:
        (two.dir / EVENTS).write_text(line + "\n" + json.dumps({"event": "publish", "version": 1}) + "\n")
        with pytest.raises(DataError, match=rf"events.jsonl: line 1 of events.jsonl is damaged: .*{message}"):
            two.rollback()
        assert not two.verify()["problems"] == []


def test_a_log_that_is_not_text_is_named(two):
    with open(two.dir / EVENTS, "ab") as fh:
        fh.write(b"\xff\xfe{}\n")
    proc = _cli("models", "rollback", "--store", two.root, "m")
    assert proc.exit_code == 2 and "events.jsonl: events.jsonl is not UTF-8 text" in proc.output


@pytest.mark.parametrize("name", ["abc", "007", "-1", "1.5"])
def test_a_strange_version_folder_is_named(two, name):
    (two.dir / "versions" / name).mkdir()
    with pytest.raises(DataError, match=rf"versions/{name}: a folder named '{name}' in versions/ is not a version"):
        two.resolve("champion")
    proc = _cli("models", "list", "--store", two.root, "m")
    assert proc.exit_code == 2 and f"versions/{name}" in proc.output


def test_lock_timeout_must_be_finite_and_not_negative(two):
    for value, problem in (("-1", "not in the range x>=0"), ("nan", "not a finite number"), ("inf", "not a finite")):
        proc = _cli("models", "promote", "--store", two.root, "m", "1", "--lock-timeout", value)
        assert proc.exit_code == 2 and "--lock-timeout" in proc.output and problem in proc.output
    with pytest.raises(ValueError, match="lock_timeout"):
        ModelStore(two.root, "m", lock_timeout=float("nan"))
    assert two.aliases() == {"champion": 2}


def test_a_window_too_short_to_train_and_gate_is_refused(stream, tmp_path):
    proc = _cli(
        "retrain",
        "--store",
        tmp_path / "s",
        "--model",
        "m",
        "--data",
        stream,
        "--rows",
        "0:2",
        "--algo",
        "perceptron",
        "--quiet",
    )
    assert (
        proc.exit_code == 2 and "--rows: the window has 2 row(s)" in proc.output and "at least 250 rows" in proc.output
    )
    assert not (tmp_path / "s" / "m" / "versions").exists()


# --------------------------------------------------------------------------------------------
# class 2: a publish is finished or not begun


def _retrain_args(root, rows):
    return ["retrain", "--store", root, "--model", "m", "--data", None, "--rows", rows, "--quiet", "--no-plots"]


def _run_retrain(root, stream, rows, *extra):
    args = _retrain_args(root, rows)
    args[6] = stream
    proc = _cli(*args, *extra)
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def first_version(stream, tmp_path_factory):
    root = tmp_path_factory.mktemp("v1") / "store"
    proc, line = _run_retrain(root, stream, "0:300", "--algo", "perceptron")
    assert proc.exit_code == 0 and line["status"] == "promoted", proc.output
    return root


def _send_then(original, signum, sent):
    def step(*args, **kwargs):
        sent.append(signum)
        os.kill(os.getpid(), signum)
        return original(*args, **kwargs)

    return step


# each step of a publish, in order, as (object, attribute) to wrap; the rename into versions/ is the
# point of no return: a signal at a step before it publishes nothing, one after it lets the run finish
STEPS = {
    "lock taken: legacy markers": (ModelStore, "_mark_legacy"),
    "lock taken: staging swept": (ModelStore, "_sweep_staging"),
    "lock taken: log repaired": (ModelStore, "_repair"),
    "renamed into versions/": (model_store, "fsync_dir"),
    "refs.json written": (ModelStore, "_write_refs"),
    "publish logged": (ModelStore, "_log"),
    "promoted": (ModelStore, "_set_alias"),
    "report started": (retrain_module, "_write_report"),
    "inside the report's own write": (report_module, "dump_json_report"),
    "status line": (retrain_module, "_published_summary"),
}
BEFORE_RENAME = list(STEPS)[:3]


def signal_at_steps(stream, first_version, tmp_path, plan, *extra):
    """Retrain a second window with signals sent to this process at the steps of ``plan`` ((step,
    signum) pairs): either nothing changed in the store (and the status line says interrupted) or
    version 2 is complete, promoted as the gate said, and the status line says so (exit 0)."""
    root = tmp_path / f"store-{secrets.token_hex(4)}"
    shutil.copytree(first_version, root)
    mp, sent = pytest.MonkeyPatch(), []
    try:
        for step, signum in plan:
            owner, attribute = STEPS[step]
            mp.setattr(owner, attribute, _send_then(getattr(owner, attribute), signum, sent))
        proc, line = _run_retrain(root, stream, "300:600", *extra)
    finally:
        mp.undo()
    store = ModelStore(root, "m")
    assert store.verify()["problems"] == []
    assert not any((store.dir / "staging").iterdir())
    early = [signum for step, signum in plan if step in BEFORE_RENAME]
    if early:
        assert proc.exit_code == (130 if early[-1] == signal.SIGINT else 143), proc.output
        assert line["status"] == "interrupted" and line["published"] is False
        assert store.versions() == [1] and store.aliases() == {"champion": 1}
        return
    assert proc.exit_code == 0, proc.output
    assert line["status"] in ("promoted", "kept") and line["version"] == 2 and store.versions() == [1, 2]
    assert store.aliases()["champion"] == (2 if line["status"] == "promoted" else 1)
    arrived = [n for n in line.get("notes", []) if "arrived after the version was published" in n]
    inside_report = [n for n in line.get("notes", []) if "the report was not written (interrupted)" in n]
    assert len(arrived) + len(inside_report) >= bool(sent), line  # (a kept version sets no alias)
    assert (store.dir / "reports" / "v2" / "report.json").is_file() != bool(inside_report)


@pytest.mark.parametrize("step", list(STEPS))
def test_sigint_at_each_step_of_a_publish(stream, first_version, tmp_path, step):
    signal_at_steps(stream, first_version, tmp_path, [(step, signal.SIGINT)], "--gate", "1")  # (promoted)


def test_sigterm_before_and_after_the_rename(stream, first_version, tmp_path):
    signal_at_steps(stream, first_version, tmp_path, [("refs.json written", signal.SIGTERM)])
    signal_at_steps(stream, first_version, tmp_path, [("lock taken: staging swept", signal.SIGTERM)])


def test_no_matplotlib_publishes_with_a_note_not_an_error(stream, first_version, tmp_path, monkeypatch):
    root = tmp_path / "store"
    shutil.copytree(first_version, root)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    args = _retrain_args(root, "300:600")[:-1]  # with plots
    args[6] = stream
    proc = _cli(*args)
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.exit_code == 0 and line["version"] == 2, proc.output
    assert any("matplotlib is not installed" in n for n in line["notes"])
    assert (root / "m" / "reports" / "v2" / "report.json").is_file()


def test_no_matplotlib_first_version_then_report_without_plots(stream, tmp_path, monkeypatch):
    """Issue 41: a plain install (no plots extra) once exited 2 after publishing version 1; and
    `omkl report` suggested a --no-plots flag it did not have."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    root = tmp_path / "store"
    args = _retrain_args(root, "0:300")[:-1]  # with plots
    args[6] = stream
    proc = _cli(*args, "--algo", "perceptron")
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.exit_code == 0 and (line["status"], line["version"]) == ("promoted", 1), proc.output
    assert any("plots skipped: matplotlib is not installed" in n for n in line["notes"])
    saved = root / "m" / "reports" / "v1" / "report.json"
    proc = _cli("report", saved, "--out", tmp_path / "rep")
    assert proc.exit_code == 2 and "need matplotlib" in proc.output and "pass --no-plots" in proc.output
    assert not (tmp_path / "rep").exists()
    proc = _cli("report", saved, "--out", tmp_path / "rep", "--no-plots")
    assert proc.exit_code == 0 and "0 plot(s)" in proc.output, proc.output
    assert json.loads((tmp_path / "rep" / "report.json").read_text())["plots"] == []


def test_file_exists_errors_name_the_path(tmp_path):
    root = tmp_path / "store"
    _publish(ModelStore(root, "other"), 1)
    (root / "m").write_text("a file where the model's folder would be")
    proc = _cli("models", "import", "--store", root, "m", tmp_path / "nothing")
    assert proc.exit_code == 2 and "Errno" not in proc.output
    with pytest.raises(DataError, match=r"store/m: a file, not a folder"):
        _publish(ModelStore(root, "m"), 1)
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    with pytest.raises(DataError, match=r"dangling: a broken symbolic link"):
        _publish(ModelStore(tmp_path / "dangling", "m"), 1)
    assert ModelStore(root, "x", lock_timeout=np.float64(1.0)).lock_timeout == 1.0


def test_dead_writers_temporary_files_are_swept(two):
    stale = [two.dir / ".refs.json.tmp-999999999-ab12", two.root / ".store.json.tmp-999999999-cd34"]
    for path in stale:
        path.write_text("{}")
    mine = two.dir / ".refs.json.tmp-notapid"
    mine.write_text("the user's")
    two.promote(1)
    assert not any(p.exists() for p in stale) and mine.exists()


@pytest.mark.parametrize("step, changed", [("_mark_legacy", False), ("_write_refs", True), ("_log", True)])
def test_sigint_during_models_promote(two, step, changed, monkeypatch):
    monkeypatch.setattr(ModelStore, step, _send_then(getattr(ModelStore, step), signal.SIGINT, []))
    proc = _cli("models", "promote", "--store", two.root, "m", "1")
    monkeypatch.undo()
    assert two.aliases() == {"champion": 1 if changed else 2} and two.verify()["problems"] == []
    if changed:
        assert proc.exit_code == 0 and "champion -> v1" in proc.stdout and "SIGINT arrived after" in proc.stderr
    else:
        assert proc.exit_code == 130 and "interrupted" in proc.stderr
