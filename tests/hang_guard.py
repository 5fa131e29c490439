"""A hung test ends its pytest process with every thread's stack, instead of hanging the run (tests/conftest.py).

No test takes a tenth of ``HANG_SECONDS``: a test still running then has hung, perhaps with every
thread blocked (a deadlock holding the GIL, where no Python-level timer can run: cluster/profiler.py).
faulthandler's watchdog is a C thread: it writes every thread's stack and ends the process. xdist then
reports the test as crashed and replaces its worker, and the controller prints the stacks the worker
wrote to a file (a worker's own stderr is not shown).
"""

from __future__ import annotations

import faulthandler
import os
import sys
import tempfile
from pathlib import Path

HANG_SECONDS = float(os.environ.get("OMKL_TEST_HANG_SECONDS", 900))
_out = None  # where this process's watchdog writes


def stack_file(run_id: str, worker: str) -> Path:
    return Path(tempfile.gettempdir()) / f"omkl-test-hang-{run_id}-{worker}.txt"


def arm() -> None:
    """Start the watchdog for one test of this process (the file is opened once, by the first test)."""
    global _out
    if _out is None:
        run_id, worker = os.environ.get("PYTEST_XDIST_TESTRUNUID"), os.environ.get("PYTEST_XDIST_WORKER")
        _out = stack_file(run_id, worker).open("w", encoding="utf-8") if run_id and worker else sys.__stderr__
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True, file=_out)


def disarm() -> None:
    faulthandler.cancel_dump_traceback_later()


def close() -> None:
    """At the end of a worker's session: nothing hung, the file is empty."""
    if _out is not None and _out is not sys.__stderr__:
        _out.close()
        Path(_out.name).unlink(missing_ok=True)


def stacks_of(workerinput: dict) -> str:
    """On the xdist controller: the stacks a crashed worker wrote ('' if none)."""
    path = stack_file(workerinput["testrunuid"], workerinput["workerid"])
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    path.unlink(missing_ok=True)
    return text
