"""A real Dask cluster on this machine: one ``dask scheduler`` and N ``dask worker`` processes.

``up`` starts them on 127.0.0.1 (loopback only), each in its own session so they outlive the
command, with logs, pid files and the scheduler file in a run directory; ``status`` reports them;
``down`` shuts them down (scheduler first, then anything left, by process group) and leaves no
process behind. Every worker runs under a nanny, which restarts it if the process dies.
Workers get ``--threads`` threads and the same number for numba and BLAS, so two workers on two
cores do not oversubscribe them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from omkl_dist.storage.errors import DataError
from omkl_dist.storage.outputs import process_alive

from . import CONFIG_PATH
from .handshake import check_scheduler
from .processes import TOKEN_VAR, carries_token, group_members, identity, is_ours, new_token, start_time
from .profiler import safe_worker_environ
from .tls import security, tls_files

STATE = "cluster.json"
DEFAULT_RUN_DIR = Path("runs") / "cluster"


def _dask_executable() -> str:
    beside = Path(sys.executable).with_name("dask")
    found = str(beside) if beside.is_file() else shutil.which("dask")
    if not found:
        raise FileNotFoundError("the `dask` command was not found; install omkl-dist's dependencies (make test)")
    return found


def read_state(run_dir) -> dict:
    """The state ``cluster up`` wrote into ``run_dir``, checked against its schema (a
    :class:`DataError` naming the file otherwise)."""
    path = Path(run_dir).expanduser() / STATE
    if not path.is_file():
        raise FileNotFoundError(f"no cluster state in {run_dir} (start one with `omkl cluster up --run-dir {run_dir}`)")
    try:
        state = json.loads(path.read_text())
    except (UnicodeDecodeError, ValueError) as exc:
        problem = f"not JSON ({exc})"
    else:
        problem = state_problem(state)
    if problem:
        raise DataError(
            f"not a cluster state file written by `omkl cluster up`: {problem}",
            path=path,
            fix="no process is signalled on its word; stop any cluster started from this folder yourself, "
            "then delete the file (or use another --run-dir)",
        )
    return state


def _is_pid(value) -> bool:
    return type(value) is int and 1 < value < 2**31  # pid 1 is init; bool is no pid


def _is_identity(value) -> bool:
    return (
        isinstance(value, dict)
        and type(value.get("start_time")) is int
        and isinstance(value.get("cmdline"), list)
        and all(isinstance(arg, str) for arg in value["cmdline"])
    )


def _optional_text(value) -> bool:
    return value is None or isinstance(value, str)


# cluster.json: key -> (required, check, what it must be)
_SCHEMA = {
    "pids": (True, lambda v: isinstance(v, dict), "an object with scheduler and workers"),
    "identities": (
        True,
        lambda v: isinstance(v, dict) and all(_is_identity(i) for i in v.values()),
        "an object of pid -> {start_time: integer, cmdline: [strings]}",
    ),
    "token": (True, lambda v: isinstance(v, str) and len(v) >= 16, "a string of at least 16 characters"),
    "run_dir": (True, lambda v: isinstance(v, str), "a string"),
    "scheduler_address": (False, lambda v: isinstance(v, str), "a string"),
    "dashboard": (False, _optional_text, "a string or null"),
    "tls_dir": (False, _optional_text, "a string or null"),
}


def state_problem(state) -> str | None:
    """What makes ``state`` (parsed ``cluster.json``) unusable, or None if it fits the schema."""
    if not isinstance(state, dict):
        return f"expected a JSON object, got {type(state).__name__}"
    for key, (required, check, expected) in _SCHEMA.items():
        if key not in state:
            if required:
                return f"the key {key!r} is missing"
        elif not check(state[key]):
            return f"{key!r} must be {expected}, got {state[key]!r:.80}"
    pids = state["pids"]
    if not ("scheduler" in pids and (pids["scheduler"] is None or _is_pid(pids["scheduler"]))):
        return f"pids.scheduler must be a process id or null, got {pids.get('scheduler')!r:.80}"
    if not (isinstance(pids.get("workers"), list) and all(_is_pid(p) for p in pids["workers"])):
        return f"pids.workers must be a list of process ids, got {pids.get('workers')!r:.80}"
    return None


def _env(threads: int, token: str) -> dict:
    env = dict(os.environ)
    env[TOKEN_VAR] = token  # marks every process of this cluster (see .processes)
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    env["DASK_CONFIG"] = str(CONFIG_PATH.parent)  # cluster/dask.yaml
    env.update(safe_worker_environ())  # no profiler where it can hang a worker (Python 3.11)
    return env


def _tls_args(tls_dir) -> list[str]:
    if tls_dir is None:
        return []
    f = tls_files(tls_dir)
    return ["--tls-ca-file", str(f["ca"]), "--tls-cert", str(f["cert"]), "--tls-key", str(f["key"])]


def up(
    run_dir=DEFAULT_RUN_DIR,
    *,
    workers: int = 2,
    threads: int = 1,
    memory_limit: str = "auto",
    tls_dir=None,
    port: int = 0,
    timeout: float = 60.0,
) -> dict:
    """Start the scheduler and ``workers`` worker processes; return the cluster state."""
    if type(port) is not int or not 0 <= port <= 65535:
        raise ValueError(f"port must be 0 (any free port) or 1..65535, got {port!r}")
    run_dir = Path(run_dir).expanduser().resolve()
    if (run_dir / STATE).is_file():
        old = read_state(run_dir)
        if _own_processes(old, run_dir)[0]:
            raise FileExistsError(
                f"a cluster is already running from {run_dir} ({old['scheduler_address']}); "
                "stop it with `omkl cluster down` or use another --run-dir"
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    tls_dir = None if tls_dir is None else str(Path(tls_dir).expanduser().resolve())
    sched_file = run_dir / "scheduler.json"
    sched_file.unlink(missing_ok=True)
    token = new_token()
    dask, env = _dask_executable(), _env(threads, token)
    protocol = ["--protocol", "tls"] if tls_dir else []
    procs = {"scheduler": None, "workers": []}
    state = {
        "run_dir": str(run_dir),
        "tls_dir": tls_dir,
        "workers": workers,
        "threads": threads,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "pids": procs,
        "identities": {},  # pid -> start time and command line: what proves a process ours at `down`
        "token": token,
    }
    try:
        procs["scheduler"] = _spawn(
            [
                dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *protocol,
                "--dashboard-address",
                "127.0.0.1:0",
                "--scheduler-file",
                str(sched_file),
                *_tls_args(tls_dir),
            ],
            run_dir / "scheduler.log",
            env,
            state["identities"],
        )
        info = _wait_for_file(sched_file, procs["scheduler"], timeout, run_dir / "scheduler.log")
        state["scheduler_address"] = info["address"]
        dash = info.get("services", {}).get("dashboard")
        state["dashboard"] = f"http://127.0.0.1:{dash}/status" if dash else None
        for i in range(workers):
            procs["workers"].append(
                _spawn(
                    [
                        dask,
                        "worker",
                        "--scheduler-file",
                        str(sched_file),
                        "--host",
                        "127.0.0.1",
                        *protocol,
                        "--dashboard-address",
                        "127.0.0.1:0",  # its HTTP server too: nothing listens beyond loopback
                        "--nthreads",
                        str(threads),
                        "--nworkers",
                        "1",
                        "--name",
                        f"omkl-w{i}",
                        "--memory-limit",
                        memory_limit,
                        "--local-directory",
                        str(run_dir / f"w{i}"),
                        "--death-timeout",
                        "60",
                        *_tls_args(tls_dir),
                    ],
                    run_dir / f"worker-{i}.log",
                    env,
                    state["identities"],
                )
            )
        _write_state(run_dir, state)
        with connect(state["scheduler_address"], tls_dir=tls_dir, timeout=timeout) as client:
            client.wait_for_workers(workers, timeout=timeout)
    except BaseException:
        _write_state(run_dir, state)
        down(run_dir)
        raise
    return state


def _spawn(cmd, log_path, env, identities) -> int:
    """Start ``cmd`` in a session of its own; record its identity in ``identities`` (by pid)."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True
        )
    # Popen returns once the child has exec'd, so this is the dask command's own command line
    identities[str(proc.pid)] = identity(proc.pid, wait=2.0) or {"start_time": -1, "cmdline": []}
    return proc.pid


def _wait_for_file(path, pid, timeout, log) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file():
            try:
                return json.loads(path.read_text())
            except json.JSONDecodeError:
                pass  # being written
        if not process_alive(pid):
            raise RuntimeError(f"the scheduler exited at start; see {log}")
        time.sleep(0.1)
    raise TimeoutError(f"the scheduler did not start within {timeout:.0f} s; see {log}")


def _write_state(run_dir, state) -> None:
    tmp = Path(run_dir) / (STATE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, Path(run_dir) / STATE)


def _all_pids(state) -> list[int]:
    pids = state.get("pids", {})
    return list(dict.fromkeys(p for p in [pids.get("scheduler"), *pids.get("workers", [])] if p))


def connect(address, *, tls_dir=None, timeout: float = 10.0):
    """A client of the scheduler at ``address``; a clear error if no Dask scheduler answers there
    within ``timeout`` seconds (nothing listening, a silent or a non-Dask server, a TLS mismatch)."""
    from distributed import Client

    if not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    if str(address).startswith("tls://") and tls_dir is None:
        raise ConnectionError(f"the scheduler at {address} uses TLS: pass the certificates' directory (--tls-dir)")
    sec = security(tls_dir)
    deadline = time.monotonic() + timeout
    try:
        # distributed's own handshake has no deadline and trusts the sizes it is sent: look first
        check_scheduler(
            str(address), ssl_context=sec and sec.get_connection_args("client")["ssl_context"], timeout=timeout
        )
        return Client(address, timeout=max(deadline - time.monotonic(), 1.0), security=sec)
    except (OSError, TimeoutError) as exc:  # NotAScheduler is a ConnectionError, an OSError
        raise ConnectionError(
            f"no Dask scheduler answered at {address} within {timeout:g} s ({exc}); start one "
            "with `omkl cluster up` or check the address (and --tls-dir for a TLS cluster)"
        ) from None


def running_cluster(run_dir=DEFAULT_RUN_DIR) -> tuple[str, str | None]:
    """``(scheduler address, TLS folder or None)`` of the cluster ``omkl cluster up`` started in
    ``run_dir`` and still running: where a job given no scheduler goes. A clear error otherwise."""
    run_dir = Path(run_dir).expanduser()
    if not (run_dir / STATE).is_file():
        raise ConnectionError(
            f"no --scheduler given, and no cluster was started in {run_dir}: start one with `omkl cluster up` "
            "(a job then finds it there), or pass --scheduler ADDR"
        )
    state = read_state(run_dir)
    ours, _, _ = _own_processes(state, run_dir)
    if state["pids"]["scheduler"] not in ours or not state.get("scheduler_address"):
        raise ConnectionError(
            f"no --scheduler given, and the cluster started in {run_dir} is not running (its scheduler has "
            "stopped): start it again with `omkl cluster up`, or pass --scheduler ADDR"
        )
    return state["scheduler_address"], state.get("tls_dir")


def status(run_dir=DEFAULT_RUN_DIR, timeout: float = 5.0) -> dict:
    """The recorded processes (True: running and proven ours), those whose pid another process has
    taken since (``not_ours``), and the workers the scheduler knows (asked only if it is ours)."""
    run_dir = Path(run_dir).expanduser()
    state = read_state(run_dir)
    ours, _, foreign = _own_processes(state, run_dir)
    out = {
        "scheduler_address": state.get("scheduler_address"),
        "dashboard": state.get("dashboard"),
        "processes": {str(p): p in ours for p in _all_pids(state)},
        "not_ours": foreign,
        "workers": [],
        "reachable": False,
    }
    if state["pids"]["scheduler"] not in ours or not state.get("scheduler_address"):
        return out
    try:
        with connect(state["scheduler_address"], tls_dir=state.get("tls_dir"), timeout=timeout) as client:
            info = client.scheduler_info()["workers"]
            out["workers"] = [
                {
                    "address": a,
                    "name": w.get("name"),
                    "nthreads": w.get("nthreads"),
                    "memory_limit": w.get("memory_limit"),
                    "pid": w.get("pid"),
                }
                for a, w in sorted(info.items())
            ]
            out["reachable"] = True
    except (ConnectionError, KeyError):
        pass
    return out


def down(run_dir=DEFAULT_RUN_DIR, timeout: float = 20.0) -> dict:
    """Stop the cluster: the recorded processes proven to be the ones ``up`` started (see
    :mod:`.processes`), never another process that has their pid now.

    Returns the pids (process groups) stopped, those that needed SIGKILL, and ``not_ours``: recorded
    pids now held by other processes, left alone. Stopping twice, or when no cluster runs from
    ``run_dir``, is not an error.
    """
    run_dir = Path(run_dir).expanduser()
    if not (run_dir / STATE).is_file():
        return {"stopped": [], "killed": [], "not_ours": []}
    state = read_state(run_dir)
    groups, strays, foreign = _own_processes(state, run_dir)
    if state["pids"]["scheduler"] in groups and state.get("scheduler_address"):
        try:
            with connect(state["scheduler_address"], tls_dir=state.get("tls_dir"), timeout=5.0) as client:
                client.shutdown()
        except Exception:  # noqa: BLE001 - unreachable or already closing: the signals below finish the job
            pass
    killed = _stop(groups, strays, timeout)
    (run_dir / STATE).unlink(missing_ok=True)
    return {"stopped": groups + sorted(strays), "killed": killed, "not_ours": foreign}


def _own_processes(state, run_dir) -> tuple[list[int], dict, list[int]]:
    """What of ``state``'s processes is ours to signal: (the recorded pids proven ours, each the
    leader of its process group; {pid: start time} of processes left in the group of a recorded
    pid whose leader is gone, proven ours by the run's token; the recorded pids that run but are
    not ours)."""
    scheduler_file = Path(run_dir).expanduser().resolve() / "scheduler.json"
    groups, strays, foreign = [], {}, []
    for pid in _all_pids(state):
        if is_ours(pid, state["identities"].get(str(pid)), scheduler_file):
            groups.append(pid)
            continue
        if process_alive(pid):
            foreign.append(pid)
        for member in group_members(pid):
            if carries_token(member, state["token"]):
                strays[member] = start_time(member)
    return groups, strays, foreign


def _stop(groups, strays, timeout) -> list[int]:
    """SIGTERM each of our process groups (a worker's nanny and its worker) and stray processes,
    then SIGKILL what is left; returns what needed SIGKILL.

    A group proven ours stays ours while it has a member: Linux does not hand out a pid that is
    still some group's id. A stray is signalled only while its start time is the one proven.
    """

    def left():
        return [g for g in groups if group_members(g)], [p for p, t in strays.items() if start_time(p) == t]

    killed = []
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        alive_groups, alive_strays = left()
        if not alive_groups and not alive_strays:
            break
        if sig == signal.SIGKILL:
            killed = alive_groups + alive_strays
        for send, targets in ((os.killpg, alive_groups), (os.kill, alive_strays)):
            for target in targets:
                try:
                    send(target, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(left()):
            time.sleep(0.1)
    return killed
