"""How an ``omkl`` process ends (``omkl_dist.pipelines.entry.collect_once_at_exit``): its garbage is
collected once at exit and the objects still alive are left out of the interpreter's own collections
while it shuts down (0.5-1 s of every command's exit with numba, scipy and scikit-learn loaded),
without skipping what a command's garbage still has to finish."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

# Registered before the console script's own exit handler, so it runs after it (atexit is LIFO): what
# the interpreter's shutdown then finds. Automatic collection is off, so only a collection at exit can
# free the cycle below, whose finalizer writes a file (as a command's object might finish its work).
_AT_EXIT = """
import atexit, gc, sys
gc.disable()
atexit.register(lambda: print("frozen", gc.get_freeze_count(), file=sys.stderr))


class Finalised:
    def __init__(self, path):
        self.me, self.path = self, path

    def __del__(self):
        with open(self.path, "w") as out:
            out.write("finalised before exit")


Finalised(sys.argv.pop(1))
"""


def _frozen(stderr: str) -> int:
    return int(next(line.split()[1] for line in stderr.splitlines() if line.startswith("frozen ")))


def _assert_ended_well(stderr: str, finalised) -> None:
    assert _frozen(stderr) > 0, stderr  # the shutdown's collections skip what was alive
    assert finalised.read_text() == "finalised before exit"  # the cycle was collected first


@pytest.mark.parametrize(
    "start",
    [
        "from omkl_dist.pipelines.entry import main\nmain()",  # the console script
        # ``python -m omkl_dist.pipelines.cli``, as the background warm-up and cron's retraining start it
        "import runpy\nrunpy.run_module('omkl_dist.pipelines.cli', run_name='__main__')",
    ],
)
def test_an_omkl_command_collects_once_then_freezes_at_exit(tmp_path, start):
    finalised = tmp_path / "finalised.txt"
    script = f"{_AT_EXIT}sys.argv[0] = 'omkl'\n{start}\n"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(finalised), "--version"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    _assert_ended_well(proc.stderr, finalised)


def test_the_compile_ahead_helper_ends_the_same_way(tmp_path):
    """The run waits for its helper's exit: the helper's shutdown is as short."""
    rows = tmp_path / "rows.txt"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    np.savetxt(rows, np.column_stack([np.where(X[:, 0] > 0, 1, -1), X]), fmt="%.6g")
    finalised = tmp_path / "finalised.txt"
    script = _AT_EXIT + "from omkl_dist.pipelines.compile_ahead import main\nmain()\n"
    helper = subprocess.Popen(
        [sys.executable, "-c", script, str(finalised)], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # an automatic setting: the helper compiles nothing (exit status NOTHING), and ends
        helper.stdin.write(json.dumps(["spa", "--data", str(rows), "--scaling", "auto"]) + "\n")
        helper.stdin.flush()
        assert helper.wait(timeout=300) == 4
    finally:
        helper.stdin.close()  # (kept open until it ended: its end would tell the helper the run died)
        if helper.poll() is None:
            helper.kill()
            helper.wait()
    _assert_ended_well(helper.stderr.read(), finalised)
