"""``omkl fit``: a batch estimator on a train/test split, in this process or on a cluster."""

from __future__ import annotations

import json

import click

from ..cli_base import (
    CATEGORICAL_OPTION,
    FEATURES_OPTION,
    IMPUTE_OPTION,
    LABEL_COLUMN_OPTION,
    POSITIVE_CLASS_OPTION,
    SCHEDULER_TIMEOUT_OPTION,
    ZERO_BASED_OPTION,
    FiniteFloat,
    given_kernel_spec,
    reading_options,
)
from ..data_source import local_data, named
from ..holdout_fit import ALGOS, format_fit_report, run_fit
from .mlflow_options import mlflow_options, mlflow_target


class AutoOrPositive(FiniteFloat):
    """``--C``: a finite positive number, or ``auto``."""

    name = "auto|float"

    def __init__(self) -> None:
        super().__init__(0, None, min_open=True)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        return super().convert(value, param, ctx)


@click.command("fit")
@click.argument("algorithm", required=False, metavar="[ALGO]")
@click.option(
    "--algo",
    type=click.Choice(ALGOS),
    help="The algorithm, here or as the first argument (omkl fit mkboost; no default: name one): MKBoost (Xia & "
    "Hoi 2013), a batch MKL baseline, svc (one gaussian SVM, C and width by 3-fold cross-validation: what one tuned "
    "kernel gets), or a kernel selector of the OKS paper (an SVM on the kernel OKS / SOM / per-kernel validation / "
    "kernel-target alignment picks; C on a 10% validation split).",
)
@click.option(
    "--variant", type=click.Choice(["D1", "D2", "S1", "S2"]), default="D1", show_default=True, help="MKBoost variant."
)
@click.option(
    "--data",
    required=True,
    callback=local_data,
    help="Registry name (e.g. german.numer, wdbc, segment), data file (a path or URL) or ingested dataset; - : "
    "the data from standard input.",
)
@click.option(
    "--test-size",
    default=0.5,
    show_default=True,
    type=FiniteFloat(0, 1, min_open=True, max_open=True),
    help="Fraction of rows held out for testing (random split of --seed).",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Split = run 0 of `omkl reproduce mkboost --seed S`; also seeds MKBoost.",
)
@click.option(
    "--scaling",
    type=click.Choice(["standard", "none", "minmax"]),
    default="standard",
    show_default=True,
    help="Feature scaling fitted on the training rows (the paper: standard).",
)
@click.option(
    "--trials", default=100, show_default=True, type=click.IntRange(min=1), help="MKBoost: boosting trials T."
)
@click.option(
    "--ratio", default=0.2, show_default=True, type=FiniteFloat(), help="MKBoost: resample size / training rows."
)
@click.option("--beta", default=2**-5, show_default=True, type=FiniteFloat(), help="MKBoost-S1/S2: sampling decay.")
@click.option(
    "--C",
    "C",
    default=None,
    type=AutoOrPositive(),
    help="SVM penalty, or 'auto': chosen from a grid by 3-fold cross-validation on the training rows. "
    "Default: auto for the MKL estimators and svc, 50 (the paper's) for MKBoost and with --paper-settings "
    "(the selectors tune C on validation instead).",
)
@click.option(
    "--kernel-normalization",
    type=click.Choice(["diagonal", "trace", "none"]),
    default=None,
    help="MKL and svc: scale each kernel to unit mean diagonal (default) or unit trace (--paper-settings), "
    "or not at all.",
)
@click.option(
    "--paper-settings",
    is_flag=True,
    help="The MKBoost paper's protocol: C = 50 and unit-trace kernels for the MKL estimators, the raw "
    "polynomial kernels for MKBoost (what omkl reproduce mkboost uses).",
)
@click.option(
    "--kernels",
    default=None,
    callback=given_kernel_spec,
    help="Kernel pool name or spec; kernels may see feature groups of a multi-view dataset "
    "('linear,chi2,gaussian:1 @ fourier; ...'). Default: mkboost17; MKBoost: mkboost17+norm (its polynomial "
    "kernels normalised; raw with --paper-settings); svc: gaussian σ = 2^-2..2^7.",
)
@click.option(
    "--scheduler", default=None, help="Dask scheduler address: run MKBoost's (or MuSVM's) per-kernel fits there."
)
@click.option(
    "--threads",
    default=None,
    type=click.IntRange(min=1),
    help="MKBoost without --scheduler: local threads for the per-kernel fits (default: the cores present, "
    "as many as half the available memory holds; the model is the same for any number).",
)
@SCHEDULER_TIMEOUT_OPTION
@LABEL_COLUMN_OPTION
@POSITIVE_CLASS_OPTION
@FEATURES_OPTION
@CATEGORICAL_OPTION
@IMPUTE_OPTION
@ZERO_BASED_OPTION
@click.option(
    "--model-out",
    default=None,
    help="Save the model fitted on the training rows, with its scaling and labels (zarr + JSON, atomic), to "
    "this directory (or URL): omkl predict --model-dir reads it.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --model-out directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option(
    "--quiet",
    is_flag=True,
    help="No progress lines (on stderr; none with --json): MKBoost's one per boosting trial; the MKL methods', "
    "svc's and the kernel selectors' at most one per 5 s.",
)
@mlflow_options
def fit_cmd(
    algorithm,
    algo,
    variant,
    data,
    test_size,
    seed,
    scaling,
    trials,
    ratio,
    beta,
    C,
    kernel_normalization,
    paper_settings,
    kernels,
    scheduler,
    threads,
    timeout,
    label_column,
    positive_class,
    features,
    categorical,
    impute,
    zero_based,
    model_out,
    overwrite,
    as_json,
    quiet,
    mlflow,
    mlflow_uri,
    experiment,
):
    """Train on a random split and report test accuracy, fit time and the kernels used (--mlflow: also
    an MLflow run)."""
    algo = _batch_algorithm(algorithm, algo)
    target = mlflow_target(mlflow, mlflow_uri, experiment)
    report = run_fit(
        algo,
        data,
        variant=variant,
        test_size=test_size,
        seed=seed,
        scaling=scaling,
        n_trials=trials,
        ratio=ratio,
        beta=beta,
        C=C,
        kernels=kernels,
        kernel_normalization=kernel_normalization,
        paper_settings=paper_settings,
        scheduler=scheduler,
        threads=threads,
        timeout=timeout,
        model_out=model_out,
        overwrite=overwrite,
        **reading_options(label_column, positive_class, features, categorical, impute, zero_based),
        verbose=0 if quiet or as_json else 1,
    )
    if target is not None:
        from omkl_dist.mlflow.commands import after_job

        report["mlflow"] = after_job(target, "fit", report)
    click.echo(named(json.dumps(report) if as_json else format_fit_report(report)))


def _batch_algorithm(argument: str | None, option: str | None) -> str:
    """The algorithm named once, as ``omkl fit mkboost`` or ``--algo mkboost``; an online one is
    ``omkl run``'s, said so."""
    from omkl_dist._validation import did_you_mean
    from omkl_dist.algorithms.registry import ALGORITHMS

    if argument is not None and option is not None and argument != option:
        raise click.UsageError(f"two algorithms, {argument!r} and --algo {option!r}: name one")
    name = argument or option
    if name is None:
        raise click.UsageError(f"name the algorithm: omkl fit ALGO --data FILE, ALGO one of {', '.join(ALGOS)}")
    if name in ALGORITHMS:
        raise click.UsageError(
            f"{name} is an online algorithm: omkl run {name} --data FILE learns it test-then-train over the "
            f"rows (omkl fit takes the batch ones: {', '.join(ALGOS)})"
        )
    if name not in ALGOS:
        hint = did_you_mean(name, ALGOS)
        raise click.UsageError(f"no batch algorithm {name!r}: {hint or 'one of ' + ', '.join(ALGOS)}")
    return name
