"""The estimators' row checks on every call (omkl_dist/algorithms/base.py: ``_check_X``,
omkl_dist/_validation/inputs.py: ``check_array``): a dense X cleared by its smallest and largest
value still refuses a NaN, an inf and values whose squares overflow, naming the place, just under
and over the bound the clearance uses; a later call checks the chi-square kernels' sign on the fitted
pool, and a pool without them takes negative features."""

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
    d = 3
    bound = np.sqrt(np.finfo(np.float64).max / (2 * d))
    X = np.full((2, d), -bound)
    assert check_array(X) is X  # every squared norm finite: cleared by the bound alone
    X[1, 2] = 1.5 * bound  # above the bound, a finite squared norm (4.25 of the 6 b² that overflow): cleared
    assert check_array(X) is X
    X[1] = 1.5e154
    with pytest.raises(ValueError, match=r"too large to square.*row 1"):
        check_array(X)


def test_a_later_call_checks_the_chi_square_sign_on_the_fitted_pool():
    rng = np.random.default_rng(0)
    X, y = np.abs(rng.normal(size=(40, 3))), np.arange(40) % 2
    model = SPA(kernels="chi2:1;gaussian:1", block_size=8).partial_fit(X[:20], y[:20])
    with pytest.raises(ValueError, match=r"chi2\(gamma=1\) needs non-negative features.*row 0, column 0"):
        model.partial_fit(-X[20:], y[20:])
    with pytest.raises(ValueError, match="needs non-negative features"):
        model.predict(-X)
    SPA(kernels="gaussian:1", block_size=8).partial_fit(-X[:20], y[:20]).partial_fit(-X[20:], y[20:])
