"""LIBSVM / svmlight text: ``label idx:value ...`` with 1-based feature indices (0-based with
``zero_based``, as scikit-learn's ``dump_svmlight_file`` writes them), sparse when wide.

Rows to predict may have no label (``idx:value ...``): they are read with ``y_raw`` None."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..errors import DataError
from .dataset import SPARSE_MIN_FEATURES, ParsedFile
from .textio import empty_file_error, is_number, show_bytes, text_lines

_MAX_LIBSVM_INDEX = 2**31 - 2  # the parser's (and a dense matrix's) limit
_SPARSE_REFUSAL_BYTES = 2**30  # densifying more than this at under 1 % fill is refused as a likely typo
_STRAY_RATIO = 1000  # sparse: a largest index this many times every other row's is refused as a likely typo


UNLABELLED_ROW = re.compile(rb"(?m)^(?=[ \t]*\d+:)")  # a row that starts with its first index:value
# the same test after a line end: searched from its literal "\n", 9x faster (a 259 MB file: 1.2 -> 0.14 s)
UNLABELLED_LATER_ROW = re.compile(rb"\n[ \t]*\d+:")


def read_libsvm(
    content: bytes, path: Path, n_features: int | None = None, sparse: bool | None = None, zero_based: bool = False
) -> ParsedFile:
    from sklearn.datasets import load_svmlight_file

    unlabelled = bool(UNLABELLED_ROW.match(content) or UNLABELLED_LATER_ROW.search(content))
    if unlabelled:  # scikit-learn's parser needs a label: rows without one get a 0 it never reports
        content = UNLABELLED_ROW.sub(b"0 ", content)
    try:
        X, y = load_svmlight_file(io.BytesIO(content), zero_based=bool(zero_based))
    except (ValueError, OverflowError) as exc:
        diagnose_libsvm(content, path, first_index=0 if zero_based else 1)
        raise DataError(
            f"could not parse LIBSVM data ({exc})",
            path=path,
            fix="check the file is `label index:value ...` with 1-based sorted indices",
        ) from None
    if X.shape[0] == 0:
        raise empty_file_error(path)
    line_of = _libsvm_line_mapper(content)
    width = X.shape[1] if n_features is None else int(n_features)
    keep_sparse = width >= SPARSE_MIN_FEATURES if sparse is None else bool(sparse)
    if X.nnz:
        row_max = np.maximum.reduceat(X.indices, X.indptr[:-1][np.diff(X.indptr) > 0]) + 1
        rows = np.flatnonzero(np.diff(X.indptr) > 0)
        worst = int(rows[int(np.argmax(row_max))])
        top = int(row_max.max())
        if top > width:
            raise DataError(
                f"feature index {top} is above n_features={width}",
                path=path,
                row=line_of(worst),
                column=top,
                fix="correct the index, or raise --n-features",
            )
        if keep_sparse and n_features is None and top >= SPARSE_MIN_FEATURES:
            _check_stray_index(row_max, top, X.shape[0], lambda: line_of(worst), path)
        elif not keep_sparse:
            check_dense_size(X.shape[0], X.nnz, width, top, lambda: line_of(worst), path, chosen=sparse is False)
    if keep_sparse:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    else:
        dense = np.zeros((X.shape[0], width))
        densify_into(dense, X)
        X = dense
    first = 0 if zero_based else 1  # a column is named by its index in the file
    return ParsedFile(X=X, y_raw=None if unlabelled else y, line_of=line_of, column_of=lambda j: j + first)


def densify_into(out: NDArray[np.float64], X: sp.csr_matrix, first: int = 0) -> None:
    """Write the non-zeros of ``X`` (sorted, unique indices: as scikit-learn's parser checks them)
    into rows ``first...`` of the zeros ``out``: no dense copy of ``X`` is made (a matrix of a9a's
    shape was held twice, 2 GB for 1,000,000 rows)."""
    out[np.repeat(np.arange(first, first + X.shape[0]), np.diff(X.indptr)), X.indices] = X.data


def check_dense_size(
    n_rows: int,
    nnz: int,
    width: int,
    top: int,
    row: Callable[[], int],
    path: Path,
    *,
    chosen: bool = False,
    held: bool = True,
) -> None:
    """Features densified (``n_rows`` x ``width``, ``nnz`` non-zeros): refuse a matrix that is huge and
    nearly empty (one stray index such as 1000000000 in a file of small indices), or (``held``: in
    memory whole, not written chunk by chunk) that cannot fit in the memory available, before
    allocating it. ``chosen``: the caller asked for dense features (``--layout dense``) rather than getting them
    by width. ``row``: the file line of the row with the largest index ``top``, found only for the
    message (mapping a million rows to their lines took 1.6 s)."""
    import psutil

    need = n_rows * width * 8
    fill = nnz / max(n_rows * width, 1)
    available = psutil.virtual_memory().available
    if (held and need > available // 2) or (need > _SPARSE_REFUSAL_BYTES and fill < 0.01):
        layout = "--layout csr (or auto)" if chosen else "--layout csr"
        raise DataError(
            f"feature index {top} makes the dense feature matrix {n_rows:,} x {width:,} = "
            f"{need / 2**30:.1f} GiB ({100 * fill:.4f} % non-zero; {available / 2**30:.1f} GiB of memory "
            "available)",
            path=path,
            row=row(),
            column=top,
            fix="check that index for a typo; pass --n-features with the true feature count to have "
            f"indices above it reported; if the data really is this wide and sparse, ingest it "
            f"with {layout}, which stores and streams only the non-zeros (read_dataset: sparse=True)",
        )


def _check_stray_index(row_max: NDArray[np.int64], top: int, n_rows: int, row: Callable[[], int], path: Path) -> None:
    """Sparse features cost nothing per column, so a stray index (1000000000 in a file of small
    indices) would silently make a dataset a billion columns wide. Where densifying would have been
    refused as such a typo (over 1 GiB), refuse a largest index ``_STRAY_RATIO`` times every other
    row's largest -- genuinely wide data has many rows reaching near its width -- unless
    ``--n-features`` vouches for it."""
    if n_rows * top * 8 <= _SPARSE_REFUSAL_BYTES:
        return
    others = np.delete(row_max, int(np.argmax(row_max)))
    second = int(others.max()) if len(others) else 0
    if top > _STRAY_RATIO * max(second, 1):
        raise DataError(
            f"feature index {top} is far above the largest index of every other row ({second}): most likely a typo",
            path=path,
            row=row(),
            column=top,
            fix=f"correct the index; if it is right, pass --n-features {top} (or the true feature count)",
        )


def _libsvm_line_mapper(content: bytes) -> Callable[[int], int]:
    cache: list[list[int]] = []

    def line_of(i: int) -> int:
        if not cache:
            cache.append([n for n, line in text_lines(content) if line.split(b"#", 1)[0].strip()])
        return cache[0][i]

    return line_of


def diagnose_libsvm(content: bytes, path: Path, first_index: int = 1, first_number: int = 1) -> None:
    """Find the first malformed LIBSVM line and raise a DataError naming it (error path only);
    ``first_number``: the line number of the content's first line (a block of a file)."""
    for number, line in text_lines(content, first_number=first_number):
        tokens = line.split(b"#", 1)[0].split()
        if not tokens:
            continue
        if not is_number(tokens[0]):
            raise DataError(
                f"label {show_bytes(tokens[0])} is not a number",
                path=path,
                row=number,
                fix="LIBSVM labels must be numeric; fix the value or convert the file to CSV",
            )
        previous = first_index - 1
        for token in tokens[1:]:
            index, sep, value = token.partition(b":")
            if not sep or not index.isdigit():
                raise DataError(
                    f"token {show_bytes(token)} is not `index:value`",
                    path=path,
                    row=number,
                    fix="LIBSVM rows are `label index:value ...`; if this is dense text pass fmt='dense'",
                )
            column = int(index)
            if column > _MAX_LIBSVM_INDEX:
                raise DataError(
                    f"feature index {column} is too large (at most {_MAX_LIBSVM_INDEX:,})",
                    path=path,
                    row=number,
                    column=column,
                    fix="check that index for a typo; LIBSVM indices are 1..n_features",
                )
            if int(index) < first_index:
                raise DataError(
                    "feature index 0 in a 1-based LIBSVM file",
                    path=path,
                    row=number,
                    column=column,
                    fix="if the file's indices start at 0 (as scikit-learn's dump_svmlight_file writes them), "
                    "pass --zero-based (zero_based=True); else shift them by +1 (LIBSVM indices start at 1)",
                )
            if int(index) <= previous:
                raise DataError(
                    f"feature indices not strictly increasing ({previous} then {int(index)})",
                    path=path,
                    row=number,
                    column=column,
                    fix="sort the index:value pairs and remove duplicates",
                )
            if not is_number(value):
                raise DataError(
                    f"value {show_bytes(value)} is not a number",
                    path=path,
                    row=number,
                    column=column,
                    fix="correct or remove the value",
                )
            previous = int(index)
