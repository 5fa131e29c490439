"""``omkl run ALGO``: one online algorithm over one stream, in this process."""

from __future__ import annotations

import json

import click

from omkl_dist.defaults import SCALE_ROWS

from ..cli_base import (
    BLOCK_SIZE_OPTION,
    CATEGORICAL_OPTION,
    FEATURES_OPTION,
    IMPUTE_OPTION,
    LABEL_COLUMN_OPTION,
    PATH_OR_URL,
    POSITIVE_CLASS_OPTION,
    SEED_OPTION,
    ZERO_BASED_OPTION,
    job_settings,
    reading_options,
    settings_options,
)
from ..data_source import local_data, origin
from .algorithm_options import algorithm_group
from .mlflow_options import MLFLOW_OPTIONS, mlflow_target

DATA_OPTION = click.option(
    "--data",
    required=True,
    callback=local_data,
    help="Registry name (e.g. codrna), data file (a path or URL), or ingested dataset; - : the data from standard "
    "input.",
)
LIMIT_OPTION = click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N instances.")
TRACE_OUT_OPTION = click.option(
    "--trace-out",
    type=PATH_OR_URL,
    default=None,
    help="Where to write the trace JSON, which `omkl report` draws (an existing trace is replaced only with "
    "--overwrite). Default: runs/trace-ALGO-DATA-seedS.json, or the first free of -2, -3, ...: a default never "
    "replaces a trace.",
)

OPTIONS = [
    DATA_OPTION,
    BLOCK_SIZE_OPTION,
    SEED_OPTION,
    settings_options,
    click.option(
        "--scale-rows",
        type=click.IntRange(min=1),
        default=None,
        help=f"Fit the scaling on this many leading rows of the stream (default {SCALE_ROWS:,}).",
    ),
    click.option(
        "--no-permute", is_flag=True, help="Keep the file's row order (default: a seeded shuffle, as omkl submit's)."
    ),
    LIMIT_OPTION,
    TRACE_OUT_OPTION,
    click.option(
        "--model-out",
        default=None,
        help="Save the final model with its scaling (zarr + JSON, atomic) to this directory (or URL).",
    ),
    click.option("--overwrite", is_flag=True, help="Replace an existing --model-out directory or --trace-out file."),
    LABEL_COLUMN_OPTION,
    POSITIVE_CLASS_OPTION,
    FEATURES_OPTION,
    CATEGORICAL_OPTION,
    IMPUTE_OPTION,
    ZERO_BASED_OPTION,
    click.option("--json", "as_json", is_flag=True, help="Print one JSON object on the last line instead of text."),
    click.option("--quiet", is_flag=True, help="No progress bar."),
    *MLFLOW_OPTIONS,
]


def run_options_job(
    algo,
    params,
    *,
    data,
    block_size,
    seed,
    scale_rows,
    no_permute,
    limit,
    label_column,
    positive_class,
    features,
    categorical,
    impute,
    zero_based,
    **kwargs,
):
    """The :class:`~omkl_dist.job.Job` and the data file's reading options that ``omkl run ALGO``'s
    options describe (the other options, the outputs', are left in ``kwargs`` untouched)."""
    from omkl_dist.job import DataWindow, Job

    settings = job_settings(
        kwargs, kernels_given=bool(params.get("kernels") or params.get("kernel")), scale_rows=scale_rows
    )
    job = Job.build(
        algo,
        params,
        # (what the model records it learnt from: standard input, a URL -- not their temporary copy)
        data=DataWindow(origin(data) or data, stop=limit, permute=not no_permute),
        seed=seed,
        block_size=block_size,
        settings=settings,
    )
    return job, reading_options(label_column, positive_class, features, categorical, impute, zero_based)


def _run(
    algo,
    params,
    *,
    data,
    trace_out,
    model_out,
    overwrite,
    as_json,
    quiet,
    mlflow,
    mlflow_uri,
    experiment,
    **kwargs,
):
    from ..run import default_trace_path, run_job
    from ..run_report import format_report

    target = mlflow_target(mlflow, mlflow_uri, experiment)
    job, labels = run_options_job(algo, params, data=data, **kwargs)
    report = run_job(
        job,
        data,
        trace_out=trace_out or default_trace_path(algo, data, job.seed),
        model_out=model_out,
        overwrite=overwrite,
        show_progress=not quiet,
        labels=labels,
        mlflow=target,
        compile_ahead=True,
    )
    click.echo(json.dumps(report) if as_json else format_report(report))


def run_group(callback) -> click.Group:
    """``omkl run``'s group of commands, one per algorithm, calling ``callback(algo, params, **options)``
    (:func:`_run`; the compile-ahead helper parses the same command line with its own,
    :mod:`..compile_ahead`)."""
    return algorithm_group(
        "run",
        "Run an online algorithm test-then-train over a stream and report mistakes, SVs and speed. "
        "Every algorithm learns multi-class data; `omkl run ALGO --help` lists its parameters.",
        OPTIONS,
        callback,
    )


run = run_group(_run)
