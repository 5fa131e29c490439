"""``--mlflow``, ``--mlflow-uri`` and ``--experiment``: the MLflow options of retrain, run, submit,
fit and the store's commands (omkl_dist.mlflow does the work)."""

from __future__ import annotations

import click

MLFLOW_OPTIONS = [
    click.option(
        "--mlflow",
        "mlflow",
        is_flag=True,
        help="Also log the job to MLflow (pip install 'omkl-dist[mlflow]'); a store's versions are registered "
        "there and its aliases mirrored. MLflow being down never fails the command: it says so.",
    ),
    click.option(
        "--mlflow-uri",
        default=None,
        help="The MLflow tracking server (default: MLFLOW_TRACKING_URI).",
    ),
    click.option("--experiment", default=None, help="The MLflow experiment of the runs (default omkl-dist)."),
]


def mlflow_options(command):
    """The three options, on a click command."""
    for option in reversed(MLFLOW_OPTIONS):
        command = option(command)
    return command


def mlflow_target(mlflow: bool, mlflow_uri: str | None, experiment: str | None):
    """The :class:`omkl_dist.mlflow.connection.Target` the options name (None without ``--mlflow``);
    a bad combination is a usage error before any work."""
    from omkl_dist.mlflow.connection import Target

    try:
        return Target.from_options(mlflow, mlflow_uri, experiment)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
