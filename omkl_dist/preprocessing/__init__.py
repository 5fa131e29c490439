"""What a model does to a raw row before its estimator sees it, fitted on the training data and
serialisable without pickle: :class:`ColumnEncoder` turns a table's columns into numbers (missing
values imputed, text columns encoded), then :class:`Scaler` scales them.

Modules: :mod:`.columns` (:class:`ColumnEncoder`, on scikit-learn's ``SimpleImputer``,
``OneHotEncoder`` and ``OrdinalEncoder``), :mod:`.scaler` (:class:`Scaler`) and :mod:`.head` (:func:`fit_head`:
a job's scaler fitted on its stream's head, with the settings decided there).
"""

from .columns import CATEGORICAL, IMPUTE, ColumnEncoder, match_features, names_differ
from .head import fit_head
from .scaler import METHODS, Scaler

__all__ = ["CATEGORICAL", "IMPUTE", "METHODS", "ColumnEncoder", "Scaler", "fit_head", "match_features", "names_differ"]
