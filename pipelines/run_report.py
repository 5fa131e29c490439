"""The report of an online run -- ``omkl run``, ``omkl submit``, a retrain, the demo -- from a
:class:`~omkl_dist.runner.RunResult` of either runner: :func:`build_report` (JSON-able) and
:func:`format_report` (the command's text)."""

from __future__ import annotations

import time
from pathlib import Path

from omkl_dist.job import JOB_FIELDS
from omkl_dist.runner import RunResult

from .data_source import origin


def build_report(result: RunResult, data) -> dict:
    """The run's report: the job, what was learnt (the trace's summary), the accounting; on a
    cluster also the workers, shards and per-round costs. ``data``: what the user named."""
    job, model, accounting = result.job, result.model, result.accounting
    report = {
        "algo": job.algorithm,
        "params": {k: v for k, v in model.get_params().items() if k not in JOB_FIELDS},
        "data": origin(data) or str(data),  # (standard input, a URL: not their temporary copy)
        "dataset": result.name,
        **result.trace["summary"],
        "load_seconds": accounting.load_seconds,
        "block_size": job.block_size,
        "seed": job.seed,
        "scaling": result.scaler.method,
        "settings": job.settings.as_dict(result.scaler.n_seen_),
        "permuted": job.data.permute,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if accounting.workers is not None:
        report.update(_cluster_costs(accounting))
    if job.settings.race:
        report["race_seconds"] = accounting.race_seconds
    advice = [*result.advice, *growth_advice(job.algorithm, report, result.trace)]
    if advice:
        report["advice"] = advice
    if accounting.workers is None and accounting.compile_seconds:
        report["compile_seconds"] = accounting.compile_seconds
    if hasattr(model, "selected_kernel_name_"):  # a kernel selector (OKS): what it chose, and how firmly
        report["selected_kernel"] = model.selected_kernel_name_
        report["kernel_weights"] = dict(zip(model.kernel_pool_.names, map(float, model.kernel_weights_), strict=True))
    asked = job.params.get("budget")
    if asked is not None and report["params"].get("budget") not in (None, asked):
        report["budget_capped"] = {"asked": asked, "used": report["params"]["budget"]}
    return report


def growth_advice(algorithm: str, report: dict, trace: dict) -> list[str]:
    """A line when learning slowed down as the support vectors grew (SPA, OMKC, OM-2, OKS keep a share
    of their mistakes, so each row costs more than the last: SPA on a 3,000,000-row stream learnt its
    first rows at 45,000 rows/s and its last at 2,900, 555 s in all, where NOGD took 13 s for 0.2
    points more mistakes): the learners whose cost per row is constant, and that their default
    features may be too few (on 200,000 rows of `omkl data synth`, NOGD made 42.5 % mistakes with its
    defaults, 14.0 % with --budget 400 --n-components 200, against SPA's 19.0 %). Only for a run that
    took a while and whose last tenth learnt at under a quarter of the speed of its first."""
    ends, seconds = trace.get("block_ends", []), trace.get("seconds", [])
    support = report.get("n_support")
    total = support.get("total", 0) if isinstance(support, dict) else 0
    if len(ends) < 10 or not seconds or seconds[-1] < 30 or total < 10_000:
        return []
    start = trace.get("timed_from", 0)
    first, last = _rate(start, ends, seconds, 0.0, 0.1), _rate(start, ends, seconds, 0.9, 1.0)
    if not last < first / 4:
        return []
    unbounded = "budget" in report["params"] and report["params"]["budget"] is None
    bound = ", or --budget N bounds its support vectors (fewer, faster, less accurate)" if unbounded else ""
    command = "submit" if report.get("workers") is not None else "run"  # (a cluster run's report names its workers)
    return [
        f"learning slowed from {first:,.0f} to {last:,.0f} rows/s as the support vectors grew to {total:,} "
        f"({algorithm} keeps a share of its mistakes, so each row costs more than the last); on a long stream, "
        f"nogd or fogd learn every row at the same cost (Nystrom or random features; `omkl {command} nogd`), as "
        "accurately as their features allow: compare one on a prefix (--limit), with more --n-components (and nogd's "
        f"--budget) when its defaults are too few for the data{bound}"
    ]


def _rate(start: int, ends: list, seconds: list, lo: float, hi: float) -> float:
    """Rows per second learnt between the fractions ``lo`` and ``hi`` of the timed rows (the block
    ends nearest them; ``seconds``: the learning time at each block's end, from row ``start``: a
    cluster run resumed from a checkpoint times the rows after it)."""
    rows = [start, *ends]
    times = [0.0, *seconds]
    span = rows[-1] - start
    i = min(range(len(rows)), key=lambda k: abs(rows[k] - start - lo * span))
    j = min(range(len(rows)), key=lambda k: abs(rows[k] - start - hi * span))
    return (rows[j] - rows[i]) / max(times[j] - times[i], 1e-9) if j > i else float("nan")


def _cluster_costs(accounting) -> dict:
    timing = accounting.timing
    rounds = max(timing["rounds"], 1)
    return {
        "resumed_from": accounting.resumed_from,
        "workers": accounting.workers,
        "shards": accounting.shards,
        "rounds": timing["rounds"],
        "shard_compute_seconds": timing["shard_s"],
        "shard_io_seconds": timing["shard_io_s"],
        "coordinator_ms_per_round": 1000.0 * timing["combine_s"] / rounds,
        # per round: the round's wall time minus the slowest shard's work (reading, appending, computing)
        "overhead_ms_per_round": 1000.0 * (timing["round_s"] - timing["slowest_shard_s"]) / rounds,
        # row-split rounds (stochastic updates): the first shard's time waiting for the others' scores
        "lead_wait_seconds": timing["lead_wait_s"],
        # numba compiling the job's kernels on the workers before the first round (0: all cached)
        "compile_seconds": accounting.compile_seconds,
        "worker_failures": list(accounting.failures),
    }


def _model_size(report: dict, kernels: int) -> str:
    """The model's size: its support vectors, or a random-feature model's features (FOGD keeps none:
    "0 support vectors" read as an empty model)."""
    total, features = report["n_support"]["total"], (report.get("params") or {}).get("n_components")
    if total == 0 and features:
        return f"  model size       {kernels} kernel(s) x {features} random features (no support vectors)"
    return f"  support vectors  {total} total over {kernels} kernel(s)"


def format_report(report: dict) -> str:
    """The report as the commands print it."""
    per = report["n_support"]["per_kernel"]
    resumed = f", resumed at row {report['resumed_from']}" if report.get("resumed_from") else ""
    speed = f"{report['seconds']:.2f} s  ({report['instances_per_second']:.0f} instances/s)"
    if "workers" in report:
        failures = report["worker_failures"]
        recovered = f"; recovered from {len(failures)} worker failure(s)" if failures else ""
        where = f" on {report['workers']} worker(s), {report['shards']} kernel shard(s){recovered}"
    else:
        where = f"; loading {report['load_seconds']:.2f} s"
    # (a cluster job's data file is learnt from its ingested copy: the file is what the user gave)
    data = Path(str(report["data"])).name if "workers" in report and report.get("data") else report["dataset"]
    lines = [
        f"{report['algo']} {report['params'] if report['params'] else ''} on {data} "
        f"({report['n']} instances, block {report['block_size']}, seed {report['seed']}, "
        f"scaling {report['scaling']}{resumed})",
        f"  mistake rate     {100 * report['mistake_rate']:.2f} %  ({report['mistakes']} mistakes)",
        _model_size(report, len(per)),
        f"  learning time    {speed}{where}",
    ]
    if "workers" in report:
        lines.append(
            f"  per round        coordinator {report['coordinator_ms_per_round']:.2f} ms, overhead "
            f"{report['overhead_ms_per_round']:.2f} ms ({report['rounds']} rounds)"
        )
    if report.get("compile_seconds"):
        where = "on the workers first" if "workers" in report else "in this process"
        lines.append(f"  compiling        {report['compile_seconds']:.2f} s {where} (first use; not learning)")
    if "describe" in report.get("settings", {}):
        lines.append(f"  settings         {report['settings']['describe']}")
    if "race_seconds" in report:
        lines.append(f"  race             {report['race_seconds']:.2f} s (the candidate settings on the stream's head)")
    if "selected_kernel" in report:
        top = sorted(report["kernel_weights"].items(), key=lambda item: -item[1])[:3]
        lines.append(
            f"  selected kernel  {report['selected_kernel']}  (weights: "
            + ", ".join(f"{name} {weight:.3f}" for name, weight in top)
            + ")"
        )
    lines += [f"  note             {line}" for line in report.get("advice", [])]
    if "budget_capped" in report:
        capped = report["budget_capped"]
        lines.append(
            f"  budget           {capped['used']} (asked {capped['asked']}: capped at the stream's length, "
            "which it can never exceed)"
        )
    if "model_path" in report:
        lines.append(f"  model            {report['model_path']}")
    if "trace_path" in report:
        lines.append(f"  trace            {report['trace_path']}")
    if "mlflow" in report:
        lines.append(f"  mlflow           {mlflow_outcome(report['mlflow'])}")
    return "\n".join(lines)


def mlflow_outcome(block: dict) -> str:
    """What ``--mlflow`` did, from the report's ``mlflow`` block: the run logged, or why not (MLflow being
    down never fails a job whose outputs are written: the text says so, as the JSON does)."""
    if "error" in block:
        return f"not logged: {block['error']} (the job's outputs stand)"
    return f"run {block.get('run_id')} in experiment {block.get('experiment')!r} at {block.get('uri')}"
