"""Hostile input to `omkl cluster`, `omkl submit` and `omkl schedule`: stale or forged cluster.json
files (no process but our own is ever signalled), out-of-range ports, `~` in paths, a scheduler
address that is not a Dask scheduler, `%` in a crontab line. No real cluster is started here."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from omkl_dist.cluster import local
from omkl_dist.cluster.processes import TOKEN_VAR, group_members, identity, new_token
from omkl_dist.pipelines.cli import main
from omkl_dist.storage.synth import synthesize


def run_cli(*args, env=None):
    """``omkl ARGS`` in this process; returns the click result (stdout and stderr in ``output``)."""
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def write_state(run_dir: Path, *, scheduler=None, workers=(), identities=None, token=None) -> dict:
    """A cluster.json as `cluster up` writes it, listing the given pids."""
    run_dir.mkdir(parents=True, exist_ok=True)
    pids = [p for p in [scheduler, *workers] if p]
    state = {
        "run_dir": str(run_dir),
        "tls_dir": None,
        "workers": len(workers),
        "threads": 1,
        "started": "2026-01-01T00:00:00+0000",
        "pids": {"scheduler": scheduler, "workers": list(workers)},
        "identities": identities if identities is not None else {str(p): identity(p, wait=2.0) for p in pids},
        "token": token or new_token(),
        "scheduler_address": "tcp://127.0.0.1:9",
        "dashboard": None,
    }
    (run_dir / "cluster.json").write_text(json.dumps(state))
    return state


@pytest.fixture
def unrelated():
    """A process of someone else's: a `sleep` leading its own session (so a killpg of its pid hits it)."""
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def _fake_dask(run_dir: Path, role: str, token: str, child: bool = False) -> subprocess.Popen:
    """A process that looks like `dask ROLE --scheduler-file RUN/scheduler.json` (sleeping), in a
    session of its own, with the cluster's token; with ``child``, it starts a sleeping child (a
    nanny's worker) and exits, leaving the child alone in its process group."""
    code = (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        "time.sleep(0.5)"
        if child
        else "import time; time.sleep(120)"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, role, "--scheduler-file", str(run_dir.resolve() / "scheduler.json")],
        start_new_session=True,
        env={**os.environ, TOKEN_VAR: token},
    )


def _alive(proc: subprocess.Popen) -> bool:
    return proc.poll() is None


# ------------------------------------------------------------------------------ whose processes
def test_down_leaves_an_unrelated_process_alone(tmp_path, unrelated):
    """A stale cluster.json whose pids now belong to another program: nothing is signalled."""
    write_state(tmp_path / "r", scheduler=unrelated.pid, workers=[unrelated.pid])
    result = run_cli("cluster", "down", "--run-dir", tmp_path / "r")
    time.sleep(0.2)
    assert _alive(unrelated), "cluster down signalled a process it did not start"
    assert result.exit_code == 0 and f"left alone: pid {unrelated.pid}" in result.output
    assert not (tmp_path / "r" / "cluster.json").exists()  # the stale state is gone, the process is not


def test_down_refuses_a_recorded_identity_of_another_program(tmp_path, unrelated):
    """Even the exact start time and command line of another program prove nothing: it must be a
    dask scheduler or worker of this run folder."""
    write_state(tmp_path / "r", scheduler=unrelated.pid)  # its true identity, recorded
    local.down(tmp_path / "r", timeout=2)
    time.sleep(0.2)
    assert _alive(unrelated)


def test_status_tells_a_reused_pid_from_a_running_process(tmp_path, unrelated):
    write_state(tmp_path / "r", scheduler=unrelated.pid)
    info = json.loads(run_cli("cluster", "status", "--run-dir", tmp_path / "r", "--json").output)
    assert info["processes"] == {str(unrelated.pid): False} and info["not_ours"] == [unrelated.pid]
    assert not info["reachable"]  # a scheduler that is not ours is not even asked
    assert "now another process's" in run_cli("cluster", "status", "--run-dir", tmp_path / "r").output


def test_up_over_a_stale_state_file_starts_afresh(tmp_path, unrelated, monkeypatch):
    """A pid reused by another program does not make the run folder look busy."""
    write_state(tmp_path / "r", scheduler=unrelated.pid)
    started = []
    monkeypatch.setattr(local, "_dask_executable", lambda: started.append(1) or "/nonexistent/dask")
    with pytest.raises(OSError):
        local.up(tmp_path / "r", timeout=1)
    assert started and _alive(unrelated)


def test_down_stops_the_processes_proven_ours(tmp_path):
    token = new_token()
    scheduler, worker = _fake_dask(tmp_path / "r", "scheduler", token), _fake_dask(tmp_path / "r", "worker", token)
    try:
        time.sleep(0.3)
        write_state(tmp_path / "r", scheduler=scheduler.pid, workers=[worker.pid], token=token)
        result = local.down(tmp_path / "r", timeout=5)
        assert sorted(result["stopped"]) == sorted([scheduler.pid, worker.pid]) and result["not_ours"] == []
        assert scheduler.wait(5) is not None and worker.wait(5) is not None
    finally:
        scheduler.kill(), worker.kill()


def test_a_process_left_in_our_group_is_stopped_only_with_our_token(tmp_path):
    """A nanny that died leaves its worker in the group: stopped if it carries the run's token."""
    token = new_token()
    for carried, stopped in ((token, True), (new_token(), False)):
        nanny = _fake_dask(tmp_path / "r", "worker", carried, child=True)
        recorded = identity(nanny.pid, wait=2.0)
        nanny.wait(10)
        orphans = group_members(nanny.pid)
        assert orphans, "the test's child process did not start"
        write_state(tmp_path / "r", workers=[nanny.pid], identities={str(nanny.pid): recorded}, token=token)
        result = local.down(tmp_path / "r", timeout=5)
        time.sleep(0.2)
        assert (result["stopped"] == orphans) is stopped
        assert bool(group_members(nanny.pid)) is not stopped
        for p in group_members(nanny.pid):
            os.kill(p, 9)


# ------------------------------------------------------------------------------ cluster.json
@pytest.mark.parametrize(
    "document",
    [
        '{"pids": "x"}',
        "[]",
        "{}",
        "not json at all",
        "\x00\xff",
        '{"pids": {"scheduler": "abc", "workers": [1]}, "identities": {}, "token": "0123456789abcdef", "run_dir": "r"}',
        '{"pids": {"scheduler": 1234, "workers": 5}, "identities": {}, "token": "0123456789abcdef", "run_dir": "r"}',
        '{"pids": {"scheduler": true, "workers": []}, "identities": {}, "token": "0123456789abcdef", "run_dir": "r"}',
        '{"pids": {"scheduler": 1234, "workers": []}, "identities": [], "token": "0123456789abcdef", "run_dir": "r"}',
        '{"pids": {"scheduler": 1234, "workers": []}, "identities": {}, "token": 5, "run_dir": "r"}',
        '{"pids": {"scheduler": 1, "workers": []}, "identities": {}, "token": "0123456789abcdef", "run_dir": "r"}',
    ],
)
@pytest.mark.parametrize("command", ["down", "status"])
def test_a_malformed_state_file_is_one_clear_error(tmp_path, document, command):
    (tmp_path / "cluster.json").write_text(document, errors="surrogateescape")
    result = run_cli("cluster", command, "--run-dir", tmp_path)
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in line
    assert str(tmp_path / "cluster.json") in line and "Fix:" in line


# ------------------------------------------------------------------------------ options
@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_is_refused(tmp_path, port):
    result = run_cli("cluster", "up", "--run-dir", tmp_path / "r", "--port", port)
    assert result.exit_code == 2 and "--port" in result.output and not (tmp_path / "r").exists()
    with pytest.raises(ValueError, match="port must be"):
        local.up(tmp_path / "r", port=int(port))


def test_tilde_in_path_options_means_home(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir(), cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    assert run_cli("cluster", "certs", "--out", "~/certs").exit_code == 0
    assert (home / "certs" / "ca.pem").is_file()
    write_state(home / "r", scheduler=None)
    assert run_cli("cluster", "status", "--run-dir", "~/r").exit_code == 0
    assert run_cli("cluster", "down", "--run-dir", "~/r").exit_code == 0
    assert not (home / "r" / "cluster.json").exists()
    assert list(cwd.iterdir()) == [], "a literal ~ folder was made"


# ------------------------------------------------------------------------------ not a scheduler
class _FakeServer:
    """A TCP server on 127.0.0.1 that accepts and then sends ``reply`` (None: stays silent) on
    every connection, in a thread, until stopped."""

    def __init__(self, reply):
        self.reply, self.stop = reply, threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        held = []
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            held.append(conn)
            if self.reply is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(self.reply)
        for conn in held:
            conn.close()
        self.sock.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)


_REPLIES = {
    "silent": None,
    "http": b"HTTP/1.1 400 Bad Request\r\n\r\n" + b"\xff" * 4096,
    "huge frame": struct.pack("<Q", 8 << 30),  # announces 8 GiB: not allocated
    "short": struct.pack("<Q", 200) + b"x" * 20,  # then silent
    "undecodable": struct.pack("<Q", 24) + b"\x01" + b"\x00" * 23,
}


@pytest.fixture(params=list(_REPLIES))
def fake_server(request):
    server = _FakeServer(_REPLIES[request.param])
    yield server
    server.close()


def test_a_port_that_is_no_scheduler_is_one_clear_error_in_time(fake_server):
    started = time.monotonic()
    with pytest.raises(ConnectionError, match="no Dask scheduler answered at tcp://127.0.0.1:.* within 2 s"):
        local.connect(fake_server.address, timeout=2)
    assert time.monotonic() - started < 5


def test_submit_to_a_port_that_is_no_scheduler(fake_server, tmp_path):
    synthesize(tmp_path / "data", rows=200, features=3, seed=0)
    started = time.monotonic()
    result = run_cli(
        "submit", "spa", "--scheduler", fake_server.address, "--timeout", 2,
        "--data", tmp_path / "data", "--out", tmp_path / "model", "--quiet",
    )  # fmt: skip
    assert time.monotonic() - started < 8
    line = result.output.strip()
    assert result.exit_code == 2 and line.startswith("error: no Dask scheduler answered at ") and "\n" not in line
    assert fake_server.address in line and "omkl cluster up" in line


@pytest.mark.parametrize("address", ["foo", "tcp://127.0.0.1:99999", "udp://127.0.0.1:1", "tcp://127.0.0.1:port"])
def test_a_malformed_scheduler_address_is_one_clear_error(address):
    with pytest.raises(ValueError, match="not a scheduler address.*give tcp://HOST:PORT"):
        local.connect(address, timeout=1)


def test_an_in_process_address_must_name_a_scheduler_of_this_process():
    from distributed.comm import inproc

    unused = f"inproc://{inproc.global_manager.ip}/{os.getpid()}/999999"
    with pytest.raises(ConnectionError, match=f"no Dask scheduler answered at {unused}"):
        local.connect(unused, timeout=1)
    with pytest.raises(ValueError, match="not a scheduler address: 'inproc://x'"):
        local.connect("inproc://x", timeout=1)


@pytest.mark.parametrize("timeout", ["0", "-1"])
def test_submit_timeout_must_be_positive(timeout, tmp_path):
    result = run_cli(
        "submit", "spa", "--scheduler", "tcp://127.0.0.1:9", "--timeout", timeout, "--data", "x", "--out", "y"
    )
    assert result.exit_code == 2 and "--timeout" in result.output


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_connect_timeout_must_be_a_positive_number(timeout):
    with pytest.raises(ValueError, match="timeout must be"):
        local.connect("tcp://127.0.0.1:9", timeout=timeout)


# ------------------------------------------------------------------------------ crontab lines
def as_cron_runs(line: str) -> tuple[list[str], str, str]:
    """What cron (vixie cron, cronie) makes of a crontab line: the 5 schedule fields, the command
    given to sh, and the text given to its standard input. In the command, ``\\%`` becomes ``%``
    and the first unescaped ``%`` ends it (the rest, with ``%`` as newlines, is standard input)."""
    fields = line.split(None, 5)
    command, escaped = [], False
    for i, ch in enumerate(fields[5]):
        if escaped:
            if ch != "%":
                command.append("\\")
            command.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            return fields[:5], "".join(command), fields[5][i + 1 :].replace("%", "\n")
        else:
            command.append(ch)
    return fields[:5], "".join(command) + ("\\" if escaped else ""), ""


@pytest.mark.parametrize(
    "work, name, source, retrain_args",
    [
        ("w%y", "nightly", "/in/{date}.csv", ""),
        ("my work/%d'x", "a%b c", "/data/in %Y/{date}.csv", "--param 'fmt=%H:%M' --gate 0.01"),
        ("$(touch pwned)", "`id`", "/in/;rm -rf x;/{date}.csv", "--when drift"),
    ],
)
def test_a_crontab_line_runs_what_was_asked_under_cron(tmp_path, work, name, source, retrain_args):
    from omkl_dist.pipelines.schedule import cron_line

    omkl = tmp_path / "bin %x" / "omkl"  # stands in for omkl: prints its arguments, one a line
    omkl.parent.mkdir()
    omkl.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\"\n")
    omkl.chmod(0o755)
    line = cron_line(
        store=tmp_path / "st ore", name=name, source=source, work=tmp_path / work, retrain_args=retrain_args,
        omkl=str(omkl),
    )  # fmt: skip
    assert "\n" not in line
    fields, command, stdin = as_cron_runs(line)
    assert fields == ["30", "2", "*", "*", "*"] and stdin == "", "an unescaped % would cut the command"
    subprocess.run(["sh", "-c", command], check=True, cwd=tmp_path, timeout=30)
    args = (tmp_path / work / "runs.jsonl").read_text().splitlines()
    expected = ["schedule", "window", "--store", str(tmp_path / "st ore"), "--model", name, "--source", source]
    assert args[: len(expected)] == expected and args[len(expected)] == "--date"
    assert (
        args[args.index("--date") + 1] == (dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)).isoformat()
    )
    assert args[args.index("--date") + 2 :] == (["--retrain-args", retrain_args] if retrain_args else [])
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "option, value", [("at", "30 2 * * * extra"), ("at", "30 2 % * *"), ("name", "a\nb"), ("retrain_args", "x\ry")]
)
def test_a_crontab_line_refuses_what_cannot_be_one_line(tmp_path, option, value):
    from omkl_dist.pipelines.schedule import cron_line

    kwargs = {"store": tmp_path, "name": "m", "source": "/in/{date}.csv", "work": tmp_path, option: value}
    with pytest.raises(ValueError, match="--at|line break"):
        cron_line(**kwargs)


def test_submit_path_options_expand_tilde(tmp_path, monkeypatch):
    """--out, --checkpoint-dir and --data of submit name locations: ~ is the home folder."""
    from omkl_dist.pipelines.submit import check_submit_outputs
    from omkl_dist.storage.location import location

    monkeypatch.setenv("HOME", str(tmp_path))
    synthesize(tmp_path / "data", rows=50, features=2, seed=0)
    assert location("~/model") == tmp_path / "model" and location("~/data") == tmp_path / "data"
    assert check_submit_outputs("~/data", "~/model", "~/ck", overwrite=False, resume=False) == tmp_path / "ck"
