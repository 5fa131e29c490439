"""A virtual environment with Apache Airflow (pinned), cached between runs, for the DAG's real run
in tests/test_schedulers.py. ``python tests/airflow_env.py`` creates it ahead of the tests (``make
airflow-env``; CI does so before ``make test``, so the suite's time is the tests' own)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

AIRFLOW = "3.3.2"


def venv_dir() -> Path:
    default = Path.home() / ".cache" / "omkl-dist" / f"airflow-{AIRFLOW}-py{sys.version_info[0]}.{sys.version_info[1]}"
    return Path(os.environ.get("OMKL_AIRFLOW_VENV", default))


def ensure() -> tuple[Path | None, str]:
    """``(the venv, "")`` once it holds a working Airflow; ``(None, why)`` when it cannot be installed."""
    venv = venv_dir()
    ready = venv / ".omkl-ready"
    if ready.is_file():
        return venv, ""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others find it ready
        if ready.is_file():
            return venv, ""
        shutil.rmtree(venv, ignore_errors=True)
        base = getattr(sys, "_base_executable", sys.executable)
        steps = [
            [base, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"apache-airflow=={AIRFLOW}"],
            [str(venv / "bin" / "airflow"), "version"],
        ]
        for step in steps:
            proc = subprocess.run(step, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                return None, f"`{' '.join(step[-3:])}` failed: {(proc.stderr or proc.stdout)[-1500:]}"
        ready.write_text(AIRFLOW + "\n")
    return venv, ""


if __name__ == "__main__":
    path, why = ensure()
    print(f"Airflow {AIRFLOW} ready in {path}" if path else f"Airflow could not be installed: {why}")
    sys.exit(0 if path else 1)
