"""Feature scaling fitted on a training split or on a stream prefix, serialisable without pickle.

:class:`Scaler` follows the scikit-learn estimator conventions: ``__init__`` only stores
parameters, learned state ends in ``_``, ``fit`` starts over, ``partial_fit`` accumulates.

Methods
-------
``"none"``
    ``transform`` returns a float64 copy (the fit only records the feature count).
``"minmax"``
    ``lo + (hi - lo) * (x - min_) / (max_ - min_)`` with ``feature_range=(lo, hi)``, default
    ``(0, 1)``: the fitted data map onto ``[lo, hi]`` (later data may fall outside). Several MKL
    papers scale to ``[-1, 1]``; pass ``feature_range=(-1, 1)`` for that.
``"standard"``
    ``(x - mean_) / sqrt(var_)`` with the population variance (``ddof=0``, as scikit-learn).

Constant columns. A column constant on the fitted data (range or variance 0) is mapped to
``x - c`` where ``c`` is its fitted value (``min_`` or ``mean_``): the fitted constant becomes 0 and
values seen later are shifted but not scaled. This is scikit-learn's convention of treating a zero
range or variance as 1 (identical results for ``"standard"`` and for ``"minmax"`` with the default
range), except that minmax ignores ``feature_range`` for such a column so that it maps to 0 for any
range. It matters for stream prefixes: a sparse feature that is all zero in the prefix still
passes through (as-is) when it appears later, instead of being dropped or blown up.

Streaming statistics. ``partial_fit`` keeps running minima/maxima and, for ``"standard"``, the
count, mean and sum of squared deviations ``m2_`` of each block merged with the pairwise update of
Chan, Golub and LeVeque (1979), so fitting block by block equals fitting at once to rounding
(~1e-12 relative) without the cancellation of a sum-of-squares formula.

Sparse input. ``fit``/``partial_fit``/``fit_prefix``/``transform`` accept scipy.sparse matrices
(wide data such as rcv1, streamed from a csr dataset) and never densify them: the statistics count
the implicit zeros (min/max exactly as on the dense rows, mean/m2 to rounding). ``transform`` of a
sparse X returns a float64 CSR matrix, which requires a transform that keeps 0 at 0 in every
column: always for ``"none"``; for ``"minmax"`` when every fitted minimum is 0 and the range starts
at 0 (e.g. non-negative tf-idf features scaled to ``[0, 1]``); for ``"standard"`` only when every
mean is 0. Anything else would turn the zeros into values -- a dense matrix -- and is refused with
a ``ValueError`` (see :meth:`Scaler.check_sparse_transform`).

Example
-------
>>> import numpy as np
>>> X = np.array([[1.0, 10.0], [3.0, 10.0], [5.0, 10.0]])
>>> s = Scaler("minmax").fit(X)
>>> s.transform(X)
array([[0. , 0. ],
       [0.5, 0. ],
       [1. , 0. ]])
>>> s2 = Scaler.from_dict(s.to_dict())
>>> np.array_equal(s2.transform(X), s.transform(X))
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from omkl_dist._validation import MAX_FEATURES, Satisfies, StrOptions, check_array, check_param, validate_params

__all__ = ["METHODS", "Scaler"]

METHODS = ("none", "minmax", "standard")
_FORMAT = "omkl_dist.preprocessing.Scaler"
_FORMAT_VERSION = 1

# Learned arrays per method (all float64, one value per feature).
_STATE_ARRAYS = {"none": (), "minmax": ("min_", "max_"), "standard": ("mean_", "m2_")}


def _feature_range(feature_range) -> tuple[float, float] | None:
    """``(lo, hi)`` as floats; None when it is not a pair of numbers."""
    try:
        lo, hi = (float(v) for v in feature_range)
    except (TypeError, ValueError):
        return None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"Scaler: feature_range must satisfy lo < hi (both finite), got {feature_range!r}")
    return lo, hi


def _sparse_min_max(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Per-column min and max of a CSR matrix, implicit zeros included, in O(nnz + d) memory."""
    n, d = X.shape
    lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
    np.minimum.at(lo, X.indices, X.data)
    np.maximum.at(hi, X.indices, X.data)
    has_zero = np.bincount(X.indices, minlength=d) < n  # a column with fewer entries than rows has zeros
    return np.where(has_zero, np.minimum(lo, 0.0), lo), np.where(has_zero, np.maximum(hi, 0.0), hi)


def _sparse_moments(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and sum of squared deviations of a CSR matrix, implicit zeros included: the
    stored values' deviations plus ``mean**2`` for every zero."""
    n, d = X.shape
    counts = np.bincount(X.indices, minlength=d)
    mean = np.bincount(X.indices, weights=X.data, minlength=d) / n
    dev = X.data - mean[X.indices]
    m2 = np.bincount(X.indices, weights=dev * dev, minlength=d) + (n - counts) * np.square(mean)
    return mean, m2


def _n_rows(X) -> int:
    return int(X.shape[0])


def _stack(pieces):
    return sp.vstack(pieces, format="csr") if sp.issparse(pieces[0]) else np.concatenate(pieces)


# rows per statistics merge in :meth:`Scaler.fit_prefix` (the Chan merge's bits depend on the pieces)
PREFIX_PIECE = 4096


class Scaler:
    """Per-feature scaling: ``"none"``, ``"minmax"`` (to ``feature_range``) or ``"standard"``.

    Parameters
    ----------
    method : {"none", "minmax", "standard"}
        Scaling method (validated when fitting).
    feature_range : tuple of float
        ``(lo, hi)`` target of ``"minmax"`` on the fitted data; default ``(0.0, 1.0)``.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen when fitting.
    n_seen_ : int
        Number of rows the statistics cover.
    min_, max_ : ndarray
        Per-feature minimum and maximum of the fitted data (``"minmax"``). Note: unlike
        scikit-learn's ``MinMaxScaler.min_``, ``min_`` here is the data minimum.
    mean_, var_, m2_ : ndarray
        Per-feature mean, population variance and sum of squared deviations (``"standard"``).
    scale_ : ndarray
        Per-feature divisor: ``max_ - min_`` (``"minmax"``) or ``sqrt(var_)`` (``"standard"``), with
        1.0 for constant columns (as scikit-learn's ``StandardScaler.scale_``).
    frozen_ : bool
        True after :meth:`freeze` or :meth:`fit_prefix`; :meth:`partial_fit` then refuses data.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(5.0, 2.0, size=(1000, 3))
    >>> s = Scaler("standard")
    >>> for block in np.array_split(X, 7):
    ...     _ = s.partial_fit(block)
    >>> bool(np.allclose(s.mean_, X.mean(axis=0), rtol=1e-12))
    True
    >>> Z = s.transform(X)
    >>> bool(np.allclose(Z.mean(axis=0), 0.0) and np.allclose(Z.std(axis=0), 1.0))
    True
    """

    _parameter_constraints = {
        "method": [StrOptions(METHODS)],
        "feature_range": [Satisfies(_feature_range, "a pair (lo, hi) of numbers")],
    }

    def __init__(self, method: str = "none", feature_range: tuple[float, float] = (0.0, 1.0)):
        self.method = method
        self.feature_range = feature_range

    def __repr__(self) -> str:
        extra = f", feature_range={tuple(self.feature_range)!r}" if self.method == "minmax" else ""
        return f"Scaler(method={self.method!r}{extra})"

    # -- fitting ---------------------------------------------------------------------------------

    def _reset(self) -> None:
        for name in (
            "n_features_in_",
            "n_seen_",
            "min_",
            "max_",
            "mean_",
            "m2_",
            "var_",
            "scale_",
            "frozen_",
            "_mul",
            "_add",
        ):
            self.__dict__.pop(name, None)

    def fit(self, X) -> "Scaler":
        """Fit the statistics on ``X`` alone, discarding any earlier state (also unfreezes).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Training data, finite values only.

        Returns
        -------
        Scaler
            ``self``.
        """
        validate_params(self, ["method"])
        self._reset()
        return self.partial_fit(X)

    def partial_fit(self, X) -> "Scaler":
        """Add the rows of ``X`` to the statistics (running min/max, or Chan-merged mean/m2).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Next block of data, finite values only. An empty block is a no-op once fitted.

        Returns
        -------
        Scaler
            ``self``.

        Raises
        ------
        ValueError
            Invalid parameters, a frozen scaler, a feature-count mismatch or non-finite values.
        """
        method = validate_params(self, ["method"])["method"]
        if method == "minmax":
            validate_params(self, ["feature_range"])
        if getattr(self, "frozen_", False):
            raise ValueError(
                f"this Scaler is frozen (fitted on the first {self.n_seen_} rows); "
                "call fit() to start over instead of partial_fit()"
            )
        fitted = hasattr(self, "n_features_in_")
        # sparse X stays CSR (never densified); row numbers in messages count from the stream's start
        X = check_array(
            X,
            owner="Scaler.partial_fit",
            sparse="csr",
            non_empty=False,
            contiguous=False,
            row_offset=self.n_seen_ if fitted else 0,
            finite_squares=False,  # scaling is the fix for values too large to square (standard: see below)
        )
        if fitted and X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but this Scaler was fitted with {self.n_features_in_} features"
            )
        if method != "none" and X.shape[1] > MAX_FEATURES:  # before any per-column statistic is allocated
            raise ValueError(
                f"Scaler: X has {X.shape[1]:,} feature columns, more than the {MAX_FEATURES:,} whose '{method}' "
                "statistics (8 bytes per column, several arrays) are kept; learn such wide sparse data unscaled "
                "(method 'none', --scaling none), or renumber its features over the ones that occur"
            )
        n_b, d = X.shape
        if not fitted:
            if n_b == 0:
                raise ValueError("partial_fit: cannot start fitting on an empty block (0 rows)")
            self.n_features_in_ = d
            self.n_seen_ = 0
        if n_b == 0:
            return self
        n_a = self.n_seen_
        if method == "minmax":
            lo, hi = _sparse_min_max(X) if sp.issparse(X) else (X.min(axis=0), X.max(axis=0))
            self.min_ = lo if n_a == 0 else np.minimum(self.min_, lo)
            self.max_ = hi if n_a == 0 else np.maximum(self.max_, hi)
        elif method == "standard":
            self.mean_, self.m2_ = self._merged_moments(X, n_a)
        self.n_seen_ = n_a + n_b
        self._derive()
        return self

    def _merged_moments(self, X, n_a: int) -> tuple[np.ndarray, np.ndarray]:
        """The running mean and m2 with the block ``X`` added: two-pass moments inside the block, then
        Chan et al.'s merge with the running moments (``n_a`` rows). A column whose moments overflow
        (finite values too large to square) is refused, naming it, before anything is kept."""
        n_b = X.shape[0]
        with np.errstate(over="ignore", invalid="ignore"):
            if sp.issparse(X):
                mean_b, m2_b = _sparse_moments(X)
            else:
                mean_b = X.mean(axis=0)
                m2_b = np.square(X - mean_b).sum(axis=0)
            if n_a == 0:
                mean, m2 = mean_b, m2_b
            else:
                n = n_a + n_b
                delta = mean_b - self.mean_
                mean = self.mean_ + delta * (n_b / n)
                m2 = self.m2_ + m2_b + np.square(delta) * (n_a * n_b / n)
        bad = np.flatnonzero(~(np.isfinite(mean) & np.isfinite(m2)))
        if len(bad):
            column = int(bad[0])
            largest = float(abs(X[:, [column]]).max())
            raise ValueError(
                f"Scaler: column {column} has values too large to standardise (up to {largest!r} in absolute "
                "value: their squares overflow float64); scale with 'minmax' instead (--scaling minmax), or "
                "divide that feature by a constant"
            )
        return mean, m2

    def fit_prefix(self, stream, n_rows: int) -> "Scaler":
        """Fit on the first ``n_rows`` rows of a stream of blocks, then :meth:`freeze`.

        Blocks are read in order until ``n_rows`` rows are covered; only the needed leading rows of
        the last block are used and no further block is requested (an iterator is left positioned
        after that block). The rows are folded into the statistics ``PREFIX_PIECE`` at a time
        whatever the stream's block size, so a job and a cluster run that read the same rows in
        blocks of other sizes get the same scaler, bit for bit.

        Parameters
        ----------
        stream : iterable
            Blocks ``(X, y)`` (a 2-tuple or 2-list; ``y`` is ignored) or bare ``X`` arrays (or
            scipy.sparse matrices, folded in without densifying).
        n_rows : int
            Prefix length, >= 1.

        Returns
        -------
        Scaler
            ``self``, frozen.

        Raises
        ------
        ValueError
            ``n_rows`` < 1, or the stream ends before ``n_rows`` rows.

        Examples
        --------
        >>> import numpy as np
        >>> blocks = [(np.full((4, 2), float(i)), np.ones(4)) for i in range(5)]
        >>> s = Scaler("minmax").fit_prefix(blocks, 6)
        >>> s.n_seen_, s.max_.tolist(), s.frozen_
        (6, [1.0, 1.0], True)
        """
        if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 1:
            raise ValueError(f"n_rows must be an integer >= 1, got {n_rows!r}")
        validate_params(self, ["method"])
        self._reset()
        needed = int(n_rows)
        held = []  # rows not yet folded in: statistics are merged in pieces of PREFIX_PIECE rows
        for block in stream:
            X = block[0] if isinstance(block, (tuple, list)) and len(block) == 2 else block
            X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"fit_prefix: blocks must be 2-D arrays (n_rows, n_features), got shape {X.shape}")
            take = X[:needed]
            held.append(take)
            needed -= _n_rows(take)
            if sum(_n_rows(h) for h in held) >= PREFIX_PIECE or needed == 0:
                rows = _stack(held) if len(held) > 1 else held[0]
                cut = _n_rows(rows) if needed == 0 else _n_rows(rows) - _n_rows(rows) % PREFIX_PIECE
                for lo in range(0, cut, PREFIX_PIECE):  # fixed pieces: the same bits for any block size
                    self.partial_fit(rows[lo : min(lo + PREFIX_PIECE, cut)])
                held = [rows[cut:]]
            if needed == 0:
                return self.freeze()
        seen = n_rows - needed
        raise ValueError(f"fit_prefix: the stream ended after {seen} rows, but n_rows={n_rows} were requested")

    def freeze(self) -> "Scaler":
        """Stop accumulating: later :meth:`partial_fit` calls raise (``fit`` still starts over).

        Guards an online run against folding evaluation rows into the statistics by mistake.
        """
        self._check_fitted("freeze")
        self.frozen_ = True
        return self

    def _derive(self) -> None:
        """Recompute ``scale_`` (and ``var_``, or minmax's affine map ``x * _mul + _add``)."""
        if self.method == "minmax":
            lo, hi = validate_params(self, ["feature_range"])["feature_range"]
            span = self.max_ - self.min_
            const = span == 0.0
            self.scale_ = np.where(const, 1.0, span)
            # Constant columns: x - min_ (maps the fitted constant to 0 whatever the range).
            self._mul = np.where(const, 1.0, (hi - lo) / self.scale_)
            self._add = np.where(const, -self.min_, lo - self.min_ * self._mul)
        elif self.method == "standard":
            self.var_ = self.m2_ / self.n_seen_
            std = np.sqrt(self.var_)
            self.scale_ = np.where(std == 0.0, 1.0, std)

    # -- applying --------------------------------------------------------------------------------

    def _check_fitted(self, what: str) -> None:
        if not hasattr(self, "n_features_in_"):
            raise ValueError(
                f"this Scaler is not fitted yet; call fit(), partial_fit() or fit_prefix() before {what}()"
            )

    def check_sparse_transform(self) -> None:
        """Check that :meth:`transform` keeps 0 at 0 in every column, as a sparse X needs.

        Called by ``transform`` for sparse input; a job streaming sparse data calls it right after
        fitting, so a scaling that would densify the stream is refused before any work.

        Raises
        ------
        ValueError
            Some column maps 0 to another value (named with the fix).
        """
        self._check_fitted("check_sparse_transform")
        if self.method == "none":
            return
        zero_to = self._add if self.method == "minmax" else -self.mean_ / self.scale_
        moved = np.flatnonzero(zero_to != 0.0)
        if not len(moved):
            return
        j = int(moved[0])
        raise ValueError(
            f"{self.method} scaling maps 0 to a non-zero value in {len(moved)} of {self.n_features_in_} columns "
            f"(column {j}: 0 -> {float(zero_to[j]):g}), so it would densify a sparse X (a sparse stream); use "
            "--scaling none (Scaler('none')), or minmax to [0, 1] (feature_range=(0, 1)) on data whose minimum is 0 "
            "in every column (non-negative features such as tf-idf)"
        )

    def transform(self, X):
        """Scale ``X`` with the fitted statistics.

        Parameters
        ----------
        X : array_like or scipy.sparse matrix, shape (n_samples, n_features)
            Data with the fitted number of features, finite values only. Never modified.

        Returns
        -------
        numpy.ndarray or scipy.sparse.csr_matrix
            A new float64 array of the same shape; a float64 CSR matrix for sparse input (see
            :meth:`check_sparse_transform` for the scalings a sparse X allows).

        Raises
        ------
        ValueError
            Not fitted, wrong feature count, non-finite values (row and column named), or a
            sparse X with a scaling that does not keep zeros at zero.
        """
        self._check_fitted("transform")
        X = check_array(
            X,
            owner="Scaler.transform",
            sparse="csr",
            non_empty=False,
            contiguous=False,
            row_offset=0,
            finite_squares=False,  # scaling is the fix for values too large to square
        )
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but this Scaler was fitted with {self.n_features_in_} features"
            )
        if sp.issparse(X):
            return self._transform_sparse(X)
        if self.method == "none":
            return X.copy()
        # Same operation order as scikit-learn (x * scale + min for minmax, (x - mean) / scale for
        # standard), so any difference comes from the statistics, not from the arithmetic here.
        if self.method == "standard":
            return (X - self.mean_) / self.scale_
        out = X * self._mul
        out += self._add
        return out

    def _transform_sparse(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Scale the stored values only (zeros stay zeros: checked first); the same arithmetic as the
        dense path, whose added term is 0 here."""
        self.check_sparse_transform()
        out = X.copy()
        if self.method == "minmax":
            out.data *= self._mul[out.indices]
        elif self.method == "standard":
            out.data /= self.scale_[out.indices]
        return out

    def fit_transform(self, X):
        """``fit(X)`` then ``transform(X)``."""
        return self.fit(X).transform(X)

    # -- serialisation ---------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """State as a dict of JSON-able values and float64 numpy arrays (no pickle needed).

        Arrays are the running statistics (``min_``/``max_`` or ``mean_``/``m2_``); derived values
        are recomputed on load. Store arrays in zarr (or convert with ``.tolist()`` for JSON).

        Examples
        --------
        >>> import json, numpy as np
        >>> s = Scaler("standard").fit(np.array([[0.0], [2.0]]))
        >>> d = s.to_dict()
        >>> d["mean_"]
        array([1.])
        >>> text = json.dumps({k: v.tolist() if hasattr(v, "tolist") else v for k, v in d.items()})
        >>> Scaler.from_dict(json.loads(text)).transform(np.array([[4.0]]))
        array([[3.]])
        """
        out = {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "method": self.method,
            "feature_range": [float(v) for v in self.feature_range],
            "fitted": hasattr(self, "n_features_in_"),
        }
        if out["fitted"]:
            out["n_features_in_"] = int(self.n_features_in_)
            out["n_seen_"] = int(self.n_seen_)
            out["frozen_"] = bool(getattr(self, "frozen_", False))
            for name in _STATE_ARRAYS[self.method]:
                out[name] = np.array(getattr(self, name), dtype=np.float64, copy=True)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Scaler":
        """Rebuild a Scaler from :meth:`to_dict` output (arrays may be numpy arrays or lists).

        Raises
        ------
        ValueError
            Not a Scaler dict, an unsupported version, or inconsistent state.
        """
        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise ValueError(f"not a serialised Scaler (expected format {_FORMAT!r})")
        if d.get("version") != _FORMAT_VERSION:
            raise ValueError(
                f"Scaler format version {d.get('version')!r} is not supported (this omkl-dist reads {_FORMAT_VERSION})"
            )
        method = check_param("Scaler", "method", d.get("method"), cls._parameter_constraints["method"])
        feature_range = check_param(
            "Scaler", "feature_range", d.get("feature_range", (0.0, 1.0)), cls._parameter_constraints["feature_range"]
        )
        s = cls(method=method, feature_range=feature_range)
        if not d.get("fitted"):
            return s
        try:
            n_features = int(d["n_features_in_"])
            n_seen = int(d["n_seen_"])
            arrays = {name: np.array(d[name], dtype=np.float64) for name in _STATE_ARRAYS[method]}
        except KeyError as exc:
            raise ValueError(f"serialised Scaler is missing {exc.args[0]!r}") from None
        if n_features < 1 or n_seen < 1:
            raise ValueError(f"serialised Scaler has n_features_in_={n_features}, n_seen_={n_seen}; both must be >= 1")
        for name, arr in arrays.items():
            if arr.shape != (n_features,) or not np.isfinite(arr).all():
                raise ValueError(
                    f"serialised Scaler field {name!r} must be {n_features} finite values, got shape {arr.shape}"
                )
        s.n_features_in_, s.n_seen_ = n_features, n_seen
        for name, arr in arrays.items():
            setattr(s, name, arr)
        s._derive()
        if d.get("frozen_"):
            s.frozen_ = True
        return s
