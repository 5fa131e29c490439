"""One MLflow run per job: parameters under the estimator's names, metrics, the running mistake rate
as a metric history, the report as artifacts, the lineage as tags.

A :class:`RunRecord` is made from what a command already produced -- a retrain's status line and
its version's lineage (:func:`retrain_record`), a run's report (:func:`job_record`) -- and logged
after the work, by :func:`log_run`: the job never waits on MLflow, and an MLflow that fails leaves
the job's own results as they are (:class:`~.connection.MlflowUnavailable`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TAG = "omkl."  # our tags' prefix
HISTORY = "running_mistake_rate"  # the progressive mistake rate, step = instances the model has seen
_BATCH = 1000  # MLflow's log_batch takes at most 1000 metrics (and 100 params) per request
_PARAMS_BATCH = 100
_VALUE_CHARS = 6000  # MLflow's longest parameter value (a longer one fails the whole request)


@dataclass
class RunRecord:
    """What one MLflow run holds."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    histories: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # name -> [(step, value)]
    tags: dict[str, Any] = field(default_factory=dict)
    artifacts: Path | None = None  # a report folder, logged under "report/"
    seconds: float = 0.0  # the job's duration: the run starts that long before it is logged


def experiment_id(client, name: str) -> str:
    """The experiment ``name``'s id, made if it does not exist yet."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            return str(client.create_experiment(name))
        except MlflowException:  # the name taken meanwhile by another job, or the answer lost: look again
            found = client.get_experiment_by_name(name)
            if found is None:  # (not made: once more, and its error is the one reported)
                return str(client.create_experiment(name))
    return str(found.experiment_id)


def log_run(client, experiment: str, record: RunRecord) -> str:
    """Log ``record`` as one finished run of ``experiment``; returns the run's id."""
    from mlflow.entities import Metric, Param

    end = int(time.time() * 1000)
    start = end - int(record.seconds * 1000)
    tags = {k: _text(v) for k, v in record.tags.items() if v is not None}
    run = client.create_run(experiment_id(client, experiment), start_time=start, tags=tags, run_name=record.name)
    run_id = run.info.run_id
    params = [Param(k, _clipped(_text(v))) for k, v in sorted(record.params.items()) if v is not None]
    for i in range(0, len(params), _PARAMS_BATCH):
        client.log_batch(run_id, params=params[i : i + _PARAMS_BATCH])
    metrics = [Metric(k, float(v), end, 0) for k, v in sorted(record.metrics.items()) if _number(v)]
    for name, points in record.histories.items():
        metrics += [Metric(name, float(v), start, int(step)) for step, v in points if _number(v)]
    for i in range(0, len(metrics), _BATCH):
        client.log_batch(run_id, metrics=metrics[i : i + _BATCH])
    if record.artifacts is not None and Path(record.artifacts).is_dir():
        client.log_artifacts(run_id, str(record.artifacts), "report")
    client.set_terminated(run_id, "FINISHED", end_time=end)
    return str(run_id)


def _text(value) -> str:
    """A parameter's or tag's value as MLflow stores it (text; lists and objects as JSON)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _clipped(text: str) -> str:
    """A parameter value MLflow takes: a longer one (a long kernel list) cut, marked by its ending."""
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 15] + " ... (clipped)"


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # not NaN


# ------------------------------------------------------------------------------------------------ records
def retrain_record(summary: dict, lineage: dict) -> RunRecord:
    """The run of one ``omkl retrain``: ``summary`` is its status line, ``lineage`` the lineage of
    the version it published (or, skipped, of the champion it watched)."""
    gate, drift, train = summary.get("gate") or {}, summary.get("drift") or {}, summary.get("train") or {}
    window = summary.get("window") or {}
    version = summary.get("version")
    params = {
        **(lineage.get("params") or {}),
        "algo": lineage.get("algo"),
        "seed": lineage.get("seed"),
        "block_size": lineage.get("block_size"),
        "scaling": lineage.get("scaling"),
        "holdout": lineage.get("holdout"),
        "gate_tolerance": gate.get("tolerance"),
    }
    metrics = {
        "holdout_mistake_rate": gate.get("challenger"),
        "champion_holdout_mistake_rate": gate.get("champion"),
        "champion_window_mistake_rate": drift.get("champion_mistake_rate"),
        "drift_alarms": len(drift.get("alarms") or []),
        "store_version": version,
        **_learnt(train),
    }
    code = lineage.get("code") or {}
    tags = {
        f"{TAG}model": summary.get("model"),
        f"{TAG}store": summary.get("store"),
        f"{TAG}status": summary.get("status"),
        f"{TAG}store_version": version,
        f"{TAG}champion": summary.get("champion"),
        f"{TAG}parent_version": summary.get("parent") if summary.get("parent") is not None else "none",
        f"{TAG}window_source": window.get("source"),
        f"{TAG}window_rows": window.get("rows"),
        f"{TAG}window_digest": window.get("sha256"),
        f"{TAG}window_key": summary.get("window_key"),
        f"{TAG}retrain_key": summary.get("key"),
        f"{TAG}code_version": code.get("omkl-dist"),
        f"{TAG}code_sources": code.get("sources"),
        f"{TAG}where": summary.get("where"),
        "mlflow.note.content": gate.get("decision") or summary.get("reason"),
    }
    report = summary.get("report")
    name = (
        f"{summary.get('model')} v{version}" if version is not None else f"{summary.get('model')} {summary['status']}"
    )
    return RunRecord(
        name=name,
        params=params,
        metrics=metrics,
        histories=report_histories(report),
        tags=tags,
        artifacts=Path(report) if report else None,
        seconds=float(summary.get("seconds") or 0.0),
    )


def job_record(command: str, report: dict, job: dict | None = None, trace: dict | None = None) -> RunRecord:
    """The run of one ``omkl run``/``submit`` (``report``: its report, ``job``: its job record,
    ``trace``: its trace, whose mistake curve is the history) or ``omkl fit`` (its report alone)."""
    params = {**(report.get("params") or report.get("settings") or {})}
    for key in ("algo", "variant", "seed", "block_size", "scaling", "test_size", "n_trials", "ratio", "beta"):
        if report.get(key) is not None:
            params.setdefault(key, report[key])
    metrics = {
        **_learnt(report),
        **{k: report.get(k) for k in ("accuracy", "predict_seconds", "n_train", "n_test")},
    }
    data = (job or {}).get("data") or {}
    tags = {
        f"{TAG}command": command,
        f"{TAG}data": report.get("data"),
        f"{TAG}dataset": report.get("dataset"),
        f"{TAG}window_rows": [data.get("start"), data.get("stop")] if data else None,
        f"{TAG}model_path": report.get("model_path"),
        f"{TAG}code_version": _own_version(),
    }
    seen, rates = (trace or {}).get("n_seen") or [], (trace or {}).get("mistake_rate") or []
    return RunRecord(
        name=f"{command} {report.get('algo')} on {report.get('dataset') or report.get('data')}",
        params=params,
        metrics=metrics,
        histories={HISTORY: list(zip(seen, rates, strict=True))} if seen else {},
        tags=tags,
        seconds=float(report.get("seconds") or 0.0),
    )


def _learnt(report: dict) -> dict:
    """The learning metrics of a run's report (or a retrain's ``train`` block)."""
    support = report.get("n_support")
    return {
        "progressive_mistake_rate": report.get("mistake_rate"),
        "mistakes": report.get("mistakes"),
        "instances": report.get("n"),
        "instances_per_second": report.get("instances_per_second"),
        "train_seconds": report.get("seconds"),
        "support_vectors": support.get("total") if isinstance(support, dict) else support,
    }


def _own_version() -> str:
    from importlib import metadata

    return metadata.version("omkl-dist")


def report_histories(report_dir) -> dict[str, list[tuple[int, float]]]:
    """The running mistake rates of a retrain's ``report.json``: the challenger's while it learnt
    (step = the instances the model had seen) and the champion's over the window (step = the window's
    rows it had predicted). Empty when the report was not written."""
    path = Path(report_dir) / "report.json" if report_dir else None
    if path is None or not path.is_file():
        return {}
    document = json.loads(path.read_text())
    curves, (start, _stop) = document.get("curves") or {}, document.get("window") or (0, 0)
    split, before = document.get("split") or start, int(document.get("n_before") or 0)
    out = {}
    if "challenger" in curves and document.get("trace") is not None:  # online: its head was learnt
        points = zip(curves["challenger"]["rows"], curves["challenger"]["rate"], strict=True)
        out[HISTORY] = [(before + row - start, rate) for row, rate in points if row <= split]
    if "champion" in curves:
        points = zip(curves["champion"]["rows"], curves["champion"]["rate"], strict=True)
        out[f"champion_{HISTORY}"] = [(row - start, rate) for row, rate in points]
    return out
