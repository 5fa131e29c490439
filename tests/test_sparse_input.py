"""scipy.sparse input (CSR, CSC, sparse arrays) gives every estimator the model of its dense rows,
on a9a and w7a (binary 0/1 features, 123 and 300 columns): the kernels compute on dense rows, so a
sparse X is densified (refused only when its dense form cannot fit in memory)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from omkl_dist import BPAS, OMKC, SPA, MKBoost, SimpleMKL
from omkl_dist.storage import read_dataset, resolve_dataset

ROWS = 1500


@pytest.fixture(scope="module", params=["a9a", "w7a"])
def binary_sparse(request, data_dir):
    ds = read_dataset(resolve_dataset(request.param, data_dir=data_dir))
    X, y = ds.X[:ROWS], ds.y[:ROWS]
    assert (X == 0).mean() > 0.85  # genuinely sparse data
    return X, y


@pytest.mark.parametrize("make", [lambda: SPA(random_state=0),
                                  lambda: OMKC(update="S", combination="S", random_state=0),
                                  lambda: BPAS(budget=50, random_state=0)], ids=["SPA", "OMKC-SS", "BPAS"])
@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csc_matrix, sp.csr_array])
def test_online_estimators_fit_sparse_as_dense(binary_sparse, make, container):
    X, y = binary_sparse
    dense, sparse = make().fit(X, y), make().fit(container(X), y)
    assert sparse.mistakes_ == dense.mistakes_
    np.testing.assert_array_equal(sparse.weights_, dense.weights_)
    np.testing.assert_array_equal(sparse.n_support_, dense.n_support_)
    probe = X[:500]
    np.testing.assert_array_equal(sparse.decision_function(container(probe)), dense.decision_function(probe))
    np.testing.assert_array_equal(sparse.predict(container(probe)), dense.predict(probe))


def test_batch_estimators_fit_sparse_as_dense(binary_sparse):
    X, y = binary_sparse
    rows = np.concatenate([np.flatnonzero(y == c)[:150] for c in (-1, 1)])  # w7a: 3 % positives
    X, y = X[rows], y[rows]
    for make in (lambda: MKBoost(n_trials=5, random_state=0), lambda: SimpleMKL()):
        dense, sparse = make().fit(X, y), make().fit(sp.csr_matrix(X), y)
        np.testing.assert_array_equal(sparse.decision_function(sp.csc_matrix(X)), dense.decision_function(X))


def test_sparse_input_is_tagged_and_bad_sparse_input_is_clear():
    assert SPA().__sklearn_tags__().input_tags.sparse and MKBoost().__sklearn_tags__().input_tags.sparse
    complex_values = sp.csr_matrix(np.ones((3, 2), dtype=complex))
    with pytest.raises(ValueError, match="SPA: X must be numeric, got a sparse matrix of dtype complex128"):
        SPA().fit(complex_values, [0, 1, 0])
    huge = sp.csr_matrix((4, 10**12))  # no stored values, but a dense form of 32 TB
    with pytest.raises(ValueError, match=r"OMKC: this sparse X of shape \(4, 1000000000000\) needs"):
        OMKC().fit(huge, [0, 1, 0, 1])
