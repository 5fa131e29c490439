"""What the ``omkl`` commands do with MLflow once their own work is done, each step returning the
block their status line shows (``"mlflow": {...}``) and never raising for MLflow's sake.

- :func:`after_retrain`: the retrain's run (its version's lineage as tags), its version registered,
  the aliases mirrored, and any version published while MLflow was down registered too;
- :func:`after_store_change`: ``models promote``/``rollback``/``import`` mirrored (:func:`.registry.sync`);
- :func:`after_job`: the run of ``omkl run``/``submit``/``fit``.

When MLflow is missing or down the block says so (``"error"``) and a note names the way to catch
up (``omkl models sync``); the store and the job's outputs are complete either way.
"""

from __future__ import annotations

from typing import Any

from .connection import MlflowUnavailable, Target, talking
from .registry import register, registered, sync
from .tracking import job_record, log_run, retrain_record

SYNC_LATER = "`omkl models sync` registers it when MLflow is back"


def after_retrain(target: Target, store, summary: dict) -> dict[str, Any]:
    """Track and register one retrain (``summary``: its status line, which gets the block and, on
    failure, a note)."""
    status = summary.get("status")
    block: dict[str, Any] = {"uri": target.uri, "experiment": target.experiment}
    try:
        with talking(target) as client:
            known = registered(client, store.name)
            if status in ("promoted", "kept", "skipped"):
                version = summary["version"] if status != "skipped" else summary["champion"]
                run_id = log_run(client, target.experiment, retrain_record(summary, store.lineage(version)))
                block["run_id"] = run_id
                if status != "skipped":
                    block["registered_version"] = str(register(client, store, version, run_id, known).version)
            done = sync(client, store, target.experiment)
            block["aliases"] = done["aliases"]
            if done["registered"]:
                block["caught_up"] = done["registered"]
    except Exception as exc:  # noqa: BLE001 - after a publish nothing may fail the retrain (MLflow down or refusing)
        block["error"] = str(exc)
        published = f"version {summary['version']} is published" if summary.get("version") else "the store is as it was"
        summary.setdefault("notes", []).append(f"MLflow not updated: {exc}; {published}; {SYNC_LATER}")
    summary["mlflow"] = block
    return summary


def after_store_change(target: Target, store) -> tuple[dict[str, Any], str | None]:
    """Mirror a store change (an alias moved, a version imported); returns the block and, when
    MLflow could not be updated, a note for the user."""
    try:
        with talking(target) as client:
            done = sync(client, store, target.experiment)
    except (MlflowUnavailable, ValueError) as exc:  # (the change is made: it stands)
        return {"uri": target.uri, "error": str(exc)}, f"MLflow not updated: {exc}; {SYNC_LATER}"
    return {"uri": target.uri, **done}, None


def after_job(
    target: Target, command: str, report: dict, job: dict | None = None, trace: dict | None = None
) -> dict[str, Any]:
    """Log one run/submit/fit job (:func:`.tracking.job_record`); returns the block for its report."""
    try:
        with talking(target) as client:
            run_id = log_run(client, target.experiment, job_record(command, report, job, trace))
    except (MlflowUnavailable, ValueError) as exc:  # (the job's outputs are written: they stand)
        return {"uri": target.uri, "error": str(exc)}
    return {"uri": target.uri, "experiment": target.experiment, "run_id": run_id}


def registered_versions(target: Target, name: str) -> dict[int, str]:
    """Store version -> MLflow version of ``name`` (``omkl models list --mlflow``)."""
    with talking(target) as client:
        return {v: str(mv.version) for v, mv in registered(client, name).items()}
