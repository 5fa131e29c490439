"""``omkl retrain``: retrain a stored model on a new window and publish it if it is better."""

from __future__ import annotations

import json

import click

from omkl_dist.storage.errors import DataError
from omkl_dist.storage.outputs import OutputBusy, Terminated

from ..cli_base import (
    BLOCK_SIZE_OPTION,
    CATEGORICAL_OPTION,
    EXIT_BAD_INPUT,
    EXIT_BUSY,
    EXIT_INTERRUPTED,
    FEATURES_OPTION,
    IMPUTE_OPTION,
    LABEL_COLUMN_OPTION,
    LOCAL_PATH,
    POSITIVE_CLASS_OPTION,
    SEED_OPTION,
    ZERO_BASED_OPTION,
    FiniteFloat,
    job_settings,
    reading_options,
    settings_options,
)
from ..data_source import local_data
from .mlflow_options import mlflow_options, mlflow_target
from .store_options import LOCK_TIMEOUT_OPTION, STORE_OPTION, open_store, parse_params


@click.command("retrain")
@STORE_OPTION
@click.option("--model", "name", required=True, help="The model's name in the store.")
@click.option(
    "--data",
    required=True,
    callback=local_data,
    help="The window: an ingested dataset (a folder or URL), or a data file (a path or URL) ingested into "
    "STORE/NAME/windows/<file name>-<content digest> first (reused when the same file comes again); - : a file "
    "from standard input (windows/stdin-<digest>).",
)
@click.option("--rows", default=None, help="Only these rows of it, START:STOP (default: all).")
@click.option("--partition", default=None, help="Only the I-th of N equal parts of it, I/N (0-based).")
@click.option(
    "--algo",
    default=None,
    help="First version: the algorithm (online: omkc, spa, oks, ...; batch: mkboost, "
    "simplemkl, lpmkl). Later versions keep the champion's.",
)
@click.option(
    "--param",
    "param_pairs",
    multiple=True,
    help="KEY=VALUE, repeatable: the algorithm's parameters (first version; batch refits may change them).",
)
@BLOCK_SIZE_OPTION
@SEED_OPTION
@settings_options  # (a first version's; every later version keeps the champion's scaler and kernels)
@click.option(
    "--holdout",
    default=0.2,
    show_default=True,
    type=FiniteFloat(),
    help="Share of the window (its tail), in (0, 1), held out to gate the challenger against the champion.",
)
@click.option(
    "--gate",
    default=0.0,
    show_default=True,
    type=FiniteFloat(),
    help="Promote if the challenger's held-out mistake rate <= the champion's + this tolerance (>= 0).",
)
@click.option(
    "--when",
    type=click.Choice(["always", "drift"]),
    default="always",
    show_default=True,
    help="drift: retrain only if a Page-Hinkley test signals drift in the champion's mistakes.",
)
@click.option(
    "--drift-threshold",
    default=150.0,
    show_default=True,
    type=FiniteFloat(),
    help="Page-Hinkley lambda (> 0), in standard deviations of one row's mistake: the accumulated excess of "
    "mistakes that signals drift (smaller: sooner, more false alarms; see docs/design.md).",
)
@click.option(
    "--drift-delta",
    default=0.025,
    show_default=True,
    type=FiniteFloat(),
    help="Page-Hinkley delta (>= 0), in standard deviations of one row's mistake: a rise of the mistake rate "
    "tolerated as no drift.",
)
@click.option(
    "--scheduler",
    default=None,
    help="Dask scheduler address: learn on the cluster (online models; MKBoost's per-kernel SVMs).",
)
@click.option(
    "--report-dir",
    type=LOCAL_PATH,
    default=None,
    help="Where to write report.json and the plots (default STORE/NAME/reports/vN).",
)
# (the number options' ranges are checked by retrain itself: a bad value is one JSON status line too)
@click.option("--no-plots", is_flag=True, help="Write report.json only (no matplotlib needed).")
@LOCK_TIMEOUT_OPTION
@LABEL_COLUMN_OPTION
@POSITIVE_CLASS_OPTION
@FEATURES_OPTION
@CATEGORICAL_OPTION  # (a first version's; every later version reads its window with the champion's encoder)
@IMPUTE_OPTION
@ZERO_BASED_OPTION
@click.option(
    "--n-features",
    type=click.IntRange(min=1),
    default=None,
    help="LIBSVM: the feature count, for a first version (a file is as wide as its largest index, which one "
    "window may not reach). Later windows take the champion's: a narrower one is padded.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@mlflow_options
def retrain_cmd(
    store,
    name,
    data,
    rows,
    partition,
    algo,
    param_pairs,
    block_size,
    seed,
    holdout,
    gate,
    when,
    drift_threshold,
    drift_delta,
    scheduler,
    report_dir,
    no_plots,
    lock_timeout,
    label_column,
    positive_class,
    features,
    categorical,
    impute,
    zero_based,
    n_features,
    quiet,
    mlflow,
    mlflow_uri,
    experiment,
    **kwargs,
):
    """Continue the champion on a new window (or refit a batch model), gate it, publish it.

    The last line printed is one JSON object; its "status" says what happened: promoted, kept (the
    gate kept the champion), skipped (--when drift and no drift) or exists (this very retrain was
    done before), or interrupted (Ctrl-C or SIGTERM before the version was published: nothing was).
    A signal once the version is published lets the run finish; its "notes" say so, as they say
    what was skipped (plots without matplotlib). With --mlflow the job is also an MLflow run, its
    version a registered model version with the store's aliases ("mlflow" on the status line; MLflow
    down: a note, the version published all the same, `omkl models sync` later). Exit status: 0
    done, 2 bad input, 75 store locked (try later), 130/143 interrupted, 1 anything else.
    """
    from omkl_dist.evaluation.drift import PageHinkley

    from ..retrain import retrain

    target = mlflow_target(mlflow, mlflow_uri, experiment)

    def emit(summary):
        if target is not None:
            from omkl_dist.mlflow.commands import after_retrain

            after_retrain(target, open_store(store, name, lock_timeout), summary)
        click.echo(json.dumps(summary, default=str))

    try:
        params = parse_params(param_pairs)
        settings = job_settings(kwargs, kernels_given=bool(params.get("kernels") or params.get("kernel")))
        retrain(
            store,
            name,
            data,
            rows=rows,
            partition=partition,
            algo=algo,
            params=params,
            block_size=block_size,
            seed=seed,
            settings=settings,
            holdout=holdout,
            gate=gate,
            when=when,
            scheduler=scheduler,
            report_dir=report_dir,
            plots=not no_plots,
            lock_timeout=lock_timeout,
            show_progress=not quiet,
            drift=PageHinkley(delta=drift_delta, threshold=drift_threshold),
            labels={
                **reading_options(label_column, positive_class, features, categorical, impute, zero_based),
                "n_features": n_features,
            },
            emit=emit,
        )
    except (KeyboardInterrupt, Terminated) as exc:  # before its version was published: nothing was
        code = EXIT_INTERRUPTED if isinstance(exc, KeyboardInterrupt) else exc.code
        click.echo(json.dumps({"status": "interrupted", "exit": code, "model": name, "published": False}))
        raise
    except OutputBusy as exc:  # one JSON line per run, also when it could not run (the scheduler's log)
        click.echo(json.dumps({"status": "busy", "exit": EXIT_BUSY, "model": name, "error": str(exc)}))
        raise
    except Exception as exc:
        code = EXIT_BAD_INPUT if isinstance(exc, (DataError, ValueError, OSError, RuntimeError)) else 1
        click.echo(json.dumps({"status": "error", "exit": code, "model": name, "error": f"{exc}"}))
        raise
