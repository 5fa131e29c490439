"""``omkl predict``: score a dataset with a saved or stored model."""

from __future__ import annotations

import json

import click

from ..cli_base import PATH_OR_URL, STORE_PATH
from ..data_source import local_data
from .store_options import open_store


@click.command("predict")
@click.option(
    "--store",
    envvar="OMKL_STORE",
    type=STORE_PATH,
    default=None,
    show_envvar=True,
    help="The model store (with --model).",
)
@click.option("--model", "name", default=None, help="The model's name in the store.")
@click.option("--version", "ref", default="champion", show_default=True, help="An alias or a version number.")
@click.option(
    "--model-dir",
    type=PATH_OR_URL,
    default=None,
    help="Or: a saved model folder (omkl run or fit --model-out, omkl submit --out).",
)
@click.option(
    "--data",
    required=True,
    callback=local_data,
    help="An ingested dataset, a data file (a path or URL) or a registry name; - : the data from standard input.",
)
@click.option(
    "--out",
    required=True,
    type=PATH_OR_URL,
    help="The file to write, in the format its suffix names: .parquet (the model's provenance in its metadata), "
    ".csv or .tsv, either optionally .gz; or - : CSV on standard output (the summary then goes to stderr).",
)
@click.option(
    "--block-rows",
    default=16_384,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows predicted and written at a time (bounds the memory).",
)
@click.option(
    "--scheduler",
    default=None,
    help="Dask scheduler address: predict the blocks on the cluster (the workers read an ingested dataset's blocks "
    "and the model; a data file is read here and its blocks sent with their tasks).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing predictions file.")
@click.option(
    "--label-column",
    default=None,
    help="A data file's label column -- first, last, a 0-based index or a column name -- or none: the rows have no "
    "labels (every column a feature; LIBSVM rows start with their first index:value), so no true_label column and "
    "no accuracy. Default: of a table with named columns (parquet, CSV/TSV with a header), the column the model "
    "learnt its labels from (none if the rows lack it), and every column that is neither a feature nor the labels "
    "(ids, row names) is written beside the predictions as it is; of a model that does not know its label column, "
    "the one column that is not a feature; else the first column named target, label, class or y, any case, else "
    "the first column. A model trained with --categorical/--impute reads the columns by name and encodes them "
    "itself.",
)
@click.option(
    "--zero-based", is_flag=True, help="LIBSVM: feature indices start at 0 (as the training file's, if it was read so)."
)
@click.option(
    "--proba",
    is_flag=True,
    help="Add a proba_<class> column per class: the model's calibrated probabilities (online classifiers, "
    "learnt in-process or on a cluster; docs/probabilities.md).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the summary (rows, output, accuracy, seconds) as one JSON object."
)
@click.option(
    "--quiet", is_flag=True, help="No progress bars (a large file's bytes read, the rows predicted; on stderr)."
)
def predict_cmd(
    store,
    name,
    ref,
    model_dir,
    data,
    out,
    block_rows,
    scheduler,
    overwrite,
    label_column,
    zero_based,
    proba,
    as_json,
    quiet,
):
    """Write a model's predictions (label, decision value) for every row as parquet or CSV/TSV, streamed."""
    from omkl_dist.storage.location import location

    from ..data_source import origin
    from ..predict import predict, to_stdout
    from ..progress import CountProgress

    if (model_dir is None) == (name is None):
        raise click.UsageError("give --model (with --store) or --model-dir")
    piped = to_stdout(out)
    if piped and as_json:
        raise click.UsageError(
            "--json prints to standard output, which --out - fills with the predictions: give --out a file"
        )
    if model_dir is None:
        if store is None:
            raise click.UsageError("--model needs --store (or OMKL_STORE)")
        s = open_store(store, name)
        version = s.resolve(ref)
        model_dir, made_by = s.path(version), {"store": str(s.root), "model": name, "version": version}
    else:
        made_by = {"model_dir": str(model_dir), "version": None}
    reading = CountProgress(f"reading {origin(data) or location(data).name}", show=not quiet)
    predicting = CountProgress("predicting", show=not quiet, unit="rows")

    def on_rows(done: int, total: int) -> None:
        reading.close()  # (read: its time stops)
        predicting(done, total)

    with reading, predicting:
        result = predict(
            model_dir,
            data,
            out,
            made_by=made_by,
            block_rows=block_rows,
            scheduler=scheduler,
            overwrite=overwrite,
            label_column=label_column,
            zero_based=zero_based,
            proba=proba,
            reading=reading,
            on_rows=on_rows,
        )
    if as_json:
        click.echo(json.dumps(result))
        return
    who = f"{name} v{made_by['version']}" if name else str(model_dir)
    accuracy = "" if result["accuracy"] is None else f", accuracy on the data's labels {100 * result['accuracy']:.2f} %"
    where = "standard output" if piped else result["out"]
    click.echo(
        f"{result['rows']:,} predictions of {who} -> {where} in {result['seconds']:.2f} s "
        f"({result['rows_per_second']:,.0f} rows/s{accuracy}); loading {result['load_seconds']:.2f} s",
        err=piped,
    )
    if result["carried"]:
        click.echo(f"columns written beside the predictions as they are: {', '.join(result['carried'])}", err=True)
    if result["labels_missing"] is not None:
        click.echo(
            f"note: no accuracy: the rows have no column {result['labels_missing']!r}, the model's labels "
            "(name the column that holds them with --label-column)",
            err=True,
        )
    if result["unseen_labels"]:
        counts = result["unseen_labels"]
        shown = ", ".join(f"{label!r} ({n:,} rows)" for label, n in list(counts.items())[:5])
        more = f" and {len(counts) - 5} more" if len(counts) > 5 else ""
        click.echo(
            f"note: labels of no class the model learnt count as mistakes: {shown}{more}; its classes are "
            f"{result['classes']}",
            err=True,
        )
