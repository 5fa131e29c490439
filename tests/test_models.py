"""Model store: atomic zarr+JSON round trip, exact continuation, damaged or foreign directories."""

from __future__ import annotations

import json

import numpy as np
import pytest

from omkl_dist.algorithms import OMKC, KernelPerceptron, PerceptronStar, PerceptronU
from omkl_dist.model import Model
from omkl_dist.persistence import load_model, save_model
from omkl_dist.preprocessing import Scaler
from omkl_dist.storage import read_dataset
from omkl_dist.storage.errors import DataError

MODELS = [
    lambda: OMKC(update="S", combination="S", random_state=3, block_size=32),
    lambda: OMKC(update="D", combination="D", block_size=32),
    lambda: KernelPerceptron(kernel="gaussian(sigma=1)"),
    lambda: PerceptronU(kernels="poly:1,2;gaussian:0.5,1"),
    lambda: PerceptronStar(kernels="poly:1;gaussian:2^-1..2^2", validation_size=50),
]


@pytest.fixture(scope="module")
def australian(data_dir):
    ds = read_dataset(data_dir / "australian/australian.libsvm.gz")
    scaler = Scaler("minmax").fit(ds.X[:200])
    return ds.X, ds.y, scaler


@pytest.mark.parametrize("make", MODELS)
def test_saved_model_continues_bit_identically(make, australian, tmp_path):
    X, y, scaler = australian
    Xs = scaler.transform(X)
    model = make().partial_fit(Xs[:250], y[:250])
    save_model(Model(model, scaler=scaler), tmp_path / "m")
    saved = load_model(tmp_path / "m")
    loaded = saved.estimator
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(saved.transform(X), Xs)
    model.partial_fit(Xs[250:], y[250:])
    saved.partial_fit(X[250:], y[250:])  # raw rows: the model's scaler applies
    assert loaded.mistakes_ == model.mistakes_
    np.testing.assert_array_equal(loaded.n_support_, model.n_support_)
    np.testing.assert_array_equal(loaded.weights_, model.weights_)
    np.testing.assert_array_equal(loaded.decision_function(Xs), model.decision_function(Xs))
    assert not any(p.suffix == ".pkl" for p in (tmp_path / "m").rglob("*"))


def test_refuses_overwrite_and_keeps_old_copy(australian, tmp_path):
    X, y, _ = australian
    model = OMKC().fit(X[:100], y[:100])
    save_model(model, tmp_path / "m")
    before = (tmp_path / "m" / "model.json").read_text()
    with pytest.raises(FileExistsError, match="--overwrite"):
        save_model(model, tmp_path / "m")
    assert (tmp_path / "m" / "model.json").read_text() == before
    save_model(model, tmp_path / "m", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_damaged_or_foreign_directories_are_refused(australian, tmp_path):
    X, y, _ = australian
    save_model(OMKC().fit(X[:100], y[:100]), tmp_path / "m")
    with pytest.raises(DataError, match="not a saved model"):
        load_model(tmp_path)
    meta_path = tmp_path / "m" / "model.json"
    meta = json.loads(meta_path.read_text())
    meta["schema_version"] = 99
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(DataError, match="schema version 99"):
        load_model(tmp_path / "m")
    meta["schema_version"] = 2
    meta["arrays"]["w"]["sha256"] = "0" * 64
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(DataError, match="checksum"):
        load_model(tmp_path / "m")
    meta_path.write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        load_model(tmp_path / "m")


def test_unfitted_model_cannot_be_saved(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save_model(OMKC(), tmp_path / "m")
    assert not (tmp_path / "m").exists()
