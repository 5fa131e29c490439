"""``omkl run``: one online algorithm over one stream, with a progress bar and a trace."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from tqdm import tqdm

from omkl_dist.algorithms.registry import make_estimator
from omkl_dist.evaluation import progressive_score

from .datasource import load_job_data


def make_stream_estimator(algo: str, params: dict, *, n_rows: int, block_size: int, seed: int):
    """The estimator for a job over a stream of ``n_rows`` that it sees block by block: settings
    defined as shares of "the data" refer to the whole stream, not to the first block."""
    if params.get("budget") is not None and _takes(algo, "expected_instances"):
        # SPA: the expected budget is spread over the whole stream (the budget baselines RBP,
        # Forgetron, BOGD, BPAS take --budget as a hard number of SVs per kernel)
        params = {**params, "expected_instances": n_rows}
    model = make_estimator(algo, block_size=block_size, random_state=seed, **params)
    if getattr(model, "validation_size", 0) is None:  # Perceptron(*): validate on a share of the stream
        model.set_params(validation_size=max(1, math.ceil(model.validation_fraction * n_rows)))
    return model


def run_job(algo: str, data: str, *, params: dict, block_size: int, seed: int, scaling: str,
            scale_rows=None, permute=True, limit=None, trace_out=None, model_out=None, overwrite=False,
            show_progress=True) -> dict:
    """Run ``algo`` test-then-train over ``data`` and return the JSON-able report."""
    # fed whole rounds at a time: the model a cluster run of the same job gives, bit for bit
    feed = make_estimator(algo, block_size=block_size, random_state=seed, **params).feed_rows()
    job = load_job_data(data, feed_rows=feed, seed=seed, permute=permute, scaling=scaling,
                        scale_rows=scale_rows, limit=limit)
    model = make_stream_estimator(algo, params, n_rows=job.n_rows, block_size=block_size, seed=seed)
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


def _takes(algo: str, param: str) -> bool:
    """Whether ``algo``'s estimator has the parameter (unknown names are left to make_estimator)."""
    from omkl_dist.algorithms.registry import ALGORITHMS

    cls = ALGORITHMS.get(algo)
    return cls is not None and param in cls().get_params()


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
