"""The in-memory dataset record, and what each format's parser hands back to :func:`read_dataset`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from omkl_dist.preprocessing import ColumnEncoder

from ..errors import DataError

FORMATS = ("libsvm", "dense", "csv", "csv_header", "tsv_header", "ssv_header", "psv_header", "mat", "parquet")
# LIBSVM (and sparse .mat) data at least this wide stay sparse: densifying rcv1-like data (47,236
# features, 0.16 % non-zero) would take ~600 times the memory of its values.
SPARSE_MIN_FEATURES = 10_000

#: Features as read: a dense array, or a scipy.sparse matrix for wide sparse data.
FeatureMatrix: TypeAlias = NDArray[np.float64] | sp.csr_matrix


@dataclass
class Dataset:
    """A labelled dataset held in memory.

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_features), float64, C-contiguous, or scipy.sparse.csr_matrix
        Features; a ``csr_matrix`` (float64, canonical: sorted indices, no duplicates, no stored
        zeros) for wide sparse files, see :data:`SPARSE_MIN_FEATURES`.
    y : ndarray of shape (n_rows,), int64, or None
        Internal labels: -1/+1 for binary data, 0..K-1 for K > 2 classes; None for data read
        without labels (``label_column="none"``).
    label_map : list of [str, int]
        ``[original, internal]`` pairs; originals are canonical strings (see
        :func:`omkl_dist.storage.labels.canonical`).
    fmt : str
        The format the file was read as (one of :data:`FORMATS`).
    path : Path
        The file read.
    sha256 : str
        Hex SHA-256 of the file bytes as stored (before decompression).
    permutations : ndarray of shape (n_permutations, n_rows), int64, or None
        0-based row permutations shipped with some ``.mat`` files (``ID_all``/``ID_list``).
    feature_names : list of str or None
        Header names of the feature columns for files with a header (with ``columns``: the encoded
        columns' names).
    columns : ColumnEncoder or None
        The encoder that made ``X`` from the raw feature columns (read with ``categorical`` or
        ``impute``, or with a fitted encoder): what a model trained on ``X`` needs for raw rows.
    table : dict of str to ndarray, or None
        The raw feature columns by name, as read (with ``columns``).
    label_name : str or None
        The name of the label column, when the file's columns have names (what a model trained on
        the rows predicts: ``omkl predict`` finds the labels of rows to score by it).
    carried : pyarrow.Table or None
        Rows to predict from a named table: its columns that are neither the model's features nor
        the labels (ids, row names), as read, to be written beside the predictions.
    """

    X: FeatureMatrix
    y: NDArray[np.int64] | None
    label_map: list[list[Any]]
    fmt: str
    path: Path
    sha256: str
    permutations: NDArray[np.int64] | None = None
    feature_names: list[str] | None = field(default=None, repr=False)
    columns: ColumnEncoder | None = field(default=None, repr=False)
    table: dict[str, NDArray[Any]] | None = field(default=None, repr=False)
    label_name: str | None = None
    carried: Any = field(default=None, repr=False)

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def features_for(self, n_features: int) -> FeatureMatrix:
        """``X`` for a model of ``n_features`` features (:func:`to_width`)."""
        return to_width(self.X, n_features, fmt=self.fmt, path=self.path)

    @property
    def labels(self) -> NDArray[np.int64]:
        """``y``, for code that learns from the rows (a dataset read with ``label_column='none'``
        has none: a ValueError)."""
        if self.y is None:
            raise ValueError(f"{self.path} was read without labels (label_column='none')")
        return self.y

    @property
    def n_classes(self) -> int:
        return len(self.label_map)

    @property
    def class_counts(self) -> dict[str, int]:
        """Rows per class, keyed by the canonical original label (declared classes included)."""
        return {original: int(np.count_nonzero(self.y == internal)) for original, internal in self.label_map}


def to_width(X: FeatureMatrix, n_features: int, *, fmt: str, path: object) -> FeatureMatrix:
    """Rows ``X`` read as ``fmt`` for a model of ``n_features`` features: LIBSVM rows get zero columns
    up to it (a row leaves its zero features out, so a file need not use the last index).

    Raises
    ------
    DataError
        The rows have more features (a LIBSVM index above the model's), or, in another format,
        another number of columns.
    """
    width = int(X.shape[1])
    if width == n_features:
        return X
    if fmt == "libsvm" and width < n_features:
        if isinstance(X, sp.csr_matrix):
            return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
        return np.ascontiguousarray(np.pad(X, ((0, 0), (0, n_features - width))))
    if fmt == "libsvm":
        problem = f"the rows use {width} features, the model takes {n_features}"
        fix = "give rows of the model's features (an index beyond its last feature is one it never learnt)"
    else:
        problem = f"the rows have {width} feature columns, the model takes {n_features}"
        fix = "give rows of the model's features, column for column (a label column read as a feature? name it)"
    raise DataError(problem, path=path, fix=fix)


@dataclass
class ParsedFile:
    """A parser's result: features, raw labels, and how to name a file row or column in an error."""

    X: FeatureMatrix
    y_raw: NDArray[Any] | None  # None: the rows have no labels
    line_of: Callable[[int], int]  # data row index (0-based) -> 1-based file row for messages
    column_of: Callable[[int], object]  # feature index (0-based) -> column description for messages
    permutations: NDArray[np.int64] | None = None
    feature_names: list[str] | None = None
    label_name: str | None = None  # the header's name of the label column


def nonfinite_feature(value: float, path: object, row: int, column: object) -> DataError:
    """The error of a NaN or infinite feature value read from a file (on ``row``, in ``column``)."""
    return DataError(
        f"non-finite feature value {value!r}",
        path=path,
        row=row,
        column=column,
        fix="fill missing values with --impute mean, median or most_frequent (impute=...; CSV/TSV with a header, "
        "parquet), or drop the rows",
    )
