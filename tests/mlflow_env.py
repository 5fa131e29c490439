"""A virtual environment with the MLflow server (the full ``mlflow`` distribution, pinned), cached
between runs, for tests/test_mlflow.py's real ``mlflow server``. Only the server runs from it: the
project's own environment has the client (``mlflow-skinny``, the ``mlflow`` extra), since the full
distribution pins older versions of the project's dependencies (pyarrow). ``python
tests/mlflow_env.py`` creates it ahead of the tests (``make mlflow-env``; CI does so while lint runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import cached_venv

MLFLOW = "3.17.2"  # the same release as the client in the project's environment


def ensure() -> tuple[Path | None, str]:
    """``(the venv, "")`` once it holds a working MLflow server; ``(None, why)`` when it cannot be installed."""
    venv = cached_venv.venv_dir("mlflow", MLFLOW, "OMKL_MLFLOW_VENV")
    return cached_venv.ensure(venv, f"mlflow=={MLFLOW}", ["mlflow", "--version"])


if __name__ == "__main__":
    path, why = ensure()
    print(f"MLflow {MLFLOW} ready in {path}" if path else f"MLflow could not be installed: {why}")
    sys.exit(0 if path else 1)
