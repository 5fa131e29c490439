"""MATLAB v5 (or v4) ``.mat`` files: ``X`` and ``y``, or ``data`` with the label in column 1."""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import DataError
from .dataset import SPARSE_MIN_FEATURES, ParsedFile
from .detect import is_hdf5
from .textio import empty_file_error

_PERMUTATION_VARS = ("id_all", "id_list")


def read_mat(content: bytes, path: Path, sparse: bool | None = None) -> ParsedFile:
    import scipy.io
    import scipy.sparse

    if is_hdf5(content):
        raise _v73(path)
    try:
        variables = scipy.io.loadmat(io.BytesIO(content))
    except NotImplementedError:  # scipy's answer to v7.3
        raise _v73(path) from None
    except Exception as exc:  # scipy raises many kinds for damaged files
        raise DataError(
            f"unreadable .mat file ({type(exc).__name__}: {exc})",
            path=path,
            fix="re-save it from MATLAB/Octave with `save -v7 FILE X y`",
        ) from None
    found = {k.lower(): k for k in variables if not k.startswith("__")}
    if "x" in found and "y" in found:
        X, y = variables[found["x"]], variables[found["y"]]
        if scipy.sparse.issparse(X):
            keep = X.shape[1] >= SPARSE_MIN_FEATURES if sparse is None else bool(sparse)
            X = X.tocsr() if keep else X.toarray()
        y = np.asarray(y).ravel()
        X = X if scipy.sparse.issparse(X) else np.asarray(X)
        if X.ndim != 2 or X.shape[0] != y.shape[0]:
            raise DataError(
                f"X has shape {X.shape} but y has {y.shape[0]} labels",
                path=path,
                fix="store X as rows x features with one label per row in y",
            )
    elif "data" in found:
        data = variables[found["data"]]
        data = data.toarray() if scipy.sparse.issparse(data) else np.asarray(data)
        if data.ndim != 2 or data.shape[1] < 2:
            raise DataError(
                f"variable data has shape {data.shape}; expected the label plus features",
                path=path,
                fix="store data as rows x (1 + features) with the label in column 1",
            )
        X, y = data[:, 1:], data[:, 0]
    else:
        raise DataError(
            f"no X and y (or data) variables; found {sorted(found.values())}",
            path=path,
            fix="save the features as X (rows x features) and labels as y, or a single `data` "
            "matrix with the label in column 1",
        )
    if X.shape[0] == 0:
        raise empty_file_error(path)
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise DataError(f"features are of type {X.dtype}, not numbers", path=path, fix="store numeric features")
    return ParsedFile(
        X=X.astype(np.float64),
        y_raw=np.asarray(y),
        line_of=lambda i: i + 1,
        column_of=lambda j: str(j + 1),
        permutations=_permutations(variables, found, X.shape[0], path),
    )


def _v73(path: Path) -> DataError:
    return DataError(
        "MATLAB v7.3 (HDF5) file; reading it needs h5py",
        path=path,
        fix="re-save it as v5/v7 in MATLAB/Octave (`save -v7 FILE X y`) or convert it to CSV",
    )


def _permutations(
    variables: dict[str, Any], found: dict[str, str], n_rows: int, path: Path
) -> NDArray[np.int64] | None:
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
