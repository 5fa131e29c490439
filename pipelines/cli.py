"""The ``omkl`` command line.

Every sub-command is a thin layer over the library: parse options, call one function, print.
Bad input surfaces as a one-line ``error: ...`` (exit 2) naming the problem and the fix, never a
traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from storage.errors import DataError


class _Group(click.Group):
    """Turn known bad-input errors into a clean message and exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (DataError, ValueError, FileExistsError, FileNotFoundError) as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(2)


def _parse_classes(text):
    if text is None:
        return None
    classes = [c.strip() for c in text.split(",") if c.strip()]
    if len(classes) < 2:
        raise click.BadParameter(f"give at least two comma-separated classes, got {text!r}")
    return classes


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="omkl-dist")
def main():
    """omkl-dist: online multiple kernel learning on Dask."""


@main.group(cls=_Group)
def data():
    """Ingest, inspect, list and generate datasets."""


@data.command("ingest")
@click.argument("source")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Output dataset directory.")
@click.option("--chunk-rows", default=65_536, show_default=True, type=click.IntRange(min=1), help="Rows per zarr chunk.")
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["libsvm", "dense", "csv", "csv_header", "tsv_header", "mat"]),
              default=None, help="Input format (default: detected from name and content).")
@click.option("--classes", default=None, help="Declared original classes, e.g. -1,1 (needed for one-class splits).")
@click.option("--n-classes", type=click.IntRange(min=2), default=None, help="Refuse data with more classes than this.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output directory (atomically).")
def data_ingest(source, out, chunk_rows, dtype, fmt, classes, n_classes, overwrite):
    """Ingest FILE (or a registry name such as codrna) into a zarr + parquet dataset directory."""
    from storage import format_info, ingest

    meta = ingest(source, out, chunk_rows=chunk_rows, dtype=dtype, fmt=fmt, classes=_parse_classes(classes),
                  n_classes=n_classes, overwrite=overwrite)
    click.echo(f"ingested {meta['source']} -> {Path(out).absolute()}")
    click.echo(format_info(meta))


@data.command("info")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the metadata as JSON.")
def data_info(directory, as_json):
    """Print the summary of an ingested dataset DIRECTORY."""
    from storage import dataset_info, format_info

    meta = dataset_info(directory)
    click.echo(json.dumps(meta, indent=2, sort_keys=True) if as_json else format_info(meta))


@data.command("list")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Datasets folder (default: $OMKL_DATA_DIR or ../shared/datasets).")
@click.option("--no-verify", is_flag=True, help="Skip the sha256 check against MANIFEST.json.")
def data_list(data_dir, no_verify):
    """List the registry's datasets with shapes and a sha256 check."""
    from storage import list_datasets

    rows = list_datasets(data_dir, verify=not no_verify)
    header = ("name", "file", "role", "rows", "features", "classes", "sha256")
    table = [header] + [tuple(str(r[k]) for k in ("name", "file", "role", "rows", "features", "classes", "sha256"))
                        for r in rows]
    widths = [min(max(len(row[i]) for row in table), 40) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell[:40].ljust(w) for cell, w in zip(row, widths)).rstrip())
    bad = [r for r in rows if r["sha256"] != "ok"]
    if bad and not no_verify:
        click.echo(f"{len(bad)} file(s) missing or not matching MANIFEST.json", err=True)
        sys.exit(1)


@data.command("synth")
@click.option("--rows", required=True, type=click.IntRange(min=1))
@click.option("--features", required=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--noise", default=0.05, show_default=True, type=float, help="Label-flip rate = Bayes error.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path))
@click.option("--chunk-rows", default=65_536, show_default=True, type=click.IntRange(min=1))
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64", show_default=True)
@click.option("--overwrite", is_flag=True)
def data_synth(rows, features, seed, noise, out, chunk_rows, dtype, overwrite):
    """Generate a labelled nonlinear stream chunk by chunk (bounded memory)."""
    from storage import format_info
    from storage.synth import synthesize

    meta = synthesize(out, rows=rows, features=features, seed=seed, noise=noise, chunk_rows=chunk_rows,
                      dtype=dtype, overwrite=overwrite)
    click.echo(f"generated {rows} x {features} -> {Path(out).absolute()} (Bayes error = {noise})")
    click.echo(format_info(meta))


@main.command("run")
@click.option("--algo", required=True, help="omkc, perceptron, perceptron-u, perceptron-star, spa.")
@click.option("--data", required=True, help="Registry name (e.g. codrna), data file, or ingested directory.")
@click.option("--update", type=click.Choice(["D", "S"]), default=None, help="OMKC: kernel selection for updates.")
@click.option("--combination", type=click.Choice(["D", "S", "U"]), default=None,
              help="OMKC: selection for combining (U: fixed uniform vote, OMKC(U)).")
@click.option("--kernels", default=None, help="Kernel pool: omkc16, mkboost17 or a spec such as 'poly:1,2;gaussian:2^-2..2^2'.")
@click.option("--kernel", default=None, help="perceptron: the single kernel (default linear).")
@click.option("--beta", type=float, default=None,
              help="OMKC: Hedge discount in (0,1). SPA: support-vector sampling divisor (>= alpha).")
@click.option("--delta", type=float, default=None, help="Sampling smoothing in (0,1] (SPA: (0,1)).")
@click.option("--gamma", type=float, default=None, help="SPA: Hedge discount per unit of hinge loss, in (0,1).")
@click.option("--eta", type=float, default=None, help="SPA: aggressiveness (learning rate) > 0.")
@click.option("--alpha", type=float, default=None, help="SPA: sampling cap, min(alpha, loss)/beta.")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="SPA: expected support vectors per kernel (sets beta = alpha T / budget).")
@click.option("--block-size", default=256, show_default=True, type=click.IntRange(min=1))
@click.option("--block-sync", is_flag=True, default=None, help="Stochastic updates sample with block-start weights.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@click.option("--scaling", type=click.Choice(["none", "minmax", "standard"]), default="none", show_default=True)
@click.option("--scale-rows", type=click.IntRange(min=1), default=None,
              help="Fit the scaling on this many leading rows (default: all rows of a file; 10,000 of a stream).")
@click.option("--no-permute", is_flag=True, help="Keep the file's row order (default: permute with the seed).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N instances.")
@click.option("--trace-out", type=click.Path(path_type=Path), default=None,
              help="Where to write the trace JSON (default runs/trace-ALGO-DATA-seedS.json).")
@click.option("--model-out", type=click.Path(path_type=Path), default=None,
              help="Save the final model with its scaling (zarr + JSON, atomic) to this directory.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --model-out directory.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on the last line instead of text.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def run(algo, data, update, combination, kernels, kernel, beta, delta, gamma, eta, alpha, budget, block_size,
        block_sync, seed, scaling, scale_rows, no_permute, limit, trace_out, model_out, overwrite, as_json, quiet):
    """Run an online algorithm test-then-train over a stream and report mistakes, SVs and speed."""
    from .run import format_report, run_job

    params = {"update": update, "combination": combination, "kernels": kernels, "kernel": kernel, "beta": beta,
              "delta": delta, "gamma": gamma, "eta": eta, "alpha": alpha, "budget": budget, "block_sync": block_sync}
    if trace_out is None:
        trace_out = Path("runs") / f"trace-{algo}-{Path(data).name.split('.')[0]}-seed{seed}.json"
    report = run_job(algo, data, params=params, block_size=block_size, seed=seed, scaling=scaling,
                     scale_rows=scale_rows, permute=not no_permute, limit=limit, trace_out=trace_out,
                     model_out=model_out, overwrite=overwrite, show_progress=not quiet)
    click.echo(json.dumps(report) if as_json else format_report(report))


@main.group(cls=_Group)
def reproduce():
    """Reproduce a paper's experiment tables."""


@reproduce.command("omkc")
@click.option("--permutations", default=20, show_default=True, type=click.IntRange(min=1),
              help="Random orders per dataset (the paper used 20).")
@click.option("--datasets", default=None,
              help="Comma-separated paper or registry names (default: every Table 3/4 dataset we have).")
@click.option("--algorithms", default=None,
              help="Comma-separated: perceptron, perceptron-u, perceptron-star, om2, omkc-dd, omkc-ds, omkc-sd, "
                   "omkc-ss, or omkc for the four variants (default: all).")
@click.option("--scaling", type=click.Choice(["none", "minmax", "minmax-sym", "standard", "paper"]), default="paper",
              show_default=True, help="Feature scaling fitted on the whole dataset; minmax = [0,1], minmax-sym = "
                                      "[-1,1], paper = the per-dataset choice of omkl_dist.evaluation.reproduce.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="Permutation r is default_rng([seed, r]).permutation(n).")
@click.option("--ties", type=click.Choice(["mistake", "positive"]), default="mistake", show_default=True,
              help="A zero combined score counts as a mistake (the package's rule) or predicts +1.")
@click.option("--json", "as_json", is_flag=True, help="Also print the report as one JSON object on the last line.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None, help="Write the full report (JSON) here.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def reproduce_omkc_cmd(permutations, datasets, algorithms, scaling, seed, ties, as_json, out, quiet):
    """Tables 3/4 of the OMKC paper: our mistake rates, #SV and times next to the paper's."""
    from .reproduce import format_reproduce_report, run_reproduce_omkc

    report = run_reproduce_omkc(permutations=permutations, datasets=datasets, algorithms=algorithms,
                                scaling=scaling, seed=seed, ties=ties, show_progress=not quiet, out=out)
    click.echo(format_reproduce_report(report))
    if as_json:
        click.echo(json.dumps(report))


@reproduce.command("bomkl")
@click.option("--permutations", default=10, show_default=True, type=click.IntRange(min=1),
              help="Random orders per dataset (the paper used 10; german uses the authors' own permutations).")
@click.option("--datasets", default=None,
              help="Comma-separated: german, svmguide3, madelon, a9a (Table 1); a9a, ijcnn1, codrna, SUSY (Table 2). "
                   "Default: all.")
@click.option("--algorithms", default=None,
              help="Comma-separated: perceptron-star, omkc-u, omkc-dd, omkc-sd, spa, rbp, forgetron, bogd, bpas "
                   "(default: all; the not-implemented ones show the paper's numbers and n/a).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="Permutation r is default_rng([seed, r]).permutation(n) (german: the file's r-th permutation).")
@click.option("--ties", type=click.Choice(["mistake", "positive"]), default="mistake", show_default=True,
              help="A zero combined score counts as a mistake (the package's rule) or predicts +1.")
@click.option("--json", "as_json", is_flag=True, help="Also print the report as one JSON object on the last line.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None, help="Write the full report (JSON) here.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def reproduce_bomkl_cmd(permutations, datasets, algorithms, seed, ties, as_json, out, quiet):
    """Tables 1/2 of the BOMKL (SPA) paper: our mistake rates, #SV and times next to the paper's."""
    from .reproduce import format_reproduce_report, run_reproduce_bomkl

    report = run_reproduce_bomkl(permutations=permutations, datasets=datasets, algorithms=algorithms, seed=seed,
                                 ties=ties, show_progress=not quiet, out=out)
    click.echo(format_reproduce_report(report))
    if as_json:
        click.echo(json.dumps(report))


if __name__ == "__main__":
    main()
