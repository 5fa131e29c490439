"""SimpleMKL and Lp-MKL: feasible weights, convergence, accuracy against the best single kernel on
real data, multi-class one-vs-one, bad input and the estimator contract."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from omkl_dist.algorithms.mkl import MKLSILP, LpMKL, MKLLevel, SimpleMKL, TunedSVC
from omkl_dist.algorithms.mkl._base import C_GRID
from omkl_dist.algorithms.mkl.level import model_minimum
from omkl_dist.algorithms.mkl.lpmkl import lp_update
from omkl_dist.algorithms.mkl.silp import silp_step
from omkl_dist.algorithms.mkl.simplemkl import descent_direction
from omkl_dist.algorithms.mkl.svc import SVC_C_GRID, SVC_KERNELS
from omkl_dist.kernels import make_pool
from omkl_dist.preprocessing import Scaler
from omkl_dist.reproduction.mkboost import make_model
from omkl_dist.storage import read_dataset, resolve_dataset


def split(name, n=None, seed=0, data_dir=None):
    ds = read_dataset(resolve_dataset(name, data_dir=data_dir))
    order = np.random.default_rng(seed).permutation(len(ds.y))[:n]
    half = len(order) // 2
    tr, te = order[:half], order[half:]
    scaler = Scaler("standard").fit(ds.X[tr])
    return scaler.transform(ds.X[tr]), ds.y[tr], scaler.transform(ds.X[te]), ds.y[te]


@pytest.fixture(scope="module")
def iono(data_dir):
    return split("ionosphere", data_dir=data_dir)


@pytest.fixture(scope="module")
def fitted(iono):
    Xtr, ytr, _, _ = iono
    return {
        (cls.__name__, norm): cls(C=50.0, kernel_normalization=norm, min_neighbors=1.0).fit(Xtr, ytr)
        for cls in (SimpleMKL, LpMKL)
        for norm in ("trace", "diagonal")
    }


def test_simplemkl_weights_on_simplex_and_converged(fitted):
    for norm in ("trace", "diagonal"):
        model = fitted[("SimpleMKL", norm)]
        w = model.weights_
        assert w.shape == (17,) and (w >= 0).all() and w.sum() == pytest.approx(1.0, abs=1e-12)
        assert model.stop_reasons_[0] in ("duality gap", "weight change", "zero reduced gradient")
        assert model.n_iter_[0] < model.max_iter
        if model.stop_reasons_[0] == "duality gap":
            assert 0.0 <= model.duality_gap_[0] <= model.tol
        history = model.objective_history_[0]
        # J(d) decreases along the iterations (up to the inner SVM's tolerance)
        assert (np.diff(history) <= 1e-3 * abs(history[0])).all()
        assert history[-1] <= history[0]
        assert model.kernel_counts_.sum() == np.count_nonzero(w)


def test_lpmkl_weights_on_unit_sphere_and_converged(fitted):
    for norm in ("trace", "diagonal"):
        model = fitted[("LpMKL", norm)]
        w = model.weights_
        assert (w >= 0).all() and np.linalg.norm(w, 2) == pytest.approx(1.0, abs=1e-12)
        assert model.stop_reasons_[0] in ("duality gap", "weight change")
        assert model.n_iter_[0] < model.max_iter and model.duality_gap_[0] >= -1e-12


def test_closed_form_update_and_descent_direction():
    rng = np.random.default_rng(0)
    for p in (1.5, 2.0, 3.0):
        theta = lp_update(rng.uniform(0.1, 1, 7), rng.uniform(0, 5, 7), p)
        assert np.sum(theta**p) ** (1 / p) == pytest.approx(1.0)
    d = np.array([0.5, 0.3, 0.2, 0.0])
    grad = np.array([-1.0, -3.0, -0.5, 2.0])
    D = descent_direction(d, grad)
    assert D.sum() == pytest.approx(0.0) and D[3] == 0.0  # kernel at 0 with a positive reduced gradient stays
    assert grad @ D < 0  # a descent direction


def test_accuracy_against_best_single_kernel(iono, fitted):
    Xtr, ytr, Xte, yte = iono
    pool = make_pool("mkboost17")
    single = [
        SVC(kernel="precomputed", C=50.0).fit(K, ytr).score(pool[m].evaluate(Xte, Xtr), yte)
        for m, K in enumerate(pool.evaluate(Xtr))
    ]
    best = max(single)
    for key, model in fitted.items():
        acc = model.score(Xte, yte)
        assert acc >= best - 0.06, (key, acc, best)
        assert acc > 0.85, (key, acc)


@pytest.mark.parametrize("name", ["ionosphere", "sonar", "wdbc"])
def test_silp_and_level_reach_simplemkls_optimum(data_dir, name):
    """The three ℓ1-MKL solvers minimise the same J(d) over the simplex: at a tight tolerance
    their optima agree to it (the independent check of the two LP-based solvers)."""
    Xtr, ytr, _, _ = split(name, 200, data_dir=data_dir)
    optimum = SimpleMKL(C=50.0, tol=1e-3, min_neighbors=1.0).fit(Xtr, ytr).objective_[0]
    for cls in (MKLSILP, MKLLevel):
        model = cls(C=50.0, tol=1e-3, min_neighbors=1.0).fit(Xtr, ytr)
        assert abs(model.objective_[0] - optimum) <= 2e-3 * optimum, (cls.__name__, model.objective_[0], optimum)
        np.testing.assert_allclose(model.weights_.sum(), 1.0)
        assert model.stop_reasons_[0] != "max_iter"


def test_the_lps_on_hand_made_cuts():
    """The master LPs on cuts whose answers are known: SILP's max-min over two constraints is at
    their crossing, the level method's cutting-plane minimum at the kink of two planes."""
    S = np.array([[-1.0, -3.0], [-3.0, -1.0]])  # max θ s.t. -β1 - 3β2 >= θ, -3β1 - β2 >= θ
    beta, theta = silp_step(S)
    np.testing.assert_allclose(beta, [0.5, 0.5], atol=1e-9)
    np.testing.assert_allclose(theta, -2.0, atol=1e-9)
    points = np.array([[1.0, 0.0], [0.0, 1.0]])  # the planes 2β1 − 2β2 and 2β2 − 2β1 on the simplex
    low, at = model_minimum(np.array([2.0, 2.0]), np.array([[2.0, -2.0], [-2.0, 2.0]]), points)
    np.testing.assert_allclose(low, 0.0, atol=1e-9)
    np.testing.assert_allclose(at, [0.5, 0.5], atol=1e-9)


@pytest.mark.parametrize("cls", [SimpleMKL, LpMKL, MKLSILP, MKLLevel])
def test_multiclass_one_vs_one(data_dir, cls):
    Xtr, ytr, Xte, yte = split("vehicle", 240, seed=3, data_dir=data_dir)
    model = cls(C=50.0, kernels="gaussian:1,4;polynomial:1", kernel_normalization="diagonal", min_neighbors=1.0)
    model.fit(Xtr, ytr)
    assert model.pair_weights_.shape == (6, 3) and len(model.intercept_) == 6
    assert model.decision_function(Xte).shape == (len(Xte), 4)
    assert model.score(Xte, yte) > 0.5  # 4 classes: chance is 0.25
    if cls is not LpMKL:
        np.testing.assert_allclose(model.pair_weights_.sum(axis=1), 1.0)
    else:
        np.testing.assert_allclose(np.linalg.norm(model.pair_weights_, axis=1), 1.0)


@pytest.mark.parametrize(
    "cls,param,value",
    [
        (SimpleMKL, "C", 0.0),
        (SimpleMKL, "max_iter", 0),
        (SimpleMKL, "tol", -1.0),
        (SimpleMKL, "tol_weights", -1.0),
        (SimpleMKL, "svm_tol", 0.0),
        (SimpleMKL, "line_search_tol", 1.0),
        (SimpleMKL, "kernel_normalization", "l2"),
        (LpMKL, "p", 1.0),
        (LpMKL, "p", 0.5),
        (LpMKL, "C", -2.0),
        (LpMKL, "kernel_normalization", None),
        (MKLSILP, "C", 0.0),
        (MKLSILP, "tol", -1.0),
        (MKLLevel, "level", 1.0),
        (MKLLevel, "max_iter", 0),
    ],
)
def test_invalid_parameters(iono, cls, param, value):
    Xtr, ytr, _, _ = iono
    model = cls(**{param: value})
    with pytest.raises(ValueError, match=param) as err:
        model.fit(Xtr[:40], ytr[:40])
    assert repr(value) in str(err.value)


@pytest.mark.parametrize("cls", [SimpleMKL, LpMKL, MKLSILP, MKLLevel])
def test_bad_data_and_contract(iono, cls):
    Xtr, ytr, Xte, _ = iono
    X, y = Xtr[:60].copy(), ytr[:60].copy()
    X0, y0 = X.copy(), y.copy()
    bad = X.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(bad, y)
    with pytest.raises(ValueError, match="1 class"):
        cls().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match=r"polynomial\(p=3\)"):
        cls().fit(X * 1e60, y)
    model = cls(kernels="gaussian:1,4;polynomial:1", C=1.0)  # (C="auto": test_C_chosen_by_cross_validation...)
    assert clone(model).get_params() == model.get_params()
    model.fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    with pytest.raises(ValueError, match="features"):
        model.predict(Xte[:, :5])
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.decision_function(Xte), model.decision_function(Xte))
    refit = clone(model).fit(X, y)  # deterministic: same data, same model
    np.testing.assert_array_equal(refit.weights_, model.weights_)
    with pytest.raises(Exception, match="not fitted"):
        clone(model).predict(Xte)


# ----------------------------------------------------------------------------- defaults (issue 35)
def ring(n=72, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, 1, -1)


SMALL = "gaussian:0.5,2;polynomial:2"


@pytest.mark.parametrize("norm,trace", [("diagonal", 72.0), ("trace", 1.0)])
def test_kernels_normalised_by_default(norm, trace):
    """Every base kernel scaled to unit mean diagonal by default (trace n), to unit trace on request."""
    X, y = ring()
    params = {} if norm == "diagonal" else {"kernel_normalization": norm}
    model = SimpleMKL(kernels=SMALL, C=1.0, min_neighbors=0.0, **params).fit(X, y)
    assert SimpleMKL().get_params()["kernel_normalization"] == "diagonal"
    grams = make_pool(SMALL).evaluate(X)
    traces = np.einsum("mii->m", grams) * model.kernel_scales_[0]
    np.testing.assert_allclose(traces, trace)
    assert not np.allclose(np.einsum("mii->m", grams), trace)  # the polynomial kernel's raw trace is not


@pytest.mark.parametrize("cls", [SimpleMKL, MKLSILP, LpMKL])  # (MKLLevel: the same base, 10x slower)
def test_C_chosen_by_cross_validation_by_default(cls):
    """C="auto" (the default) scores each C of the grid on seeded stratified folds -- the scores of
    fitting the estimator with that C on each fold through the public API: exactly for the first C,
    within a row per fold for the others (the folds walk the grid upwards, each solve starting from
    the previous C's weights, so a solver may stop at another point within its tolerance) -- and
    keeps the best (at a fixed floor; the floor's choice: test_min_neighbors_auto_is_the_default...)."""
    X, y = ring()
    model = cls(kernels=SMALL, min_neighbors=1.0, random_state=4).fit(X, y)
    assert cls().get_params()["C"] == "auto"
    assert model.cv_scores_.shape == (1, len(C_GRID))
    assert model.C_[0] == C_GRID[int(np.argmax(model.cv_scores_[0]))]
    folds = StratifiedKFold(3, shuffle=True, random_state=4).split(X, y)
    correct = np.zeros(len(C_GRID))
    for train, val in folds:
        for i, C in enumerate(C_GRID):
            fitted = cls(kernels=SMALL, C=C, min_neighbors=1.0).fit(X[train], y[train])
            correct[i] += np.sum(fitted.predict(X[val]) == y[val])
    assert model.cv_scores_[0, 0] == correct[0] / len(y)
    np.testing.assert_allclose(model.cv_scores_[0], correct / len(y), atol=3 / len(y) + 1e-12)
    fixed = cls(kernels=SMALL, C=float(model.C_[0]), min_neighbors=1.0).fit(X, y)
    np.testing.assert_array_equal(fixed.decision_function(X), model.decision_function(X))
    again = cls(kernels=SMALL, min_neighbors=1.0, random_state=4).fit(X, y)
    np.testing.assert_array_equal(again.cv_scores_, model.cv_scores_)
    assert cls(kernels=SMALL, C=2.0, min_neighbors=1.0).fit(X, y).cv_scores_.shape == (1, 0)  # nothing to choose


def test_C_auto_needs_rows_of_each_class():
    X, y = ring()
    y[:] = -1
    y[:2] = 1
    with pytest.raises(ValueError, match=r"C='auto'.*2 training row\(s\).*a number for C"):
        SimpleMKL(kernels=SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"of min_neighbors='auto' uses 3 folds.*a number for min_neighbors$"):
        SimpleMKL(kernels=SMALL, C=1.0).fit(X, y)  # a given C: the floor is still cross-validated
    with pytest.raises(ValueError, match="C"):
        SimpleMKL(C="best").fit(X, y)


def test_tuned_svc_is_an_rbf_svc_with_the_chosen_C_and_width():
    X, y = ring(90)
    model = TunedSVC(kernels="gaussian:0.5,1,2", random_state=1).fit(X, y)
    assert TunedSVC().get_params()["kernels"] == SVC_KERNELS
    assert model.C_[0] in SVC_C_GRID and model.cv_scores_.shape == (1, len(SVC_C_GRID) * 3)
    sigma = float(model.selected_kernels_[0].split("=")[1].rstrip(")"))
    reference = SVC(C=model.C_[0], gamma=1.0 / (2.0 * sigma**2)).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X), atol=1e-6)
    assert model.score(X, y) > 0.9


def test_paper_protocol_unchanged():
    """``omkl reproduce mkboost`` builds its MKL rows with the paper's C = 50 and unit trace, whatever
    the estimators' defaults."""
    for key in ("mkl-sd", "mkl-silp", "mkl-level", "lp-mkl"):
        params = make_model(key, 7).get_params()
        assert (params["C"], params["kernel_normalization"], params["kernels"]) == (50.0, "trace", "mkboost17")
        assert params["min_neighbors"] == 0.0  # every kernel of the pool


def test_effective_neighbors_counts_similar_rows():
    """An identity Gram (a gaussian far narrower than the rows' distances) has no neighbours; a
    constant one has every other row; the scale of a kernel does not matter."""
    from omkl_dist.algorithms.mkl._base import effective_neighbors, kept_kernels, neighbor_floors

    n = 6
    grams = np.stack([np.eye(n), np.full((n, n), 3.0), np.eye(n) + 0.5 * (1 - np.eye(n))])
    counts = effective_neighbors(grams)
    np.testing.assert_allclose(counts, [0.0, n - 1, (n - 1) * 0.25])
    np.testing.assert_array_equal(kept_kernels(counts, 1.0, 3), [1, 2])
    np.testing.assert_array_equal(kept_kernels(counts, 0.0, 3), [0, 1, 2])
    np.testing.assert_array_equal(kept_kernels(counts[[0, 2]], 10.0, 2), [1])  # none enough: the most
    assert neighbor_floors("auto", 64) == (1.0, 4.0, 16.0) and neighbor_floors(2, 64) == (2.0,)


@pytest.mark.parametrize("cls", [MKLSILP, LpMKL])
def test_min_neighbors_auto_is_the_default_and_chooses_the_floor_with_C(cls):
    """min_neighbors="auto" (the default): every (floor, C) of 1, n/16, n/4 × the C grid scored on the
    folds; the floor of the best is the kept kernels' and is the one a fixed min_neighbors of it gives;
    with a given C only the floor is cross-validated."""
    X, y = ring(96)
    kernels = "gaussian:0.01,0.5,1,2,4;polynomial:1"
    assert cls().get_params()["min_neighbors"] == "auto"
    model = cls(kernels=kernels, random_state=2).fit(X, y)
    assert model.cv_scores_.shape == (1, 3 * len(C_GRID))
    best = int(np.argmax(model.cv_scores_[0]))
    assert (
        model.neighbor_floor_[0] == (1.0, 6.0, 24.0)[best // len(C_GRID)] and model.C_[0] == C_GRID[best % len(C_GRID)]
    )
    fixed = cls(kernels=model.kernels, min_neighbors=float(model.neighbor_floor_[0]), C=float(model.C_[0])).fit(X, y)
    np.testing.assert_array_equal(fixed.pair_weights_, model.pair_weights_)
    assert model.pair_weights_[0, 0] == 0.0
    given_C = cls(kernels=kernels, C=float(model.C_[0]), random_state=2).fit(X, y)
    assert given_C.cv_scores_.shape == (1, 3) and given_C.neighbor_floor_[0] in (1.0, 6.0, 24.0)


@pytest.mark.parametrize("cls", [SimpleMKL, MKLSILP, MKLLevel, LpMKL])
def test_memorising_kernel_dropped_by_default(cls):
    """A gaussian under which every training row is alone (σ = 0.01 on unit-scale rows) gets no weight
    by default (every floor min_neighbors="auto" chooses among is at least 1), and predictions do not use
    it; min_neighbors=0 learns on it."""
    X, y = ring()
    kernels = "gaussian:0.01,2;polynomial:2"
    model = cls(kernels=kernels, C=1.0).fit(X, y)
    assert model.pair_weights_[0, 0] == 0.0 and model.pair_weights_[0, 1:].sum() > 0.0
    assert model.score(X, y) > 0.9
    every = cls(kernels=kernels, C=1.0, min_neighbors=0.0).fit(X, y)
    assert every.pair_weights_[0, 0] > 0.0  # ℓ1 and ℓp alike take the memorising kernel when offered


def test_gram_matrices_that_cannot_fit_are_refused_before_any_is_computed(monkeypatch):
    """`omkl fit svc --data a9a` computed 10 Gram matrices of 16,281 rows (33 GiB with the folds) on a
    24 GB machine: minutes of silence, then swapping. The fit now says so first, with the rows that fit."""
    import psutil

    from omkl_dist.algorithms.mkl import _base

    class Little:
        available = 64 * 2**20  # 64 MiB, half of it for the Gram matrices

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Little)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(1200, 3)), np.repeat([0, 1], 600)
    SimpleMKL(C=1.0, min_neighbors=0.0, kernels="gaussian:1").fit(X[300:900], y[300:900])  # what fits, fits
    computed = []
    monkeypatch.setattr(_base.KernelPool, "evaluate", lambda *a: computed.append(1))
    with pytest.raises(ValueError, match=r"TunedSVC: 10 kernels' Gram matrices of 1,200 training rows and their"):
        TunedSVC().fit(X, y)
    with pytest.raises(ValueError, match=r"SimpleMKL: 17 kernels' Gram matrices of 1,200 training rows need 0.2 GiB"):
        SimpleMKL(C=1.0, min_neighbors=0.0).fit(X, y)  # (no cross-validation: no fold copies)
    assert computed == []


def test_verbose_says_where_a_long_fit_is(iono, capsys, monkeypatch):
    """`omkl fit svc` on 4,062 rows took 206 s without a line. verbose=1: a line per fold and the final fit
    once 5 s (_progress.EVERY) have passed since the last (a fit of seconds prints none); verbose=0: none."""
    from omkl_dist.algorithms import _progress

    X, y, _, _ = iono
    TunedSVC(kernels="gaussian:1,4", verbose=1).fit(X, y)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_progress, "EVERY", 0.0)
    TunedSVC(kernels="gaussian:1,4", verbose=0).fit(X, y)
    assert capsys.readouterr().err == ""
    TunedSVC(kernels="gaussian:1,4", verbose=1).fit(X, y)
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [line for line in lines[:2] if "cross-validation fold" in line] and len(lines) == 4
    assert "settings cross-validated: C=" in lines[2] and "gaussian(sigma=" in lines[2] and "fitted on its" in lines[3]


def test_the_kernel_selectors_say_where_a_long_fit_is(iono, capsys, monkeypatch):
    """`omkl fit oks-svm --data a9a` ran 108 s without a line: a selector says the kernel it selected,
    each C it tried and the final SVM (MuSVM: each kernel validated), at most one line every 5 s."""
    from omkl_dist.algorithms import _progress
    from omkl_dist.algorithms.selectors import AlSVM, MuSVM
    from omkl_dist.algorithms.selectors._common import C_GRID

    X, y, _, _ = iono
    monkeypatch.setattr(_progress, "EVERY", 0.0)
    AlSVM(kernels="gaussian:1,4", verbose=1).fit(X, y)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("AlSVM: selected gaussian(sigma=") and len(lines) == 2 + len(C_GRID)
    assert lines[1].startswith("AlSVM: C 1/21 (0.000976562) on ") and "training the SVM on all" in lines[-1]
    MuSVM(kernels="gaussian:1,4", verbose=1).fit(X, y)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines if "validated" in line] == [
        "MuSVM: kernel 1/2 (gaussian(sigma=1)) validated",
        "MuSVM: kernel 2/2 (gaussian(sigma=4)) validated",
    ]
    MuSVM(kernels="gaussian:1,4").fit(X, y)
    assert capsys.readouterr().err == ""
