"""Scheduled retraining without a scheduler of our own: a crontab line, and the one command it runs.

``omkl schedule window`` is one scheduled run: ``omkl retrain`` on the day's window (a data file,
which the retrain ingests into the store once, or an ingested dataset), printing one JSON line.
``omkl schedule cron`` prints the crontab line that runs it every night under ``flock`` (an
overlapping run exits 75 at once and is not started) and appends the JSON line to
``WORK/runs.jsonl``. The day is always explicit (``--date``; cron's line computes it from the
clock once, at the start), so a rerun of a day is the same window and the same retrain key.
The Airflow DAG (:mod:`.airflow_dag`) runs the same steps as separate tasks.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from omkl_dist.storage.errors import DataError
from omkl_dist.storage.location import is_remote, location

from .cli_base import EXIT_BAD_INPUT

# one field of a cron schedule: numbers, names (jan, mon), *, ranges, lists and steps
_CRON_FIELD = re.compile(r"[0-9A-Za-z*,/-]+")


def _day(day: str) -> str:
    try:
        return dt.date.fromisoformat(day).isoformat()
    except (TypeError, ValueError):
        raise ValueError(f"--date must be a day as YYYY-MM-DD, got {day!r}") from None


def _omkl() -> str:
    """The ``omkl`` executable of this installation (what the crontab line runs)."""
    found = Path(sys.executable).with_name("omkl")
    return str(found) if found.exists() else (shutil.which("omkl") or "omkl")


def cron_line(
    *,
    store,
    name: str,
    source: str,
    work,
    at: str = "30 2 * * *",
    days_back: int = 1,
    retrain_args: str = "",
    omkl: str | None = None,
) -> str:
    """The crontab line of a nightly retrain of ``name`` on the window ``source`` of the day before.

    Every argument is quoted for ``sh``, and every ``%`` of the command escaped as ``\\%`` (cron
    turns an unescaped one into a newline and removes the backslash of an escaped one)."""
    fields = at.split()
    if len(fields) != 5 or not all(_CRON_FIELD.fullmatch(f) for f in fields):
        raise ValueError(f"--at must be a cron schedule of 5 fields (minute hour day month weekday), got {at!r}")
    if "{date}" not in source:
        raise ValueError(f"--source must contain {{date}} (each night's window is another file), got {source!r}")
    work = Path(work).expanduser().absolute()
    store = Path(store).expanduser().absolute()
    omkl = omkl or _omkl()
    for option, value in (("--store", store), ("--model", name), ("--source", source), ("--work", work),
                          ("--retrain-args", retrain_args), ("OMKL_BIN", omkl)):  # fmt: skip
        if "\n" in str(value) or "\r" in str(value):
            raise ValueError(f"{option} must not contain a line break (a crontab entry is one line), got {value!r}")
    day = f"$(date -u -d '{days_back} day ago' +%F)"
    command = " ".join(
        [
            "mkdir -p",
            shlex.quote(str(work)),
            "&&",
            "flock -n -E 75",
            shlex.quote(str(work / ".omkl-schedule.lock")),
            shlex.quote(omkl),
            "schedule window",
            "--store",
            shlex.quote(str(store)),
            "--model",
            shlex.quote(name),
            "--source",
            shlex.quote(source),
            "--date",
            f'"{day}"',
            *(["--retrain-args", shlex.quote(retrain_args)] if retrain_args else []),
            ">>",
            shlex.quote(str(work / "runs.jsonl")),
            "2>>",
            shlex.quote(str(work / "runs.err")),
        ]
    )
    return " ".join(fields) + " " + command.replace("%", "\\%")


def run_window(*, store, name: str, source: str, day: str, retrain_args: str = "") -> tuple[dict, int]:
    """Retrain on one day's window (:func:`day_window`); returns (the JSON summary, the exit status)."""
    base = {"model": name, "date": day, "source": source}
    try:
        data = day_window(source, day)
    except (DataError, ValueError, OSError) as exc:
        return {**base, "status": "error", "exit": EXIT_BAD_INPUT, "error": str(exc)}, EXIT_BAD_INPUT
    command = [
        sys.executable,
        "-m",
        "omkl_dist.pipelines.cli",
        "retrain",
        "--store",
        str(Path(store).expanduser()),
        "--model",
        name,
        "--data",
        data,
        "--quiet",
        *shlex.split(retrain_args),
    ]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    lines = done.stdout.strip().splitlines()
    try:
        summary = json.loads(lines[-1])
    except (IndexError, ValueError):
        summary = {"status": "error", "exit": done.returncode, "error": "retrain printed no summary (see its stderr)"}
    return {**base, "data": data, **summary}, done.returncode


def day_window(source: str, day: str) -> str:
    """The day's window: ``source`` with ``{date}`` replaced by ``day`` -- a data file, a folder of
    parquet files or an ingested dataset, here or at a URL -- checked to have arrived (its path made
    absolute; a URL as it is). A file is not ingested here:
    ``omkl retrain`` ingests it into the store (once: a rerun of the day finds it by its content),
    reading it with the retrain's options (``--label-column``, ``--categorical``, ...) and, for a
    later version, the champion's column encoder and width -- what a window ingested apart from the
    store could not know."""
    day = _day(day)
    window = location(source.replace("{date}", day))  # (a URL is no Path: s3://b/x was read as s3:/b/x)
    if not window.exists():
        raise DataError(
            "the day's window has not arrived",
            path=window,
            fix="deliver the file (or ingested dataset) before the run, or rerun the day later",
        )
    return str(window) if is_remote(window) else str(window.expanduser().absolute())
