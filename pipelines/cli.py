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

from omkl_dist.storage.location import text

from .cli_base import (
    FEATURES_OPTION,
    LABEL_COLUMN_OPTION,
    POSITIVE_CLASS_OPTION,
    CommandGroup,
    FiniteFloat,
    given_kernel_spec,
    job_settings,
    settings_options,
)
from .cli_scheduling import register as register_scheduling


def _parse_classes(text):
    if text is None:
        return None
    classes = [c.strip() for c in text.split(",") if c.strip()]
    if len(classes) < 2:
        raise click.BadParameter(f"give at least two comma-separated classes, got {text!r}")
    return classes


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="omkl-dist")
def main():
    """omkl-dist: online multiple kernel learning on Dask."""


@main.group(cls=CommandGroup)
def data():
    """Ingest, inspect, list and generate datasets."""


@data.command("ingest")
@click.argument("source")
@click.option("--out", "out", required=True, help="Output dataset directory (a path or a URL, e.g. s3://bucket/d).")
@click.option(
    "--chunk-rows", default=65_536, show_default=True, type=click.IntRange(min=1), help="Rows per zarr chunk."
)
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64", show_default=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["libsvm", "dense", "csv", "csv_header", "tsv_header", "mat", "parquet"]),
    default=None,
    help="Input format (default: detected from name and content).",
)
@click.option("--classes", default=None, help="Declared original classes, e.g. -1,1 (needed for one-class splits).")
@click.option("--n-classes", type=click.IntRange(min=2), default=None, help="Refuse data with more classes than this.")
@click.option(
    "--n-features",
    type=click.IntRange(min=1),
    default=None,
    help="LIBSVM: the feature count (default: the largest index; a test split with fewer is padded).",
)
@LABEL_COLUMN_OPTION
@POSITIVE_CLASS_OPTION
@FEATURES_OPTION
@click.option(
    "--views",
    is_flag=True,
    help="SOURCE is a multi-view dataset (a folder of aligned files or a registry name such as mfeat): "
    "store the views side by side, each view's columns a feature group kernels can name.",
)
@click.option(
    "--feature-groups",
    default=None,
    help="Name groups of the file's columns for kernels to see, e.g. 'fourier=0:76;zernike=76:123' "
    "(half-open column ranges), recorded in meta.json.",
)
@click.option(
    "--layout",
    type=click.Choice(["auto", "dense", "csr"]),
    default="auto",
    show_default=True,
    help="Feature storage: csr keeps only the non-zeros (one CSR triple per chunk, streamed as sparse "
    "blocks; dense input is converted), dense stores every value; auto = csr for a LIBSVM (or sparse "
    ".mat) file with at least 10,000 features, else dense.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing dataset directory (atomically; nothing else).")
def data_ingest(
    source,
    out,
    chunk_rows,
    dtype,
    fmt,
    classes,
    n_classes,
    n_features,
    label_column,
    positive_class,
    features,
    views,
    feature_groups,
    layout,
    overwrite,
):
    """Ingest FILE (or a registry name such as codrna) into a zarr + parquet dataset directory."""
    from omkl_dist.storage import format_info, ingest

    meta = ingest(
        source,
        out,
        chunk_rows=chunk_rows,
        dtype=dtype,
        fmt=fmt,
        classes=_parse_classes(classes),
        n_classes=n_classes,
        overwrite=overwrite,
        n_features=n_features,
        label_column=label_column,
        positive_class=positive_class,
        features=features,
        views=views,
        feature_groups=_parse_groups(feature_groups),
        layout=layout,
    )
    click.echo(f"ingested {meta['source']} -> {text(out)}")
    click.echo(format_info(meta))


def _parse_groups(text):
    """'a=0:10;b=10:20' -> {"a": "0:10", "b": "10:20"} (checked by ingest)."""
    if text is None:
        return None
    groups = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, sep, ranges = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not name=ranges (e.g. fourier=0:76)", param_hint="--feature-groups")
        groups[name.strip()] = ranges.strip()
    return groups


@data.command("info")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the metadata as JSON.")
def data_info(directory, as_json):
    """Print the summary of an ingested dataset DIRECTORY."""
    from omkl_dist.storage import dataset_info, format_info

    meta = dataset_info(directory)
    click.echo(json.dumps(meta, indent=2, sort_keys=True) if as_json else format_info(meta))


@data.command("verify")
@click.argument("directory", type=click.Path(path_type=Path))
def data_verify(directory):
    """Read every chunk of a dataset DIRECTORY and check it against its recorded checksums."""
    from omkl_dist.storage.ingest import verify_dataset

    meta = verify_dataset(directory)
    n_chunks = len(meta["checksums"]["features"])
    click.echo(
        f"ok: {directory} -- {meta['n_rows']:,} rows in {n_chunks} chunk(s), features and labels match "
        "their checksums, meta.json matches its hash"
    )


@data.command("list")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Datasets folder (default: $OMKL_DATA_DIR or ../shared/datasets).",
)
@click.option("--no-verify", is_flag=True, help="Skip the sha256 check against MANIFEST.json.")
def data_list(data_dir, no_verify):
    """List the registry's datasets with shapes and a sha256 check."""
    from omkl_dist.storage import list_datasets

    rows = list_datasets(data_dir, verify=not no_verify)
    header = ("name", "file", "role", "rows", "features", "classes", "sha256")
    table = [header] + [
        tuple(str(r[k]) for k in ("name", "file", "role", "rows", "features", "classes", "sha256")) for r in rows
    ]
    widths = [min(max(len(row[i]) for row in table), 40) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell[:40].ljust(w) for cell, w in zip(row, widths)).rstrip())
    bad = [r for r in rows if r["sha256"] != "ok"]
    if bad and not no_verify:
        click.echo(f"{len(bad)} file(s) missing or not matching MANIFEST.json", err=True)
        sys.exit(1)


@data.command("synth")
@click.option("--rows", required=True, type=click.IntRange(min=1))
@click.option(
    "--features",
    default=None,
    type=click.IntRange(min=1),
    help="Dimension (required for --shape nonlinear; rcv1 default: 47,236).",
)
@click.option(
    "--shape",
    type=click.Choice(["nonlinear", "rcv1"]),
    default="nonlinear",
    show_default=True,
    help="nonlinear: dense Gaussian rows with a nonlinear boundary, written as a dataset directory. rcv1: "
    "wide sparse tf-idf-like rows (L2-normalised) of a sparse linear model, written as a LIBSVM file "
    "(--out wide.svm, .gz to compress) for `omkl data ingest`, which stores it in the csr layout.",
)
@click.option(
    "--density",
    default=None,
    type=FiniteFloat(0, 1, min_open=True),
    help="rcv1: fraction of non-zero features (default 0.0016, ~76 per row at 47,236 features).",
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--noise", default=0.05, show_default=True, type=FiniteFloat(), help="Label-flip rate = Bayes error.")
@click.option(
    "--out",
    "out",
    required=True,
    help="Output dataset directory (a path or a URL); with --shape rcv1 the LIBSVM file to write.",
)
@click.option("--chunk-rows", default=65_536, show_default=True, type=click.IntRange(min=1))
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64", show_default=True)
@click.option(
    "--first-row",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Write rows FIRST_ROW.. of the seed's stream (a later window of the same stream).",
)
@click.option("--overwrite", is_flag=True)
@click.pass_context
def data_synth(ctx, rows, features, shape, density, seed, noise, out, chunk_rows, dtype, first_row, overwrite):
    """Generate a labelled stream chunk by chunk (bounded memory): a nonlinear dataset, or an rcv1-shaped
    LIBSVM file."""
    if shape == "rcv1":
        _synth_rcv1(
            ctx, rows=rows, features=features, density=density, seed=seed, noise=noise, out=out, overwrite=overwrite
        )
        return
    from omkl_dist.storage import format_info
    from omkl_dist.storage.synth import synthesize

    if features is None:
        raise click.UsageError("--features is required for --shape nonlinear")
    if density is not None:
        raise click.UsageError("--density is for --shape rcv1")
    meta = synthesize(
        out,
        rows=rows,
        features=features,
        seed=seed,
        noise=noise,
        chunk_rows=chunk_rows,
        dtype=dtype,
        overwrite=overwrite,
        first_row=first_row,
    )
    click.echo(f"generated {rows} x {features} -> {text(out)} (Bayes error = {noise})")
    click.echo(format_info(meta))


def _synth_rcv1(ctx, *, rows, features, density, seed, noise, out, overwrite):
    """``omkl data synth --shape rcv1``: the LIBSVM file; storage options belong to the ingest."""
    from click.core import ParameterSource

    from omkl_dist.storage.synth import RCV1_DENSITY, RCV1_FEATURES, write_sparse_libsvm

    for name in ("chunk_rows", "dtype", "first_row"):
        if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT:
            raise click.UsageError(
                f"--{name.replace('_', '-')} is for --shape nonlinear: --shape rcv1 writes a "
                "LIBSVM file (choose the chunking and dtype when ingesting it)"
            )
    features = RCV1_FEATURES if features is None else features
    info = write_sparse_libsvm(
        out,
        rows=rows,
        features=features,
        density=RCV1_DENSITY if density is None else density,
        seed=seed,
        noise=noise,
        overwrite=overwrite,
    )
    counts = info["class_counts"]
    click.echo(f"generated {rows:,} x {features:,} rcv1-shaped LIBSVM file -> {out} (Bayes error = {noise})")
    click.echo(
        f"non-zeros: {info['nnz']:,} (density {100 * info['density']:.4f} %, {info['nnz'] / rows:,.1f} per "
        f"row); labels -1: {counts['-1']:,}, 1: {counts['1']:,}"
    )
    click.echo(f"sha256:    {info['sha256']}")
    click.echo(f"ingest it: omkl data ingest {out} --out DIR   (stored in the csr layout)")


_ALGO_PARAMS = (
    "update",
    "combination",
    "kernels",
    "kernel",
    "beta",
    "delta",
    "gamma",
    "eta",
    "alpha",
    "budget",
    "block_sync",
    "lam",
    "hedge_loss",
    "p",
    "norm",
    "loss",
)


def _algo_options(command):
    """The options shared by ``run`` and ``submit``: the algorithm and its parameters."""
    options = [
        click.option(
            "--algo",
            required=True,
            help="omkc, om2, perceptron, perceptron-u, perceptron-star, spa, oks; budget baselines rbp, "
            "forgetron, bogd, bpas (--budget = support vectors per kernel, --gamma, --eta for bogd/bpas, "
            "--lam). Every algorithm learns multi-class data.",
        ),
        click.option("--data", required=True, help="Registry name (e.g. codrna), data file, or ingested directory."),
        click.option(
            "--update", type=click.Choice(["D", "S"]), default=None, help="OMKC: kernel selection for updates."
        ),
        click.option(
            "--combination",
            type=click.Choice(["D", "S", "U"]),
            default=None,
            help="OMKC: selection for combining (U: fixed uniform vote, OMKC(U)).",
        ),
        click.option(
            "--kernels",
            default=None,
            callback=given_kernel_spec,
            help="Kernel pool: omkc16, mkboost17 or a spec such as 'poly:1,2;gaussian:2^-2..2^2'; oks: "
            "kernels may see a feature group, 'linear,poly:2,chi2,gaussian:1 @ fourier; ... @ zernike' "
            "(a multi-view dataset's views, or column ranges @ 0:76).",
        ),
        click.option(
            "--kernel",
            default=None,
            callback=given_kernel_spec,
            help="perceptron: the single kernel (default linear).",
        ),
        click.option(
            "--beta",
            type=FiniteFloat(),
            default=None,
            help="OMKC: Hedge discount in (0,1). SPA: support-vector sampling divisor (>= alpha).",
        ),
        click.option(
            "--delta",
            type=FiniteFloat(),
            default=None,
            help="Sampling smoothing in (0,1] (SPA, OKS: (0,1); OKS default 0.5).",
        ),
        click.option(
            "--gamma", type=FiniteFloat(), default=None, help="SPA: Hedge discount per unit of loss, in (0,1)."
        ),
        click.option(
            "--hedge-loss",
            type=click.Choice(["hinge", "mistake"]),
            default=None,
            help="SPA: discount Hedge weights by the hinge loss (Algorithm 1, default) or by mistakes.",
        ),
        click.option(
            "--eta",
            type=FiniteFloat(),
            default=None,
            help="SPA: aggressiveness (learning rate) > 0. OKS: the weights' step (default "
            "sqrt(2(1-delta) ln m / (m T)) for m kernels and T instances).",
        ),
        click.option("--alpha", type=FiniteFloat(), default=None, help="SPA: sampling cap, min(alpha, loss)/beta."),
        click.option(
            "--budget",
            type=click.IntRange(min=1),
            default=None,
            help="SPA: expected support vectors per kernel (sets beta = alpha T / budget).",
        ),
        click.option(
            "--block-sync",
            is_flag=True,
            default=None,
            help="Stochastic updates sample with block-start weights instead of the current ones "
            "(the same model in run and submit).",
        ),
        click.option(
            "--lam",
            type=FiniteFloat(),
            default=None,
            help="BOGD: regulariser lambda >= 0 (eta * lam < 1). OKS: the predictors' step (default 1).",
        ),
        click.option(
            "--loss",
            type=click.Choice(["mistake", "hinge", "logistic"]),
            default=None,
            help="OKS: Algorithm 2 (mistake, default) or Algorithm 1 with the hinge or logistic loss.",
        ),
        click.option(
            "--p",
            "p",
            type=FiniteFloat(),
            default=None,
            help="OM-2: the group norm's p in (1, 2] (default 2 ln F / (2 ln F - 1) for F kernels).",
        ),
        click.option(
            "--norm",
            type=click.Choice(["exact", "bound"]),
            default=None,
            help="OM-2: the step's norm, Algorithm 1's exact one (default) or its bound 2 F^(2/q).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _algo_params(kwargs) -> dict:
    return {name: kwargs.pop(name) for name in _ALGO_PARAMS}


@main.command("run")
@_algo_options
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
    from .run import format_report, run_job

    params = _algo_params(kwargs)
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


@main.group(cls=CommandGroup)
def cluster():
    """Start, inspect and stop a local Dask cluster (real scheduler and worker processes)."""


_SCHEDULER_TIMEOUT = click.option(
    "--timeout",
    default=10.0,
    show_default=True,
    type=FiniteFloat(min=0, min_open=True),
    help="Seconds to wait for the scheduler.",
)
_RUN_DIR = click.option(
    "--run-dir",
    type=click.Path(path_type=Path),
    default=Path("runs") / "cluster",
    show_default=True,
    help="Where the cluster keeps its state, logs and pid files.",
)


@cluster.command("up")
@_RUN_DIR
@click.option("--workers", default=2, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Threads per worker (also numba's and BLAS's).",
)
@click.option("--memory-limit", default="auto", show_default=True, help="Per worker, e.g. 4GB.")
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Scheduler port (0: any free)."
)
@click.option(
    "--tls-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Use mutual TLS with the certificates in this directory (see `omkl cluster certs`).",
)
def cluster_up(run_dir, workers, threads, memory_limit, port, tls_dir):
    """Start a scheduler and worker processes on 127.0.0.1."""
    from omkl_dist.cluster.local import up

    state = up(run_dir, workers=workers, threads=threads, memory_limit=memory_limit, port=port, tls_dir=tls_dir)
    click.echo(f"scheduler  {state['scheduler_address']}")
    click.echo(f"dashboard  {state['dashboard']}")
    click.echo(f"workers    {workers} x {threads} thread(s); logs and pids in {state['run_dir']}")
    click.echo(f"submit with: omkl submit --scheduler {state['scheduler_address']} ...")


@cluster.command("status")
@_RUN_DIR
@click.option("--json", "as_json", is_flag=True)
def cluster_status(run_dir, as_json):
    """Show the cluster's processes and the workers its scheduler knows."""
    from omkl_dist.cluster.local import status

    info = status(run_dir)
    if as_json:
        click.echo(json.dumps(info))
        return
    click.echo(f"scheduler  {info['scheduler_address']} ({'reachable' if info['reachable'] else 'NOT reachable'})")
    click.echo(f"dashboard  {info['dashboard']}")
    for pid, alive in info["processes"].items():
        gone = "gone (its pid is now another process's)" if int(pid) in info["not_ours"] else "gone"
        click.echo(f"process    {pid} {'running' if alive else gone}")
    for w in info["workers"]:
        click.echo(f"worker     {w['name']} {w['address']} threads={w['nthreads']}")


@cluster.command("down")
@_RUN_DIR
def cluster_down(run_dir):
    """Stop the cluster and every process it started."""
    from omkl_dist.cluster.local import down

    result = down(run_dir)
    for pid in result["not_ours"]:
        click.echo(f"left alone: pid {pid} runs another program now (not a process of this cluster)")
    if not result["stopped"]:
        click.echo(f"no cluster is running from {run_dir}")
        return
    forced = f" ({len(result['killed'])} needed SIGKILL)" if result["killed"] else ""
    click.echo(f"stopped {len(result['stopped'])} process group(s){forced}")


@cluster.command("certs")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path))
def cluster_certs(out):
    """Create a private CA and a node certificate for a TLS cluster on 127.0.0.1."""
    from omkl_dist.cluster.tls import make_certificates

    click.echo(f"wrote ca.pem, node.pem, node-key.pem to {make_certificates(out)}")


@main.command("submit")
@click.option("--scheduler", required=True, help="Scheduler address, e.g. tcp://127.0.0.1:8786.")
@_algo_options
@click.option("--block-size", default=1024, show_default=True, type=click.IntRange(min=1))
@click.option("--out", "out", required=True, help="Model directory to write (a path or a URL).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@settings_options
@click.option("--no-permute", is_flag=True, help="Keep the stored row order (default: seeded chunk-local shuffle).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N instances.")
@click.option(
    "--checkpoint-every",
    default=50,
    show_default=True,
    type=click.IntRange(min=0),
    help="Rounds (blocks of at most 1,024 rows) between checkpoints; 0: none.",
)
@click.option(
    "--checkpoint-dir",
    default=None,
    help="Default: OUT.checkpoints (removed when the job ends well unless --keep-checkpoints); a path or a URL.",
)
@click.option("--keep-checkpoints", is_flag=True)
@click.option("--resume", is_flag=True, help="Continue from the newest checkpoint of the same job.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out directory at the end.")
@click.option(
    "--max-retries",
    default=3,
    show_default=True,
    type=click.IntRange(min=0),
    help="Worker failures to recover from before giving up.",
)
@click.option("--shards", type=click.IntRange(min=1), default=None, help="Kernel shards (default: one per worker).")
@click.option("--tls-dir", type=click.Path(path_type=Path), default=None, help="Certificates of a TLS cluster.")
@_SCHEDULER_TIMEOUT
@LABEL_COLUMN_OPTION
@POSITIVE_CLASS_OPTION
@FEATURES_OPTION
@click.option(
    "--ingest-to",
    default=None,
    help="A data file (not an ingested dataset) is ingested first into a folder under this one, named "
    "after the file's content and label options (reused by a rerun), which the workers must be able "
    "to read (default: OUT.data).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def submit(
    scheduler,
    algo,
    data,
    block_size,
    out,
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
    ingest_to,
    as_json,
    quiet,
    **kwargs,
):
    """Run an online job on a Dask cluster (kernel shards + coordinator) and write the model."""
    from omkl_dist.cluster.local import connect
    from omkl_dist.storage.location import text

    from .datasource import ingested_source
    from .submit import check_submit_outputs, format_report, submit_job

    params = _algo_params(kwargs)
    settings = job_settings(kwargs, kernels_given=bool(params.get("kernels") or params.get("kernel")))
    check_submit_outputs(data, out, checkpoint_dir, overwrite=overwrite, resume=resume)  # before connecting
    data = ingested_source(
        data,
        labels={"label_column": label_column, "positive_class": positive_class, "features": features},
        under=ingest_to or text(out) + ".data",
    )
    with connect(scheduler, tls_dir=tls_dir, timeout=timeout) as client:
        report = submit_job(
            client,
            algo,
            data,
            out,
            params=params,
            block_size=block_size,
            seed=seed,
            settings=settings,
            permute=not no_permute,
            limit=limit,
            checkpoint_every=checkpoint_every,
            checkpoint_dir=checkpoint_dir,
            resume=resume,
            overwrite=overwrite,
            max_retries=max_retries,
            n_shards=shards,
            show_progress=not quiet,
            keep_checkpoints=keep_checkpoints,
        )
    click.echo(json.dumps(report) if as_json else format_report(report))


def _report_options(command):
    """``--json``, ``--out`` and ``--quiet``: how a reproduction reports."""
    for option in reversed(
        [
            click.option(
                "--json", "as_json", is_flag=True, help="Also print the report as one JSON object on the last line."
            ),
            click.option(
                "--out", "out", type=click.Path(path_type=Path), default=None, help="Write the full report (JSON) here."
            ),
            click.option("--quiet", is_flag=True, help="No progress bar."),
        ]
    ):
        command = option(command)
    return command


@main.group(cls=CommandGroup)
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
    from .reproduce import format_reproduce_report, run_reproduce_omkc

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
    type=click.Path(path_type=Path),
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
    from .reproduce import format_om2_report, run_reproduce_om2

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
    from .reproduce import format_reproduce_report, run_reproduce_bomkl

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
    from .reproduce import split_names
    from .reproduce_oks import format_oks_report, run_reproduce_oks

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


@main.command("fit")
@click.option(
    "--algo",
    required=True,
    type=click.Choice(["mkboost", "simplemkl", "silp", "level", "lpmkl", "oks-svm", "som-svm", "musvm", "alsvm"]),
    help="MKBoost (Xia & Hoi 2013), a batch MKL baseline, or a kernel selector of the OKS paper (an SVM on "
    "the kernel OKS / SOM / per-kernel validation / kernel-target alignment picks; C on a 10% "
    "validation split).",
)
@click.option(
    "--variant", type=click.Choice(["D1", "D2", "S1", "S2"]), default="D1", show_default=True, help="MKBoost variant."
)
@click.option("--data", required=True, help="Registry name (e.g. german.numer, wdbc, segment) or data file.")
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
    default=50.0,
    show_default=True,
    type=FiniteFloat(),
    help="SVM penalty (the selectors tune C on validation instead).",
)
@click.option(
    "--kernels",
    default="mkboost17",
    show_default=True,
    callback=given_kernel_spec,
    help="Kernel pool name or spec; kernels may see feature groups of a multi-view dataset "
    "('linear,chi2,gaussian:1 @ fourier; ...').",
)
@click.option(
    "--scheduler", default=None, help="Dask scheduler address: run MKBoost's (or MuSVM's) per-kernel fits there."
)
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="MKBoost without --scheduler: local threads for the per-kernel fits.",
)
@_SCHEDULER_TIMEOUT
@LABEL_COLUMN_OPTION
@POSITIVE_CLASS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def fit_cmd(
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
    kernels,
    scheduler,
    threads,
    timeout,
    label_column,
    positive_class,
    as_json,
):
    """Train on a random split and report test accuracy, fit time and the kernels used."""
    from .fit import format_fit_report, run_fit

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
        scheduler=scheduler,
        threads=threads,
        timeout=timeout,
        label_column=label_column,
        positive_class=positive_class,
    )
    click.echo(json.dumps(report) if as_json else format_fit_report(report))


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
@_SCHEDULER_TIMEOUT
@_report_options
def reproduce_mkboost_cmd(
    runs, datasets, algorithms, seed, trials, scaling, scheduler, threads, timeout, as_json, out, quiet
):
    """Tables 2/3 of the MKBoost paper: our accuracy and time next to the paper's."""
    from .reproduce_mkboost import format_mkboost_report, run_reproduce_mkboost

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


@main.group(cls=CommandGroup)
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
    default=Path("benchmarks/results/study-defaults.jsonl"),
    show_default=True,
    help="JSONL of finished runs: appended as they finish, runs in it are skipped "
    "(resume); the JSON summary is written beside it (.json).",
)
@click.option(
    "--doc",
    type=click.Path(path_type=Path),
    default=Path("docs/defaults.md"),
    show_default=True,
    help="Where to write the markdown report.",
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

    from .study_defaults import format_outcome, study_defaults

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


register_scheduling(main)

if __name__ == "__main__":
    main()
