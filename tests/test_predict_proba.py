"""Calibrated probabilities of the online classifiers (issue 41, item 8).

``predict_proba`` is a temperature-scaled softmax of ``decision_function`` whose slope is learnt
from the progressive scores (omkl_dist/evaluation/calibration.py): its most probable class is the
predicted one on every row, its rows sum to 1, it beats the uncalibrated sigmoid of the raw score
in log-loss, it is saved with the model, and a model whose rows were learnt elsewhere (a cluster's
engine state) honestly has none. scikit-learn's own checks of ``predict_proba`` run in
tests/test_sklearn_conformance.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics import log_loss

from omkl_dist import Model, load_model, save_model
from omkl_dist.algorithms import OM2, OMKC, SPA, KernelPerceptron
from omkl_dist.algorithms.registry import ALGORITHMS
from omkl_dist.evaluation.calibration import Calibration

ONLINE = [cls for cls in ALGORITHMS.values() if hasattr(cls, "predict_proba")]


def _data(n_classes, n=240, seed=0):
    return make_classification(
        n, 5, n_informative=3, n_redundant=0, n_classes=n_classes, flip_y=0.05, random_state=seed
    )


def test_every_online_classifier_has_probabilities():
    assert {cls.__name__ for cls in ONLINE} == {
        "OMKC", "OM2", "KernelPerceptron", "PerceptronU", "PerceptronStar",
        "SPA", "RBP", "Forgetron", "BOGD", "BPAS", "OKS", "FOGD", "NOGD", "OMKCPA", "Projectron", "ProjectronPP",
    }  # fmt: skip


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("cls", ONLINE, ids=lambda cls: cls.__name__)
def test_most_probable_class_is_the_prediction_and_rows_sum_to_one(cls, n_classes):
    X, y = _data(n_classes)
    model = cls(**cls._unit_test_params[0]).fit(X[:160], y[:160])
    proba = model.predict_proba(X[160:])
    assert proba.shape == (80, n_classes)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X[160:]))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.calibration_.n_rows == 160
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X[160:])), proba, rtol=1e-12)


def test_ties_go_to_the_predicted_class():
    calibration = Calibration(2.0, 1.0, (5, 5))
    binary = calibration.probabilities(np.array([0.0, -1e-300, 1e-300]))
    np.testing.assert_array_equal(binary.argmax(axis=1), [1, 0, 1])  # a zero score predicts classes_[1]
    tied = calibration.probabilities(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
    np.testing.assert_array_equal(tied.argmax(axis=1), [1, 0])  # np.argmax's first highest score


def test_calibration_beats_the_raw_scores_sigmoid():
    """SPA's raw scores are margins of no particular scale: their plain sigmoid is far from the
    label frequencies; the slope learnt from the progressive scores brings the held-out log-loss
    down, and the probabilities agree with the observed frequencies."""
    X, y = _data(2, n=600, seed=3)
    model = SPA(**SPA._unit_test_params[0]).fit(X[:400], y[:400])
    proba = model.predict_proba(X[400:])[:, 1]
    raw = 1.0 / (1.0 + np.exp(-model.decision_function(X[400:])))
    assert log_loss(y[400:], proba) < log_loss(y[400:], raw) - 0.02
    assert log_loss(y[400:], proba) < np.log(2)  # better than knowing nothing
    confident = proba > 0.5
    assert abs(proba[confident].mean() - y[400:][confident].mean()) < 0.1  # reliability of the positive calls


def test_the_slope_is_the_maximum_likelihood_of_the_progressive_scores():
    """One batch gets the exact smoothed maximum likelihood; a stream fed in chunks a recursive
    estimate close to it; an update leaves its input record unchanged."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    scores = (2 * y - 1) * 1.5 + rng.normal(size=2000) * 2.0
    whole = Calibration.empty(2).update(scores, y)
    grid = np.linspace(0.01, 3.0, 3000)
    counts = np.bincount(y)
    own = (counts[y] + 1.0) / (counts[y] + 2.0)
    T = np.column_stack([np.where(y == 0, own, 1 - own), np.where(y == 1, own, 1 - own)])
    p = 1.0 / (1.0 + np.exp(-grid[:, None] * scores[None, :]))
    losses = -(T[:, 1] * np.log(p) + T[:, 0] * np.log(1 - p)).sum(axis=1)
    assert abs(whole.slope - grid[np.argmin(losses)]) < 2e-3
    chunked = Calibration.empty(2)
    for lo in range(0, 2000, 100):
        before = chunked
        chunked = chunked.update(scores[lo : lo + 100], y[lo : lo + 100])
        assert before.n_rows == lo
    assert chunked.n_rows == 2000 and abs(chunked.slope - whole.slope) < 0.05 * whole.slope


def test_only_rows_not_learnt_before_calibrate():
    """fit's later passes score rows the model has learnt: only the first calibrates; partial_fit
    calibrates on every row of the stream."""
    X, y = _data(3)
    model = OM2(**{**OM2._unit_test_params[0], "n_epochs": 3}).fit(X, y)
    assert model.n_epochs_ > 1 and model.calibration_.n_rows == len(y)
    model.partial_fit(X[:40], y[:40])
    assert model.calibration_.n_rows == len(y) + 40


def test_calibration_does_not_change_the_model():
    """The stochastic-combination OMKC reads the per-kernel scores to calibrate: its outcome and
    model are those of a run that asks for nothing."""
    X, y = _data(2)
    params = {**OMKC._unit_test_params[0], "update": "S", "combination": "S"}
    a, b = OMKC(**params), OMKC(**params)
    out = a.progressive_partial_fit(X, y)
    kept = b.progressive_partial_fit(X, y, keep_scores=True)
    assert "F" not in out and "F" in kept
    np.testing.assert_array_equal(out["score"], kept["score"])
    for name, value in a.to_state()[0].items():
        np.testing.assert_array_equal(value, b.to_state()[0][name], err_msg=name)


def test_saved_model_gives_the_same_probabilities_in_the_users_labels(tmp_path):
    X, y = _data(3)
    labels = np.array(["bird", "cat", "dog"])[y]
    estimator = KernelPerceptron(**KernelPerceptron._unit_test_params[0]).fit(X, y)
    model = Model(estimator, label_map=[["bird", 0], ["cat", 1], ["dog", 2]])
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    assert loaded.estimator.calibration_ == estimator.calibration_
    assert loaded.classes_.tolist() == ["bird", "cat", "dog"]
    np.testing.assert_array_equal(loaded.classes_[loaded.predict_proba(X).argmax(axis=1)], loaded.predict(X))
    assert (loaded.predict(X) == labels).mean() > 0.5


def test_rows_learnt_elsewhere_carry_no_probabilities():
    """An engine state handed over without its calibration (set_engine_state): those rows gave the
    calibration no scores, so the model offers no predict_proba and says why; rows it learns here
    calibrate it again (a cluster run hands over the calibration its coordinator learnt:
    tests/test_cluster_equals_local.py)."""
    X, y = _data(2)
    trained = SPA(**SPA._unit_test_params[0]).fit(X, y)
    arrays, meta = trained.to_state()
    model = SPA(**SPA._unit_test_params[0]).initialize(X.shape[1], [0, 1], n_rows=len(y))
    model.set_engine_state(arrays, meta["engine"])
    assert not hasattr(model, "predict_proba") and not hasattr(Model(model), "predict_proba")
    with pytest.raises(AttributeError, match="predict_proba") as raised:
        model.predict_proba(X)
    assert "set without a calibration" in str(raised.value.__cause__)  # the why, shown under scikit-learn's message
    model.partial_fit(X[:50], y[:50])
    assert model.calibration_.n_rows == 50 and model.predict_proba(X).shape == (len(y), 2)


def test_omkl_predict_writes_the_probabilities(tmp_path):
    """``omkl predict --proba`` adds a proba_<label> column per class, the saved model's
    ``predict_proba``; a model without probabilities is refused before anything is written."""
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    X, y = _data(3)
    names = np.array(["bird", "cat", "dog"])
    estimator = KernelPerceptron(**KernelPerceptron._unit_test_params[0]).fit(X, y)
    save_model(Model(estimator, label_map=[["bird", 0], ["cat", 1], ["dog", 2]]), tmp_path / "m")
    rows = "".join(f"{label}," + ",".join(map(repr, r)) + "\n" for r, label in zip(X.tolist(), names[y]))
    (tmp_path / "new.csv").write_text("label," + ",".join(f"x{j}" for j in range(X.shape[1])) + "\n" + rows)

    def predict(model, out):
        args = ["predict", "--model-dir", tmp_path / model, "--data", tmp_path / "new.csv", "--out", tmp_path / out]
        return CliRunner().invoke(main, [str(a) for a in [*args, "--proba"]], catch_exceptions=False)

    ran = predict("m", "p.parquet")
    assert ran.exit_code == 0, ran.output
    table = pq.read_table(tmp_path / "p.parquet")
    proba = np.column_stack([table[f"proba_{name}"].to_numpy() for name in names])
    np.testing.assert_array_equal(proba, load_model(tmp_path / "m").predict_proba(X))
    assert (names[proba.argmax(axis=1)] == table["label"].to_numpy(zero_copy_only=False)).all()
    arrays, meta = estimator.to_state()
    elsewhere = KernelPerceptron(**KernelPerceptron._unit_test_params[0]).initialize(X.shape[1], [0, 1, 2])
    save_model(elsewhere.set_engine_state(arrays, meta["engine"]), tmp_path / "cluster")
    refused = predict("cluster", "q.parquet")
    assert refused.exit_code != 0 and "set without a calibration" in refused.output
    assert not (tmp_path / "q.parquet").exists()
