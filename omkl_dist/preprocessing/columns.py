"""A table's raw columns as numeric features: missing values imputed, text columns encoded.

:class:`ColumnEncoder` is the first step of a model's preprocessing (the :class:`~.scaler.Scaler`
is the second): fitted on the training table, it turns any table with the same columns -- a pandas
DataFrame, a ``{name: values}`` mapping, or rows in the fitted column order -- into the float64
matrix the model was trained on. The work is scikit-learn's: ``SimpleImputer`` fills the missing
values, ``OneHotEncoder`` or ``OrdinalEncoder`` encodes the text columns. What they learn (the fill
values and the categories) is saved as JSON, not pickled, and the loaded encoder is rebuilt from it
by fitting the same scikit-learn objects on the recorded values, which gives them the same state.

Output columns: the numeric columns in their order, then each text column's encoding in order
(one-hot: one 0/1 column per category, named ``column_category``; ordinal: one column holding the
category's index in sorted order) -- scikit-learn's ``ColumnTransformer`` order.

Example
-------
>>> import numpy as np
>>> table = {"age": np.array([30.0, np.nan, 50.0]), "plan": np.array(["basic", "pro", None], dtype=object)}
>>> encoder = ColumnEncoder(categorical="one-hot", impute="mean").fit(table)
>>> encoder.feature_names_out_
['age', 'plan_basic', 'plan_pro']
>>> encoder.transform(table)
array([[30.,  1.,  0.],
       [40.,  0.,  1.],
       [50.,  1.,  0.]])
>>> ColumnEncoder.from_dict(encoder.to_dict()).transform({"plan": ["gold"], "age": [20]})
array([[20.,  0.,  0.]])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["CATEGORICAL", "IMPUTE", "ColumnEncoder", "match_features"]

CATEGORICAL = ("one-hot", "ordinal")
IMPUTE = ("mean", "median", "most_frequent")
_FORMAT = "omkl_dist.preprocessing.ColumnEncoder"
_FORMAT_VERSION = 1
_IMPUTE_FIX = "fill it with --impute mean, median or most_frequent (impute=...), or drop those rows"


class ColumnEncoder:
    """Impute and encode a table's columns into a float64 feature matrix (scikit-learn conventions:
    ``__init__`` stores the parameters, ``fit`` learns the attributes ending in ``_``).

    Parameters
    ----------
    categorical : {"one-hot", "ordinal"} or None
        How a text column becomes numbers: ``"one-hot"`` (a 0/1 column per category seen when
        fitting; a category not seen then is all zeros) or ``"ordinal"`` (the category's index in
        sorted order; one not seen then is -1). None: a text column is an error naming it.
    impute : {"mean", "median", "most_frequent"} or None
        How a missing value (an empty field, ``NA``, None, NaN) is filled: with the numeric column's
        mean, median or most frequent value over the fitted rows; a text column takes its most
        frequent category whatever the strategy. None: a missing value is an error naming its column.

    Attributes
    ----------
    feature_names_in_ : list of str
        The raw columns, in the fitted order.
    numeric_, text_ : list of str
        The numeric and the text (categorical) columns.
    statistics_ : ndarray of float64 or None
        The fill value of each numeric column (with ``impute``).
    fill_ : list of str or None
        The fill category of each text column (with ``impute``).
    categories_ : list of list of str
        The categories of each text column, sorted.
    feature_names_out_ : list of str
        The output columns.
    """

    def __init__(self, categorical: str | None = None, impute: str | None = None):
        self.categorical = categorical
        self.impute = impute

    def __repr__(self) -> str:
        return f"ColumnEncoder(categorical={self.categorical!r}, impute={self.impute!r})"

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, table) -> ColumnEncoder:
        """Learn the columns' kinds, fill values and categories from ``table``.

        Parameters
        ----------
        table : pandas.DataFrame or mapping of str to 1-D array
            The training columns, by name.

        Returns
        -------
        ColumnEncoder
            ``self``.

        Raises
        ------
        ValueError
            A text column without ``categorical``, a missing value without ``impute`` (the column,
            the number of rows and the first one named, with the option that fixes it).
        """
        from sklearn.impute import SimpleImputer

        self._check_params()
        names, columns = _named_columns(table)
        text = [name for name, column in zip(names, columns) if _is_text(column)]
        if text and self.categorical is None:
            column = columns[names.index(text[0])]
            example = next(str(v) for v in column if not _missing(v))
            raise ValueError(
                f"column {text[0]!r} holds text ({example!r}), not numbers; encode it with --categorical one-hot or "
                f"ordinal (categorical=...), or leave it out (--features -{text[0]})"
            )
        numeric = [name for name in names if name not in text]
        by_name = dict(zip(names, columns))
        _refuse_other_kinds(numeric, [by_name[n] for n in numeric])
        numbers = _numbers([by_name[n] for n in numeric], numeric)
        words = _words([by_name[n] for n in text], text)
        statistics = fill = None
        if self.impute is None:
            _refuse_missing(numbers, numeric)
            _refuse_missing(words, text)
        else:
            if numeric:
                statistics = SimpleImputer(strategy=self.impute, keep_empty_features=True).fit(numbers).statistics_
            if text:
                fill = [str(v) for v in _text_imputer(words).statistics_]
        categories = None
        if text:
            filled = words if fill is None else _as_words(_text_imputer(words).transform(words))
            categories = [[str(c) for c in cats] for cats in self._encoder("auto").fit(filled).categories_]
        self._set_state(names, numeric, text, statistics, fill, categories)
        return self

    def _set_state(self, names, numeric, text, statistics, fill, categories) -> None:
        """The fitted attributes, and the scikit-learn objects that apply them, built by fitting on
        the recorded values (one row of them): what :meth:`from_dict` rebuilds is what ``fit`` made."""
        from sklearn.impute import SimpleImputer

        self.feature_names_in_, self.numeric_, self.text_ = list(names), list(numeric), list(text)
        self.statistics_ = None if statistics is None else np.asarray(statistics, dtype=np.float64)
        self.fill_ = None if fill is None else list(fill)
        self.categories_ = [] if categories is None else [list(c) for c in categories]
        self._numeric_imputer = None
        if self.statistics_ is not None:
            imputer = SimpleImputer(strategy=self.impute, keep_empty_features=True)
            self._numeric_imputer = imputer.fit(self.statistics_[None, :])
        self._text_imputer = None if self.fill_ is None else _text_imputer(np.array([self.fill_], dtype=object))
        self._encoder_ = None
        if self.text_:
            first = np.array([[c[0] for c in self.categories_]], dtype=object)
            self._encoder_ = self._encoder(self.categories_).fit(first)
        encoded = [] if self._encoder_ is None else [str(n) for n in self._encoder_.get_feature_names_out(self.text_)]
        self.feature_names_out_ = self.numeric_ + encoded

    def _encoder(self, categories):
        from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

        if self.categorical == "one-hot":
            return OneHotEncoder(categories=categories, handle_unknown="ignore", sparse_output=False, dtype=np.float64)
        return OrdinalEncoder(
            categories=categories, handle_unknown="use_encoded_value", unknown_value=-1, dtype=np.float64
        )

    def _check_params(self) -> None:
        if self.categorical is not None and self.categorical not in CATEGORICAL:
            raise ValueError(f"categorical must be one of {CATEGORICAL} or None, got {self.categorical!r}")
        if self.impute is not None and self.impute not in IMPUTE:
            raise ValueError(f"impute must be one of {IMPUTE} or None, got {self.impute!r}")

    # -- applying --------------------------------------------------------------------------------
    def transform(self, table) -> np.ndarray:
        """The float64 features of ``table``'s rows.

        Parameters
        ----------
        table : pandas.DataFrame, mapping of str to 1-D array, or 2-D array
            The fitted columns by name (in any order; no others), or rows in the fitted order.

        Returns
        -------
        ndarray of shape (n_rows, len(feature_names_out_)), float64

        Raises
        ------
        ValueError
            Not fitted, other columns, a number column holding text, or a missing value without ``impute``.
        """
        if not hasattr(self, "feature_names_in_"):
            raise ValueError("this ColumnEncoder is not fitted yet; call fit() before transform()")
        by_name = dict(zip(self.feature_names_in_, _columns_in_order(table, self.feature_names_in_)))
        numbers = _numbers([by_name[n] for n in self.numeric_], self.numeric_)
        words = _words([by_name[n] for n in self.text_], self.text_)
        if self.impute is None:
            _refuse_missing(numbers, self.numeric_)
            _refuse_missing(words, self.text_)
        parts = []
        if self.numeric_:
            parts.append(numbers if self._numeric_imputer is None else self._numeric_imputer.transform(numbers))
        if self.text_:
            filled = words if self._text_imputer is None else _as_words(self._text_imputer.transform(words))
            parts.append(self._encoder_.transform(filled))
        return np.ascontiguousarray(np.hstack(parts), dtype=np.float64)

    def fit_transform(self, table) -> np.ndarray:
        """``fit(table)`` then ``transform(table)``."""
        return self.fit(table).transform(table)

    # -- serialisation ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The fitted encoder as a JSON-able dict (no pickle): its options, columns, fill values and
        categories.

        Raises
        ------
        ValueError
            Not fitted.
        """
        if not hasattr(self, "feature_names_in_"):
            raise ValueError("this ColumnEncoder is not fitted yet; call fit() before to_dict()")
        return {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "categorical": self.categorical,
            "impute": self.impute,
            "columns": list(self.feature_names_in_),
            "text": list(self.text_),
            "statistics": None if self.statistics_ is None else [float(v) for v in self.statistics_],
            "fill": self.fill_,
            "categories": self.categories_,
        }

    @classmethod
    def from_dict(cls, d: dict) -> ColumnEncoder:
        """The encoder :meth:`to_dict` described.

        Raises
        ------
        ValueError
            Not a ColumnEncoder dict, another version, or inconsistent state.
        """
        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise ValueError(f"not a serialised ColumnEncoder (expected format {_FORMAT!r})")
        if d.get("version") != _FORMAT_VERSION:
            raise ValueError(f"ColumnEncoder format version {d.get('version')!r} is not supported")
        encoder = cls(categorical=d.get("categorical"), impute=d.get("impute"))
        encoder._check_params()
        try:
            names, text = [str(n) for n in d["columns"]], [str(n) for n in d["text"]]
            statistics, fill, categories = d["statistics"], d["fill"], d["categories"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"serialised ColumnEncoder is missing {exc}") from None
        numeric = [n for n in names if n not in text]
        if not set(text) <= set(names) or len(set(names)) != len(names):
            raise ValueError(f"serialised ColumnEncoder's text columns {text} are not among its columns {names}")
        if (statistics is None) != (encoder.impute is None or not numeric) or (
            statistics is not None and len(statistics) != len(numeric)
        ):
            raise ValueError("serialised ColumnEncoder's statistics do not match its numeric columns and impute")
        if (fill is None) != (encoder.impute is None or not text) or (fill is not None and len(fill) != len(text)):
            raise ValueError("serialised ColumnEncoder's fill values do not match its text columns and impute")
        if len(categories) != len(text) or not all(categories) or (text and encoder.categorical is None):
            raise ValueError("serialised ColumnEncoder's categories do not match its text columns")
        encoder._set_state(names, numeric, text, statistics, fill, categories)
        return encoder


def match_features(expected: Sequence[str], given: Sequence[str]) -> list[int]:
    """The position in ``given`` of each name of ``expected``: how to reorder columns named
    ``given`` into a model's feature order.

    Raises
    ------
    ValueError
        The two are not the same names: the missing and the extra ones are named.
    """
    if set(expected) != set(given) or len(given) != len(expected):
        detail = names_differ(expected, given)
        raise ValueError(f"the columns are not the model's features ({detail}); the model takes {list(expected)}")
    position = {name: i for i, name in enumerate(given)}
    return [position[name] for name in expected]


def names_differ(expected: Sequence[str], given: Sequence[str]) -> str:
    """How the names ``given`` differ from a model's ``expected`` ones: ``missing [...]; not the model's
    [...]``, only the parts that apply ("a name repeats" when neither does)."""
    missing = [n for n in expected if n not in given]
    extra = [n for n in given if n not in expected]
    parts = [f"missing {missing}" if missing else "", f"not the model's {extra}" if extra else ""]
    return "; ".join(p for p in parts if p) or "a name repeats"


def _named_columns(table) -> tuple[list[str], list[np.ndarray]]:
    """``(names, 1-D arrays)`` of a DataFrame or a mapping."""
    if hasattr(table, "columns") and not isinstance(table, np.ndarray):  # a pandas DataFrame
        return [str(c) for c in table.columns], [np.asarray(table[c]) for c in table.columns]
    if isinstance(table, Mapping):
        return [str(k) for k in table], [np.asarray(v) for v in table.values()]
    raise ValueError(
        f"a table to fit is a pandas DataFrame or a mapping of column names to values, got {type(table).__name__}"
    )


def _columns_in_order(table, names: list[str]) -> list[np.ndarray]:
    """``table``'s columns in the order ``names``: matched by name, or a 2-D array's columns as they are."""
    if isinstance(table, Mapping) or (hasattr(table, "columns") and not isinstance(table, np.ndarray)):
        given, columns = _named_columns(table)
        return [columns[i] for i in match_features(names, given)]
    rows = np.asarray(table, dtype=object)
    if rows.ndim != 2 or rows.shape[1] != len(names):
        raise ValueError(f"expected rows of the {len(names)} columns {names}, got an array of shape {rows.shape}")
    return list(rows.T)


def _missing(value) -> bool:
    """None, NaN or pandas' NA."""
    return (
        value is None
        or (isinstance(value, (float, np.floating)) and value != value)
        or type(value).__name__
        in (
            "NAType",
            "NaTType",
        )
    )


def _is_text(column: np.ndarray) -> bool:
    """A column of words: strings, or objects that are not all numbers (missing values aside)."""
    if column.dtype.kind in "US":
        return True
    if column.dtype.kind != "O":
        return False
    return any(not isinstance(v, (int, float, np.number)) for v in column if not _missing(v))


# numpy kinds that are neither numbers nor text: dates and times, durations, complex numbers, raw records
_OTHER_KINDS = {"M": "dates/times", "m": "durations", "c": "complex numbers", "V": "raw records"}


def _refuse_other_kinds(names: list[str], columns: list[np.ndarray]) -> None:
    """A column of dates, durations, ... is an error naming it when fitting (``float()`` of a date
    failed with "holds numbers, but row 1 holds '2024-01-01T00:00'... as in the data the model was
    fitted on", of a model not yet fitted)."""
    for name, column in zip(names, columns):
        if column.dtype.kind in _OTHER_KINDS:
            raise ValueError(
                f"column {name!r} holds {_OTHER_KINDS[column.dtype.kind]} ({column.dtype}), neither numbers nor "
                f"text; leave it out (--features -{name}, or drop it from the table) or turn it into numbers first "
                "(a date: e.g. days since a fixed day, or its weekday and hour)"
            )


def _numbers(columns: list[np.ndarray], names: list[str]) -> np.ndarray:
    """The number columns as one float64 matrix, missing values as NaN; text in one is an error."""
    n = len(columns[0]) if columns else 0
    out = np.empty((n, len(columns)))
    for j, (column, name) in enumerate(zip(columns, names)):
        if column.dtype.kind in "biuf":
            out[:, j] = column
            continue
        for i, value in enumerate(column):
            if _missing(value):
                out[i, j] = np.nan
                continue
            try:
                out[i, j] = float(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"column {name!r} holds numbers, but row {i + 1} holds {str(value)!r}; "
                    "give the column numbers, as in the data the model was fitted on"
                ) from None
    return out


def _words(columns: list[np.ndarray], names: list[str]) -> np.ndarray:
    """The text columns as one object matrix of str, missing values as NaN (what SimpleImputer finds)."""
    n = len(columns[0]) if columns else 0
    out = np.empty((n, len(columns)), dtype=object)
    for j, (column, name) in enumerate(zip(columns, names)):
        out[:, j] = [np.nan if _missing(v) else _word(v, name, i) for i, v in enumerate(column)]
    return out


def _word(value, name: str, i: int) -> str:
    """A text value as str: a number as its str; bytes (a parquet column of binary type, a CSV's text
    pyarrow found not to be UTF-8) decoded as UTF-8 -- ``str(b'Paris')`` would be the category
    "b'Paris'", which no str matches; a list or mapping is an error."""
    if isinstance(value, (list, tuple, dict, set, np.ndarray)):  # (its str() would be a category no row has)
        raise ValueError(f"column {name!r} holds {type(value).__name__} {str(value)[:40]!r} in row {i + 1}, not text")
    if not isinstance(value, bytes):
        return str(value)
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"column {name!r} holds {value[:40]!r} in row {i + 1}, which is not UTF-8 text; save the table's "
            "text as UTF-8 (a CSV file: e.g. `iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.utf8`)"
        ) from None


def _as_words(values: np.ndarray) -> np.ndarray:
    """Imputed text as str objects (an all-missing column is filled with 0 by scikit-learn)."""
    return np.asarray(values).astype(str).astype(object)


def _text_imputer(words: np.ndarray):
    from sklearn.impute import SimpleImputer

    return SimpleImputer(strategy="most_frequent", keep_empty_features=True).fit(words)


def _refuse_missing(values: np.ndarray, names: list[str]) -> None:
    """Without ``impute``: the first column with a missing value is an error (how many rows, the first)."""
    for j, name in enumerate(names):
        column = values[:, j]
        holes = np.flatnonzero(np.isnan(column) if column.dtype.kind == "f" else [_missing(v) for v in column])
        if len(holes):
            rows = "1 row" if len(holes) == 1 else f"{len(holes)} rows"
            raise ValueError(
                f"column {name!r} has a missing value in {rows} (data row {holes[0] + 1} first); {_IMPUTE_FIX}"
            )
