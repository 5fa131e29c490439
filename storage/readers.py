"""Read a labelled dataset file into memory: LIBSVM, dense text, CSV/TSV or MATLAB v5 ``.mat``.

Formats (``fmt``):

``"libsvm"``
    ``label idx:value ...`` with 1-based feature indices; ``n_features`` is the largest index
    seen. ``#`` starts a comment. A file with at least :data:`SPARSE_MIN_FEATURES` features
    (rcv1: 47,236 at 0.16 % non-zero) is returned as a ``scipy.sparse.csr_matrix``; narrower
    ones are densified as always (``sparse=`` overrides the choice).
``"dense"``
    Whitespace (spaces or tabs) separated numbers, label first, no header. An optional first
    line ``"N D"`` giving the row and feature counts (as in ``madelon_train``) is skipped.
``"csv"``
    Comma separated (``", "`` too), label first, no header.
``"csv_header"`` / ``"tsv_header"``
    Comma / tab separated with a header row. The label column is the one named ``target``
    (PMLB), otherwise the first column.
``"mat"``
    MATLAB v5 (or v4) file read with :func:`scipy.io.loadmat`: variables ``X`` (dense or sparse,
    rows x features; a sparse ``X`` stays sparse under LIBSVM's rule) and ``y``, or ``data`` with
    the label in column 1. Permutation matrices ``ID_all`` / ``ID_list`` / ``ID_ALL`` are not
    features; they are exposed as :attr:`Dataset.permutations`. v7.3 (HDF5) files are refused
    with a re-save hint.

Files may be gzip-compressed or plain; gzip is recognised by its magic bytes, not its name.

In error messages ``row`` is the 1-based line number in the (decompressed) text file, so it can
be opened in an editor at that line; for ``.mat`` files it is the 1-based data row. ``column``
is the 1-based field position in the line (the label is a column too), with its header name
when there is one; for LIBSVM it is the 1-based feature index (label errors name no column).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import hashlib
import io
import re
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .errors import DataError
from .labels import encode_labels, resolve_label_column
from .tables import is_table_source, open_table

FORMATS = ("libsvm", "dense", "csv", "csv_header", "tsv_header", "mat", "parquet")
# Names used elsewhere (MANIFEST.json, other tools) for the same formats.
_FORMAT_ALIASES = {"dense_ws": "dense", "svmlight": "libsvm"}
_PERMUTATION_VARS = ("id_all", "id_list")
_LABEL_COLUMN_NAMES = ("target",)
_SNIFF_LINES = 20
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# Other compressions we recognise only to give a useful error.
_OTHER_MAGIC = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip", b"(\xb5/\xfd": "zstd"}
_DELIMITER_NAMES = {",": "','", "\t": "tab", ";": "';'", "|": "'|'", None: "whitespace"}
# LIBSVM (and sparse .mat) data at least this wide stay sparse: densifying rcv1-like data (47,236
# features, 0.16 % non-zero) would take ~600 times the memory of its values.
SPARSE_MIN_FEATURES = 10_000


@dataclass
class Dataset:
    """A labelled dataset held in memory.

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_features), float64, C-contiguous, or scipy.sparse.csr_matrix
        Features; a ``csr_matrix`` (float64, canonical: sorted indices, no duplicates, no stored
        zeros) for wide sparse files, see :data:`SPARSE_MIN_FEATURES`.
    y : ndarray of shape (n_rows,), int64
        Internal labels: -1/+1 for binary data, 0..K-1 for K > 2 classes.
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
        Header names of the feature columns for files with a header.
    """

    X: np.ndarray
    y: np.ndarray
    label_map: list
    fmt: str
    path: Path
    sha256: str
    permutations: np.ndarray | None = None
    feature_names: list | None = field(default=None, repr=False)

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        return len(self.label_map)

    @property
    def class_counts(self) -> dict:
        """Rows per class, keyed by the canonical original label (declared classes included)."""
        return {original: int(np.count_nonzero(self.y == internal)) for original, internal in self.label_map}


# --------------------------------------------------------------------------------------------
# public entry point


def read_dataset(path, *, fmt=None, classes=None, n_classes=None, n_features=None, label_column=None,
                 positive_class=None, features=None, sparse: bool | None = None) -> Dataset:
    """Read a labelled dataset file.

    Parameters
    ----------
    path : str or Path
        The file, gzip-compressed or plain; or a parquet file or folder of parquet files.
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
        CSV/TSV/dense text: the column holding the labels -- ``"first"``, ``"last"``, a 0-based
        index (negative counts from the end) or a header name. Default: a header column named
        ``target``, else the first column.
    positive_class : str or number, optional
        Binary data: the original label that becomes +1 (default: the larger of the two in
        numeric, then lexical, order).
    features : list of str or str, optional
        Parquet: the feature columns (default: every column but the label; each must be numeric).
    sparse : bool, optional
        LIBSVM and sparse ``.mat`` data: return ``X`` as a ``csr_matrix`` (True) or densified
        (False, refused when the dense matrix cannot fit). Default: sparse exactly when the data
        has at least :data:`SPARSE_MIN_FEATURES` features. Other formats are always dense.

    Returns
    -------
    Dataset

    Raises
    ------
    DataError
        The file is missing, empty, truncated, malformed or its labels don't fit the request.
    """
    path = Path(path)
    if fmt == "parquet" or (fmt is None and is_table_source(path)):
        return _read_table(path, classes=classes, n_classes=n_classes, label_column=label_column,
                           positive_class=positive_class, features=features)
    if features is not None:
        raise DataError("feature columns are chosen for parquet tables only", path=path, fix="drop --features")
    stored = _read_bytes(path)
    sha = hashlib.sha256(stored).hexdigest()
    content = _decompress(stored, path)
    fmt = _check_fmt(fmt, path) if fmt is not None else detect_format(path, content)
    if label_column is not None and fmt not in _DELIMITED:
        raise DataError(f"a label column can be chosen for {', '.join(_DELIMITED)} files, this one is {fmt}",
                        path=path, fix="drop --label-column (LIBSVM and .mat files say where their labels are)")
    if fmt == "libsvm":
        parsed = _read_libsvm(content, path, n_features=n_features, sparse=sparse)
    elif fmt in _DELIMITED:
        parsed = _READERS[fmt](content, path, label_column=label_column)
    elif fmt == "mat":
        parsed = _read_mat(content, path, sparse=sparse)
    else:
        parsed = _READERS[fmt](content, path)
        if n_features is not None and parsed.X.shape[1] != n_features:
            raise DataError(f"the file has {parsed.X.shape[1]} feature columns, n_features says {n_features}",
                            path=path, fix="drop --n-features (it is for LIBSVM files) or correct it")
    _check_finite(parsed, path)
    y, label_map = encode_labels(parsed.y_raw, classes=classes, n_classes=n_classes, positive_class=positive_class,
                                 path=path, line_of=parsed.line_of)
    X = _canonical_csr(parsed.X) if sp.issparse(parsed.X) else np.ascontiguousarray(parsed.X, dtype=np.float64)
    return Dataset(X=X, y=y, label_map=label_map, fmt=fmt, path=path, sha256=sha, permutations=parsed.permutations,
                   feature_names=parsed.feature_names)


def _canonical_csr(X) -> sp.csr_matrix:
    """A float64 csr_matrix with sorted indices, no duplicates and no stored zeros (``3:0`` in a
    LIBSVM row is not a non-zero): the form the csr layout stores and streams back."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.eliminate_zeros()
    return X


def detect_format(path, content: bytes) -> str:
    """Guess the format of decompressed ``content`` read from ``path``.

    Rules, in order:

    1. content starting ``MATLAB`` (v5/v7.3 header), an HDF5 signature, or a name ending in
       ``.mat`` (before any ``.gz``) -> ``"mat"``;
    2. NUL bytes in the first 4 KiB -> error (binary file of unknown kind);
    3. among the first 20 non-blank lines, one whose second whitespace token looks like
       ``index:value`` -> ``"libsvm"``;
    4. first non-blank line contains a tab -> ``"tsv_header"`` if it is a header (see below),
       else ``"dense"`` (tabs are whitespace);
    5. first non-blank line contains a comma -> ``"csv_header"`` if it is a header, else ``"csv"``;
    6. otherwise -> ``"dense"``.

    A first line is a header when one of its fields is not a number (a numeric row that merely
    mixes tabs and spaces is not), or when its fields are the consecutive integers
    ``0, 1, 2, ...`` (at least three) -- the column names pandas writes for an unnamed frame, as in
    ``a1a.csv`` -- and the second line is not.
    """
    path = Path(path)
    if _is_hdf5(content) or content.startswith(b"MATLAB") or _stem_suffix(path) == ".mat":
        return "mat"
    if b"\x00" in content[:4096]:
        raise DataError("binary content that is not a MATLAB .mat file", path=path,
                        fix=f"convert it to one of the supported formats {FORMATS}")
    lines = _first_lines(content, _SNIFF_LINES)
    if not lines:
        raise _empty(path)
    if any(_looks_libsvm(line) for line in lines):
        return "libsvm"
    first = lines[0]
    second = lines[1] if len(lines) > 1 else None
    if b"\t" in first:
        return "tsv_header" if _is_header(first, second, "\t") else "dense"
    if b"," in first:
        return "csv_header" if _is_header(first, second, ",") else "csv"
    return "dense"


# --------------------------------------------------------------------------------------------
# bytes in


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise DataError("no such file", path=path, fix="check the path, or give a registry name (`omkl data list`)")
    if path.is_dir():
        raise DataError("is a directory, not a data file", path=path,
                        fix="give the data file inside it (an ingested dataset is opened with open_stream)")
    data = path.read_bytes()
    if not data:
        raise _empty(path)
    return data


def _empty(path) -> DataError:
    return DataError("empty file: no data rows", path=path, fix="check the file was copied or exported completely")


def _decompress(stored: bytes, path: Path) -> bytes:
    """Gunzip when the gzip magic bytes are present; refuse other compressions clearly."""
    if stored[:2] == b"\x1f\x8b":
        try:
            content = gzip.decompress(stored)
        except EOFError:
            raise DataError("truncated gzip file: the compressed stream ends before its end marker", path=path,
                            fix="re-download or re-copy the file; `gzip -t FILE` confirms the damage") from None
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise DataError(f"corrupt gzip file ({exc})", path=path,
                            fix="re-download or re-copy the file; `gzip -t FILE` confirms the damage") from None
        if not content.strip():
            raise _empty(path)
        return _strip_bom(content)
    for magic, name in _OTHER_MAGIC.items():
        if stored.startswith(magic):
            raise DataError(f"{name}-compressed file; only gzip is read", path=path,
                            fix="decompress it, or re-compress it with gzip")
    if not stored.strip():
        raise _empty(path)
    return _strip_bom(stored)


def _strip_bom(content: bytes) -> bytes:
    """Drop a UTF-8 byte-order mark (spreadsheet exports write one): it would make the first row's
    first field non-numeric, so the row would be taken for a header and lost."""
    return content[len(codecs.BOM_UTF8):] if content.startswith(codecs.BOM_UTF8) else content


def _check_fmt(fmt: str, path) -> str:
    fmt = _FORMAT_ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}", path=path, fix=f"use one of {', '.join(FORMATS)} or omit it")
    return fmt


def _stem_suffix(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return Path(name).suffix


def _is_hdf5(content: bytes) -> bool:
    # MATLAB v7.3 files are HDF5 with a 512-byte text header before the HDF5 signature.
    return content.startswith(_HDF5_SIGNATURE) or content[512:520] == _HDF5_SIGNATURE or \
        content.startswith(b"MATLAB 7.3")


def _first_lines(content: bytes, n: int) -> list[bytes]:
    out = []
    for line in io.BytesIO(content):
        if line.strip():
            out.append(line.rstrip(b"\r\n"))
            if len(out) == n:
                break
    return out


_LIBSVM_TOKEN = re.compile(rb"^\d+:\S*$")


def _looks_libsvm(line: bytes) -> bool:
    tokens = line.split()
    return len(tokens) > 1 and bool(_LIBSVM_TOKEN.match(tokens[1]))


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _is_consecutive_ints(fields) -> bool:
    try:
        ints = [int(f) for f in fields]
    except ValueError:
        return False
    return len(ints) >= 3 and ints == list(range(len(ints)))


def _split_header(line: bytes, delimiter: str) -> list[str]:
    return [f.strip() for f in next(csv.reader([line.decode("utf-8", "replace")], delimiter=delimiter))]


def _is_header(first: bytes, second: bytes | None, delimiter: str) -> bool:
    fields = _split_header(first, delimiter)
    if all(_is_number(f) for f in fields):
        return _is_consecutive_ints(fields) and (
            second is None or not _is_consecutive_ints(_split_header(second, delimiter)))
    # A numeric row that mixes tabs and spaces is dense text, not a header.
    if delimiter == "\t" and all(_is_number(t) for t in first.split()):
        return False
    if second is None:
        return True
    below = _split_header(second, delimiter)
    # A header names columns that hold numbers below it; a first row whose words stand where the
    # next row has words too (word labels such as yes/no or g/h) is data.
    return len(below) != len(fields) or any(not _is_number(a) and _is_number(b) for a, b in zip(fields, below))


# --------------------------------------------------------------------------------------------
# parsers: each returns a _Parsed, with enough context to name the file row of an error


@dataclass
class _Parsed:
    X: np.ndarray
    y_raw: np.ndarray
    line_of: callable  # data row index (0-based) -> 1-based file row for messages
    column_of: callable  # feature index (0-based) -> column description for messages
    permutations: np.ndarray | None = None
    feature_names: list | None = None


def _text_lines(content: bytes, *, first_number: int = 1, delimiter=None):
    """Yield ``(line_number, line)`` for the lines numpy's reader treats as rows.

    numpy skips empty lines; with whitespace as the delimiter it also skips lines of spaces,
    while with ``,`` or tab such a line is a (bad) row, so it is yielded for the diagnosis.
    """
    for number, line in enumerate(content.split(b"\n"), start=first_number):
        line = line.rstrip(b"\r")
        if (line.strip() if delimiter is None else line):
            yield number, line


def _data_line_mapper(body: bytes, first_number: int, delimiter):
    """Map a data-row index to its file line number; computed lazily (only errors need it)."""
    cache = []

    def line_of(i: int) -> int:
        if not cache:
            cache.append([n for n, _ in _text_lines(body, first_number=first_number, delimiter=delimiter)])
        return cache[0][i]

    return line_of


# ---- LIBSVM


_MAX_LIBSVM_INDEX = 2**31 - 2  # the parser's (and a dense matrix's) limit
_SPARSE_REFUSAL_BYTES = 2**30  # densifying more than this at under 1 % fill is refused as a likely typo
_STRAY_RATIO = 1000  # sparse: a largest index this many times every other row's is refused as a likely typo


def _read_libsvm(content: bytes, path: Path, n_features: int | None = None, sparse: bool | None = None) -> _Parsed:
    from sklearn.datasets import load_svmlight_file

    try:
        X, y = load_svmlight_file(io.BytesIO(content), zero_based=False)
    except (ValueError, OverflowError) as exc:
        _diagnose_libsvm(content, path)
        raise DataError(f"could not parse LIBSVM data ({exc})", path=path,
                        fix="check the file is `label index:value ...` with 1-based sorted indices") from None
    if X.shape[0] == 0:
        raise _empty(path)
    line_of = _libsvm_line_mapper(content)
    width = X.shape[1] if n_features is None else int(n_features)
    keep_sparse = width >= SPARSE_MIN_FEATURES if sparse is None else bool(sparse)
    if X.nnz:
        row_max = np.maximum.reduceat(X.indices, X.indptr[:-1][np.diff(X.indptr) > 0]) + 1
        rows = np.flatnonzero(np.diff(X.indptr) > 0)
        worst = int(rows[int(np.argmax(row_max))])
        top = int(row_max.max())
        if top > width:
            raise DataError(f"feature index {top} is above n_features={width}", path=path, row=line_of(worst),
                            column=top, fix="correct the index, or raise --n-features")
        if keep_sparse and n_features is None and top >= SPARSE_MIN_FEATURES:
            _check_stray_index(row_max, top, X.shape[0], line_of(worst), path)
        elif not keep_sparse:
            _check_dense_size(X, width, top, line_of(worst), path, chosen=sparse is False)
    if keep_sparse:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
        return _Parsed(X=X, y_raw=y, line_of=line_of, column_of=lambda j: j + 1)
    dense = np.zeros((X.shape[0], width))
    dense[:, :X.shape[1]] = X.toarray() if X.shape[1] <= width else X[:, :width].toarray()
    return _Parsed(X=dense, y_raw=y, line_of=line_of, column_of=lambda j: j + 1)


def _check_dense_size(X, width: int, top: int, row: int, path: Path, chosen: bool = False) -> None:
    """Features densified: refuse a matrix that cannot fit, or one that is huge and nearly empty (one
    stray index such as 1000000000 in a file of small indices), before allocating it. ``chosen``:
    the caller asked for dense features (``--layout dense``) rather than getting them by width."""
    import psutil

    need = X.shape[0] * width * 8
    fill = X.nnz / max(X.shape[0] * width, 1)
    available = psutil.virtual_memory().available
    if need > available // 2 or (need > _SPARSE_REFUSAL_BYTES and fill < 0.01):
        layout = "--layout csr (or auto)" if chosen else "--layout csr"
        raise DataError(f"feature index {top} makes the dense feature matrix {X.shape[0]:,} x {width:,} = "
                        f"{need / 2**30:.1f} GiB ({100 * fill:.4f} % non-zero; {available / 2**30:.1f} GiB of memory "
                        "available)", path=path, row=row, column=top,
                        fix="check that index for a typo; pass --n-features with the true feature count to have "
                            f"indices above it reported; if the data really is this wide and sparse, ingest it "
                            f"with {layout}, which stores and streams only the non-zeros (read_dataset: sparse=True)")


def _check_stray_index(row_max: np.ndarray, top: int, n_rows: int, row: int, path: Path) -> None:
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
        raise DataError(f"feature index {top} is far above the largest index of every other row ({second}): "
                        "most likely a typo", path=path, row=row, column=top,
                        fix=f"correct the index; if it is right, pass --n-features {top} (or the true feature count)")


def _libsvm_line_mapper(content: bytes):
    cache = []

    def line_of(i: int) -> int:
        if not cache:
            cache.append([n for n, line in _text_lines(content) if line.split(b"#", 1)[0].strip()])
        return cache[0][i]

    return line_of


def _diagnose_libsvm(content: bytes, path: Path) -> None:
    """Find the first malformed LIBSVM line and raise a DataError naming it (error path only)."""
    for number, line in _text_lines(content):
        tokens = line.split(b"#", 1)[0].split()
        if not tokens:
            continue
        if not _is_number(tokens[0]):
            raise DataError(f"label {_show(tokens[0])} is not a number", path=path, row=number,
                            fix="LIBSVM labels must be numeric; fix the value or convert the file to CSV")
        previous = 0
        for token in tokens[1:]:
            index, sep, value = token.partition(b":")
            if not sep or not index.isdigit():
                raise DataError(f"token {_show(token)} is not `index:value`", path=path, row=number,
                                fix="LIBSVM rows are `label index:value ...`; if this is dense text pass fmt='dense'")
            column = int(index)
            if column > _MAX_LIBSVM_INDEX:
                raise DataError(f"feature index {column} is too large (at most {_MAX_LIBSVM_INDEX:,})", path=path,
                                row=number, column=column,
                                fix="check that index for a typo; LIBSVM indices are 1..n_features")
            if int(index) < 1:
                raise DataError("feature index 0 in a 1-based LIBSVM file", path=path, row=number, column=column,
                                fix="shift indices by +1 (LIBSVM indices start at 1)")
            if int(index) <= previous:
                raise DataError(f"feature indices not strictly increasing ({previous} then {int(index)})", path=path,
                                row=number, column=column, fix="sort the index:value pairs and remove duplicates")
            if not _is_number(value):
                raise DataError(f"value {_show(value)} is not a number", path=path, row=number, column=column,
                                fix="correct or remove the value")
            previous = int(index)


# ---- dense / CSV / TSV


def _read_dense(content: bytes, path: Path, label_column=None) -> _Parsed:
    lines = _first_lines(content, 2)
    skip = 1 if len(lines) == 2 and _is_shape_line(lines[0], lines[1], content, path) else 0
    return _read_delimited(content, path, delimiter=None, header=False, skip=skip, label_column=label_column)


def _read_csv(content: bytes, path: Path, label_column=None) -> _Parsed:
    return _read_delimited(content, path, delimiter=",", header=False, label_column=label_column)


def _read_csv_header(content: bytes, path: Path, label_column=None) -> _Parsed:
    return _read_delimited(content, path, delimiter=",", header=True, label_column=label_column)


def _read_tsv_header(content: bytes, path: Path, label_column=None) -> _Parsed:
    return _read_delimited(content, path, delimiter="\t", header=True, label_column=label_column)


def _is_shape_line(first: bytes, second: bytes, content: bytes, path) -> bool:
    """True for a leading ``"N D"`` line stating the rows and features that follow.

    A shape line whose row count disagrees with the file is an error: the file was most likely
    cut short (or extended) after it was written.
    """
    fields = first.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        return False
    n_rows, n_features = (int(f) for f in fields)
    width = len(second.split())
    if width == 2 or width not in (n_features, n_features + 1):
        return False
    found = sum(1 for _ in _text_lines(content)) - 1
    if found != n_rows:
        raise DataError(f"the first line declares {n_rows} rows x {n_features} features but {found} data rows "
                        "follow", path=path, row=1,
                        fix="the file is probably truncated: re-copy it (or delete line 1 if the count is stale)")
    return True


def _split(line: bytes, delimiter):
    return line.split() if delimiter is None else line.split(delimiter.encode())


def _read_delimited(content: bytes, path: Path, *, delimiter, header: bool, skip: int = 0,
                    label_column=None) -> _Parsed:
    """Parse label + numeric features with numpy's C reader; diagnose in Python only on failure."""
    body, first_number = _drop_leading_lines(content, skip)
    first = _first_lines(body, 1)
    if not first:
        raise _empty(path)
    names = None
    if header:
        names = _split_header(first[0], delimiter)
        if len(names) < 2:
            raise _wrong_delimiter(first[0], delimiter, path, row=first_number)
        body, first_number = _drop_leading_lines(body, 1, first_number)
        if not body.strip():
            raise DataError("only a header row, no data rows", path=path, fix="check the export was complete")
    width = len(names) if header else len(_split(first[0], delimiter))
    if width < 2:
        raise _wrong_delimiter(first[0], delimiter, path, row=first_number)
    label_col = _label_column(names) if label_column is None else resolve_label_column(label_column, names, width,
                                                                                        path)
    try:
        table = np.loadtxt(io.BytesIO(body), dtype=np.float64, delimiter=delimiter, comments=None,
                           quotechar='"' if delimiter else None, ndmin=2)
        y_raw = table[:, label_col]
    except ValueError as exc:
        numeric_labels = _diagnose_delimited(body, first_number, path, delimiter, width, label_col, names,
                                             chosen=label_column is not None)
        if numeric_labels:
            raise DataError(f"could not parse ({exc})", path=path, fix="check the file's format (fmt=...)") from None
        table, y_raw = _read_string_labels(body, delimiter, width, label_col)
    if table.shape[1] != width:  # every data row agrees, but not with the header
        raise DataError(f"the header names {width} columns but the data rows have {table.shape[1]}", path=path,
                        row=first_number, fix="give every column a name in the header (or drop the extra values)")
    X = np.delete(table, label_col, axis=1)
    feature_names = [n for i, n in enumerate(names) if i != label_col] if names else None
    return _Parsed(X=X, y_raw=y_raw, line_of=_data_line_mapper(body, first_number, delimiter),
                   column_of=_column_namer(label_col, names), feature_names=feature_names)


def _read_string_labels(body: bytes, delimiter, width: int, label_col: int):
    """Second pass for files whose labels are words (``g``/``b``): features numeric, labels str."""
    quote = '"' if delimiter else None
    feature_cols = [i for i in range(width) if i != label_col]
    X = np.loadtxt(io.BytesIO(body), dtype=np.float64, delimiter=delimiter, comments=None, quotechar=quote,
                   usecols=feature_cols, ndmin=2)
    y = np.loadtxt(io.BytesIO(body), dtype=str, delimiter=delimiter, comments=None, quotechar=quote,
                   usecols=[label_col], ndmin=1)
    table = np.zeros((len(X), width), dtype=np.float64)
    table[:, feature_cols] = X
    return table, np.char.strip(y)


def _label_column(names) -> int:
    if names:
        lowered = [n.lower() for n in names]
        for candidate in _LABEL_COLUMN_NAMES:
            if candidate in lowered:
                return lowered.index(candidate)
    return 0


def _column_namer(label_col: int, names):
    def column_of(j: int) -> str:
        file_col = j + (1 if j >= label_col else 0)
        return f"{file_col + 1} ({names[file_col]!r})" if names else str(file_col + 1)

    return column_of


def _drop_leading_lines(content: bytes, n_nonblank: int, first_number: int = 1):
    """Drop leading blank lines and then ``n_nonblank`` lines (a header or a shape line).

    Returns the rest and the file line number of its first line.
    """
    pos, dropped, number = 0, 0, first_number
    while pos < len(content):
        end = content.find(b"\n", pos)
        end = len(content) if end < 0 else end + 1
        if content[pos:end].strip():
            if dropped == n_nonblank:
                break
            dropped += 1
        pos, number = end, number + 1
    return content[pos:], number


def _wrong_delimiter(line: bytes, delimiter, path, row) -> DataError:
    expected = _DELIMITER_NAMES[delimiter]
    found = [d for d in (",", "\t", ";", "|") if d != delimiter and d.encode() in line]
    if found:
        seen = _DELIMITER_NAMES[found[0]]
        hint = {",": "csv or csv_header", "\t": "tsv_header (or dense if it has no header)"}.get(
            found[0], f"re-save it with {expected} separators")
        return DataError(f"expected delimiter {expected} but the line has none; it looks {seen}-separated",
                         path=path, row=row, fix=f"read it as {hint} (fmt=..., --format)")
    return DataError(f"only one field (expected delimiter {expected}); a row needs a label and at least one feature",
                     path=path, row=row, fix="check the delimiter and the format (fmt=..., --format)")


def _show(value: bytes, limit: int = 40) -> str:
    text = value.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _diagnose_delimited(body, first_number, path, delimiter, width, label_col, names, chosen=False) -> bool:
    """Find the first bad row (ragged, non-numeric feature, empty field) and raise a DataError.

    Returns whether every label is numeric when no feature problem is found, so the caller
    knows whether word labels explain numpy's failure.
    """
    numeric_labels = True
    column_of = _column_namer(label_col, names)
    reference = None
    for number, line in _text_lines(body, first_number=first_number, delimiter=delimiter):
        if not line.strip():
            raise DataError("line of only spaces inside the data", path=path, row=number, fix="delete the line")
        fields = _split(line, delimiter)
        if len(fields) != width:
            _raise_ragged(line, delimiter, path, number, len(fields), width, reference, names)
        reference = reference or number
        for i, raw in enumerate(fields):
            value = raw.strip().strip(b'"')
            if i == label_col:
                numeric_labels = numeric_labels and _is_number(value)
                if not value:
                    raise DataError("empty label", path=path, row=number, column=i + 1, fix="fill in or drop the row")
                continue
            if not _is_number(value):
                problem = "empty field (missing value)" if not value else f"non-numeric value {_show(value)}"
                fix = "features must be numbers: correct the value, impute it, or drop the row"
                if value and i in (0, width - 1) and i != label_col:  # words at the other end: the labels?
                    where = "first" if i == 0 else "last"
                    fix = (f"if the {where} column holds the labels, pass --label-column {where} "
                           f"(label_column={where!r}); otherwise " + fix)
                elif value and not chosen:
                    fix = f"if column {i + 1} holds the labels, pass --label-column {i}; otherwise " + fix
                if number == first_number and names is None:
                    fix += "; if this line is a header, read the file as csv_header/tsv_header (fmt=...)"
                raise DataError(problem, path=path, row=number, column=column_of(i - (i > label_col)), fix=fix)
    return numeric_labels


def _raise_ragged(line, delimiter, path, number, got, width, reference, names):
    if got == 1 and delimiter is not None:
        raise _wrong_delimiter(line, delimiter, path, row=number)
    like = " (as in the header)" if names else f" (as in row {reference})" if reference else ""
    raise DataError(f"ragged row: {got} fields, expected {width}{like}", path=path, row=number,
                    fix="every row needs the label and all features; fix or drop the row")


# ---- MATLAB


def _read_mat(content: bytes, path: Path, sparse: bool | None = None) -> _Parsed:
    import scipy.io
    import scipy.sparse

    if _is_hdf5(content):
        raise _v73(path)
    try:
        variables = scipy.io.loadmat(io.BytesIO(content))
    except NotImplementedError:  # scipy's answer to v7.3
        raise _v73(path) from None
    except Exception as exc:  # scipy raises many kinds for damaged files
        raise DataError(f"unreadable .mat file ({type(exc).__name__}: {exc})", path=path,
                        fix="re-save it from MATLAB/Octave with `save -v7 FILE X y`") from None
    found = {k.lower(): k for k in variables if not k.startswith("__")}
    if "x" in found and "y" in found:
        X, y = variables[found["x"]], variables[found["y"]]
        if scipy.sparse.issparse(X):
            keep = X.shape[1] >= SPARSE_MIN_FEATURES if sparse is None else bool(sparse)
            X = X.tocsr() if keep else X.toarray()
        y = np.asarray(y).ravel()
        X = X if scipy.sparse.issparse(X) else np.asarray(X)
        if X.ndim != 2 or X.shape[0] != y.shape[0]:
            raise DataError(f"X has shape {X.shape} but y has {y.shape[0]} labels", path=path,
                            fix="store X as rows x features with one label per row in y")
    elif "data" in found:
        data = variables[found["data"]]
        data = data.toarray() if scipy.sparse.issparse(data) else np.asarray(data)
        if data.ndim != 2 or data.shape[1] < 2:
            raise DataError(f"variable data has shape {data.shape}; expected the label plus features", path=path,
                            fix="store data as rows x (1 + features) with the label in column 1")
        X, y = data[:, 1:], data[:, 0]
    else:
        raise DataError(f"no X and y (or data) variables; found {sorted(found.values())}", path=path,
                        fix="save the features as X (rows x features) and labels as y, or a single `data` "
                            "matrix with the label in column 1")
    if X.shape[0] == 0:
        raise _empty(path)
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise DataError(f"features are of type {X.dtype}, not numbers", path=path, fix="store numeric features")
    return _Parsed(X=X.astype(np.float64), y_raw=np.asarray(y), line_of=lambda i: i + 1,
                   column_of=lambda j: str(j + 1), permutations=_permutations(variables, found, X.shape[0], path))


def _v73(path) -> DataError:
    return DataError("MATLAB v7.3 (HDF5) file; reading it needs h5py", path=path,
                     fix="re-save it as v5/v7 in MATLAB/Octave (`save -v7 FILE X y`) or convert it to CSV")


def _permutations(variables, found, n_rows: int, path) -> np.ndarray | None:
    """Permutation matrices as 0-based (n_permutations, n_rows) rows; odd ones are skipped."""
    for name in _PERMUTATION_VARS:
        if name not in found:
            continue
        p = np.asarray(variables[found[name]]).astype(np.int64)
        if p.ndim == 2 and p.shape[0] == n_rows and p.shape[1] != n_rows:
            p = p.T
        if p.ndim == 2 and p.shape[1] == n_rows and p.size:
            if p.min() == 1 and p.max() == n_rows:  # MATLAB indices are 1-based
                p = p - 1
            if np.array_equal(np.sort(p, axis=1), np.broadcast_to(np.arange(n_rows), p.shape)):
                return np.ascontiguousarray(p)
        warnings.warn(f"{path}: variable {found[name]} is not a set of row permutations; ignored", stacklevel=4)
    return None


_DELIMITED = ("dense", "csv", "csv_header", "tsv_header")
_READERS = {
    "libsvm": _read_libsvm,
    "dense": _read_dense,
    "csv": _read_csv,
    "csv_header": _read_csv_header,
    "tsv_header": _read_tsv_header,
    "mat": _read_mat,
}


def _read_table(path, *, classes, n_classes, label_column, positive_class, features) -> Dataset:
    """A parquet file or folder, read in row batches into one in-memory dataset."""
    table = open_table(path, label_column=label_column, features=features)
    y, label_map = encode_labels(table.labels(), classes=classes, n_classes=n_classes, positive_class=positive_class,
                                 path=path)
    X = np.concatenate([X for X, _ in table.batches()]) if len(y) else np.empty((0, len(table.features)))
    return Dataset(X=np.ascontiguousarray(X), y=y, label_map=label_map, fmt="parquet", path=path, sha256=table.sha256,
                   feature_names=list(table.features))


# --------------------------------------------------------------------------------------------
# checks shared by all formats


def _check_finite(parsed: _Parsed, path) -> None:
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
    raise DataError(f"non-finite feature value {value!r}", path=path, row=parsed.line_of(row),
                    column=parsed.column_of(col), fix="impute or drop missing/infinite values before ingesting")
