"""A virtual environment with Apache Airflow (pinned), cached between runs, for the DAG's real run
in tests/test_schedulers.py. ``python tests/airflow_env.py`` creates it ahead of the tests (``make
airflow-env``; CI does so before ``make test``, so the suite's time is the tests' own)."""

from __future__ import annotations

from cached_venv import Tool

AIRFLOW = "3.3.2"
TOOL = Tool("Airflow", "airflow", AIRFLOW, "OMKL_AIRFLOW_VENV", f"apache-airflow=={AIRFLOW}", ("airflow", "version"))
ensure = TOOL.ensure

if __name__ == "__main__":
    TOOL.main()
