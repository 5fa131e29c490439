"""Read a labelled dataset file into memory: LIBSVM, dense text, CSV/TSV or MATLAB v5 ``.mat``.

Formats (``fmt``):

``"libsvm"``
    ``label idx:value ...`` with 1-based feature indices (0-based with ``zero_based=True``);
    ``n_features`` is the largest index seen. ``#`` starts a comment. A file with at least
    :data:`SPARSE_MIN_FEATURES` features (rcv1: 47,236 at 0.16 % non-zero) is returned as a
    ``scipy.sparse.csr_matrix``; narrower ones are densified as always (``sparse=`` overrides the
    choice).
``"dense"``
    Whitespace (spaces or tabs) separated numbers, label first, no header. An optional first
    line ``"N D"`` giving the row and feature counts (as in ``madelon_train``) is skipped.
``"csv"``
    Comma separated (``", "`` too), label first, no header.
``"csv_header"`` / ``"tsv_header"``
    Comma / tab separated with a header row. The label column is the first one named
    ``target`` (PMLB), ``label``, ``class`` or ``y`` (any case), otherwise the first column -- the
    rule of parquet tables too. With ``features``, ``categorical`` or ``impute`` the columns are
    read by name, as a parquet table's (text columns encoded, missing values filled).
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

Modules: one per format (:mod:`.libsvm`, :mod:`.delimited` for dense/CSV/TSV text, :mod:`.mat`,
:mod:`.parquet`), :mod:`.textio` (bytes in: gzip, lines), :mod:`.detect` (which format a file is),
:mod:`.dataset` (the records) and :mod:`.dispatch` (:func:`read_dataset`).
"""

from .dataset import FORMATS, SPARSE_MIN_FEATURES, Dataset
from .detect import detect_format
from .dispatch import column_names, read_dataset

__all__ = ["FORMATS", "SPARSE_MIN_FEATURES", "Dataset", "column_names", "detect_format", "read_dataset"]
