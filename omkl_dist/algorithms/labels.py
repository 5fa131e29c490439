"""The one label coding: a label replaced by the code at its class's position.

The engines learn binary labels as -1/+1 (``classes[1]`` is +1) and multi-class labels as indices
into the sorted classes (:func:`class_codes`); a saved model's label map turns the user's labels
into the internal ones it was trained on, and back (:func:`recode`, used by
:class:`omkl_dist.model.Model`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

BINARY_CODES = np.array([-1, 1])


def recode(y: ArrayLike, labels: ArrayLike, codes: ArrayLike) -> NDArray[Any]:
    """``y`` with each of the distinct ``labels`` (in any order) replaced by the code at its position.

    Parameters
    ----------
    y : array-like of shape (n,)
        Values, each one of ``labels``.
    labels : array-like of shape (k,)
        Distinct labels.
    codes : array-like of shape (k,)
        The code of each label.

    Returns
    -------
    ndarray of shape (n,)
        The codes, of the dtype of ``codes``.

    Raises
    ------
    ValueError
        A value of ``y`` is not one of ``labels`` (the first such value is named).
    """
    y, labels, codes = np.asarray(y), np.asarray(labels), np.asarray(codes)
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    at = np.minimum(np.searchsorted(ordered, y), len(ordered) - 1)
    known = ordered[at] == y
    if not np.all(known):
        bad = y[~known][0]
        bad = bad.item() if isinstance(bad, np.generic) else bad
        raise ValueError(f"label {bad!r} is not one of {labels.tolist()}")
    return codes[order][at]


def class_codes(y: ArrayLike, classes: ArrayLike, *, multiclass: bool) -> NDArray[np.float64]:
    """Labels as the engines learn them: class indices into the sorted ``classes`` (``multiclass``),
    else -1 for ``classes[0]`` and +1 for ``classes[1]``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels, each one of ``classes``.
    classes : array-like of shape (k,)
        The model's classes, sorted (two when not ``multiclass``).
    multiclass : bool
        Whether the model has a coefficient per class (K > 2 classes, or OM-2 on any).

    Returns
    -------
    ndarray of shape (n,), float64
    """
    codes = np.arange(np.size(classes)) if multiclass else BINARY_CODES
    return recode(y, classes, codes).astype(np.float64)
