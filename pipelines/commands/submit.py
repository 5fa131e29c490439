"""``omkl submit ALGO``: an online job on a Dask cluster."""

from __future__ import annotations

import json

import click

from ..cli_base import (
    BLOCK_SIZE_OPTION,
    CATEGORICAL_OPTION,
    FEATURES_OPTION,
    IMPUTE_OPTION,
    LABEL_COLUMN_OPTION,
    LOCAL_PATH,
    POSITIVE_CLASS_OPTION,
    SCHEDULER_TIMEOUT_OPTION,
    SEED_OPTION,
    ZERO_BASED_OPTION,
    job_settings,
    reading_options,
    settings_options,
)
from .algorithm_options import algorithm_group
from .mlflow_options import MLFLOW_OPTIONS, mlflow_target
from .run import DATA_OPTION, LIMIT_OPTION, TRACE_OUT_OPTION

OPTIONS = [
    click.option(
        "--scheduler",
        default=None,
        help="Scheduler address, e.g. tcp://127.0.0.1:8786. Default: the cluster `omkl cluster up` started "
        "in runs/cluster (with its --tls-dir), if it is running.",
    ),
    DATA_OPTION,
    BLOCK_SIZE_OPTION,
    click.option(
        "--out",
        "--model-out",  # (the name `omkl run` and `omkl fit` give it)
        "out",
        required=True,
        help="Model directory to write (a path or a URL).",
    ),
    SEED_OPTION,
    settings_options,
    click.option("--no-permute", is_flag=True, help="Keep the stored row order (default: seeded chunk-local shuffle)."),
    LIMIT_OPTION,
    click.option(
        "--checkpoint-every",
        default=50,
        show_default=True,
        type=click.IntRange(min=0),
        help="Rounds (blocks of at most 1,024 rows) between checkpoints; 0: none.",
    ),
    click.option(
        "--checkpoint-dir",
        default=None,
        help="Default: OUT.checkpoints (removed when the job ends well unless --keep-checkpoints); a path or a URL.",
    ),
    click.option("--keep-checkpoints", is_flag=True, help="Keep the checkpoint folder after the job ends well."),
    click.option("--resume", is_flag=True, help="Continue from the newest checkpoint of the same job."),
    TRACE_OUT_OPTION,
    click.option(
        "--overwrite", is_flag=True, help="Replace an existing --out directory or --trace-out file at the end."
    ),
    click.option(
        "--max-retries",
        default=3,
        show_default=True,
        type=click.IntRange(min=0),
        help="Worker failures to recover from before giving up.",
    ),
    click.option("--shards", type=click.IntRange(min=1), default=None, help="Kernel shards (default: one per worker)."),
    click.option("--tls-dir", type=LOCAL_PATH, default=None, help="Certificates of a TLS cluster."),
    SCHEDULER_TIMEOUT_OPTION,
    LABEL_COLUMN_OPTION,
    POSITIVE_CLASS_OPTION,
    FEATURES_OPTION,
    CATEGORICAL_OPTION,
    IMPUTE_OPTION,
    ZERO_BASED_OPTION,
    click.option(
        "--ingest-to",
        default=None,
        help="A data file (not an ingested dataset) is ingested first into a folder under this one, named "
        "after the file's content and label options (reused by a rerun), which the workers must be able "
        "to read (default: OUT.data).",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object."),
    click.option("--quiet", is_flag=True, help="No progress bar."),
    *MLFLOW_OPTIONS,
]


def _submit(
    algo,
    params,
    *,
    scheduler,
    data,
    block_size,
    out,
    trace_out,
    seed,
    no_permute,
    limit,
    checkpoint_every,
    checkpoint_dir,
    keep_checkpoints,
    resume,
    overwrite,
    max_retries,
    shards,
    tls_dir,
    timeout,
    label_column,
    positive_class,
    features,
    categorical,
    impute,
    zero_based,
    ingest_to,
    as_json,
    quiet,
    mlflow,
    mlflow_uri,
    experiment,
    **kwargs,
):
    from omkl_dist.cluster.local import connect, running_cluster
    from omkl_dist.job import DataWindow, EngineOptions, Job
    from omkl_dist.storage.location import location, text

    from ..data_source import origin
    from ..datasource import ingested_source
    from ..progress import CountProgress
    from ..run import default_trace_path
    from ..run_report import format_report
    from ..submit import check_submit_outputs, submit_job

    if scheduler is None:  # (before any work: the local cluster, or one clear error)
        scheduler, started_with = running_cluster()
        tls_dir = tls_dir if tls_dir is not None else started_with
    target = mlflow_target(mlflow, mlflow_uri, experiment)
    settings = job_settings(kwargs, kernels_given=bool(params.get("kernels") or params.get("kernel")))
    trace_out = trace_out or default_trace_path(algo, data, seed)
    check_submit_outputs(data, out, checkpoint_dir, trace_out, overwrite=overwrite, resume=resume)  # before connecting
    named = data
    with CountProgress(f"ingesting {origin(data) or location(data).name}", show=not quiet) as bar:
        data = ingested_source(
            data,
            labels=reading_options(label_column, positive_class, features, categorical, impute, zero_based),
            under=ingest_to or text(out) + ".data",
            progress=bar,
        )
    job = Job.build(
        algo,
        params,
        data=DataWindow(text(data), stop=limit, permute=not no_permute),
        seed=seed,
        block_size=block_size,
        settings=settings,
        engine=EngineOptions(checkpoint_every=checkpoint_every, shards=shards, max_retries=max_retries),
    )
    with connect(scheduler, tls_dir=tls_dir, timeout=timeout) as client:
        report = submit_job(
            client,
            job,
            out,
            checkpoint_dir=checkpoint_dir,
            trace_out=trace_out,
            resume=resume,
            overwrite=overwrite,
            show_progress=not quiet,
            keep_checkpoints=keep_checkpoints,
            mlflow=target,
            named=named,
        )
    click.echo(json.dumps(report) if as_json else format_report(report))


submit = algorithm_group(
    "submit",
    "Run an online job on a Dask cluster (kernel shards + coordinator) and write the model; "
    "`omkl submit ALGO --help` lists the algorithm's parameters.",
    OPTIONS,
    _submit,
)
