"""``omkl reproduce``: the papers' tables."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..cli_base import (
    LOCAL_PATH,
    PATH_OR_URL,
    SCHEDULER_TIMEOUT_OPTION,
    CommandGroup,
)


def _report_options(command):
    """``--json``, ``--out`` and ``--quiet``: how a reproduction reports."""
    for option in reversed(
        [
            click.option(
                "--json", "as_json", is_flag=True, help="Also print the report as one JSON object on the last line."
            ),
            click.option("--out", "out", type=PATH_OR_URL, default=None, help="Write the full report (JSON) here."),
            click.option("--quiet", is_flag=True, help="No progress bar."),
        ]
    ):
        command = option(command)
    return command


@click.group(cls=CommandGroup)
def reproduce():
    """Reproduce a paper's experiment tables."""


@reproduce.command("omkc")
@click.option(
    "--permutations",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Random orders per dataset (the paper used 20).",
)
@click.option(
    "--datasets",
    default=None,
    help="Comma-separated paper or registry names (default: every Table 3/4 dataset we have).",
)
@click.option(
    "--algorithms",
    default=None,
    help="Comma-separated: perceptron, perceptron-u, perceptron-star, om2, omkc-dd, omkc-ds, omkc-sd, "
    "omkc-ss, or omkc for the four variants (default: all).",
)
@click.option(
    "--scaling",
    type=click.Choice(["none", "minmax", "minmax-sym", "standard", "paper"]),
    default="paper",
    show_default=True,
    help="Feature scaling fitted on the whole dataset; minmax = [0,1], minmax-sym = "
    "[-1,1], paper = the per-dataset choice of omkl_dist.reproduction.omkc.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Permutation r is default_rng([seed, r]).permutation(n).",
)
@click.option(
    "--ties",
    type=click.Choice(["mistake", "positive"]),
    default="mistake",
    show_default=True,
    help="A zero combined score counts as a mistake (the package's rule) or predicts +1.",
)
@_report_options
def reproduce_omkc_cmd(permutations, datasets, algorithms, scaling, seed, ties, as_json, out, quiet):
    """Tables 3/4 of the OMKC paper: our mistake rates, #SV and times next to the paper's."""
    from ..reproduce import format_reproduce_report, run_reproduce_omkc

    report = run_reproduce_omkc(
        permutations=permutations,
        datasets=datasets,
        algorithms=algorithms,
        scaling=scaling,
        seed=seed,
        ties=ties,
        show_progress=not quiet,
        out=out,
    )
    click.echo(format_reproduce_report(report))
    if as_json:
        click.echo(json.dumps(report))


@reproduce.command("om2")
@click.option(
    "--permutations",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Random orders per Table 3/4 dataset (the paper used 20).",
)
@click.option(
    "--datasets",
    default=None,
    help="Comma-separated Table 3/4 datasets (paper or registry names; default: every one we have).",
)
@click.option(
    "--study-permutations",
    default=5,
    show_default=True,
    type=click.IntRange(min=1),
    help="Random orders per multi-class study dataset.",
)
@click.option(
    "--study-datasets",
    default=None,
    help="Comma-separated: glass, vehicle, dna, mfeat, segment, satimage (default: all).",
)
@click.option(
    "--plot",
    type=LOCAL_PATH,
    default=Path("runs/om2-multiclass.png"),
    show_default=True,
    help="Where to write the study's PNG plot (mistake rate against instances seen).",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Permutation r is default_rng([seed, r]).permutation(n).",
)
@click.option(
    "--ties",
    type=click.Choice(["mistake", "positive"]),
    default="mistake",
    show_default=True,
    help="Tables 3/4: a zero combined score counts as a mistake (the package's rule) or predicts +1.",
)
@_report_options
def reproduce_om2_cmd(
    permutations, datasets, study_permutations, study_datasets, plot, seed, ties, as_json, out, quiet
):
    """OM-2: its rows of the OMKC paper's Tables 3/4 next to the paper's, and a multi-class study."""
    from ..reproduce import format_om2_report, run_reproduce_om2

    report = run_reproduce_om2(
        permutations=permutations,
        datasets=datasets,
        seed=seed,
        ties=ties,
        study_permutations=study_permutations,
        study_datasets=study_datasets,
        plot=plot,
        show_progress=not quiet,
        out=out,
    )
    click.echo(format_om2_report(report))
    if as_json:
        click.echo(json.dumps(report))


@reproduce.command("bomkl")
@click.option(
    "--permutations",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Random orders per dataset (the paper used 10; german uses the authors' own permutations).",
)
@click.option(
    "--datasets",
    default=None,
    help="Comma-separated: german, svmguide3, madelon, a9a (Table 1); a9a, ijcnn1, codrna, SUSY (Table 2). "
    "Default: all.",
)
@click.option(
    "--algorithms",
    default=None,
    help="Comma-separated: perceptron-star, omkc-u, omkc-dd, omkc-sd, spa, rbp, forgetron, bogd, bpas (default: all).",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Permutation r is default_rng([seed, r]).permutation(n) (german: the file's r-th permutation).",
)
@click.option(
    "--ties",
    type=click.Choice(["mistake", "positive"]),
    default="mistake",
    show_default=True,
    help="A zero combined score counts as a mistake (the package's rule) or predicts +1.",
)
@click.option(
    "--scaling",
    type=click.Choice(["paper", "none", "minmax", "minmax-sym", "standard"]),
    default="paper",
    show_default=True,
    help="Feature scaling, fitted on the whole dataset: 'paper' is the per-dataset choice of the scaling "
    "study (printed with the report); the others apply one method to every dataset.",
)
@_report_options
def reproduce_bomkl_cmd(permutations, datasets, algorithms, seed, ties, scaling, as_json, out, quiet):
    """Tables 1/2 of the BOMKL (SPA) paper: our mistake rates, #SV and times next to the paper's."""
    from ..reproduce import format_reproduce_report, run_reproduce_bomkl

    report = run_reproduce_bomkl(
        permutations=permutations,
        datasets=datasets,
        algorithms=algorithms,
        seed=seed,
        ties=ties,
        scaling=scaling,
        show_progress=not quiet,
        out=out,
    )
    click.echo(format_reproduce_report(report))
    if as_json:
        click.echo(json.dumps(report))


@reproduce.command("oks")
@click.option(
    "--studies",
    default="mfeat,testbed",
    show_default=True,
    help="Comma-separated: mfeat (6 views x 4 kernel types, digit pairs and 10 digits), testbed (the OMKC "
    "testbed's binary datasets with omkc16).",
)
@click.option(
    "--seeds",
    default=5,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seeds of SOM-SVM and OKS-SVM (the paper: 5).",
)
@click.option(
    "--tasks",
    default=None,
    help="Comma-separated task names to run (e.g. 'digit 3 vs 8,10 digits,sonar'; default: all).",
)
@click.option(
    "--algorithms",
    default=None,
    help="Comma-separated: MuTron, OM-1, OM-2, AlSVM, MuSVM, SIPMKL, SOM-SVM, OKS-SVM (default: all).",
)
@_report_options
def reproduce_oks_cmd(studies, seeds, tasks, algorithms, as_json, out, quiet):
    """Tables 1/2 of the OKS paper beside the same study on mfeat and the OMKC testbed, claims checked."""
    from ..reproduce import split_names
    from ..reproduce_oks import format_oks_report, run_reproduce_oks

    report = run_reproduce_oks(
        studies=split_names(studies),
        seeds=seeds,
        tasks=split_names(tasks),
        algorithms=split_names(algorithms),
        show_progress=not quiet,
        out=out,
    )
    click.echo(format_oks_report(report))
    if as_json:
        click.echo(json.dumps(report))


@reproduce.command("mkboost")
@click.option(
    "--runs",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Random 50/50 splits per dataset (the paper used 20).",
)
@click.option(
    "--datasets",
    default=None,
    help="Comma-separated: german.numer, glass, ionosphere, sonar, svmguide3, wdbc, segment, vehicle "
    "(or D1..D10; default: all of Table 1, the missing ones are reported as skipped).",
)
@click.option(
    "--algorithms",
    default=None,
    help="Comma-separated: d1, d2, s1, s2 (or mkboost for all four), simplemkl, silp, level, lpmkl (default: all).",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Split r is default_rng([seed, r]).permutation(n).",
)
@click.option(
    "--trials",
    default=100,
    show_default=True,
    type=click.IntRange(min=1),
    help="MKBoost trials T (the paper: 100; fewer for a quick look).",
)
@click.option("--scaling", type=click.Choice(["standard", "none", "minmax"]), default="standard", show_default=True)
@click.option("--scheduler", default=None, help="Dask scheduler address for MKBoost's per-kernel fits.")
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Local threads for MKBoost's per-kernel fits (without --scheduler).",
)
@SCHEDULER_TIMEOUT_OPTION
@_report_options
def reproduce_mkboost_cmd(
    runs, datasets, algorithms, seed, trials, scaling, scheduler, threads, timeout, as_json, out, quiet
):
    """Tables 2/3 of the MKBoost paper: our accuracy and time next to the paper's."""
    from ..reproduce_mkboost import format_mkboost_report, run_reproduce_mkboost

    report = run_reproduce_mkboost(
        runs=runs,
        datasets=datasets,
        algorithms=algorithms,
        seed=seed,
        n_trials=trials,
        scaling=scaling,
        scheduler=scheduler,
        threads=threads,
        timeout=timeout,
        show_progress=not quiet,
        out=out,
    )
    click.echo(format_mkboost_report(report))
    if as_json:
        click.echo(json.dumps(report))
