"""scikit-learn's own estimator checks (``parametrize_with_checks``) over every estimator.

The estimators come from the registry, each with its first ``_unit_test_params`` (a small kernel
pool keeps the ~55 checks per estimator fast); the parameters do not change what is checked (the
input validation, the fit/predict contract, multi-class handling, cloning, pickling).
Every estimator learns multi-class problems (the checks use three classes).
"""

from __future__ import annotations

import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency, parametrize_with_checks

from omkl_dist.algorithms import OKSRegressor
from omkl_dist.algorithms.registry import ALGORITHMS, BATCH_ALGORITHMS

# every registered estimator (and the one regressor) with its first, plain small test parameters
ESTIMATORS = [
    cls(**cls._unit_test_params[0]) for cls in (*ALGORITHMS.values(), *BATCH_ALGORITHMS.values(), OKSRegressor)
]


# MKBoost learns each trial on a weighted *resample* (the paper's boosting by sampling): sample_weight
# sets the distribution the rows are drawn from, so weight 2 is not the same draw as a repeated row
# (equal in expectation only) -- the property these two checks test does not hold for sampling.
SAMPLING = (
    "MKBoost trains each boosting trial on a random weighted resample: equal to repeated rows in expectation only"
)
EXPECTED_FAILURES = {
    "MKBoost": {
        "check_sample_weight_equivalence_on_dense_data": SAMPLING,
        "check_sample_weight_equivalence_on_sparse_data": SAMPLING,
    }
}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES.get(type(est).__name__, {}))
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda est: type(est).__name__)
def test_a_dataframes_column_names_are_kept_and_checked(estimator):
    """scikit-learn's check (not among the ones it yields): ``fit`` on a DataFrame keeps
    ``feature_names_in_``; a DataFrame with other names, or the same in another order, is refused
    (it was predicted silently, each column read as the one in its place); named and unnamed X
    mixed are warned of."""
    check_dataframe_column_names_consistency(type(estimator).__name__, clone(estimator))
