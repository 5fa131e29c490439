"""One shared check suite for every online estimator: the scikit-learn contract and input checks.

The estimators are the registry's (:data:`~omkl_dist.algorithms.registry.ALGORITHMS`), each with
each of its small test parameters (``_unit_test_params``); ``_stochastic`` says which depend on
``random_state``. Parameters are checked for the names listed in ``INVALID_PARAMS`` that the
estimator has (extend the table for new ones).

Data: 120 rows of ionosphere (34 real features in [-1, 1]).
"""

from __future__ import annotations

import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from omkl_dist.algorithms import BOGD, BPAS, FOGD, OKS, OMKC, RBP, SPA, Forgetron, Projectron
from omkl_dist.algorithms.registry import ALGORITHMS
from omkl_dist.storage import read_dataset, resolve_dataset

from layering import stack_modules_imported_by

ESTIMATORS = [  # (id, unfitted instance): every registered estimator with each of its small test parameters
    (f"{name}-{i}", cls(**params)) for name, cls in ALGORITHMS.items() for i, params in enumerate(cls._unit_test_params)
]


def _stochastic(est):
    """Whether the estimator's results depend on ``random_state`` (:func:`test_seeding` checks both ways)."""
    if isinstance(est, OMKC):  # stochastic updates or combination
        return "S" in (est.update, est.combination)
    if isinstance(est, (Forgetron, BPAS, Projectron)):  # deterministic learners: stochastic only by their update
        return est.update == "S"
    return isinstance(est, (SPA, RBP, BOGD, OKS, FOGD))  # (FOGD: its random features)


PARAMS = [pytest.param(est, _stochastic(est), id=name) for name, est in ESTIMATORS]
ONLY_EST = [pytest.param(est, id=name) for name, est in ESTIMATORS]

# parameter -> invalid values; each must be accepted by __init__ and rejected by fit with a
# ValueError whose message names the parameter (kernel names: the word "kernel" and the bad name)
INVALID_PARAMS = {
    "beta": [0.0, 1.0, 1.5, -0.2, "0.5"],
    "delta": [0.0, 1.0000001, -1.0],
    "block_size": [0, -3, 2.5, True],
    "n_epochs": [0, -1, 1.5, True, "5"],
    "update": ["X", "d"],
    "combination": ["Q", "u"],
    "kernels": ["gaussian:1;nosuchkernel", "nosuchkernel"],
    "kernel": ["nosuchkernel", "omkc16"],
    "validation_fraction": [0.0, 1.5],
    "validation_size": [0, -1],
    "random_state": [-1, "seed", 1.5],
    "gamma": [0.0, 1.0, 2.0],
    "eta": [0.0, -1.0, float("inf")],
    "alpha": [0.0, -1.0],
    "C": [0.0, -1.0, float("inf")],
    "budget": [0, -5, 2.5],
    "lam": [-1.0, float("nan"), "0.1", 20.0],  # 20.0: eta * lam >= 1 with eta = 0.1
    "horizon": [0, -1, 2.5],
}
# estimator-specific invalid values where the shared list does not apply (SPA's beta only needs >= alpha)
INVALID_OVERRIDES = {
    (SPA, "beta"): [0.5, -1.0, "3"],
    (OKS, "eta"): [-1.0, float("inf"), "0.1"],
    (OKS, "lam"): [0.0, -1.0, float("nan"), "0.1"],
}
# other parameters an invalid value needs to take effect
INVALID_CONTEXT = {"validation_fraction": {"validation_size": None}}
MESSAGE_NAMES = {"kernels": "kernel", "kernel": "kernel"}


def _invalid_cases():
    cases = []
    for name, est in ESTIMATORS:
        own = est.get_params()
        for param, values in INVALID_PARAMS.items():
            if param in own:
                values = INVALID_OVERRIDES.get((type(est), param), values)
                cases += [pytest.param(est, param, v, id=f"{name}-{param}={v!r}") for v in values]
    return cases


@pytest.fixture(scope="module")
def data(data_dir):
    ds = read_dataset(resolve_dataset("ionosphere", data_dir=data_dir))
    idx = np.random.default_rng(0).permutation(len(ds.y))[:120]
    return np.ascontiguousarray(ds.X[idx]), ds.y[idx]


def _state(model, X):
    return (
        model.mistakes_,
        tuple(model.n_support_.tolist()),
        tuple(model.kernel_mistakes_.tolist()),
        model.decision_function(X).tobytes(),
    )


# --------------------------------------------------------------------------- the list itself
def test_every_algorithm_is_checked():
    import omkl_dist.algorithms as algorithms

    checked = {type(est) for _, est in ESTIMATORS}
    # (the one regressor, OKSRegressor, has scikit-learn's regressor checks and tests/test_oks.py)
    assert set(algorithms.__all__) - {"OKSRegressor"} <= {cls.__name__ for cls in checked}
    omkc_variants = {(est.update, est.combination) for _, est in ESTIMATORS if isinstance(est, OMKC)}
    assert omkc_variants == {("D", "D"), ("D", "S"), ("S", "D"), ("S", "S"), ("D", "U")}


# --------------------------------------------------------------------------- sklearn contract
@pytest.mark.parametrize("est", ONLY_EST)
def test_pickle_round_trip_predicts_and_keeps_learning(data, est, tmp_path):
    X, y = data
    model = clone(est).fit(X[:70], y[:70])
    copy = pickle.loads(pickle.dumps(model))
    mapped = tmp_path / "model.joblib"  # loaded from a read-only memory map: its arrays are copied to learn on
    joblib.dump(model, mapped)
    readonly = joblib.load(mapped, mmap_mode="r")
    np.testing.assert_array_equal(readonly.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(copy.predict(X), model.predict(X))
    a = model.progressive_partial_fit(X[70:], y[70:])
    b = copy.progressive_partial_fit(X[70:], y[70:])
    np.testing.assert_array_equal(readonly.progressive_partial_fit(X[70:], y[70:])["mistakes"], a["mistakes"])
    np.testing.assert_array_equal(a["mistakes"], b["mistakes"])
    np.testing.assert_array_equal(a["score"], b["score"])
    assert _state(copy, X) == _state(model, X)
    # and the same, bit for bit, as a model that was never pickled
    never = clone(est).fit(X[:70], y[:70])
    never.partial_fit(X[70:], y[70:])
    assert _state(model, X) == _state(never, X)
    # an unfitted estimator pickles too
    assert pickle.loads(pickle.dumps(clone(est))).get_params() == est.get_params()


@pytest.mark.parametrize("est", ONLY_EST)
def test_clone_is_unfitted_with_the_same_params(data, est):
    X, y = data
    model = clone(est).fit(X, y)
    copy = clone(model)
    assert copy.get_params() == est.get_params()
    assert not [k for k in vars(copy) if k.endswith("_")]
    with pytest.raises(ValueError, match="not fitted"):
        copy.predict(X)
    assert _state(copy.fit(X, y), X) == _state(model, X)


@pytest.mark.parametrize(("est", "stochastic"), PARAMS)
def test_seeding(data, est, stochastic):
    X, y = data
    a, b = clone(est).fit(X, y), clone(est).fit(X, y)
    assert _state(a, X) == _state(b, X)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    if "random_state" not in est.get_params():  # deterministic, takes no seed (OM-2)
        return
    outcomes = {seed: _state(clone(est).set_params(random_state=seed).fit(X, y), X) for seed in range(5)}
    if stochastic:  # five seeds all giving the same run would mean the seed is ignored
        assert len(set(outcomes.values())) > 1
    else:  # deterministic algorithms do not depend on the seed at all
        assert len(set(outcomes.values())) == 1
    # an unseeded run records the seed it drew, which replays it
    free = clone(est).set_params(random_state=None).fit(X, y)
    assert isinstance(free.seed_, int) and free.seed_ >= 0
    assert _state(clone(est).set_params(random_state=free.seed_).fit(X, y), X) == _state(free, X)


@pytest.mark.parametrize("est", ONLY_EST)
def test_fit_starts_over_and_returns_self(data, est):
    X, y = data
    model = clone(est)
    assert model.fit(X[:60], y[:60]) is model
    assert model.partial_fit(X[60:], y[60:]) is model
    assert model.fit(X[50:], y[50:]) is model
    assert _state(model, X) == _state(clone(est).fit(X[50:], y[50:]), X)
    assert model.n_samples_seen_ == (len(y) - 50) * getattr(model, "n_epochs_", 1)  # every pass of fit
    assert 0.0 <= model.score(X, y) <= 1.0


@pytest.mark.parametrize("est", ONLY_EST)
def test_no_input_mutation(data, est):
    X, y = data
    X0, y0 = X.copy(), y.copy()
    Xr, yr = X.copy(), y.copy()
    Xr.flags.writeable = False  # any in-place write would raise
    yr.flags.writeable = False
    model = clone(est).fit(Xr, yr)
    model.partial_fit(Xr[:50], yr[:50])
    model.progressive_partial_fit(Xr[50:70], yr[50:70], keep_scores=True)
    model.predict(Xr)
    model.decision_function(Xr)
    np.testing.assert_array_equal(Xr, X0)
    np.testing.assert_array_equal(yr, y0)
    # the model holds no view of the caller's arrays
    Xw = X.copy()
    other = clone(est).fit(Xw, y)
    before = _state(other, X)
    Xw[:] = 0.0
    assert _state(other, X) == before


@pytest.mark.parametrize("est", ONLY_EST)
def test_input_layouts_give_the_same_model(data, est):
    """Fortran order, float32 and nested lists are read as the same float64 rows."""
    X, y = data
    X32 = X.astype(np.float32)
    ref = _state(clone(est).fit(X32.astype(np.float64), y), X)
    assert _state(clone(est).fit(X32, y), X) == ref
    assert _state(clone(est).fit(np.asfortranarray(X), y), X) == _state(clone(est).fit(X, y), X)
    assert _state(clone(est).fit(X[:60].tolist(), y[:60].tolist()), X) == _state(clone(est).fit(X[:60], y[:60]), X)


@pytest.mark.parametrize("est", ONLY_EST)
def test_init_stores_params_only(est):
    params = est.get_params(deep=False)
    fresh = type(est)(**params)
    assert vars(fresh) == params  # nothing computed, nothing renamed
    assert fresh.get_params() == params
    assert fresh.set_params(block_size=7) is fresh and fresh.block_size == 7
    assert type(est)().get_params().keys() == params.keys()


@pytest.mark.parametrize(("est", "param", "value"), _invalid_cases())
def test_invalid_params_raise_at_fit_naming_the_parameter(data, est, param, value):
    X, y = data
    params = dict(est.get_params(), **INVALID_CONTEXT.get(param, {}))
    params[param] = value
    model = type(est)(**params)  # accepted by __init__ ...
    assert model.get_params()[param] is value
    with pytest.raises(ValueError) as info:  # ... rejected by fit
        model.fit(X[:40], y[:40])
    message = str(info.value)
    assert MESSAGE_NAMES.get(param, param) in message
    if isinstance(value, str) and param in MESSAGE_NAMES and value != "omkc16":
        assert value.split(";")[-1] in message
    assert not hasattr(model, "engine_")  # nothing half-built
    model.set_params(**{param: est.get_params()[param]})
    valid = clone(est).set_params(**INVALID_CONTEXT.get(param, {}))
    assert _state(model.fit(X[:40], y[:40]), X) == _state(valid.fit(X[:40], y[:40]), X)


@pytest.mark.parametrize("est", ONLY_EST)
def test_boundary_params_are_accepted(data, est):
    X, y = data
    own = est.get_params()
    ok = {"delta": 1.0, "beta": 0.999, "block_size": 1, "validation_size": 1}
    if isinstance(est, SPA):  # δ ∈ (0, 1), β ≥ α = 1, γ ∈ (0, 1), budget ≥ 1
        ok = {"delta": 0.999, "beta": 1.0, "block_size": 1, "gamma": 0.999, "budget": 1, "eta": 1e-6}
    for param, value in ok.items():
        if param in own:
            model = clone(est).set_params(**{param: value}).fit(X[:40], y[:40])
            assert model.n_samples_seen_ == 40 * getattr(model, "n_epochs_", 1)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("est", ONLY_EST)
def test_predict_before_fit_raises(data, est):
    X, _ = data
    for method in (est.predict, est.decision_function):
        with pytest.raises(ValueError, match="not fitted"):
            method(X)


@pytest.mark.parametrize("est", ONLY_EST)
def test_feature_count_change_raises_with_both_counts(data, est):
    X, y = data
    model = clone(est).fit(X[:60], y[:60])
    before = _state(model, X)
    with pytest.raises(ValueError, match=r"(?s)(30.*34|34.*30)"):
        model.partial_fit(X[60:80, :30], y[60:80])
    for method in (model.predict, model.decision_function):
        with pytest.raises(ValueError, match=r"(?s)(35.*34|34.*35)"):
            method(np.hstack([X[:5], X[:5, :1]]))
    assert _state(model, X) == before  # the rejected call changed nothing


@pytest.mark.parametrize("est", ONLY_EST)
def test_bad_labels(data, est):
    X, y = data
    three = y.copy()
    three[:5] = 7
    assert clone(est).fit(X, three).classes_.tolist() == [-1, 1, 7]
    with pytest.raises(ValueError, match="classes="):  # one class, no classes=: cannot code labels
        clone(est).partial_fit(X[:10], np.ones(10, dtype=int))
    with pytest.raises(ValueError, match="1 class"):
        clone(est).fit(X[:10], -np.ones(10, dtype=int))
    # one-class first batch with classes= works, and the other class can follow
    model = clone(est).partial_fit(X[:10], np.ones(10, dtype=int), classes=[-1, 1])
    model.partial_fit(X[10:], y[10:])
    assert set(np.unique(model.predict(X))) <= {-1, 1}
    # a label unseen in the first call is rejected, without changing the model
    model = clone(est).partial_fit(X[:50], y[:50])
    later = y[50:60].copy()
    later[3] = 5
    before = _state(model, X)
    with pytest.raises(ValueError, match=r"label \S*5\S* is not one of the classes"):
        model.partial_fit(X[50:60], later)
    assert _state(model, X) == before and model.n_samples_seen_ == 50
    with pytest.raises(ValueError, match="one label per row"):
        clone(est).fit(X[:10], y[:9])


@pytest.mark.parametrize("est", ONLY_EST)
def test_non_finite_input_names_row_and_column(data, est):
    X, y = data
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"row 3, column 2"):
        clone(est).fit(bad, y)
    model = clone(est).fit(X[:40], y[:40])
    before = _state(model, X)
    bad = X[40:60].copy()
    bad[7, 0] = -np.inf
    with pytest.raises(ValueError, match=r"row 7, column 0"):
        model.partial_fit(bad, y[40:60])
    with pytest.raises(ValueError, match=r"row 7, column 0"):
        model.predict(bad)
    assert _state(model, X) == before


@pytest.mark.parametrize("est", ONLY_EST)
def test_empty_and_misshapen_X(data, est):
    X, y = data
    with pytest.raises(ValueError, match=r"X is empty"):
        clone(est).fit(np.empty((0, X.shape[1])), np.empty(0, dtype=int))
    model = clone(est).fit(X[:40], y[:40])
    with pytest.raises(ValueError, match=r"X is empty"):
        model.partial_fit(np.empty((0, X.shape[1])), np.empty(0, dtype=int))
    with pytest.raises(ValueError, match=r"X must be a 2-D"):
        clone(est).fit(X[0], y[:1])
    with pytest.raises(ValueError, match=r"X must be numeric"):
        clone(est).fit([["a", "b"], ["c", "d"]], [1, -1])
    # where and the fix: a DataFrame's text column by its name, a ragged list's row
    frame = pd.DataFrame(X[:40], columns=[f"f{j}" for j in range(X.shape[1])])
    frame["f2"] = np.where(y[:40] == 1, "red", "blue")
    with pytest.raises(ValueError, match=r"X must be numeric: column 'f2' holds '(red|blue)' at row 0 .*OneHotEncoder"):
        clone(est).fit(frame, y[:40])
    with pytest.raises(ValueError, match=r"X's rows differ in length: row 2 has 1 values, row 0 has 2"):
        clone(est).fit([[0.0, 1.0], [1.0, 0.0], [2.0]], [1, -1, 1])
    # a regression target: scikit-learn's words (its own check reads them), then what to use instead
    with pytest.raises(ValueError, match=r"Unknown label type: continuous.* is a classifier.*OKSRegressor"):
        clone(est).fit(X[:40], np.random.default_rng(0).normal(size=40))


@pytest.mark.parametrize("est", ONLY_EST)
def test_string_and_01_labels_round_trip(data, est):
    X, y = data
    ref = clone(est).fit(X, y)
    for neg, pos in [("b", "g"), (0, 1), (False, True), (-1.0, 1.0)]:
        labels = np.where(y == 1, pos, neg)
        model = clone(est).fit(X, labels)
        assert model.classes_.tolist() == [neg, pos]
        assert _state(model, X) == _state(ref, X)  # only the coding of the labels changed
        pred = model.predict(X)
        assert pred.dtype == labels.dtype
        np.testing.assert_array_equal(pred, np.where(ref.predict(X) == 1, pos, neg))


def test_chi2_kernels_reject_negative_features(data):
    X, y = data
    assert X.min() < 0.0
    model = OMKC(kernels="chi2:1;linear", random_state=0)
    try:
        model.fit(X, y)
    except ValueError as exc:
        assert "chi2" in str(exc) and "negative" in str(exc)
        return
    raise AssertionError(f"no error; finite decision values: {np.isfinite(model.decision_function(X)).all()}")


# --------------------------------------------------------------------------- design rules
def test_algorithms_do_not_import_distributed_stack():
    """DESIGN rule: the algorithms (and the kernel/engine layers they use) never import dask, zarr,
    pyarrow or distributed, so learners stay cheap to import on workers -- beyond what scikit-learn
    itself imports (it imports pandas when installed, and pandas imports pyarrow)."""
    assert stack_modules_imported_by("omkl_dist.algorithms") == []


@pytest.mark.parametrize("est", ONLY_EST)
def test_initialize_then_engine_state(data, est):
    """``initialize`` starts the model a first ``partial_fit`` would (without data), and
    ``set_engine_state`` adopts another run's engine state: both as learning in one place."""
    X, y = data
    whole = clone(est).fit(X, y)
    started = clone(est).initialize(X.shape[1], np.unique(y), n_rows=len(y))
    assert started.n_samples_seen_ == 0 and started.classes_.tolist() == whole.classes_.tolist()
    assert _state(started.partial_fit(X, y), X) == _state(whole, X)
    other = clone(est).initialize(X.shape[1], np.unique(y), n_rows=len(y))
    assert _state(other.set_engine_state(*whole.engine_.state()), X) == _state(whole, X)
    with pytest.raises(ValueError, match="1 class"):
        clone(est).initialize(X.shape[1], [1])
