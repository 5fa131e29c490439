"""A LIBSVM file is as wide as its largest index, which a test file or a day's window may not reach
(a9a's first 5,000 rows never use its last two features): `omkl predict` pads such rows to the
model's features, as `omkl retrain` pads a window to the champion's; a wider one, or another
format's other column count, is one error naming both widths. A labelled file of one class is
scored as any other (a test file of positives), and a first retrain can name the full width."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from omkl_dist.persistence import load_model
from omkl_dist.pipelines.predict import predict
from omkl_dist.pipelines.retrain import retrain
from omkl_dist.storage import DataError, read_dataset
from omkl_dist.storage.model_store import ModelStore

FEATURES = 6


def libsvm(path, X, y):
    """``X``'s non-zero values as LIBSVM rows (indices from 1), labels ``y``."""
    with open(path, "w") as fh:
        for label, row in zip(y, X):
            fh.write(" ".join([str(label), *(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0.0)]) + "\n")
    return path


def rows(n, seed, *, last_zero=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, FEATURES))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    if last_zero:  # a window that never uses the last feature: its file is narrower
        X[:, -1] = 0.0
    return X, y


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("w")
    X, y = rows(600, 0)
    retrain(root / "store", "m", libsvm(root / "day1.t", X, y), algo="spa", block_size=64)
    return root


def test_predict_pads_a_narrower_libsvm_file_and_scores_one_class(store, tmp_path):
    X, y = rows(300, 1, last_zero=True)
    keep = y > 0  # a test file of positives only, five features wide
    path = libsvm(tmp_path / "pos.t", X[keep], y[keep])
    assert read_dataset(path, optional_labels=True, one_class=True).n_features == FEATURES - 1
    model_dir = ModelStore(store / "store", "m").path(1)
    result = predict(model_dir, path, tmp_path / "p.csv", made_by={"model_dir": str(model_dir), "version": None})
    got = pd.read_csv(tmp_path / "p.csv", dtype={"label": str, "true_label": str})
    model = load_model(model_dir)
    np.testing.assert_array_equal(got["decision"].to_numpy(), model.decision_function(X[keep]))
    assert set(got["true_label"]) == {"1"} and result["accuracy"] == np.mean(got["label"] == "1")
    with pytest.raises(DataError, match="only one class"):  # (to learn from, one class is still refused)
        read_dataset(path)


def test_predict_refuses_more_features_than_the_model(store, tmp_path):
    model_dir = ModelStore(store / "store", "m").path(1)
    wide = tmp_path / "wide.t"
    wide.write_text("1 1:0.5 9:1\n-1 2:1\n")
    with pytest.raises(DataError, match="use 9 features, the model takes 6"):
        predict(model_dir, wide, tmp_path / "p.parquet", made_by={})
    narrow = tmp_path / "narrow.csv"
    narrow.write_text("1,0.5,0.25\n-1,1,2\n")
    with pytest.raises(DataError, match="2 feature columns, the model takes 6"):
        predict(model_dir, narrow, tmp_path / "q.parquet", made_by={})
    assert not (tmp_path / "p.parquet").exists() and not (tmp_path / "q.parquet").exists()


def test_retrain_pads_a_narrower_window_and_refuses_a_wider_one(store, tmp_path):
    root = store / "store"
    X, y = rows(600, 2, last_zero=True)
    later = retrain(root, "m", libsvm(tmp_path / "day2.t", X, y))
    assert later["status"] in ("promoted", "kept") and later["parent"] == 1
    model = load_model(ModelStore(root, "m").path(later["version"]))
    assert model.n_features_in_ == FEATURES
    wide = np.hstack([X, np.ones((600, 1))])
    with pytest.raises(DataError, match="the window has 7 features, the champion .* 6") as error:
        retrain(root, "m", libsvm(tmp_path / "day3.t", wide, y))
    assert "--n-features" in error.value.fix
    # a first version told the full width: the 7-feature window is then its own
    first = retrain(tmp_path / "s2", "w", libsvm(tmp_path / "day1.t", X, y), algo="spa", labels={"n_features": 7})
    assert load_model(ModelStore(tmp_path / "s2", "w").path(first["version"])).n_features_in_ == 7
    assert retrain(tmp_path / "s2", "w", tmp_path / "day3.t")["parent"] == first["version"]


def test_predict_pads_an_ingested_libsvm_dataset_too(store, tmp_path):
    """An ingested LIBSVM dataset is as wide as its file's largest index: predicted in-process (and by a
    cluster's tasks, which read rows the same way: ``ingested_rows``), its rows are padded as a file's."""
    from omkl_dist.storage import ingest

    X, y = rows(200, 3, last_zero=True)
    ingest(libsvm(tmp_path / "narrow.t", X, y), tmp_path / "narrow")
    model_dir = ModelStore(store / "store", "m").path(1)
    predict(model_dir, tmp_path / "narrow", tmp_path / "p.parquet", made_by={})
    got = pd.read_parquet(tmp_path / "p.parquet")
    np.testing.assert_array_equal(got["decision"].to_numpy(), load_model(model_dir).decision_function(X))
