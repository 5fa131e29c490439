"""``omkl study``: the measured studies behind the package's defaults."""

from __future__ import annotations

import json

import click

from ..cli_base import (
    LOCAL_PATH,
    CommandGroup,
    LocalPath,
)


@click.group(cls=CommandGroup)
def study():
    """Measured studies behind the package's defaults."""


_STUDY_RUN_OPTIONS = ("algorithms", "datasets", "permutations", "axes", "workers")


class RowCap(click.ParamType):
    """``--max-rows``: a positive number of rows, or ``all`` (the whole stream: None)."""

    name = "rows|all"

    def convert(self, value, param, ctx):
        if value is None or isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        if str(value).strip().lower() == "all":
            return None
        try:
            rows = int(str(value).replace(",", "").replace("_", ""))
        except ValueError:
            rows = 0
        if rows < 1:
            self.fail(f"{value!r} is neither a positive number of rows nor 'all'", param, ctx)
        return rows


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
    default="3000",
    show_default=True,
    type=RowCap(),
    help="Rows of each permutation a run learns, or 'all' for the whole stream (the report covers the "
    "runs of this cap).",
)
@click.option(
    "--axes",
    default="",
    help="Comma-separated defaults to vary beside the six combinations, one at a time, where they apply: "
    "hedge_loss (SPA: hinge or mistake), budget (rbp, forgetron, bogd, bpas: 100 or 400), pool (omkc16 or "
    "gaussian:2^-6..2^6). Default: none.",
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
    type=LOCAL_PATH,
    default=None,
    help="JSONL of finished runs: appended as they finish, runs in it are skipped "
    "(resume); the JSON summary is written beside it (.json). Default: "
    "runs/study-defaults/study-defaults.jsonl in a new folder (the first free of -2, -3, ...).",
)
@click.option(
    "--doc",
    type=LOCAL_PATH,
    default=None,
    help="Where to write the Markdown report (replacing only an earlier report of ours). "
    "Default: beside --results (.md).",
)
@click.option(
    "--compare",
    type=LocalPath(dir_okay=False),
    default=None,
    help="Another study's JSON summary (e.g. the 3,000-row cap's, benchmarks/results/study-defaults.json) "
    "to report beside this one, with the rows where their winners differ.",
)
@click.option("--report-only", is_flag=True, help="Run nothing: regenerate the report from --results.")
@click.option("--json", "as_json", is_flag=True, help="Also print the report as one JSON object on the last line.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.pass_context
def study_defaults_cmd(
    ctx, algorithms, datasets, permutations, max_rows, axes, workers, results, doc, compare, report_only, as_json, quiet
):
    """Every online algorithm x dataset x scaling (none, minmax, standard) x raw/normalised kernels: online
    mistake rates over permutations and times; which combination wins how often, by how much, where it loses."""
    from click.core import ParameterSource

    from ..studies.defaults_plan import AXES, resolve_names
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
        axes=resolve_names(axes, list(AXES), "axis") if axes.strip() else (),
        workers=workers,
        results=results,
        doc=doc,
        compare=compare,
        report_only=report_only,
        show_progress=not quiet,
    )
    click.echo(format_outcome(outcome))
    if as_json:
        click.echo(json.dumps(outcome["report"], default=list))
