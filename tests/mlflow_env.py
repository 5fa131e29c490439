"""A virtual environment with the MLflow server (the full ``mlflow`` distribution, pinned), cached
between runs, for tests/test_mlflow.py's real ``mlflow server``. Only the server runs from it: the
project's own environment has the client (``mlflow-skinny``, the ``mlflow`` extra), since the full
distribution pins older versions of the project's dependencies (pyarrow). ``python
tests/mlflow_env.py`` creates it ahead of the tests (``make mlflow-env``; CI does so while lint runs)."""

from __future__ import annotations

from cached_venv import Tool

MLFLOW = "3.17.2"  # the same release as the client in the project's environment
TOOL = Tool("MLflow", "mlflow", MLFLOW, "OMKL_MLFLOW_VENV", f"mlflow=={MLFLOW}", ("mlflow", "--version"))
ensure = TOOL.ensure

if __name__ == "__main__":
    TOOL.main()
