"""``fit`` learns a training set in a seeded random order; ``partial_fit`` learns a stream as given.

iris is sorted by class: learnt in that order, every online classifier ends up predicting the last
class (cross-validation accuracy 0.33). Shuffled, each reaches scikit-learn's level with its defaults.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.model_selection import cross_val_score

from omkl_dist.algorithms import SPA, KernelPerceptron
from omkl_dist.algorithms.registry import ALGORITHMS
from omkl_dist.job import Job


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_default_fit_learns_iris_sorted_by_class(algo):
    X, y = load_iris(return_X_y=True)
    assert cross_val_score(ALGORITHMS[algo](), X, y, cv=5).mean() >= 0.9


def test_the_perceptrons_default_kernel_learns_iris_for_every_seed():
    """The default chosen by benchmarks/online_defaults.py (a Laplacian kernel): not one lucky seed
    (the former linear one gave 0.73-0.87 over these seeds)."""
    X, y = load_iris(return_X_y=True)
    for seed in range(5):
        assert cross_val_score(KernelPerceptron(random_state=seed), X, y, cv=5).mean() >= 0.9, seed


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(90, 4))
    return X, np.where(X[:, 0] * X[:, 1] > 0, 1, -1)


def _state(model):
    arrays, meta = model.to_state()
    return {k: v.tobytes() for k, v in arrays.items()}, meta["engine"]


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_fit_is_one_pass_over_the_seeded_permutation(data, algo):
    """Bit for bit: ``fit`` is ``partial_fit`` of the rows in ``default_rng(random_state)``'s order."""
    X, y = data
    params = {**ALGORITHMS[algo]._unit_test_params[0], "shuffle": True, "random_state": 3, "n_epochs": 1}
    params = {k: v for k, v in params.items() if k in ALGORITHMS[algo]().get_params()}
    order = np.random.default_rng(3).permutation(len(y))
    fitted = ALGORITHMS[algo](**params).fit(X, y)
    streamed = ALGORITHMS[algo](**params).partial_fit(X[order], y[order])
    assert _state(fitted) == _state(streamed)
    unshuffled = ALGORITHMS[algo](**{**params, "shuffle": False}).fit(X, y)
    assert _state(unshuffled) == _state(ALGORITHMS[algo](**params).partial_fit(X, y))


def test_sparse_and_list_rows_are_shuffled_alike(data):
    X, y = data
    params = {"kernels": "gaussian:1;linear", "block_size": 16}
    dense = SPA(**params).fit(X, y)
    sparse = SPA(**params).fit(sp.csr_matrix(X), y)  # its support vectors are kept sparse
    assert sparse.mistakes_ == dense.mistakes_
    np.testing.assert_allclose(sparse.decision_function(X), dense.decision_function(X), rtol=1e-12, atol=1e-12)
    assert _state(SPA(**params).fit(X.tolist(), y.tolist())) == _state(dense)
    np.testing.assert_array_equal(X, data[0])  # the caller's rows are not reordered


def test_shuffle_is_checked_and_not_a_job_parameter(data):
    with pytest.raises(ValueError, match="shuffle must be True or False"):
        SPA(shuffle="yes").fit(*data)
    assert "shuffle" not in Job.from_estimator(SPA(shuffle=False), "data/x").params


def test_every_online_estimator_defaults_to_the_same_seed():
    assert {cls().get_params()["random_state"] for cls in ALGORITHMS.values()} == {0}
