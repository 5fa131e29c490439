"""A fitted estimator with everything its raw rows and its user's labels need: one model artifact.

:class:`Model` is what :func:`~omkl_dist.persistence.save_model` writes and
:func:`~omkl_dist.persistence.load_model` returns, whoever trained it (``omkl run --model-out``,
``omkl submit``, ``omkl retrain``, a notebook): the estimator, the scaler fitted on its training
rows, the label map from the user's labels to the internal ones it learnt (-1/+1, or 0..K-1),
the names of its features and the job that made it. It predicts from raw features in the user's
labels -- what ``omkl predict`` writes, row for row -- and keeps learning from raw rows
(:meth:`Model.partial_fit`), so a serving process needs nothing else.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if

from ._validation import as_float_array
from .algorithms.labels import recode
from .preprocessing import match_features
from .storage.labels import canonical


class Model(ClassifierMixin, BaseEstimator):
    """A fitted estimator that takes raw features and speaks the user's labels.

    Parameters
    ----------
    estimator : fitted classifier
        One of omkl-dist's estimators (or any scikit-learn classifier with ``classes_``).
    scaler : Scaler, optional
        The :class:`~omkl_dist.preprocessing.Scaler` fitted on the training rows; applied to every
        row before the estimator sees it. None: the rows are used as given.
    columns : ColumnEncoder, optional
        The :class:`~omkl_dist.preprocessing.ColumnEncoder` fitted on the training table: a raw row
        (a DataFrame's columns by name, or values in its column order) is imputed and encoded by
        it, then scaled. None: the rows are numbers already.
    label_map : list of [original, internal] pairs, optional
        The user's label of each of the estimator's classes (as a dataset's ``label_map``). None:
        the estimator's own classes are the labels.
    feature_names : list of str, optional
        The feature columns in the estimator's order (with ``columns``: the encoded ones); a
        DataFrame is matched to them by name. None: the estimator's ``feature_names_in_`` when it
        was fitted on a DataFrame.
    job : dict, optional
        The JSON-able record of the job that trained the model (kept as given).
    label_name : str, optional
        The name of the training table's label column (None: unnamed or unknown). ``omkl predict``
        reads a named table's labels from the column of this name, and rows without it as unlabelled.

    Attributes
    ----------
    classes_ : ndarray
        The user's labels, in the estimator's class order.
    n_features_in_ : int
        Features per row.
    feature_names_in_ : ndarray of str
        ``feature_names`` (defined only when the model has them).

    Examples
    --------
    >>> import numpy as np
    >>> from omkl_dist import OMKC
    >>> from omkl_dist.model import Model
    >>> X = np.random.default_rng(0).standard_normal((40, 2))
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> model = Model(OMKC().fit(X, y), label_map=[["stay", -1], ["churn", 1]], feature_names=["a", "b"])
    >>> model.classes_.tolist()
    ['stay', 'churn']
    >>> model.predict(X[:2]).tolist()
    ['churn', 'churn']
    """

    def __init__(
        self, estimator, *, scaler=None, columns=None, label_map=None, feature_names=None, job=None, label_name=None
    ):
        self.estimator = estimator
        self.scaler = scaler
        self.columns = columns
        self.label_map = label_map
        self.feature_names = feature_names
        self.job = job
        self.label_name = label_name

    # --- derived from the estimator (properties: they follow it as it keeps learning) --------
    @property
    def classes_(self) -> NDArray[Any]:
        return self._to_user(self.estimator.classes_)

    @property
    def n_features_in_(self) -> int:
        return int(self.estimator.n_features_in_)

    @property
    def feature_names_in_(self) -> NDArray[Any]:
        names = self._names()
        if names is None:
            raise AttributeError("the model has no feature names (it was trained on unnamed columns)")
        return np.asarray(names, dtype=object)

    @property
    def raw_names(self) -> list[str] | None:
        """The columns a raw row goes by: the column encoder's inputs, else the feature names (None:
        unnamed columns)."""
        if self.columns is not None:
            return list(self.columns.feature_names_in_)
        return self._names()

    def _names(self) -> list[str] | None:
        """``feature_names``, else those the estimator learnt from a DataFrame (a bare estimator fitted on
        one and saved lost them: the loaded model took the columns of any DataFrame in any order)."""
        if self.feature_names is not None:
            return list(self.feature_names)
        names = getattr(self.estimator, "feature_names_in_", None)
        return None if names is None else [str(n) for n in names]

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self.estimator, "classes_")

    # --- prediction and learning --------------------------------------------------------------
    def decision_function(self, X) -> NDArray[np.float64]:
        """The estimator's scores of the raw rows ``X`` (positive: ``classes_[1]``; (n, K) for K > 2 classes)."""
        return self.estimator.decision_function(self._rows(X))

    def predict(self, X) -> NDArray[Any]:
        """The user's label of each raw row of ``X``."""
        return self._to_user(self.estimator.predict(self._rows(X)))

    @available_if(lambda model: hasattr(model.estimator, "predict_proba"))
    def predict_proba(self, X) -> NDArray[np.float64]:
        """The estimator's class probabilities of the raw rows ``X``, (n, K): column j is the
        probability of ``classes_[j]`` (the user's labels, in the estimator's class order). Available
        when the estimator has calibrated probabilities (the online classifiers, see
        :meth:`omkl_dist.algorithms.base.OnlineKernelClassifier.predict_proba`)."""
        proba: NDArray[np.float64] = self.estimator.predict_proba(self._rows(X))
        return proba

    def partial_fit(self, X, y: ArrayLike, classes: ArrayLike | None = None) -> Self:
        """Continue learning from raw rows ``X`` with the user's labels ``y`` (``classes``: every
        user label, for an estimator's first call on a batch that lacks some)."""
        internal = None if classes is None else self._to_internal(classes)
        self.estimator.partial_fit(self._rows(X), self._to_internal(y), classes=internal)
        return self

    def transform(self, X):
        """The rows as the estimator takes them: columns matched by name (a DataFrame), imputed and
        encoded (``columns``), then scaled."""
        rows = self._by_name(X) if self.columns is None else self.columns.transform(X)
        return rows if self.scaler is None else self.scaler.transform(rows)

    def _rows(self, X):
        """:meth:`transform`'s rows as the estimator was fitted on them: an estimator fitted on a DataFrame
        (``feature_names_in_``) gets one with its column names (an array would be warned of)."""
        rows = self.transform(X)
        names = getattr(self.estimator, "feature_names_in_", None)
        if names is None or not isinstance(rows, np.ndarray):
            return rows
        import pandas as pd

        return pd.DataFrame(rows, columns=names)

    # --- the user's side ----------------------------------------------------------------------
    def _by_name(self, X):
        """A DataFrame's columns in the model's feature order (refused unless they are the same
        names); any other input as given (the estimator checks its width)."""
        columns = getattr(X, "columns", None)
        if columns is None:
            return X
        names, owner = self._names(), type(self.estimator).__name__
        if names is None:
            return as_float_array(X, owner)
        order = match_features(names, [str(c) for c in columns])
        return as_float_array(X, owner)[:, order]

    def _to_user(self, internal: ArrayLike) -> NDArray[Any]:
        if self.label_map is None:
            return np.asarray(internal)
        originals, internals = zip(*self.label_map, strict=True)
        return recode(internal, internals, np.asarray(originals))

    def _to_internal(self, y: ArrayLike) -> NDArray[Any]:
        if self.label_map is None:
            return np.asarray(y)
        originals, internals = zip(*self.label_map, strict=True)
        y = np.asarray(y)
        if all(isinstance(o, str) for o in originals) and y.dtype.kind != "U":
            # a dataset's labels are stored as canonical text ("1" for 1.0): numbers are looked up so
            y = np.array([canonical(v) for v in y.tolist()], dtype=str)
        return recode(y, np.asarray(originals), np.asarray(internals))
