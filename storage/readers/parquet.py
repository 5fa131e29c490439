"""Tables -- parquet files or folders, tables in memory, text with a header read by column name --
read into one in-memory dataset: numeric columns in row batches, or every column whole to be
imputed and encoded by a :class:`~omkl_dist.preprocessing.ColumnEncoder`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from omkl_dist.preprocessing import ColumnEncoder

from ..errors import DataError
from ..labels import encode_labels
from ..tables import open_table
from .dataset import Dataset


def read_table(
    source: object,
    *,
    classes: Iterable[Any] | None,
    n_classes: int | None,
    label_column: str | int | None,
    positive_class: object,
    features: list[str] | str | None,
    columns: ColumnEncoder | None = None,
    where: str | None = None,
    sha256: str | None = None,
    fmt: str = "parquet",
    one_class: bool = False,
    carry: list[str] | None = None,
) -> Dataset:
    """A table read whole into memory (without labels: ``label_column="none"``). ``columns``: an
    encoder for its raw feature columns -- fitted here when it is not yet, else applied. A table in
    memory read from a file (text with a header) is named ``where`` and identified by ``sha256``.
    ``carry``: columns read as they are into the dataset's ``carried`` (rows to predict)."""
    table = open_table(
        source,
        label_column=label_column,
        features=features,
        numeric_only=columns is None,
        where=where,
        sha256=sha256,
    )
    y, label_map = (
        (None, [])
        if table.label is None
        else encode_labels(
            table.labels(),
            classes=classes,
            n_classes=n_classes,
            positive_class=positive_class,
            path=table.where,
            one_class=one_class,
        )
    )
    raw = None
    if columns is None:
        batches = [X for X, _ in table.batches()]
        X = np.concatenate(batches) if batches else np.empty((0, len(table.features)))
        names = list(table.features)
    else:
        raw = table.columns()
        X = _encoded(columns, raw, table.where)
        names = list(columns.feature_names_out_)
    return Dataset(
        X=np.ascontiguousarray(X),
        y=y,
        label_map=label_map,
        fmt=fmt,
        path=Path(table.where),
        sha256=table.sha256,
        feature_names=names,
        columns=columns,
        table=raw,
        label_name=table.label,
        carried=table.dataset.to_table(columns=carry) if carry else None,
    )


def _encoded(columns: ColumnEncoder, raw: dict[str, Any], where: str) -> Any:
    """``raw`` through the encoder (fitted on it first, unless it is already), with its errors --
    a text column without ``categorical``, a missing value without ``impute`` -- naming the file."""
    try:
        X = columns.transform(raw) if hasattr(columns, "feature_names_in_") else columns.fit_transform(raw)
    except ValueError as exc:
        raise DataError(str(exc), path=where) from None
    bad = np.argwhere(~np.isfinite(X))
    if len(bad):
        row, col = (int(v) for v in bad[0])
        raise DataError(
            f"non-finite value {X[row, col]!r} in feature column {columns.feature_names_out_[col]!r}",
            path=where,
            row=row + 1,
            fix="impute or drop it before reading",
        )
    return X
