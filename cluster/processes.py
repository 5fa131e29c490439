"""Which processes a cluster's run folder may signal: only those proven to be the ones it started.

A pid alone proves nothing: ``cluster.json`` may be stale (the cluster died with the machine) and
the pid since reused by an unrelated service, or the file may have been edited. So ``cluster up``
records, for each process it starts, its start time (field 22 of ``/proc/PID/stat``, clock ticks
since boot: a reused pid has a later one) and its command line, and gives every process a random
token in its environment (``OMKL_CLUSTER_TOKEN``, inherited by the worker a nanny starts).
``cluster down`` signals a recorded process only if its start time and command line still match
and the command line is a ``dask scheduler``/``dask worker`` of this run folder (its
``--scheduler-file``); and a process left in such a process group after its leader died only if
it carries the run's token.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

TOKEN_VAR = "OMKL_CLUSTER_TOKEN"


def new_token() -> str:
    """A random token that marks every process of one cluster (in its environment)."""
    return secrets.token_hex(16)


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None if gone."""
    try:
        with open(f"/proc/{int(pid)}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()
    except (OSError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None if it is gone or a zombie."""
    fields = _stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 of stat; the list starts at field 3


def command_line(pid: int) -> list[str] | None:
    """Process ``pid``'s arguments, or None if it is gone (or unreadable)."""
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as fh:
            raw = fh.read()
    except (OSError, ValueError):
        return None
    return [arg.decode(errors="replace") for arg in raw.split(b"\0")[:-1]]


def identity(pid: int, wait: float = 0.0) -> dict | None:
    """What ``cluster up`` records of a process it started: start time and command line (None if
    it is gone). ``wait``: seconds to allow a process that has just exec'd to show its arguments
    (the kernel sets them up a moment after the exec's point of no return)."""
    deadline = time.monotonic() + wait
    while True:
        started, args = start_time(pid), command_line(pid)
        if started is not None and args:
            return {"start_time": started, "cmdline": args}
        if started is None or time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def is_cluster_process(args: list, scheduler_file: Path) -> bool:
    """Whether ``args`` run a ``dask scheduler`` or ``dask worker`` of the run whose scheduler file
    is ``scheduler_file``."""
    role = "scheduler" in args or "worker" in args
    pairs = zip(args, args[1:])
    return role and any(flag == "--scheduler-file" and value == str(scheduler_file) for flag, value in pairs)


def is_ours(pid: int, recorded, scheduler_file: Path) -> bool:
    """Whether ``pid`` is still the very process ``cluster up`` recorded as ``recorded`` (its
    :func:`identity`), a scheduler or worker of the run of ``scheduler_file``."""
    if not isinstance(recorded, dict):
        return False
    now = identity(pid)
    return (
        now is not None
        and now == {"start_time": recorded.get("start_time"), "cmdline": recorded.get("cmdline")}
        and is_cluster_process(now["cmdline"], scheduler_file)
    )


def carries_token(pid: int, token: str) -> bool:
    """Whether process ``pid`` was started with this cluster's token in its environment."""
    try:
        with open(f"/proc/{int(pid)}/environ", "rb") as fh:
            env = fh.read().split(b"\0")
    except (OSError, ValueError):
        return False
    return bool(token) and f"{TOKEN_VAR}={token}".encode() in env


def group_members(pgid: int) -> list[int]:
    """The live processes (not zombies) of process group ``pgid``, by pid."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields and fields[0] not in ("Z", "X") and fields[2] == str(pgid):
                members.append(int(entry))
    return sorted(members)
