"""Shared fixtures. Tests that need the real datasets use ``data_dir`` (which marks them ``data``);
under CI=true a missing data directory fails the run instead of skipping. ``make test-fast`` leaves
out the ``data``, ``cluster`` and ``slow`` tests."""

from __future__ import annotations

import os
import sys

import dask
import pytest

from omkl_dist.cluster.profiler import safe_worker_config
from omkl_dist.storage.datadir import data_dir as _data_dir

import hang_guard

# the tests' in-process clusters run their workers in this process: without Dask's profiler where it
# can hang the process (Python 3.11: cluster/profiler.py), as omkl's own clusters do
dask.config.set(safe_worker_config())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A hung test ends its process with every thread's stack (tests/hang_guard.py)."""
    hang_guard.arm()
    try:
        return (yield)
    finally:
        hang_guard.disarm()


@pytest.fixture(scope="session", autouse=True)
def _in_a_scratch_folder(tmp_path_factory):
    """The tests (and their module fixtures) run outside the checkout: a command's default outputs
    (``omkl run``'s and ``omkl submit``'s trace in runs/) land in a scratch folder, not in the
    checkout (make test once left hundreds there)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("cwd"))
        yield


@pytest.fixture(autouse=True)
def _in_a_fresh_folder(tmp_path_factory, monkeypatch):
    """Every test runs in a new empty folder (a test's default outputs are its own)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def data_dir():
    path = _data_dir()
    if not (path / "MANIFEST.json").is_file():
        msg = f"real datasets not found at {path} (set OMKL_DATA_DIR to the folder holding MANIFEST.json)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def pytest_collection_modifyitems(items):
    """Every test that asks for the real datasets is a ``data`` test (for ``-m "not data"``).

    The files holding ``slow`` or ``cluster`` tests come first (each file's tests keep their order):
    ``make test`` hands whole files to its two workers in this order (``--dist loadfile
    --no-loadscope-reorder``), so the long files start at once and the many short ones fill in at
    the end, instead of a long file -- few tests, so last in xdist's default order -- running
    alone on one worker while the other has finished."""
    for item in items:
        if "data_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.data)
    long_files = {item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("cluster")}
    items.sort(key=lambda item: item.path not in long_files)


def pytest_sessionfinish(session):
    """In an xdist worker: hand this worker's bad-input case counts to the controller."""
    from bad_input_cases import CASES

    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["bad_input_cases"] = dict(CASES)
    hang_guard.close()


def pytest_testnodedown(node, error):
    """On the xdist controller: add up the workers' bad-input case counts; print a hung worker's stacks."""
    from bad_input_cases import CASES

    CASES.update(getattr(node, "workeroutput", {}).get("bad_input_cases", {}))
    stacks = hang_guard.stacks_of(node.workerinput) if error else ""
    if stacks:
        sys.stderr.write(
            f"\n{node.workerinput['workerid']} hung for {hang_guard.HANG_SECONDS:.0f} s; its threads:\n{stacks}\n"
        )


def pytest_terminal_summary(terminalreporter):
    """Say how many generated bad-input cases ran (tests/test_bad_input*.py, tests/bad_input_cases.py)."""
    from bad_input_cases import CASES

    if sum(CASES.values()):
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(CASES.items()))
        terminalreporter.write_line(f"bad-input suite: {sum(CASES.values())} generated cases ran ({counts})")
