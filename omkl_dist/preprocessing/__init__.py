"""What a model does to a raw row before its estimator sees it, fitted on the training data and
serialisable without pickle: :class:`ColumnEncoder` turns a table's columns into numbers (missing
values imputed, text columns encoded), then :class:`Scaler` scales them.

Modules: :mod:`.columns` (:class:`ColumnEncoder`, on scikit-learn's ``SimpleImputer``,
``OneHotEncoder`` and ``OrdinalEncoder``) and :mod:`.scaler` (:class:`Scaler`).
"""

from .columns import CATEGORICAL, IMPUTE, ColumnEncoder, match_features
from .scaler import METHODS, Scaler

__all__ = ["CATEGORICAL", "IMPUTE", "METHODS", "ColumnEncoder", "Scaler", "match_features"]
