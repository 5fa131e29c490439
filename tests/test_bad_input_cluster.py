"""Generated cluster.json documents (hypothesis): valid per the schema, then mutated -- wrong types,
missing keys, foreign pids -- fed to the reader, `omkl cluster status` and `omkl cluster down`.

Every case ends in a result or in one `error:` line naming the file (exit 2), never a traceback;
and no process but the cluster's own is ever signalled: an unrelated process whose pid the
document lists (with its true or a forged identity), and this test process, keep running.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from bad_input_cases import count
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omkl_dist.cluster.local import STATE, read_state, state_problem
from omkl_dist.cluster.processes import identity, new_token
from omkl_dist.pipelines.cli import main
from omkl_dist.storage import DataError

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def unrelated():
    """Someone else's process, leading its own session (a killpg of its pid would hit it)."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _pids(unrelated, dead_pid):
    """Pids a stale or forged file may list: another program's, this test's, an exited one's."""
    return st.sampled_from([unrelated.pid, os.getpid(), dead_pid])


def _identity(pid):
    """A recorded identity: the process's true one (another program's), or a forged dask one."""
    forged = {"start_time": 1, "cmdline": ["python", "dask", "scheduler", "--scheduler-file", "x/scheduler.json"]}
    return st.sampled_from([identity(pid, wait=1.0) or forged, forged])


@st.composite
def valid_states(draw, pids):
    scheduler = draw(st.one_of(st.none(), pids))
    workers = draw(st.lists(pids, max_size=3))
    listed = [p for p in [scheduler, *workers] if p]
    state = {
        "run_dir": "somewhere",
        "pids": {"scheduler": scheduler, "workers": workers},
        "identities": {str(p): draw(_identity(p)) for p in listed},
        "token": new_token(),
        "tls_dir": None,
        "dashboard": draw(st.one_of(st.none(), st.just("http://127.0.0.1:1/status"))),
    }
    if draw(st.booleans()):
        state["scheduler_address"] = "tcp://127.0.0.1:9"
    return state


_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
_PATHS = [
    ("pids",),
    ("pids", "scheduler"),
    ("pids", "workers"),
    ("identities",),
    ("token",),
    ("run_dir",),
    ("scheduler_address",),
    ("tls_dir",),
    ("dashboard",),
]


@st.composite
def mutated_states(draw, pids):
    """A valid state with keys removed or replaced by values of the wrong type; or no object."""
    state = draw(valid_states(pids))
    for path in draw(st.lists(st.sampled_from(_PATHS), min_size=1, max_size=3)):
        holder = state
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            if draw(st.booleans()):
                holder.pop(path[-1], None)
            else:
                holder[path[-1]] = draw(_JUNK)
    if isinstance(state.get("identities"), dict) and state["identities"] and draw(st.booleans()):
        pid = next(iter(state["identities"]))
        state["identities"][pid] = draw(_JUNK)
    return draw(st.sampled_from([state, state, [state], json.dumps(state)]))


def _check(tmp_path, document, unrelated):
    """Reader, status and down on ``document``: a result or one clear error; nothing foreign signalled."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    path = run_dir / STATE
    text = json.dumps(document, allow_nan=True)
    problem = None
    for command in ("status", "down"):
        path.write_text(text)
        try:
            read_state(run_dir)
        except DataError as exc:
            problem = str(exc)
            assert str(path) in problem and "Fix:" in problem
        result = CliRunner().invoke(main, ["cluster", command, "--run-dir", str(run_dir)])
        assert result.exit_code in (0, 2), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        if problem:
            line = result.output.strip()
            assert result.exit_code == 2 and line.startswith("error: ") and "\n" not in line and str(path) in line
        else:
            assert result.exit_code == 0, result.output
    assert unrelated.poll() is None, "a process the cluster did not start was signalled"
    return problem


@SETTINGS
@given(data=st.data())
def test_generated_valid_states_never_signal_a_foreign_process(tmp_path, unrelated, dead_pid, data):
    state = data.draw(valid_states(_pids(unrelated, dead_pid)))
    assert state_problem(state) is None
    assert _check(tmp_path, state, unrelated) is None
    count("cluster files")


@SETTINGS
@given(data=st.data())
def test_generated_broken_states_are_one_clear_error(tmp_path, unrelated, dead_pid, data):
    document = data.draw(mutated_states(_pids(unrelated, dead_pid)))
    _check(tmp_path, document, unrelated)
    count("cluster files")
