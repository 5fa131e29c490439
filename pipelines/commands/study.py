"""``omkl study``: the measured studies behind the package's defaults."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..cli_base import (
    CommandGroup,
)


@click.group(cls=CommandGroup)
def study():
    """Measured studies behind the package's defaults."""


_STUDY_RUN_OPTIONS = ("algorithms", "datasets", "permutations", "workers")


@study.command("defaults")
@click.option(
    "--algorithms",
    default=None,
    help="Comma-separated: omkc-dd, omkc-ds, omkc-sd, omkc-ss, perceptron, perceptron-u, perceptron-star, "
    "spa, om2, oks, rbp, forgetron, bogd, bpas (default: all).",
)
@click.option(
    "--datasets",
    default=None,
    help="Comma-separated registry names (one stream per name, see docs/defaults.md) or the generated "
    "magic04-shaped, letters-shaped (default: every binary and multi-class dataset and both).",
)
@click.option(
    "--permutations",
    default=5,
    show_default=True,
    type=click.IntRange(min=1),
    help="Random orders per cell: permutation p is default_rng([0, p]).",
)
@click.option(
    "--max-rows",
    default=3_000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows of each permutation a run learns (the report covers the runs of this cap).",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="Runs at a time, each in its own single-threaded process (1: in this process).",
)
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=None,
    help="JSONL of finished runs: appended as they finish, runs in it are skipped "
    "(resume); the JSON summary is written beside it (.json). Default: "
    "runs/study-defaults/study-defaults.jsonl in a new folder (the first free of -2, -3, ...).",
)
@click.option(
    "--doc",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write the Markdown report (replacing only an earlier report of ours). "
    "Default: beside --results (.md).",
)
@click.option("--report-only", is_flag=True, help="Run nothing: regenerate the report from --results.")
@click.option("--json", "as_json", is_flag=True, help="Also print the report as one JSON object on the last line.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.pass_context
def study_defaults_cmd(
    ctx, algorithms, datasets, permutations, max_rows, workers, results, doc, report_only, as_json, quiet
):
    """Every online algorithm x dataset x scaling (none, minmax, standard) x raw/normalised kernels: online
    mistake rates over permutations and times; which combination wins how often, by how much, where it loses."""
    from click.core import ParameterSource

    from ..studies.defaults_run import format_outcome, study_defaults

    if report_only:
        given = [n for n in _STUDY_RUN_OPTIONS if ctx.get_parameter_source(n) is not ParameterSource.DEFAULT]
        if given:
            raise ValueError(
                f"{', '.join('--' + n for n in given)}: nothing runs with --report-only (the report "
                "covers every run in --results at --max-rows)"
            )
    outcome = study_defaults(
        algorithms=algorithms,
        datasets=datasets,
        permutations=permutations,
        max_rows=max_rows,
        workers=workers,
        results=results,
        doc=doc,
        report_only=report_only,
        show_progress=not quiet,
    )
    click.echo(format_outcome(outcome))
    if as_json:
        click.echo(json.dumps(outcome["report"], default=list))
