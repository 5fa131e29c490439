"""``omkl run``: one online algorithm over one stream, with a progress bar and a trace."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from tqdm import tqdm

from omkl_dist.algorithms.registry import make_estimator
from omkl_dist.evaluation import progressive_score
from omkl_dist.storage.location import is_remote, location
from omkl_dist.storage.outputs import JSON_REPORT, MODEL, check_output, write_json_report

from .datasource import load_job_data, scaling_advice


def make_stream_estimator(algo: str, params: dict, *, n_rows: int, block_size: int, seed: int, feature_groups=None):
    """The estimator for a job over a stream of ``n_rows`` that it sees block by block: settings
    defined as shares of "the data" refer to the whole stream, not to the first block; kernels may
    name the data's ``feature_groups`` (a multi-view dataset's)."""
    if feature_groups is not None and params.get("feature_groups") is None and _takes(algo, "feature_groups"):
        params = {**params, "feature_groups": feature_groups}
    if params.get("budget") is not None and _takes(algo, "expected_instances"):
        # SPA: the expected budget is spread over the whole stream (the budget baselines RBP,
        # Forgetron, BOGD, BPAS take --budget as a hard number of SVs per kernel)
        params = {**params, "expected_instances": n_rows}
    elif params.get("budget") is not None and params["budget"] > n_rows:
        # a kernel keeps at most one support vector per instance: a larger budget is never reached
        # (same model), but its buffers would be allocated whole
        params = {**params, "budget": n_rows}
    model = make_estimator(algo, block_size=block_size, random_state=seed, **params)
    if getattr(model, "horizon", 0) is None:  # OKS: the default step η is set for the stream's length T
        model.set_params(horizon=n_rows)
    if getattr(model, "validation_size", 0) is None:  # Perceptron(*): validate on a share of the stream
        model.set_params(validation_size=max(1, math.ceil(model.validation_fraction * n_rows)))
    return model


def kernel_settings(algo: str, params: dict, settings) -> dict:
    """``params`` with the kernel pool (given, or the estimator's default) normalised -- or not --
    as ``settings`` (:class:`omkl_dist.defaults.Settings`) say; unchanged when they take the kernels
    as given."""
    from omkl_dist.algorithms.registry import ALGORITHMS
    from omkl_dist.kernels import make_pool

    key = "kernel" if _takes(algo, "kernel") else "kernels"
    if settings.normalize_kernels is None or not _takes(algo, key):
        return params
    spec = params.get(key)
    if spec is None:  # the default pool; a given but empty spec reaches make_pool, which refuses it
        spec = ALGORITHMS[algo]().get_params()[key]
    return {**params, key: make_pool(spec, normalize=settings.normalize_kernels).to_spec_string()}


def run_job(
    algo: str,
    data: str,
    *,
    params: dict,
    block_size: int,
    seed: int,
    scaling: str,
    scale_rows=None,
    permute=True,
    limit=None,
    trace_out=None,
    model_out=None,
    overwrite=False,
    show_progress=True,
    labels=None,
    settings=None,
) -> dict:
    """Run ``algo`` test-then-train over ``data`` and return the JSON-able report.

    ``settings`` (:func:`omkl_dist.defaults.resolve_settings`): the scaling and kernel
    normalisation the job was given (they override ``scaling``/``scale_rows`` and the kernels),
    reported and stored with the model.

    The outputs (``model_out``, ``trace_out``) are checked before the data is read: a long run
    never ends in a result that cannot be written, and neither may replace the data or each other.
    ``labels``: how a file's columns are read (``label_column``, ``positive_class``, ``features``;
    see :func:`omkl_dist.storage.read_dataset`).
    """
    if settings is not None:
        params = kernel_settings(algo, params, settings)
        scaling, scale_rows = settings.scaling, settings.scale_rows
    # fed whole rounds at a time: the model a cluster run of the same job gives, bit for bit
    feed = make_estimator(algo, block_size=block_size, random_state=seed, **params).feed_rows()
    source = _data_path(data)
    if model_out is not None:
        check_output(
            model_out,
            MODEL,
            overwrite=overwrite,
            inputs=[("data", source), ("trace file", trace_out)],
            option="--model-out",
        )
    if trace_out is not None:
        check_output(trace_out, JSON_REPORT, overwrite=True, inputs=[("data", source)], option="--trace-out")
    job = load_job_data(
        data,
        feed_rows=feed,
        seed=seed,
        permute=permute,
        scaling=scaling,
        scale_rows=scale_rows,
        limit=limit,
        labels=labels,
        sparse_scaling=None if settings is None else settings.for_sparse_rows().scaling,
    )
    if settings is not None and job.sparse:
        settings = settings.for_sparse_rows()
    scaling = job.scaler.method
    model = make_stream_estimator(
        algo, params, n_rows=job.n_rows, block_size=block_size, seed=seed, feature_groups=job.feature_groups
    )
    advice = scaling_advice(job.spans, scaling)  # said once, in the report
    bar = tqdm(
        total=job.n_rows,
        unit="inst",
        desc=f"{algo} on {job.name}",
        disable=not show_progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    try:
        trace = progressive_score(model, job.blocks, classes=job.classes, progress=bar.update)
    finally:
        bar.close()
    summary = trace.summary()
    report = {
        "algo": algo,
        "params": {
            k: v for k, v in model.get_params().items() if k not in ("random_state", "block_size", "feature_groups")
        },
        "data": data,
        "dataset": job.name,
        **summary,
        "load_seconds": job.load_seconds + trace.load_seconds,
        "block_size": block_size,
        "seed": seed,
        "scaling": scaling,
        "settings": settings.as_dict() if settings is not None else {"scaling": scaling, "origin": "given"},
        "permuted": permute,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if advice:
        report["advice"] = advice
    if hasattr(model, "selected_kernel_name_"):  # a kernel selector (OKS): what it chose, and how firmly
        report["selected_kernel"] = model.selected_kernel_name_
        report["kernel_weights"] = dict(zip(model.kernel_pool_.names, map(float, model.kernel_weights_), strict=True))
    if params.get("budget") is not None and report["params"].get("budget") not in (None, params["budget"]):
        report["budget_capped"] = {"asked": params["budget"], "used": report["params"]["budget"]}
    if model_out is not None:
        from omkl_dist.model import Model
        from omkl_dist.persistence import save_model

        save_model(
            Model(
                model,
                scaler=job.scaler,
                label_map=job.label_map,
                feature_names=job.feature_names,
                job={k: report[k] for k in ("data", "n", "block_size", "seed", "scaling", "settings")},
            ),
            model_out,
            overwrite=overwrite,
            inputs=[("data", source)],
        )
        report["model_path"] = str(model_out)
    if trace_out is not None:
        write_json_report(
            trace_out, {"report": report, "trace": trace.to_dict()}, inputs=[("data", source)], option="--trace-out"
        )
        report["trace_path"] = str(trace_out)
    return report


def _data_path(data: str) -> Path | None:
    """The file or folder ``--data`` names (a registry name resolved), for the output checks."""
    from omkl_dist.storage import resolve_dataset

    path = location(data)
    if is_remote(path) or path.exists():
        return path
    try:
        return resolve_dataset(data)
    except ValueError:  # not a registry name either: load_job_data reports it
        return None


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
    if "describe" in report.get("settings", {}):
        lines.append(f"  settings         {report['settings']['describe']}")
    if "selected_kernel" in report:
        top = sorted(report["kernel_weights"].items(), key=lambda item: -item[1])[:3]
        lines.append(
            f"  selected kernel  {report['selected_kernel']}  (weights: "
            + ", ".join(f"{name} {weight:.3f}" for name, weight in top)
            + ")"
        )
    if "advice" in report:
        lines.append(f"  note             {report['advice']}")
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
    return "\n".join(lines)
