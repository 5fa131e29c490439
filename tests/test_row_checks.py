"""The estimators' row checks on every call (omkl_dist/algorithms/base.py: ``_check_X``,
omkl_dist/_validation/inputs.py: ``check_array``): a dense X refuses a NaN, an inf and values whose
squares overflow, naming the place, whether the one product X · X clears it or not; a later call
checks the chi-square kernels' sign on the fitted pool, and a pool without them takes negative
features."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist._validation import check_array
from omkl_dist.algorithms import SPA


@pytest.mark.parametrize(("value", "message"), [(np.nan, "NaN or inf.*row 2, column 1"), (-np.inf, "row 2, column 1")])
def test_non_finite_values_are_named(value, message):
    X = np.ones((4, 3))
    X[2, 1] = value
    with pytest.raises(ValueError, match=message):
        check_array(X, owner="SPA")


def test_squares_cleared_below_the_bound_and_checked_above_it():
    X = np.full((2, 3), 1e153)
    assert check_array(X) is X  # X · X = 6e306: cleared by the one sum
    X[1] = [-7e153, 7e153, 5e153]  # X · X above the clearance, no row's squared norm overflows: cleared
    assert check_array(X) is X
    X[1, 2] = 1.5e154
    with pytest.raises(ValueError, match=r"too large to square.*row 1.*column 2"):
        check_array(X)
    assert check_array(X, finite_squares=False) is X  # (the Scaler's check: finite values only)
    F = np.asfortranarray(np.full((3, 2), 1e200))  # not C-contiguous: the element-wise checks
    with pytest.raises(ValueError, match=r"too large to square.*row 0"):
        check_array(F)


def test_a_later_call_checks_the_chi_square_sign_on_the_fitted_pool():
    rng = np.random.default_rng(0)
    X, y = np.abs(rng.normal(size=(40, 3))), np.arange(40) % 2
    model = SPA(kernels="chi2:1;gaussian:1", block_size=8).partial_fit(X[:20], y[:20])
    with pytest.raises(ValueError, match=r"chi2\(gamma=1\) needs non-negative features.*row 0, column 0"):
        model.partial_fit(-X[20:], y[20:])
    with pytest.raises(ValueError, match="needs non-negative features"):
        model.predict(-X)
    SPA(kernels="gaussian:1", block_size=8).partial_fit(-X[:20], y[:20]).partial_fit(-X[20:], y[20:])


def test_fit_on_columns_of_very_different_spread_warns_once_at_the_callers_line():
    """Raw columns whose spreads differ a thousand-fold or more: the kernels see mostly the widest, so
    ``fit`` says so (naming both columns) at the user's line; standardised, constant or sparse columns
    (densified by the model or not) and a stream's ``partial_fit`` do not."""
    import warnings

    from scipy import sparse

    from omkl_dist import BPAS, MKBoost

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) * [1.0, 1.0, 2000.0, 0.5]
    X[:, 1] = 7.0  # constant: no spread, not the narrowest
    y = np.where(X[:, 0] > 0, 1, -1)
    for model in (SPA(n_epochs=1), MKBoost(n_trials=2, kernels="gaussian:1")):
        with pytest.warns(
            UserWarning, match=r"spread 3,942-fold \(standard deviation 0.521 in column 3, 2.05e\+03 in column 2\)"
        ) as caught:
            model.fit(X, y)
        assert [w.filename for w in caught] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SPA(n_epochs=1).fit((X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0), y)
        SPA(n_epochs=1).partial_fit(X, y)
        SPA(n_epochs=1).fit(sparse.csr_matrix(X), y)
        BPAS(n_epochs=1, budget=20).fit(sparse.csr_matrix(X), y)  # sparse data, densified by the model
