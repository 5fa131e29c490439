"""``omkl run``: one online algorithm over one stream, with a progress bar and a trace."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from omkl_dist.algorithms.registry import make_estimator
from omkl_dist.evaluation import progressive_score

from .datasource import load_job_data


def run_job(algo: str, data: str, *, params: dict, block_size: int, seed: int, scaling: str,
            scale_rows=None, permute=True, limit=None, trace_out=None, model_out=None, overwrite=False,
            show_progress=True) -> dict:
    """Run ``algo`` test-then-train over ``data`` and return the JSON-able report."""
    job = load_job_data(data, block_size=block_size, seed=seed, permute=permute, scaling=scaling,
                        scale_rows=scale_rows, limit=limit)
    if params.get("budget") is not None:  # the budget is spread over the whole stream, not the first block
        params = {**params, "expected_instances": job.n_rows}
    model = make_estimator(algo, block_size=block_size, random_state=seed, **params)
    bar = tqdm(total=job.n_rows, unit="inst", desc=f"{algo} on {job.name}", disable=not show_progress,
               file=sys.stderr, dynamic_ncols=True)
    try:
        trace = progressive_score(model, job.blocks, classes=[-1, 1], progress=bar.update)
    finally:
        bar.close()
    summary = trace.summary()
    report = {
        "algo": algo,
        "params": {k: v for k, v in model.get_params().items() if k not in ("random_state", "block_size")},
        "data": data,
        "dataset": job.name,
        **summary,
        "load_seconds": job.load_seconds + trace.load_seconds,
        "block_size": block_size,
        "seed": seed,
        "scaling": scaling,
        "permuted": permute,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if model_out is not None:
        from .models import save_model

        save_model(model, model_out, scaler=job.scaler, overwrite=overwrite,
                   extra_meta={"trained_on": {k: report[k] for k in ("data", "n", "block_size", "seed", "scaling")}})
        report["model_path"] = str(model_out)
    if trace_out is not None:
        trace_out = Path(trace_out)
        trace_out.parent.mkdir(parents=True, exist_ok=True)
        trace_out.write_text(json.dumps({"report": report, "trace": trace.to_dict()}, indent=1) + "\n")
        report["trace_path"] = str(trace_out)
    return report


def format_report(report: dict) -> str:
    per = report["n_support"]["per_kernel"]
    lines = [
        f"{report['algo']} {report['params'] if report['params'] else ''} on {report['dataset']} "
        f"({report['n']} instances, block {report['block_size']}, seed {report['seed']}, scaling {report['scaling']})",
        f"  mistake rate     {100 * report['mistake_rate']:.2f} %  ({report['mistakes']} mistakes)",
        f"  support vectors  {report['n_support']['total']} total over {len(per)} kernel(s)",
        f"  learning time    {report['seconds']:.2f} s  ({report['instances_per_second']:.0f} instances/s); "
        f"loading {report['load_seconds']:.2f} s",
    ]
    if "model_path" in report:
        lines.append(f"  model            {report['model_path']}")
    if "trace_path" in report:
        lines.append(f"  trace            {report['trace_path']}")
    return "\n".join(lines)
