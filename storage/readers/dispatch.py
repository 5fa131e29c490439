"""The entry point: read any supported file into a :class:`Dataset`, handing the parsing to the format's module."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from omkl_dist.preprocessing import CATEGORICAL, IMPUTE, ColumnEncoder

from ..carried import kept_names, without_kept
from ..errors import DataError
from ..fetch import local_copy, remote_data
from ..id_columns import warn_id_columns
from ..labels import (
    NO_LABELS,
    default_label_column,
    encode_label_codes,
    encode_labels,
    has_no_labels,
    label_column_name,
    row_names_column,
    warn_guessed_labels,
)
from ..location import is_url
from ..tables import is_table_source, left_out_only, table_columns
from .blocks import BlockFile, NotStreamed, line_blocks, open_blocks
from .dataset import Dataset, FeatureMatrix, ParsedFile, nonfinite_feature
from .delimited import read_csv, read_csv_header, read_dense, read_tsv_header, text_columns, text_table
from .detect import check_format, decimal_point, detect_format, looks_mat, split_header
from .joined import joined_folder, text_files
from .libsvm import read_libsvm
from .libsvm_blocks import LibsvmBlockFile
from .mat import read_mat
from .parquet import read_table
from .textio import decompress, first_lines, read_bytes, text_content

_DELIMITED = ("dense", "csv", "csv_header", "tsv_header")
# text whose columns have names: read by name when asked, and always when pyarrow reads it (its decimal commas)
_HEADED = {"csv_header": ",", "tsv_header": "\t", "ssv_header": ";", "psv_header": "|"}
_BY_NAME = ("ssv_header", "psv_header")
# the parser of each format; the delimited ones also take label_column=, libsvm n_features= and sparse=
_READERS: dict[str, Callable[..., ParsedFile]] = {
    "libsvm": read_libsvm,
    "dense": read_dense,
    "csv": read_csv,
    "csv_header": read_csv_header,
    "tsv_header": read_tsv_header,
    "mat": read_mat,
}


def read_dataset(
    path: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    classes: Iterable[Any] | None = None,
    n_classes: int | None = None,
    n_features: int | None = None,
    label_column: str | int | None = None,
    positive_class: object = None,
    features: list[str] | str | None = None,
    sparse: bool | None = None,
    optional_labels: bool = False,
    categorical: str | None = None,
    impute: str | None = None,
    columns: ColumnEncoder | None = None,
    zero_based: bool = False,
    feature_names: Iterable[str] | None = None,
    label_name: str | None = None,
    one_class: bool = False,
    keep: Iterable[str] | str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Dataset:
    """Read a dataset file: labelled, or rows to predict (``label_column="none"``).

    Parameters
    ----------
    path : str or Path
        The file, plain or compressed (gzip, bzip2, xz, a zip archive of one file); or a parquet
        file or folder of parquet files; a folder of CSV/TSV files (one table: their rows joined
        in name order, :mod:`.joined`). Here or at a URL (read from a temporary local copy,
        :mod:`..fetch`).
    fmt : str, optional
        One of ``"libsvm"``, ``"dense"``, ``"csv"``, ``"csv_header"``, ``"tsv_header"``,
        ``"mat"``, ``"parquet"``. Detected from name and content when omitted (see
        :func:`detect_format`; parquet by its magic bytes, its suffix or a folder of such files).
    classes : sequence, optional
        Declared original classes, e.g. ``["-1", "1"]``. Needed for a one-class split (such as
        a test file holding only positives) so its labels map like the training split's.
    n_classes : int, optional
        Expected number of classes; data with more classes is refused.
    n_features : int, optional
        The feature count. LIBSVM: indices above it are an error and rows using fewer features
        get zero columns (default: the largest index). Other formats: must equal their columns.
    label_column : str or int, optional
        CSV/TSV/dense text and parquet: the column holding the labels -- ``"first"``, ``"last"``, a
        0-based index (negative counts from the end) or a column name. Default, one rule for all:
        the first column named ``target``, ``label``, ``class`` or ``y`` (any case), else the first
        column. ``"none"`` (any format but ``.mat``): the rows have no
        labels -- every column is a feature (a LIBSVM row starts with its first ``index:value``);
        the dataset's ``y`` is None and its ``label_map`` empty. Only with ``optional_labels``.
    positive_class : str or number, optional
        Binary data: the original label that becomes +1 (default: the larger of the two in
        numeric, then lexical, order).
    features : list of str or str, optional
        Parquet, CSV/TSV with a header: the feature columns by name, a list or ``"a,b,c"``
        (default: every column but the label). Other columns are not read, so a text column left
        out needs no encoding.
    sparse : bool, optional
        LIBSVM and sparse ``.mat`` data: return ``X`` as a ``csr_matrix`` (True) or densified
        (False, refused when the dense matrix cannot fit). Default: sparse exactly when the data
        has at least :data:`SPARSE_MIN_FEATURES` features. Other formats are always dense.
    optional_labels : bool, default False
        Whether rows without labels may be read (rows to predict); else they are refused, since
        every other use learns from the labels.
    categorical : {"one-hot", "ordinal"}, optional
        Parquet, CSV/TSV with a header: encode the text feature columns (see
        :class:`~omkl_dist.preprocessing.ColumnEncoder`; fitted on every row of the file). Default:
        a text feature column is an error naming it and this option.
    impute : {"mean", "median", "most_frequent"}, optional
        Parquet, CSV/TSV with a header: fill missing feature values (empty fields, ``NA``) with the
        column's statistic over the file (a text column: its most frequent category). Default: a
        missing value is an error naming its column and this option.
    columns : ColumnEncoder, optional
        A fitted encoder (a model's) to apply instead of fitting one: rows read for prediction.
        The dataset's ``table`` keeps the raw columns.
    zero_based : bool, default False
        LIBSVM: feature indices start at 0 (the first feature is ``0:value``), as scikit-learn's
        ``dump_svmlight_file`` writes them; default: at 1, as LIBSVM's own tools.
    feature_names : list of str, optional
        Rows to predict (``optional_labels``): the columns the model takes. A table whose columns are
        named (parquet, CSV/TSV with a header) is read by them: with no ``label_column``, its labels
        are in the column ``label_name`` (none if it lacks it); for a model that does not know its
        label column, a table whose columns are these has no labels, and one with a single other
        column has its labels there; else the default rule applies. Its columns that are neither
        features nor labels (ids, row names) are read as they are into the dataset's ``carried``.
    label_name : str, optional
        Rows to predict: the name of the column the model learnt its labels from (its ``label_name``).
    keep : list of str or str, optional
        Parquet, CSV/TSV with a header: columns read as they are (a text file's as text) into the
        dataset's ``carried`` and left out of the features (ids: ``omkl data ingest --keep``).
    one_class : bool, default False
        Rows scored against a model's predictions: labels of a single class are read as they are (a
        test file of positives); else such a file is refused unless ``classes`` declares the others.

    progress : callable, optional
        Called as a large CSV/TSV or LIBSVM file is read block by block (64 MiB or more), with the
        bytes of the stored (compressed) file read so far and its size.

    Returns
    -------
    Dataset

    Raises
    ------
    DataError
        The file is missing, empty, truncated, malformed or its labels don't fit the request.
    """
    options = {name: value for name, value in locals().items() if name != "path"}  # (every option as given)
    if is_url(path):  # a data file at a URL: read from a local copy
        remote = remote_data(path)
        if remote is not None:
            with local_copy(remote) as copy:
                return read_dataset(copy, **options)
    files = text_files(Path(path)) if Path(path).is_dir() and not is_table_source(path) else None
    if files is not None:  # a folder of CSV/TSV files: one table
        with joined_folder(Path(path), files) as joined:
            dataset = read_dataset(joined, **options)
        dataset.path = Path(path)
        return dataset
    path = Path(path)
    no_labels = has_no_labels(label_column)
    columns = _encoder(columns, categorical, impute, path)
    kept = kept_names(keep)
    given = "--keep" if kept else "--features" if features is not None else "--categorical/--impute"
    features = without_kept(features, kept, path)
    if no_labels and not optional_labels:
        raise DataError(
            "--label-column none reads rows without labels, which can be predicted but not learnt from",
            path=path,
            fix="name the label column; score rows without labels with omkl predict --label-column none",
        )
    by_name: dict[str, Any] = {"classes": classes, "n_classes": n_classes, "label_column": label_column}
    by_name.update(positive_class=positive_class, features=features, columns=columns, one_class=one_class)
    if kept:
        by_name["carry"] = kept
    # rows to predict: the model's columns decide a named table's label column and what is carried
    by_features = list(feature_names) if feature_names is not None and optional_labels else None
    guessed = label_column is None and by_features is None and not no_labels  # the default rule's column
    ids = by_features is None and features is None  # (features chosen by the user or a model: no warning)
    if fmt == "parquet" or (fmt is None and is_table_source(path)):
        # the columns' names (the schema only), for the label rule by the model's features or its check
        names = table_columns(path)
        if by_features is not None:
            label, carried = _predicted_columns(names, by_features, label_column, label_name, path)
            by_name["label_column"] = label
            if features is None:  # named: the model's features decide, a pandas index among them is no news
                named = label_column_name(label, names, path)
                by_name["features"] = [n for n in names if n != named and n not in carried]
            by_name["carry"] = carried
        return _check_guess(read_table(path, **by_name), names if guessed else None, ids)
    left_out = left_out_only(features)  # (every column a feature but these: a file read block by block still)
    if left_out is not None and not kept and columns is None and not zero_based:  # a large CSV/TSV or LIBSVM file
        try:
            file = open_blocks(
                path,
                fmt=fmt,
                sparse=sparse,
                n_features=n_features,
                leave_out=left_out,
                label_column=label_column,
                hold=True,  # (the matrix filled from the checking pass's parse)
                progress=None if progress is None else functools.partial(_read_bytes, progress, path.stat().st_size),
                label_by_names=None
                if by_features is None
                else lambda names: _predicted_columns(names, by_features, label_column, label_name, path),
            )
        except NotStreamed:
            pass
        else:
            labels = {
                "classes": classes,
                "n_classes": n_classes,
                "positive_class": positive_class,
                "one_class": one_class,
            }
            dataset = _from_blocks(file, n_features=n_features, **labels)
            return _check_guess(dataset, file.names if guessed else None, ids)
    stored = read_bytes(path)
    sha = hashlib.sha256(stored).hexdigest()
    content = decompress(stored, path)
    if fmt != "mat" and not (fmt is None and looks_mat(path, content)):
        content = text_content(content, path)
    fmt = check_format(fmt, path) if fmt is not None else detect_format(path, content)
    first = first_lines(content, 1) if fmt in _HEADED else None
    header = split_header(first[0], _HEADED[fmt], path) if first else None
    if by_features is not None and header is not None:
        label_column, carried = _predicted_columns(header, by_features, label_column, label_name, path)
        by_name["label_column"] = label_column
        no_labels = has_no_labels(label_column)
        if carried:  # (read by name: the model's columns in the file's order, the labels, the others as they are)
            chosen = [n for n in header if n in by_features] if features is None else features
            by_name.update(features=chosen, carry=carried)
    if fmt in _BY_NAME and len(first_lines(content, 2)) < 2:
        raise DataError("only a header row, no data rows", path=path, fix="check the export was complete")
    if fmt in _HEADED and (by_name["features"] is not None or columns is not None or fmt in _BY_NAME):
        table = text_table(content, path, _HEADED[fmt], decimal_point(content, _HEADED[fmt]))
        dataset = read_table(table, **by_name, where=str(path), sha256=sha, fmt=fmt)
        if dataset.carried is not None:  # (as the text they hold: an id 00123 stays 00123)
            dataset.carried = text_columns(content, path, _HEADED[fmt], dataset.carried.column_names)
        return _check_guess(dataset, header if guessed else None, ids)
    if features is not None or columns is not None:
        raise DataError(
            f"{given} name a table's columns, and this {fmt} file has no header row naming them",
            path=path,
            fix="add a header row (CSV/TSV) or convert the file to parquet; or drop " + given,
        )
    if zero_based and fmt != "libsvm":
        raise DataError(f"--zero-based is for LIBSVM files, this one is {fmt}", path=path, fix="drop --zero-based")
    if label_column is not None and fmt not in _DELIMITED and not (no_labels and fmt == "libsvm"):
        raise DataError(
            f"a label column can be chosen for {', '.join(_DELIMITED)} files, this one is {fmt}",
            path=path,
            fix="drop --label-column (LIBSVM and .mat files say where their labels are)",
        )
    if fmt == "libsvm":
        parsed = read_libsvm(content, path, n_features=n_features, sparse=sparse, zero_based=zero_based)
    elif fmt in _DELIMITED:
        parsed = _READERS[fmt](content, path, label_column=label_column)
    elif fmt == "mat":
        parsed = read_mat(content, path, sparse=sparse)
    else:
        parsed = _READERS[fmt](content, path)
    if fmt != "libsvm":  # (a LIBSVM file is read to n_features)
        _check_width(parsed.X.shape[1], n_features, path)
    _check_finite(parsed, path)
    X = _canonical_csr(parsed.X) if sp.issparse(parsed.X) else np.ascontiguousarray(parsed.X, dtype=np.float64)
    if no_labels:
        return Dataset(X=X, y=None, label_map=[], fmt=fmt, path=path, sha256=sha, feature_names=parsed.feature_names)
    if parsed.y_raw is None:
        raise DataError(
            "the rows have no labels (they start with their first index:value)",
            path=path,
            fix="label them to learn from them; to predict them, pass --label-column none (label_column='none')",
        )
    y, label_map = encode_labels(
        parsed.y_raw,
        classes=classes,
        n_classes=n_classes,
        positive_class=positive_class,
        path=path,
        line_of=parsed.line_of,
        one_class=one_class,
    )
    dataset = Dataset(
        X=X,
        y=y,
        label_map=label_map,
        fmt=fmt,
        path=path,
        sha256=sha,
        permutations=parsed.permutations,
        feature_names=parsed.feature_names,
        label_name=parsed.label_name,
    )
    return _check_guess(dataset, header if guessed else None, ids)


def column_names(path: str | os.PathLike[str]) -> list[str] | None:
    """The names of a table's columns -- a parquet file's or folder's schema, the header row of a
    CSV/TSV file as :func:`read_dataset` finds one -- or None for columns without names (LIBSVM, dense
    text, CSV without a header, ``.mat``) or a file it cannot tell (the reading names the problem).
    Reads the schema or the file's first block only."""
    path = Path(path)
    files = text_files(path) if path.is_dir() and not is_table_source(path) else None
    if files is not None:  # a folder of CSV/TSV files: one table, its files' header
        return column_names(files[0])
    try:
        if is_table_source(path):
            return table_columns(path)
        head = text_content(next(iter(line_blocks(path)), (b"", 1))[0], path)
        if not head.strip() or looks_mat(path, head):
            return None
        fmt = detect_format(path, head)
        first = first_lines(head, 1) if fmt in _HEADED else None
        return split_header(first[0], _HEADED[fmt], path) if first else None
    except (DataError, NotStreamed, OSError):
        return None


def _check_guess(dataset: Dataset, names: list[str] | None, ids: bool = False) -> Dataset:
    """:func:`~..labels.warn_guessed_labels` of a dataset read; ``names``: the table's columns when the
    default rule chose its label column, else None; ``ids``: also warn of feature columns that look
    like row identifiers (:func:`~..id_columns.warn_id_columns`: labelled rows whose features were
    not chosen by name)."""
    if names is not None and dataset.y is not None:
        warn_guessed_labels(dataset.path, names, len(dataset.y), len(dataset.label_map))
    if ids and dataset.y is not None:
        warn_id_columns(dataset.path, dataset.X, dataset.feature_names)
    return dataset


def _check_width(width: int, n_features: int | None, path: object) -> None:
    """A text file's feature columns are ``n_features`` when it is given."""
    if n_features is not None and width != n_features:
        raise DataError(
            f"the file has {width} feature columns, n_features says {n_features}",
            path=path,
            fix="drop --n-features (it is for LIBSVM files) or correct it",
        )


def _predicted_columns(
    names: list[str], feature_names: list[str], label_column: str | int | None, label_name: str | None, path: object
) -> tuple[str | int | None, list[str]]:
    """``(label column, carried columns)`` of a named table of rows to predict whose columns are
    ``names`` (a text header's row names included), by the model's ``feature_names`` and the
    ``label_name`` it learnt from: the label column given; else ``label_name`` if the table has it,
    none if it lacks it; else (a model that does not know it) :func:`_label_by_elimination`.
    Carried: every column that is neither a feature nor the labels (none when a feature is missing:
    matching the features by name names it)."""
    data = [n for i, n in enumerate(names) if i != row_names_column(names)]  # (row names are no labels)
    label: str | int | None
    if label_column is not None:
        label = label_column
    elif label_name is not None:
        label = label_name if label_name in data else NO_LABELS
    else:
        label = _label_by_elimination(data, feature_names, path)
    wanted = set(feature_names)
    if not wanted <= set(names):
        return label, []
    named = label_column_name(label, names, path)
    return label, [n for n in names if n not in wanted and n != named]


def _read_bytes(progress: Callable[[int, int], None], size: int, done: int) -> None:
    progress(done, size)


def _from_blocks(file: BlockFile | LibsvmBlockFile, *, n_features: int | None, **labels: Any) -> Dataset:
    """The dataset of a file read block by block (:mod:`.blocks`), as :func:`read_dataset` makes it."""
    X, carried = file.matrix()
    _check_width(X.shape[1], n_features, file.path)
    y, label_map = (
        (None, [])
        if file.labels is None
        else encode_label_codes(*file.labels, path=file.path, line_of=file.line_of, **labels)
    )
    return Dataset(
        X=X,
        y=y,
        label_map=label_map,
        fmt=file.fmt,
        path=file.path,
        sha256=file.sha256,
        feature_names=file.feature_names,
        label_name=None if y is None else file.label_name,
        carried=carried,
    )


def _label_by_elimination(names: list[str], feature_names: Iterable[str], path: object) -> str | None:
    """The label column of rows to predict whose columns are ``names``, by the model's features:
    ``"none"`` if every column is one, the one column that is not; of several others, the one the
    default rule names (None), or an error if that rule would take one of the model's features."""
    wanted = set(feature_names)
    others = [name for name in names if name not in wanted]
    if len(others) <= 1:
        return others[0] if others else NO_LABELS
    if names[default_label_column(names)] not in wanted:
        return None
    raise DataError(
        f"{len(others)} columns are not the model's features ({others}), so which holds the labels is not clear",
        path=path,
        fix="pass --label-column with the one that does (label_column=...; none: no labels) and leave out the others",
    )


def _encoder(
    columns: ColumnEncoder | None, categorical: str | None, impute: str | None, path: Path
) -> ColumnEncoder | None:
    """The column encoder a read uses: a given (fitted) one, or a new one of ``categorical`` and
    ``impute`` (``"none"``: not asked for) to fit; None when neither is asked for."""
    categorical, impute = (None if v is None or v.strip().lower() == "none" else v for v in (categorical, impute))
    for option, value, allowed in (("categorical", categorical, CATEGORICAL), ("impute", impute, IMPUTE)):
        if value is not None and value not in allowed:
            raise DataError(
                f"{option} {value!r} is not one of {', '.join(allowed)}",
                path=path,
                fix=f"pass --{option} " + "|".join(allowed),
            )
    if columns is not None and (categorical is not None or impute is not None):
        raise DataError(
            "a fitted column encoder comes with its own categorical and impute options",
            path=path,
            fix="drop categorical/impute (or the encoder)",
        )
    if columns is not None or (categorical is None and impute is None):
        return columns
    return ColumnEncoder(categorical=categorical, impute=impute)


def _canonical_csr(X: FeatureMatrix) -> sp.csr_matrix:
    """A float64 csr_matrix with sorted indices, no duplicates and no stored zeros (``3:0`` in a
    LIBSVM row is not a non-zero): the form the csr layout stores and streams back."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.eliminate_zeros()
    return X


def _check_finite(parsed: ParsedFile, path: Path) -> None:
    if sp.issparse(parsed.X):
        X = sp.csr_matrix(parsed.X)
        bad = np.flatnonzero(~np.isfinite(X.data))
        if not len(bad):
            return
        row, col = int(np.searchsorted(X.indptr, bad[0], side="right")) - 1, int(X.indices[bad[0]])
        value = float(X.data[bad[0]])
    else:
        finite = np.isfinite(parsed.X)
        if finite.all():
            return
        row = int(np.flatnonzero(~finite.all(axis=1))[0])
        col = int(np.flatnonzero(~finite[row])[0])
        value = float(parsed.X[row, col])
    raise nonfinite_feature(value, path, parsed.line_of(row), parsed.column_of(col))
