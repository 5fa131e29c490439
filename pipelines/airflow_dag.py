"""Airflow DAG (Airflow 3): nightly retraining of one stored model with the ``omkl`` command line.

Copy this file into Airflow's ``dags/`` folder (or point ``dags_folder`` at it). Airflow imports
nothing of omkl-dist: every task is a shell command running the ``omkl`` executable of the
environment where omkl-dist is installed, so numba, Dask and the data stay out of the scheduler.

Tasks, in order, for the run's logical date ``{{ ds }}`` (never the wall clock, so a rerun or a
backfill of a day sees the same window and the retrain returns the same version):

1. ``arrived`` -- ``omkl schedule arrived``: the day's window (a data file or an ingested dataset)
   has arrived (else the task fails, and is retried); it prints its path, the next task's input.
2. ``retrain`` -- ``omkl retrain`` on that window: a file is ingested into the store (once: a
   retry or rerun finds it by its content) with the retrain's options (``--label-column``, ...)
   and the champion's column encoder and width; continue the champion, gate, publish; the
   report and plots go to ``WORK/reports/<day>``. Exit 75 (the store is locked) is retried.
3. ``report``  -- ``omkl report``: the store's version history drawn into ``WORK/reports/<day>/history``.

Settings, read from the environment when Airflow parses the file:

=====================  ==================================================================
``OMKL_BIN``           the ``omkl`` executable (default ``omkl`` on the PATH)
``OMKL_STORE``         the model store's folder
``OMKL_MODEL``         the model's name in the store (default ``nightly``)
``OMKL_SOURCE``        each day's window with ``{date}`` for the day, e.g. ``/data/in/{date}.csv``
``OMKL_WORK``          folder for the reports
``OMKL_RETRAIN_ARGS``  further ``omkl retrain`` options (first run: ``--algo spa``; ``--gate``, a file's
                       reading options: ``--label-column outcome``, ...)
``OMKL_SCHEDULE``      the cron schedule (default ``30 2 * * *``, 02:30 UTC)
=====================  ==================================================================

MLflow: when the Airflow Variable ``omkl_mlflow_uri`` is set (``airflow variables set
omkl_mlflow_uri http://mlflow:5000``, or ``AIRFLOW_VAR_OMKL_MLFLOW_URI`` in the environment), the
retrain runs with ``--mlflow --mlflow-uri`` that server (and ``--experiment`` the Variable
``omkl_mlflow_experiment``, when set): each night is an MLflow run and its version a registered
model version (issue 40). The Variables are read when the task runs, not when the file is parsed.
"""

from __future__ import annotations

import os
import shlex
from datetime import datetime, timedelta, timezone

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG

OMKL = shlex.quote(os.environ.get("OMKL_BIN", "omkl"))
STORE = shlex.quote(os.environ.get("OMKL_STORE", "/var/lib/omkl/store"))
MODEL = shlex.quote(os.environ.get("OMKL_MODEL", "nightly"))
SOURCE = shlex.quote(os.environ.get("OMKL_SOURCE", "/var/lib/omkl/incoming/{date}.csv"))
WORK = os.environ.get("OMKL_WORK", "/var/lib/omkl/work")
RETRAIN_ARGS = os.environ.get("OMKL_RETRAIN_ARGS", "")
DAY = "{{ ds }}"
# the MLflow Variables, rendered into the retrain's environment at run time ("" when unset)
MLFLOW_ENV = {
    "OMKL_MLFLOW_URI": "{{ var.value.get('omkl_mlflow_uri', '') }}",
    "OMKL_MLFLOW_EXPERIMENT": "{{ var.value.get('omkl_mlflow_experiment', '') }}",
}
MLFLOW_ARGS = (
    '${OMKL_MLFLOW_URI:+--mlflow --mlflow-uri "$OMKL_MLFLOW_URI"} '
    '${OMKL_MLFLOW_EXPERIMENT:+--experiment "$OMKL_MLFLOW_EXPERIMENT"}'
)
REPORTS = shlex.quote(os.path.join(WORK, "reports")) + "/" + DAY

with DAG(
    dag_id="omkl_retrain",
    description="Nightly: the day's window arrived, retrain the champion on it (gated), draw the report",
    schedule=os.environ.get("OMKL_SCHEDULE", "30 2 * * *"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=10)},
    tags=["omkl-dist"],
) as dag:
    arrived = BashOperator(
        task_id="arrived",
        bash_command=f"{OMKL} schedule arrived --source {SOURCE} --date {DAY}",
    )
    retrain = BashOperator(
        task_id="retrain",
        bash_command=(
            f"{OMKL} retrain --store {STORE} --model {MODEL} "
            "--data \"{{ ti.xcom_pull(task_ids='arrived') }}\" "
            f"--report-dir {REPORTS} --quiet {RETRAIN_ARGS} {MLFLOW_ARGS}"
        ),
        env=MLFLOW_ENV,
        append_env=True,  # (the worker's own environment too: PATH, the data's credentials)
    )
    report = BashOperator(
        task_id="report",
        bash_command=f"{OMKL} report --store {STORE} --model {MODEL} --out {REPORTS}/history",
    )
    arrived >> retrain >> report
