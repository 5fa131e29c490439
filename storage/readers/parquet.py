"""Parquet tables (a file or a folder of files), read in row batches into one in-memory dataset."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..labels import encode_labels
from ..tables import open_table
from .dataset import Dataset


def read_table(
    path: Path,
    *,
    classes: Iterable[Any] | None,
    n_classes: int | None,
    label_column: str | int | None,
    positive_class: object,
    features: list[str] | str | None,
) -> Dataset:
    """A parquet file or folder, read in row batches into one in-memory dataset (without labels:
    ``label_column="none"``)."""
    table = open_table(path, label_column=label_column, features=features)
    y, label_map = (
        (None, [])
        if table.label is None
        else encode_labels(
            table.labels(), classes=classes, n_classes=n_classes, positive_class=positive_class, path=path
        )
    )
    batches = [X for X, _ in table.batches()]
    X = np.concatenate(batches) if batches else np.empty((0, len(table.features)))
    return Dataset(
        X=np.ascontiguousarray(X),
        y=y,
        label_map=label_map,
        fmt="parquet",
        path=path,
        sha256=table.sha256,
        feature_names=list(table.features),
    )
