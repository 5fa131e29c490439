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

from omkl_dist.storage.outputs import process_alive

from . import CONFIG_PATH
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
    path = Path(run_dir) / STATE
    if not path.is_file():
        raise FileNotFoundError(f"no cluster state in {run_dir} (start one with `omkl cluster up --run-dir {run_dir}`)")
    return json.loads(path.read_text())


def _env(threads: int) -> dict:
    env = dict(os.environ)
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    env["DASK_CONFIG"] = str(CONFIG_PATH.parent)  # cluster/dask.yaml
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
    run_dir = Path(run_dir).resolve()
    if (run_dir / STATE).is_file():
        old = read_state(run_dir)
        if any(process_alive(p) for p in _all_pids(old)):
            raise FileExistsError(
                f"a cluster is already running from {run_dir} ({old['scheduler_address']}); "
                "stop it with `omkl cluster down` or use another --run-dir"
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    tls_dir = None if tls_dir is None else str(Path(tls_dir).resolve())
    sched_file = run_dir / "scheduler.json"
    sched_file.unlink(missing_ok=True)
    dask, env = _dask_executable(), _env(threads)
    protocol = ["--protocol", "tls"] if tls_dir else []
    procs = {"scheduler": None, "workers": []}
    state = {
        "run_dir": str(run_dir),
        "tls_dir": tls_dir,
        "workers": workers,
        "threads": threads,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "pids": procs,
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


def _spawn(cmd, log_path, env) -> int:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True
        )
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
    return [p for p in [pids.get("scheduler"), *pids.get("workers", [])] if p]


def connect(address, *, tls_dir=None, timeout: float = 10.0):
    """A client of the scheduler at ``address``; a clear error if it does not answer in time."""
    from distributed import Client

    if str(address).startswith("tls://") and tls_dir is None:
        raise ConnectionError(f"the scheduler at {address} uses TLS: pass the certificates' directory (--tls-dir)")
    try:
        return Client(address, timeout=timeout, security=security(tls_dir))
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(
            f"no Dask scheduler answered at {address} within {timeout:g} s ({exc}); start one "
            "with `omkl cluster up` or check the address (and --tls-dir for a TLS cluster)"
        ) from None


def status(run_dir=DEFAULT_RUN_DIR, timeout: float = 5.0) -> dict:
    """Processes alive and the workers the scheduler knows."""
    state = read_state(run_dir)
    out = {
        "scheduler_address": state.get("scheduler_address"),
        "dashboard": state.get("dashboard"),
        "processes": {str(p): process_alive(p) for p in _all_pids(state)},
        "workers": [],
    }
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
        out["reachable"] = False
    return out


def down(run_dir=DEFAULT_RUN_DIR, timeout: float = 20.0) -> dict:
    """Stop the cluster; returns the pids stopped and those that had to be killed (none when no
    cluster runs from ``run_dir``: stopping twice is not an error)."""
    if not (Path(run_dir) / STATE).is_file():
        return {"stopped": [], "killed": []}
    state = read_state(run_dir)
    pids = _all_pids(state)
    if state.get("scheduler_address") and any(process_alive(p) for p in pids):
        try:
            with connect(state["scheduler_address"], tls_dir=state.get("tls_dir"), timeout=5.0) as client:
                client.shutdown()
        except Exception:  # noqa: BLE001 - unreachable or already closing: the signals below finish the job
            pass
    killed = _stop_groups(pids, timeout)
    (Path(run_dir) / STATE).unlink(missing_ok=True)
    return {"stopped": pids, "killed": killed}


def _stop_groups(pids, timeout) -> list[int]:
    """SIGTERM each process group (a worker's nanny and its worker), then SIGKILL what is left;
    returns the groups that needed SIGKILL."""
    killed = []
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        alive = [p for p in pids if process_alive(p) or _group_alive(p)]
        if not alive:
            break
        if sig == signal.SIGKILL:
            killed = alive
        for p in alive:
            try:
                os.killpg(p, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(process_alive(p) or _group_alive(p) for p in alive):
            time.sleep(0.1)
    return killed


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` (its session's children) is still running."""
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        fields = fh.read().split(")")[-1].split()
                    if int(fields[2]) == pgid and fields[0] != "Z":
                        return True
                except (OSError, IndexError, ValueError):
                    continue
    except OSError:
        return False
    return False
