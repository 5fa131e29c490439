"""scipy.sparse input (CSR, CSC, sparse arrays) gives every estimator the model of its dense rows,
on a9a and w7a (binary 0/1 features, 123 and 300 columns). The shared-pool online learners (OMKC,
SPA, OM-2, the Perceptrons) keep the rows sparse (omkl_dist.scoring.rows: integer dot products
summed over the non-zeros are exact, so bit for bit the dense model); the budget learners, OKS and
the batch estimators densify (refusing a dense form that cannot fit in memory)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from omkl_dist import BPAS, OM2, OMKC, SPA, MKBoost, PerceptronStar, PerceptronU, SimpleMKL
from omkl_dist.persistence import load_model, save_model
from omkl_dist.storage import read_dataset, resolve_dataset

ROWS = 1500


@pytest.fixture(scope="module", params=["a9a", "w7a"])
def binary_sparse(request, data_dir):
    ds = read_dataset(resolve_dataset(request.param, data_dir=data_dir))
    X, y = ds.X[:ROWS], ds.y[:ROWS]
    assert (X == 0).mean() > 0.85  # genuinely sparse data
    return X, y


ONLINE = {
    "SPA": lambda: SPA(random_state=0),
    "OMKC-SS": lambda: OMKC(update="S", combination="S", random_state=0),
    "OMKC-DD": lambda: OMKC(random_state=0),
    "PerceptronU": lambda: PerceptronU(),
    "PerceptronStar": lambda: PerceptronStar(validation_fraction=0.2),
    "BPAS": lambda: BPAS(budget=50, random_state=0),
}


@pytest.mark.parametrize("make", list(ONLINE.values()), ids=list(ONLINE))
@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csc_matrix, sp.csr_array])
def test_online_estimators_fit_sparse_as_dense(binary_sparse, make, container):
    X, y = binary_sparse
    dense, sparse = make().fit(X, y), make().fit(container(X), y)
    assert sparse.sparse_rows_ == (not isinstance(sparse, BPAS)) and not dense.sparse_rows_
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
    # (a fixed floor: min_neighbors="auto" would triple SimpleMKL's cross-validation, the same code on dense rows)
    for make in (lambda: MKBoost(n_trials=5, random_state=0), lambda: SimpleMKL(min_neighbors=1.0)):
        dense, sparse = make().fit(X, y), make().fit(sp.csr_matrix(X), y)
        np.testing.assert_array_equal(sparse.decision_function(sp.csc_matrix(X)), dense.decision_function(X))


def test_sparse_input_is_tagged_and_bad_sparse_input_is_clear():
    assert SPA().__sklearn_tags__().input_tags.sparse and MKBoost().__sklearn_tags__().input_tags.sparse
    complex_values = sp.csr_matrix(np.ones((3, 2), dtype=complex))
    with pytest.raises(ValueError, match="SPA: X must be numeric, got a sparse matrix of dtype complex128"):
        SPA().fit(complex_values, [0, 1, 0])
    huge = sp.csr_matrix((4, 10**12))  # no stored values, but a dense form of 32 TB
    with pytest.raises(ValueError, match=r"BPAS: this sparse X of shape \(4, 1000000000000\) needs"):
        BPAS().fit(huge, [0, 1, 0, 1])
    nan = sp.csr_matrix(([1.0, np.nan], ([0, 2], [3, 1])), shape=(3, 5))
    with pytest.raises(ValueError, match=r"OMKC: X contains NaN or inf \(first at row 2, column 1: nan\)"):
        OMKC().fit(nan, [0, 1, 0])
    with pytest.raises(ValueError, match="OMKC: X has 4 features, but OMKC is expecting 5"):
        OMKC().fit(sp.csr_matrix(np.eye(5)), [0, 1, 0, 1, 0]).predict(sp.csr_matrix(np.eye(4)))


@pytest.mark.parametrize(
    "make",
    [lambda: OM2(), lambda: SPA(random_state=0), lambda: OMKC(update="S", combination="D", random_state=0)],
    ids=["OM2", "SPA", "OMKC-SD"],
)
def test_multiclass_models_keep_sparse_rows_as_dense(binary_sparse, make):
    """Three classes (from the labels and one binary feature): the multi-class recurrences read
    sparse rows as the binary ones do."""
    X, y = binary_sparse
    y3 = np.where(X[:, 0] > 0, 2, (y > 0).astype(int))
    dense, sparse = make().fit(X, y3), make().fit(sp.csr_matrix(X), y3)
    assert sparse.sparse_rows_ and sparse.mistakes_ == dense.mistakes_
    np.testing.assert_array_equal(sparse.decision_function(sp.csr_matrix(X[:300])), dense.decision_function(X[:300]))


def test_sparse_rows_mix_with_dense_calls_and_survive_a_save(binary_sparse, tmp_path):
    """A model that keeps sparse rows takes dense X later (converted), saves its support vectors
    as CSR parts (never densified) and, loaded, goes on learning exactly."""
    X, y = binary_sparse
    whole = SPA(n_epochs=1, shuffle=False, random_state=0).fit(sp.csr_matrix(X), y)
    model = SPA(random_state=0).partial_fit(sp.csr_matrix(X[:1024]), y[:1024], classes=[-1, 1])
    save_model(model, tmp_path / "m")
    arrays, _ = model.to_state()
    assert "pool_X" not in arrays and arrays["pool_X_data"].size == arrays["pool_X_indices"].size
    loaded = load_model(tmp_path / "m").estimator
    assert loaded.sparse_rows_
    loaded.partial_fit(X[1024:], y[1024:])  # dense rows now
    assert loaded.mistakes_ == whole.mistakes_
    np.testing.assert_array_equal(loaded.decision_function(X[:200]), whole.decision_function(sp.csr_matrix(X[:200])))


def test_wide_sparse_rows_are_never_densified():
    """rcv1's shape (47,236 features): 400 rows would be 151 MB dense; the model's support vectors
    and every block stay CSR (features beyond 2**40 work too: nothing is sized by the width)."""
    rng = np.random.default_rng(0)
    for d in (47_236, 2**40):
        cols = rng.integers(0, d, size=(400, 76))
        X = sp.csr_matrix((rng.random(cols.size), cols.ravel(), np.arange(0, cols.size + 1, 76)), shape=(400, d))
        y = np.where(rng.random(400) < 0.5, -1, 1)
        model = OMKC(update="S", combination="S", random_state=0).fit(X, y)
        arrays, _ = model.to_state()
        assert tuple(arrays["pool_X_shape"]) == (arrays["pool_alpha"].shape[0], d)
        assert model.decision_function(X[:5]).shape == (5,)
