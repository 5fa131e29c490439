"""``omkl data``: ingest, inspect, list and generate datasets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from omkl_dist.storage.location import text
from omkl_dist.storage.readers.dataset import FORMATS

from ..cli_base import (
    CATEGORICAL_OPTION,
    FEATURES_OPTION,
    IMPUTE_OPTION,
    LOCAL_PATH,
    PATH_OR_URL,
    POSITIVE_CLASS_OPTION,
    ZERO_BASED_OPTION,
    CommandGroup,
    FiniteFloat,
    reading_options,
)
from ..data_source import local_data, origin


def _parse_classes(text):
    if text is None:
        return None
    classes = [c.strip() for c in text.split(",") if c.strip()]
    if len(classes) < 2:
        raise click.BadParameter(f"give at least two comma-separated classes, got {text!r}")
    return classes


@click.group(cls=CommandGroup)
def data():
    """Ingest, inspect, list and generate datasets."""


@data.command("ingest")
@click.argument("source", callback=local_data)
@click.option("--out", "out", required=True, help="Output dataset directory (a path or a URL, e.g. s3://bucket/d).")
@click.option(
    "--chunk-rows", default=65_536, show_default=True, type=click.IntRange(min=1), help="Rows per zarr chunk."
)
@click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64", show_default=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
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
@click.option(
    "--label-column",
    default=None,
    help="The label column -- first, last, a 0-based index or a column name (default, for CSV/TSV/text and "
    "parquet alike: the first column named target, label, class or y, any case, else the first column) -- or "
    "none: the rows have no labels (every column a feature; LIBSVM rows start with their first index:value), a "
    "dataset for omkl predict that no learner takes.",
)
@POSITIVE_CLASS_OPTION
@FEATURES_OPTION
@CATEGORICAL_OPTION
@IMPUTE_OPTION
@ZERO_BASED_OPTION
@click.option(
    "--keep",
    default=None,
    help="CSV/TSV with a header, parquet: comma-separated columns (ids) stored as they are beside the features, "
    "not learnt from; omkl predict writes them beside its predictions.",
)
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
@click.option("--quiet", is_flag=True, help="No progress bar (shown while a file of 64 MiB or more is read).")
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
    categorical,
    impute,
    zero_based,
    keep,
    views,
    feature_groups,
    layout,
    overwrite,
    quiet,
):
    """Ingest SOURCE -- a data file (a path or URL; - for standard input) or a registry name such as
    codrna -- into a zarr + parquet dataset directory."""
    from omkl_dist.storage import format_info, ingest

    from ..progress import CountProgress

    with CountProgress(f"ingesting {origin(source) or Path(source).name}", show=not quiet) as bar:
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
            **reading_options(label_column, positive_class, features, categorical, impute, zero_based),
            views=views,
            feature_groups=_parse_groups(feature_groups),
            layout=layout,
            keep=keep,
            origin=origin(source),
            progress=bar,
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
@click.argument("directory", type=PATH_OR_URL)
@click.option("--json", "as_json", is_flag=True, help="Print the metadata as JSON.")
def data_info(directory, as_json):
    """Print the summary of an ingested dataset DIRECTORY."""
    from omkl_dist.storage import dataset_info, format_info

    meta = dataset_info(directory)
    click.echo(json.dumps(meta, indent=2, sort_keys=True) if as_json else format_info(meta))


@data.command("verify")
@click.argument("directory", type=PATH_OR_URL)
def data_verify(directory):
    """Read every chunk of a dataset DIRECTORY and check it against its recorded checksums."""
    from omkl_dist.storage.ingest import verify_dataset

    meta = verify_dataset(directory)
    n_chunks = len(meta["checksums"]["features"])
    checked = "features and labels match" if meta["labelled"] else "features (no labels) match"
    click.echo(
        f"ok: {directory} -- {meta['n_rows']:,} rows in {n_chunks} chunk(s), {checked} "
        "their checksums, meta.json matches its hash"
    )


@data.command("list")
@click.option(
    "--data-dir",
    type=LOCAL_PATH,
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

    from omkl_dist.storage.synth_sparse import RCV1_DENSITY, RCV1_FEATURES, write_sparse_libsvm

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
