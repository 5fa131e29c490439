"""``omkl run``: one online algorithm over one stream, in this process."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..cli_base import (
    FEATURES_OPTION,
    LABEL_COLUMN_OPTION,
    POSITIVE_CLASS_OPTION,
    job_settings,
    settings_options,
)
from .algorithm_options import algorithm_options, algorithm_params


@click.command("run")
@algorithm_options
@click.option("--block-size", default=256, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@settings_options
@click.option(
    "--scale-rows",
    type=click.IntRange(min=1),
    default=None,
    help="Fit the scaling on this many leading rows of the stream (default 10,000).",
)
@click.option("--no-permute", is_flag=True, help="Keep the file's row order (default: permute with the seed).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N instances.")
@click.option(
    "--trace-out",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write the trace JSON (default runs/trace-ALGO-DATA-seedS.json).",
)
@click.option(
    "--model-out",
    default=None,
    help="Save the final model with its scaling (zarr + JSON, atomic) to this directory (or URL).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --model-out directory.")
@LABEL_COLUMN_OPTION
@POSITIVE_CLASS_OPTION
@FEATURES_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on the last line instead of text.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def run(
    algo,
    data,
    block_size,
    seed,
    scale_rows,
    no_permute,
    limit,
    trace_out,
    model_out,
    overwrite,
    label_column,
    positive_class,
    features,
    as_json,
    quiet,
    **kwargs,
):
    """Run an online algorithm test-then-train over a stream and report mistakes, SVs and speed."""
    from ..run import format_report, run_job

    params = algorithm_params(kwargs)
    settings = job_settings(
        kwargs, kernels_given=bool(params.get("kernels") or params.get("kernel")), scale_rows=scale_rows
    )
    if trace_out is None:
        trace_out = Path("runs") / f"trace-{algo}-{Path(data).name.split('.')[0]}-seed{seed}.json"
    report = run_job(
        algo,
        data,
        params=params,
        block_size=block_size,
        seed=seed,
        scaling=settings.scaling,
        scale_rows=settings.scale_rows,
        permute=not no_permute,
        limit=limit,
        trace_out=trace_out,
        model_out=model_out,
        overwrite=overwrite,
        show_progress=not quiet,
        settings=settings,
        labels={"label_column": label_column, "positive_class": positive_class, "features": features},
    )
    click.echo(json.dumps(report) if as_json else format_report(report))
