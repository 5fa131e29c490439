"""``omkl predict``: a saved model's predictions for a dataset or file, written as parquet (or CSV/TSV).

The rows are read, matched to the model's features by name (when both have names) -- or, for a
model trained with ``--categorical``/``--impute``, read as raw columns by name and imputed and
encoded by the model's own column encoder -- scaled with the model's own scaler and predicted
``block_rows`` at a time -- by the :class:`~omkl_dist.model.Model` that ``load_model`` returns, so
Python and this command agree on every row -- and each block is written as one parquet row group
(or appended to the text file), so memory stays bounded by a block whatever the number of rows.
On a Dask cluster (``scheduler``) each task predicts one block on a worker (the model is read there
once per worker; the worker reads an ingested dataset's block itself, a file's rows are parsed here
and go with their task) and the blocks are written in order as they arrive, with a bounded number in
flight. Columns: ``row`` (position in the input), ``label`` (the predicted class, as the user's
label), ``decision`` (the decision value: the binary score, or the winning class's score),
``decision_<class>`` (multi-class: every class's score), with ``proba`` ``proba_<class>`` (every
class's calibrated probability, docs/probabilities.md) and, when the data has labels,
``true_label`` (the input's own label). Rows without labels (``--label-column none``; a LIBSVM
row that starts with its first ``index:value``; a dataset ingested with ``--label-column none``)
are predicted alike, and no accuracy is reported.
The parquet schema's metadata records the model that made them (store, name, version, hashes); a
``.csv``/``.tsv`` file (optionally ``.gz``) has the same columns under a header row and no metadata;
``-`` writes that CSV to standard output (a pipe: ``omkl predict ... --out - | head``).
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omkl_dist.algorithms.labels import recode
from omkl_dist.storage.carried import read_carried
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.job_data import is_ingested
from omkl_dist.storage.location import location, text
from omkl_dist.storage.outputs import (
    PREDICTIONS,
    PREDICTIONS_COLUMNS,
    PREDICTIONS_MARKER,
    atomic_output,
    check_output,
    predictions_delimiter,
)
from omkl_dist.storage.readers.dataset import to_width

from .data_source import origin

BLOCK_ROWS = 16_384
# ``--out -``: the predictions as CSV on standard output (the command's summary then goes to stderr)
STDOUT = "-"


def to_stdout(out) -> bool:
    """Whether ``out`` names standard output (``-``) rather than a file."""
    return str(out) == STDOUT


@lru_cache(maxsize=4)
def _cached_model(path: str, meta_sha256: str):
    from omkl_dist.persistence import load_model

    return load_model(path)


def predict_block(model, X, *, proba: bool = False) -> dict:
    """Predictions of one block of raw rows by a :class:`~omkl_dist.model.Model`: the index of the
    predicted class, the decision value, every class's score (multi-class) and, with ``proba``,
    every class's probability."""
    scores = np.asarray(model.decision_function(X), dtype=np.float64)
    # (the calibration maps the same scores: the decision values are not computed twice)
    probabilities = {"proba": model.estimator.calibration_.probabilities(scores)} if proba else {}
    if scores.ndim == 1:
        index = (scores >= 0.0).astype(np.int64)
        return {"index": index, "decision": scores, **probabilities}
    index = np.argmax(scores, axis=1)
    return {"index": index, "decision": scores[np.arange(len(index)), index], "scores": scores, **probabilities}


def predict_task(model_path: str, meta_sha256: str, data: str, lo: int, hi: int, proba: bool = False) -> dict:
    """Task: rows ``lo:hi`` of an ingested dataset predicted on a worker (the model read once per worker)."""
    from omkl_dist.storage import open_stream

    stream = open_stream(data, block_size=hi - lo, start=lo, stop=hi, optional_labels=True)
    model, rows = ingested_rows(_cached_model(model_path, meta_sha256), stream.meta, data)
    X, y = next(iter(stream))
    return {**predict_block(model, rows(X), proba=proba), "y": y}


def predict_rows_task(model_path: str, meta_sha256: str, X, proba: bool = False) -> dict:
    """Task: rows ``X`` of a file parsed by the client, predicted on a worker (the model read once per worker)."""
    return predict_block(_cached_model(model_path, meta_sha256), X, proba=proba)


def ingested_rows(model, meta: dict, path):
    """``(model, rows)``: how rows ``X`` of an ingested dataset (``meta``) reach ``model``: as they are
    (LIBSVM rows short of the model's last feature padded, :func:`~omkl_dist.storage.readers.dataset.to_width`). A model
    with a column encoder takes a dataset ingested with that very encoder as its features (the
    model, without its encoder, predicts them), or a dataset ingested without one, whose numeric
    columns are the raw columns, by name (the model imputes and encodes them); another one is refused."""
    from omkl_dist.model import Model

    encoder = model.columns
    if encoder is None:  # (a LIBSVM dataset narrower than the model: its rows padded, as a file's are)
        return model, lambda X: to_width(X, model.n_features_in_, fmt=meta.get("format", ""), path=path)
    if meta.get("columns") == encoder.to_dict():
        bare = Model(model.estimator, scaler=model.scaler, label_map=model.label_map, feature_names=model.feature_names)
        return bare, lambda X: X
    names = meta.get("feature_names")
    if "columns" not in meta and names is not None and set(encoder.feature_names_in_) <= set(names):
        index = [names.index(name) for name in encoder.feature_names_in_]
        return model, lambda X: {name: np.asarray(X[:, j]).ravel() for name, j in zip(encoder.feature_names_in_, index)}
    why = (
        "another column encoder than the model's"
        if "columns" in meta
        else f"no column encoder, and it lacks the model's raw columns {encoder.feature_names_in_}"
    )
    raise DataError(
        "the model imputes and encodes raw columns (it was trained with --categorical or --impute), and this "
        f"ingested dataset's features were made at ingest with {why}",
        path=path,
        fix="predict the data file itself (CSV/TSV with a header, or parquet), which the model encodes; or ingest it "
        "as the model's training data was, in one omkl retrain store's windows/",
    )


def check_probabilities(model) -> None:
    """Refuse ``--proba`` for a model without calibrated probabilities, saying why."""
    try:
        model.estimator.predict_proba  # noqa: B018 (available_if: the attribute exists only when they do)
    except AttributeError as exc:
        why = (
            str(exc.__cause__)
            if exc.__cause__ is not None
            else (
                f"a {type(model.estimator).__name__} learns a training set at once and has no progressive scores "
                "to calibrate probabilities on"
            )
        )
        raise ValueError(f"--proba: {why} (docs/probabilities.md); drop --proba") from None


def _source(data, block_rows: int, model, label_column=None, zero_based=False, reading=None):
    """``(n_rows, data label map or None, iterator of (lo, X, y or None), model, carried)`` for an
    ingested dataset or a file, its columns in the model's feature order (matched by name when both
    have names). A model with a column encoder gets a file's raw columns by name (``{name: values}``
    blocks), which it imputes and encodes itself, as ``Model.predict(DataFrame)`` does; of an
    ingested dataset, what :func:`ingested_rows` gives (the model returned predicts the rows).
    ``carried``: a named table's columns that are neither features nor labels, or an ingested dataset's
    kept columns (``omkl data ingest --keep``): a pyarrow Table, or None. ``reading``: a large file's
    ``progress`` (:func:`~omkl_dist.storage.read_dataset`)."""
    from omkl_dist.storage import open_stream, read_dataset, resolve_dataset

    path = location(data)
    if is_ingested(path):
        stream = open_stream(path, block_size=block_rows, optional_labels=True)
        encoded = model.columns is not None
        model, rows = ingested_rows(model, stream.meta, path)
        order = None if encoded else _feature_order(model, stream.meta.get("feature_names"), path)
        if order is not None:
            raise DataError(
                "the dataset's features are the model's in another order",
                path=path,
                fix=f"ingest the data with the model's feature order {model.feature_names}",
            )

        def blocks():
            lo = 0
            for X, y in stream:
                yield lo, rows(X), y
                lo += X.shape[0]

        carried = read_carried(path, stream.meta)  # (ids kept at ingest: written beside the predictions)
        return stream.n_rows, stream.label_map if stream.labelled else None, blocks(), model, carried
    ds = read_dataset(
        resolve_dataset(str(data)),
        label_column=label_column,
        optional_labels=True,
        columns=model.columns,
        zero_based=zero_based,
        # a named table is read by the model's columns and the name of its label column
        feature_names=model.raw_names,
        label_name=model.label_name,
        one_class=True,  # (a file of one class is scored as any other)
        progress=reading,
    )
    if ds.table is not None:  # raw columns, encoded by the model
        table = ds.table

        def rows(lo, hi):
            return {name: column[lo:hi] for name, column in table.items()}
    else:
        order = _feature_order(model, ds.feature_names, ds.path)
        X = ds.features_for(model.n_features_in_) if order is None else ds.X[:, order]

        def rows(lo, hi):
            return X[lo:hi]

    n_rows = ds.n_rows
    return (
        n_rows,
        None if ds.y is None else ds.label_map,
        (
            (lo, rows(lo, lo + block_rows), None if ds.y is None else ds.y[lo : lo + block_rows])
            for lo in range(0, n_rows, block_rows)
        ),
        model,
        ds.carried,
    )


def _feature_order(model, names, path):
    """The column order that gives the model's features (None: as they are), checked by name when
    both the model and the data name their features."""
    from omkl_dist.preprocessing import match_features

    if model.feature_names is None or names is None:
        return None
    try:
        order = match_features(model.feature_names, list(names))
    except ValueError as exc:
        raise DataError(str(exc), path=path, fix="give the data the model was trained on, column for column") from None
    return None if order == list(range(len(order))) else order


def predict(
    model_dir,
    data,
    out,
    *,
    made_by: dict,
    block_rows: int = BLOCK_ROWS,
    scheduler=None,
    overwrite: bool = False,
    inputs=(),
    label_column=None,
    zero_based=False,
    proba: bool = False,
    reading=None,
    on_rows=None,
) -> dict:
    """Write the predictions of the model in ``model_dir`` for ``data`` to the file ``out`` (parquet, or
    CSV/TSV by its suffix: :func:`~omkl_dist.storage.outputs.predictions_delimiter`);
    ``label_column="none"``: the data has no labels (no ``true_label`` column, no accuracy);
    ``zero_based``: a LIBSVM file's feature indices start at 0; ``proba``: add every class's
    calibrated probability (``proba_<class>``). ``out`` ``-``: CSV on standard output, written as
    each block is predicted (a file is written whole or not at all). ``reading``: called with a large
    data file's bytes read and its size as it is read (:func:`~omkl_dist.storage.read_dataset`'s
    ``progress``); ``on_rows``: with the rows written and their number, after each block."""
    from omkl_dist.persistence import load_model
    from omkl_dist.storage.models import read_meta

    if block_rows < 1:
        raise ValueError(f"--block-rows must be >= 1, got {block_rows}")
    if to_stdout(out):
        delimiter, gzipped = ",", False
    else:
        delimiter = predictions_delimiter(out)  # (a suffix it does not write: refused before any work)
        gzipped = str(out).lower().endswith(".gz")
        out = check_output(
            out,
            PREDICTIONS,
            overwrite=overwrite,
            option="--out",
            inputs=[("data", location(data)), ("model", model_dir), *inputs],
        )
    model, meta = load_model(model_dir), read_meta(model_dir)
    if proba:
        check_probabilities(model)
    labels = [str(c) for c in model.classes_]
    # (the model that predicts the rows as given: without its encoder for a dataset it encoded at ingest)
    t_load = time.perf_counter()  # (a data file is parsed here; an ingested dataset is streamed below)
    n_rows, data_map, blocks, model, carried = _source(data, block_rows, model, label_column, zero_based, reading)
    load_seconds = time.perf_counter() - t_load
    labelled = data_map is not None
    record = {
        **made_by,
        "model_meta_sha256": meta["meta_sha256"],
        "algorithm": meta["algorithm"],
        "data": origin(data) or text(location(data)),  # (standard input, a URL: not their temporary copy)
        "n_rows": n_rows,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    fields = list(zip(PREDICTIONS_COLUMNS, (pa.int64(), pa.string(), pa.float64()), strict=True))
    if len(labels) > 2:
        fields += [(f"decision_{name}", pa.float64()) for name in labels]
    if proba:
        fields += [(f"proba_{name}", pa.float64()) for name in labels]
    if labelled:
        fields.append(("true_label", pa.string()))
    carried_names = _carried_names(carried, [name for name, _ in fields])
    if carried is not None:
        fields += [(name, field.type) for name, field in zip(carried_names, carried.schema, strict=True)]
    schema = pa.schema(fields, metadata={PREDICTIONS_MARKER: json.dumps(record).encode()})
    t0 = time.perf_counter()
    correct, unseen = 0, Counter[str]()  # (labels of no class the model has: each row a mistake)
    label_array = np.asarray(labels, dtype=object)
    with _destination(out, overwrite) as path:
        with _writer(path, schema, delimiter, gzipped=gzipped) as write:
            results = (
                _on_cluster(scheduler, model_dir, meta, data, n_rows, block_rows, proba, blocks)
                if scheduler
                else ((lo, {**predict_block(model, X, proba=proba), "y": y}) for lo, X, y in blocks)
            )
            for lo, result in results:
                predicted = label_array[result["index"]]
                columns = {
                    "row": np.arange(lo, lo + len(predicted), dtype=np.int64),
                    "label": predicted,
                    "decision": result["decision"],
                }
                if "scores" in result:
                    columns.update({f"decision_{name}": result["scores"][:, k] for k, name in enumerate(labels)})
                if proba:
                    columns.update({f"proba_{name}": result["proba"][:, k] for k, name in enumerate(labels)})
                if labelled:
                    originals, internals = zip(*data_map, strict=True)
                    true = recode(result["y"], internals, np.array([str(o) for o in originals], dtype=object))
                    correct += int(np.sum(predicted == true))
                    unseen.update(true[~np.isin(true, label_array)].tolist())
                    columns["true_label"] = true
                if carried is not None:
                    rows = carried.slice(lo, len(predicted))
                    columns.update({name: rows.column(j) for j, name in enumerate(carried_names)})
                write(pa.table(columns, schema=schema))
                if on_rows is not None:
                    on_rows(lo + len(predicted), n_rows)
    seconds = time.perf_counter() - t0
    # a named table read by the model's label column, and without it (ingested rows said so at ingest)
    missing = None if labelled or label_column is not None or is_ingested(location(data)) else model.label_name
    return {
        **made_by,
        "out": str(out),
        "rows": n_rows,
        "accuracy": correct / n_rows if n_rows and labelled else None,
        "classes": labels,
        "unseen_labels": dict(unseen.most_common()),
        "carried": carried_names,
        "labels_missing": missing,
        "seconds": seconds,
        "rows_per_second": n_rows / seconds if seconds > 0 else None,
        "load_seconds": load_seconds,
        "where": f"dask {scheduler}" if scheduler else "in-process",
    }


def _carried_names(carried, taken: list[str]) -> list[str]:
    """The output's names of the ``carried`` columns (a pyarrow Table or None): as in the input, but
    the unnamed column of row names ``row_name`` and a name the predictions use ``input_<name>``."""
    if carried is None:
        return []
    names = ["row_name" if not name.strip() else name for name in carried.column_names]
    return [f"input_{name}" if name in taken else name for name in names]


@contextmanager
def _destination(out, overwrite: bool) -> Iterator:
    """The path to write the predictions to: a temporary file that becomes ``out`` once every block
    is in it (:func:`atomic_output`), or None for standard output."""
    if to_stdout(out):
        yield None
        return
    with atomic_output(out, kind=PREDICTIONS, overwrite=overwrite, option="--out", folder=False) as tmp:
        yield tmp


@contextmanager
def _writer(path, schema, delimiter: str | None, *, gzipped: bool) -> Iterator:
    """A function writing one block (a table of ``schema``) to ``path``: a parquet row group (the
    schema's metadata, the model's provenance, in the file), or delimited text under one header row,
    labels quoted where needed and every float in its shortest form that reads back to the same bits
    (``delimiter``; ``gzipped``: compressed); ``path`` None: the text to standard output."""
    if delimiter is None:
        with pq.ParquetWriter(str(path), schema) as writer:
            yield writer.write_table
        return
    if path is None:  # (left open: the command's own stream)
        stream = nullcontext(sys.stdout)
    else:
        stream = (gzip.open if gzipped else open)(path, "wt", newline="", encoding="utf-8")
    with stream as fh:
        header = [True]

        def write(table) -> None:
            table.to_pandas().to_csv(fh, sep=delimiter, header=header[0], index=False, lineterminator="\n")
            header[0] = False
            fh.flush()  # (a block at a time down a pipe, not when the buffer fills)

        yield write


def _on_cluster(
    scheduler: str, model_dir, meta: dict, data, n_rows: int, block_rows: int, proba: bool, blocks, in_flight: int = 8
):
    """``(lo, result)`` per block, in order, predicted by tasks on the cluster (at most ``in_flight`` at
    once): the workers read an ingested dataset's blocks themselves; a file's ``blocks`` (``(lo, X, y)``,
    parsed here) go with their tasks, their labels stay here."""
    from omkl_dist.cluster.local import connect

    path, model = location(data), (text(location(model_dir)), meta["meta_sha256"])
    if is_ingested(path):
        tasks = (
            (lo, (predict_task, *model, text(path), lo, min(lo + block_rows, n_rows), proba), None)
            for lo in range(0, n_rows, block_rows)
        )
    else:
        tasks = ((lo, (predict_rows_task, *model, X, proba), y) for lo, X, y in blocks)

    def done(lo, future, y):
        return lo, {"y": y, **future.result()}  # (a worker that read a dataset's block brings its labels)

    pending = deque()
    with connect(scheduler) as client:
        for lo, task, y in tasks:
            pending.append((lo, client.submit(*task, pure=False), y))
            if len(pending) >= in_flight:
                yield done(*pending.popleft())
        while pending:
            yield done(*pending.popleft())
