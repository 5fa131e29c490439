"""A virtual environment with Apache Airflow (pinned), cached between runs, for the DAG's real run
in tests/test_schedulers.py. ``python tests/airflow_env.py`` creates it ahead of the tests (``make
airflow-env``; CI does so before ``make test``, so the suite's time is the tests' own)."""

from __future__ import annotations

import sys
from pathlib import Path

import cached_venv

AIRFLOW = "3.3.2"


def ensure() -> tuple[Path | None, str]:
    """``(the venv, "")`` once it holds a working Airflow; ``(None, why)`` when it cannot be installed."""
    venv = cached_venv.venv_dir("airflow", AIRFLOW, "OMKL_AIRFLOW_VENV")
    return cached_venv.ensure(venv, f"apache-airflow=={AIRFLOW}", ["airflow", "version"])


if __name__ == "__main__":
    path, why = ensure()
    print(f"Airflow {AIRFLOW} ready in {path}" if path else f"Airflow could not be installed: {why}")
    sys.exit(0 if path else 1)
