"""Tables as teams have them (issue 41, item 9): a CSV with a text column and missing values learnt
with --categorical/--impute and predicted from raw rows by `omkl predict` and `load_model` alike;
--features on CSV as on parquet; one default label column for CSV and parquet; zero-based LIBSVM.
Every file is generated here, small."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from omkl_dist import load_model
from omkl_dist.pipelines.cli import main
from omkl_dist.preprocessing import ColumnEncoder
from omkl_dist.storage import DataError, load_arrays, read_dataset


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _customers(n, seed=0):
    """age (numbers, some missing), plan (words, some missing), score (numbers), target (words)."""
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 10, n).round(2)
    plan = rng.choice(["basic", "pro", "gold"], n).astype(object)
    score = rng.normal(0, 1, n).round(3)
    target = np.where((age > 40) ^ (plan == "pro"), "churn", "stay")
    age[::29] = np.nan
    plan[3::31] = None
    return pd.DataFrame({"age": age, "plan": plan, "score": score, "target": target})


@pytest.fixture
def customers(tmp_path):
    frame = _customers(240)
    path = tmp_path / "customers.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_csv_with_text_and_missing_values_runs_and_predicts_raw_rows(customers, tmp_path):
    path, _ = customers
    refused = invoke("run", "spa", "--data", path, "--quiet", "--trace-out", tmp_path / "t0.json")
    assert refused.exit_code == 2
    assert "row 2, column 1 ('age'): empty field (missing value): 9 rows of this column have one" in refused.output
    assert "--impute mean, median or most_frequent" in refused.output
    refused = invoke("run", "spa", "--data", path, "--impute", "median", "--quiet", "--trace-out", tmp_path / "t")
    assert refused.exit_code == 2 and "column 'plan' holds text ('pro'), not numbers" in refused.output
    assert "--categorical one-hot or ordinal" in refused.output
    refused = invoke("run", "spa", "--data", path, "--categorical", "one-hot", "--quiet", "--trace-out", tmp_path / "t")
    assert refused.exit_code == 2
    assert "column 'age' has a missing value in 9 rows (data row 1 first)" in refused.output
    ran = invoke("run", "spa", "--data", path, "--categorical", "one-hot", "--impute", "median", "--quiet",
                 "--json", "--model-out", tmp_path / "model", "--trace-out", tmp_path / "t.json")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.output.splitlines()[-1])["n"] == 240
    # new raw rows: other column order, no label, a category never seen, missing values
    raw = _customers(60, seed=1).drop(columns="target")[["score", "plan", "age"]]
    raw.loc[5, "plan"] = "platinum"
    raw.to_csv(tmp_path / "raw.csv", index=False)
    out = tmp_path / "predictions.parquet"
    predicted = invoke("predict", "--model-dir", tmp_path / "model", "--data", tmp_path / "raw.csv",
                       "--out", out, "--label-column", "none", "--json")  # fmt: skip
    assert predicted.exit_code == 0, predicted.output
    written = pq.read_table(out).to_pandas()
    model = load_model(tmp_path / "model")
    np.testing.assert_array_equal(model.predict(pd.read_csv(tmp_path / "raw.csv")), written["label"])
    np.testing.assert_array_equal(model.decision_function(raw), written["decision"])
    assert model.feature_names == ["age", "score", "plan_basic", "plan_gold", "plan_pro"]
    assert model.job["columns"] == {"categorical": "one-hot", "impute": "median"}
    assert model.columns.to_dict()["statistics"][0] == float(np.nanmedian(_customers(240)["age"]))


def test_column_encoder_is_saved_as_json_and_rebuilt_exactly():
    frame = _customers(120)
    for categorical in ("one-hot", "ordinal"):
        encoder = ColumnEncoder(categorical=categorical, impute="mean").fit(frame.drop(columns="target"))
        loaded = ColumnEncoder.from_dict(json.loads(json.dumps(encoder.to_dict())))
        rows = _customers(50, seed=2).drop(columns="target")
        rows.loc[0, "plan"] = "unseen"
        np.testing.assert_array_equal(loaded.transform(rows), encoder.transform(rows))
        unseen = loaded.transform(rows)[0, 2:]
        assert unseen.tolist() == ([0.0, 0.0, 0.0] if categorical == "one-hot" else [-1.0])
    with pytest.raises(ValueError, match="column 'plan' holds text"):
        ColumnEncoder(impute="mean").fit(frame)


def test_features_choose_csv_columns_as_parquet_columns(customers, tmp_path):
    path, frame = customers
    complete = frame.dropna()
    complete.to_csv(tmp_path / "complete.csv", index=False)
    complete.to_parquet(tmp_path / "complete.parquet", index=False)
    from_csv = read_dataset(tmp_path / "complete.csv", features="score,age")  # the text column is not read
    from_parquet = read_dataset(tmp_path / "complete.parquet", features="score,age")
    np.testing.assert_array_equal(from_csv.X, from_parquet.X)
    np.testing.assert_array_equal(from_csv.y, from_parquet.y)
    assert from_csv.feature_names == from_parquet.feature_names == ["score", "age"]
    messages = []
    for source in ("complete.csv", "complete.parquet"):
        with pytest.raises(DataError) as err:
            read_dataset(tmp_path / source, features="score,agee")
        messages.append(str(err.value).split(": ", 1)[1])
    assert messages[0] == messages[1] and "no feature column named 'agee'" in messages[0]
    ran = invoke("data", "ingest", tmp_path / "complete.csv", "--out", tmp_path / "ds", "--features", "age,score")
    assert ran.exit_code == 0, ran.output
    assert load_arrays(tmp_path / "ds")[2]["feature_names"] == ["age", "score"]
    headless = tmp_path / "plain.csv"
    headless.write_text("1,0.5,2\n-1,0.25,3\n")
    with pytest.raises(DataError, match="--features name a table's columns, and this csv file has no header row"):
        read_dataset(headless, features="a")


@pytest.mark.parametrize(
    "columns, label",
    [(["f1", "Class", "f2"], "Class"), (["x", "y", "target"], "target"), (["label", "f1", "f2"], "label"),
     (["f1", "f2", "f3"], "f1")],
)  # fmt: skip
def test_one_default_label_column_for_csv_and_parquet(tmp_path, columns, label):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.integers(0, 2, size=(30, 3)).astype(float), columns=columns)
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    expected = [c for c in columns if c != label]
    for source in ("t.csv", "t.parquet"):
        ds = read_dataset(tmp_path / source)
        assert ds.feature_names == expected, source
        np.testing.assert_array_equal(ds.y, np.where(frame[label] > 0, 1, -1))


def test_zero_based_libsvm_is_read_with_the_option(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.integers(0, 3, size=(40, 5)).astype(float), np.where(rng.random(40) > 0.5, 1, -1)
    X[:, 0] = 1.0  # every row uses index 0
    path = tmp_path / "zero.svm"
    dump_svmlight_file(X, y, str(path), zero_based=True)
    with pytest.raises(DataError, match="feature index 0 in a 1-based LIBSVM file.*pass --zero-based"):
        read_dataset(path)
    ds = read_dataset(path, zero_based=True)
    np.testing.assert_array_equal(ds.X, load_svmlight_file(str(path), zero_based=True)[0].toarray())
    np.testing.assert_array_equal(ds.X, X)
    ran = invoke("data", "ingest", path, "--out", tmp_path / "ds", "--zero-based")
    assert ran.exit_code == 0, ran.output
    np.testing.assert_array_equal(load_arrays(tmp_path / "ds")[0], X)
