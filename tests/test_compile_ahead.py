"""A first ``omkl run`` compiles on two cores (``omkl_dist.pipelines.compile_ahead``): when the helper
is started, that a failing or orphaned helper never holds up or outlives the run, and (slow: a cold
cache) that the run then compiles only its own part."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from omkl_dist.pipelines import compile_ahead
from omkl_dist.pipelines.warmup import DONE_MARK


@pytest.fixture
def two_cold_cores(monkeypatch):
    monkeypatch.delenv(compile_ahead.SWITCH, raising=False)
    monkeypatch.setattr(compile_ahead, "available_cores", lambda: 2)
    monkeypatch.setattr(compile_ahead, "_load", lambda: 0.2)
    monkeypatch.setattr(compile_ahead, "cold", lambda algorithm: True)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["spa", "--help"],
        ["spa", "-h", "--data", "x"],
        ["spa", "--data", "x", "--scaling", "auto"],
        ["spa", "--scaling=auto", "--data", "x"],
    ],
)
def test_no_helper_for_help_or_an_automatic_setting(two_cold_cores, argv):
    assert not compile_ahead.looks_worth_it(argv)


def test_no_helper_for_a_large_data_file(two_cold_cores, tmp_path, monkeypatch):
    """A file is parsed whole: the run's head and the helper would parse it twice more."""
    data = tmp_path / "rows.txt"
    data.write_text("1 0.5\n-1 0.25\n")
    assert compile_ahead.looks_worth_it(["spa", "--data", str(data)])
    monkeypatch.setattr(compile_ahead, "MAX_FILE_BYTES", 8)
    assert not compile_ahead.looks_worth_it(["spa", "--data", str(data)])
    assert not compile_ahead.looks_worth_it(["spa", f"--data={data}"])
    assert compile_ahead.looks_worth_it(["spa", "--data", "codrna"])  # (a registry name: not stat'ed)


def test_a_helper_for_a_first_run_on_two_cores_one_idle_unless_switched_off(two_cold_cores, monkeypatch):
    argv = ["spa", "--data", "x", "--scaling", "standard"]
    assert compile_ahead.looks_worth_it(argv)
    monkeypatch.setenv(compile_ahead.SWITCH, "0")
    assert not compile_ahead.looks_worth_it(argv)
    monkeypatch.delenv(compile_ahead.SWITCH)
    monkeypatch.setattr(compile_ahead, "_load", lambda: 1.8)  # both cores busy: it would compete with the run
    assert not compile_ahead.looks_worth_it(argv)
    monkeypatch.setenv(compile_ahead.SWITCH, "1")  # (unless asked for)
    assert compile_ahead.looks_worth_it(argv)
    monkeypatch.delenv(compile_ahead.SWITCH)
    monkeypatch.setattr(compile_ahead, "_load", lambda: 0.2)
    monkeypatch.setattr(compile_ahead, "available_cores", lambda: 1)
    assert not compile_ahead.looks_worth_it(argv)
    assert compile_ahead.start(argv) is None  # nothing started


def test_a_mark_or_a_complete_warmup_makes_the_cache_warm(tmp_path):
    assert compile_ahead.cold("spa", tmp_path)
    (tmp_path / compile_ahead.MARK.format(algorithm="omkc")).touch()
    assert compile_ahead.cold("spa", tmp_path) and not compile_ahead.cold("omkc", tmp_path)
    (tmp_path / DONE_MARK).touch()
    assert not compile_ahead.cold("spa", tmp_path)


def test_no_helper_started_means_the_run_does_nothing_ahead():
    """``omkl run`` through click's test runner or run_job from Python: no console script, no helper."""
    assert compile_ahead.compile_first_use(None, "x", None) is None


def test_a_failing_helper_is_reported_and_reaped():
    helper = compile_ahead.Helper(["no-such-algorithm", "--data", "x"])
    assert not helper.wait(120)
    assert helper.note().startswith("on 1 core")
    helper.stop()
    helper.stop()  # again: nothing
    with pytest.raises(ProcessLookupError):
        os.kill(helper.pid, 0)


@pytest.fixture
def endless_data(tmp_path):
    """A data file whose reading never ends: a FIFO nobody writes (opening it blocks)."""
    fifo = tmp_path / "rows.csv"
    os.mkfifo(fifo)
    return fifo


def test_stopping_a_helper_ends_it(endless_data):
    with compile_ahead.Helper(["spa", "--data", str(endless_data)]) as helper:
        assert not helper.wait(0.5)  # still reading
    with pytest.raises(ProcessLookupError):
        os.killpg(helper.pid, 0)  # its process group is gone with it


def test_a_helper_whose_run_died_exits(endless_data):
    """The run killed without stopping it (SIGKILL): its end of the helper's standard input closes."""
    helper = subprocess.Popen(
        [sys.executable, "-m", compile_ahead.HELPER_MODULE], stdin=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        helper.stdin.write(json.dumps(["spa", "--data", str(endless_data)]) + "\n")
        helper.stdin.flush()
        time.sleep(0.5)
        helper.stdin.close()
        assert helper.wait(timeout=60) == 3
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()


_COLD_RUN = """
import sys
from numba.core import event

compiled = []


class Count(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        compiled.append(func.__module__ + ":" + func.__qualname__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Count())
from omkl_dist.pipelines import compile_ahead, entry

took = compile_ahead.learn_head


def learn_head(*args):
    learnt = took(*args)
    compiled.append("|")
    return learnt  # (whether the run waits for the helper)


compile_ahead.learn_head = learn_head
sys.argv = ["omkl", *sys.argv[1:]]
try:
    entry.main()
finally:
    print("COMPILED " + " ".join(compiled), file=sys.stderr)
"""


@pytest.mark.slow
@pytest.mark.skipif(compile_ahead.available_cores() < 2, reason="a helper needs a second core")
def test_a_cold_first_run_compiles_only_its_first_block(tmp_path):
    """A fresh cache: the run compiles its first block's kernels, the helper the pool scans; after
    the helper, the run compiles at most a few small functions (the trace's samples), where
    alone it compiled 32 functions, the scans among them."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=600) > 0, 1, -1)
    data = tmp_path / "rows.txt"
    np.savetxt(data, np.column_stack([y, X]), fmt="%.6g")
    cache = tmp_path / "cache"
    argv = ["run", "spa", "--data", str(data), "--trace-out", str(tmp_path / "trace.json")]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), compile_ahead.SWITCH: "1"}  # (whatever the load)
    proc = subprocess.run(
        [sys.executable, "-c", _COLD_RUN, *argv], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "on 2 cores" in proc.stderr
    compiled = [name for name in proc.stderr.split("COMPILED ")[-1].split() if name.startswith(("omkl", "|"))]
    head, after = compiled[: compiled.index("|")], compiled[compiled.index("|") + 1 :]
    assert {"omkl_dist.engine._recurrence:_spa_rows", "omkl_dist.randomness._pcg:streams"} <= set(head)
    assert not [name for name in compiled if "scan" in name or "accumulate" in name]  # the helper's
    assert len(after) <= 2, after
    assert list(Path(cache).glob(f"*/{compile_ahead.MARK.format(algorithm='spa')}"))


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the helper through /proc")
def test_ctrl_c_during_a_first_run_stops_its_helper(tmp_path, endless_data):
    """The console script's ``omkl run`` with its helper, both reading a file that never ends: a
    Ctrl-C is the run's interrupted line, and the helper ends with it."""
    import signal

    script = "import sys; from omkl_dist.pipelines.entry import main; sys.argv[0] = 'omkl'; main()"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), compile_ahead.SWITCH: "1"}
    run = subprocess.Popen(
        [sys.executable, "-c", script, "run", "spa", "--data", str(endless_data), "--quiet"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        helpers = []
        deadline = time.monotonic() + 60
        while not helpers and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)
            helpers = _children(run.pid)
        assert helpers, "no helper was started"
        # (still in its imports: a second later, a fast machine's run had refused the FIFO, exit status 2)
        time.sleep(0.2)
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 130 and "interrupted" in err
    for pid in helpers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")
def test_cache_saves_hold_the_save_lock(tmp_path, monkeypatch):
    """numba's save (read the index, take a free data file number, write both) runs under a lock
    that another process's save waits for: tried from here with a second open file, it is taken."""
    import fcntl

    from numba.core import caching

    from omkl_dist import _numba_cache

    held = []

    def save(self, key, data):
        with open(tmp_path / _numba_cache.SAVE_LOCK, "a") as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except BlockingIOError:
                held.append(True)

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", save)
    assert _numba_cache.lock_cache_writes() and _numba_cache.lock_cache_writes()  # (once: not wrapped twice)
    caching.IndexDataCacheFile.save(None, "key", "data")
    assert held == [True]


def test_a_refused_head_is_not_waited_for(tmp_path, monkeypatch, endless_data):
    """Data the run's head refuses (a missing file here): the run does not wait for the helper (which
    reads a file that never ends) before it says what is wrong, and the helper is stopped."""
    from numba.core import caching

    from omkl_dist.job import DataWindow, Job

    # (the run locks numba's saves in its process: undone after the test)
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", caching.IndexDataCacheFile.save)
    job = Job.build("spa", {}, data=DataWindow(str(tmp_path / "missing.txt")))
    helper = compile_ahead.Helper(["spa", "--data", str(endless_data)])
    monkeypatch.setattr(compile_ahead, "_STARTED", [helper])
    assert compile_ahead.compile_first_use(job, str(tmp_path / "missing.txt"), None) is helper
    assert helper.waited == 0.0 and not helper.finished  # (never waited for: wait() records how long it waited)
    with pytest.raises(ProcessLookupError):
        os.killpg(helper.pid, 0)
