"""Issue 41's first hour, what `retrain`, `submit` and `predict` owe the table options: a retrain
reads a table with --categorical/--impute, saves the encoder with the version and reads every
later window with the champion's fitted encoder (never one refitted on the new window);
`submit --label-column none` is refused before any work; `predict` of an ingested dataset by an
encoder model. In-process (CliRunner), small generated files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from omkl_dist import load_model
from omkl_dist.pipelines.cli import main
from omkl_dist.storage.model_store import ModelStore

SPA = ["--algo", "spa", "--param", "kernels=gaussian:1;linear", "--param", "budget=40"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _window(n, seed, shift=0.0, plans=("basic", "pro", "gold")):
    """age (numbers, some missing), plan (words, one missing), score; target from age and plan."""
    rng = np.random.default_rng(seed)
    age = (rng.normal(40, 10, n) + shift).round(2)
    plan = rng.choice(list(plans), n).astype(object)
    target = np.where((age > 40 + shift) ^ (plan == "pro"), "churn", "stay")
    age[::23] = np.nan
    plan[7] = None
    return pd.DataFrame({"age": age, "plan": plan, "score": rng.normal(0, 1, n).round(3), "target": target})


def _read_json(path):
    return json.loads(path.read_text())


def _retrain(store, data, *options):
    ran = invoke("retrain", "--store", store, "--model", "churn", "--data", data, "--holdout", 0.25, "--no-plots",
                 "--quiet", *options)  # fmt: skip
    return ran, json.loads(ran.stdout.strip().splitlines()[-1])


def test_retrain_encodes_a_table_and_later_windows_use_the_champions_encoder(tmp_path):
    first, second = tmp_path / "monday.csv", tmp_path / "tuesday.csv"
    _window(240, 0).to_csv(first, index=False)
    # another mean age, and a plan never seen on Monday: a refitted encoder would differ in both
    _window(240, 1, shift=15.0, plans=("basic", "pro", "gold", "platinum")).to_csv(second, index=False)
    store = tmp_path / "store"
    ran, v1 = _retrain(store, first, *SPA, "--categorical", "one-hot", "--impute", "mean")
    assert ran.exit_code == 0, ran.output
    assert v1["status"] == "promoted" and v1["version"] == 1
    first_model = load_model(ModelStore(store, "churn").path(1))
    encoder = first_model.columns.to_dict()
    assert first_model.columns.impute == "mean" and first_model.columns.categorical == "one-hot"
    assert encoder["statistics"][0] == pytest.approx(pd.read_csv(first)["age"].mean())

    ran, v2 = _retrain(store, second)  # no options: the champion's encoder reads the window
    assert ran.exit_code == 0, ran.output
    assert v2["parent"] == 1 and v2["version"] == 2
    second_model = load_model(ModelStore(store, "churn").path(2))
    assert second_model.columns.to_dict() == encoder
    assert second_model.feature_names == first_model.feature_names == [
        "age", "score", "plan_basic", "plan_gold", "plan_pro"
    ]  # fmt: skip
    # the raw rows of Tuesday (a missing age, an unseen plan) predicted through the saved encoder
    rows = pd.read_csv(second).drop(columns="target")
    assert set(second_model.predict(rows)) <= {"churn", "stay"}

    # predict of the window's dataset, ingested with the model's own encoder: its features are the model's
    window = next(d for d in (store / "churn" / "windows").iterdir() if _read_json(d / "meta.json")["source_name"]
                  == str(second))  # fmt: skip
    predicted = invoke("predict", "--model-dir", ModelStore(store, "churn").path(2), "--data", window,
                       "--out", tmp_path / "p.parquet", "--json")  # fmt: skip
    assert predicted.exit_code == 0, predicted.output
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "p.parquet")["label"], second_model.predict(rows))
    # a dataset encoded at ingest by another encoder: refused, saying what to do
    invoke("data", "ingest", second, "--out", tmp_path / "ordinal", "--categorical", "ordinal", "--impute", "mean")
    refused = invoke("predict", "--model-dir", ModelStore(store, "churn").path(2), "--data", tmp_path / "ordinal",
                     "--out", tmp_path / "q.parquet")  # fmt: skip
    assert refused.exit_code == 2
    assert "features were made at ingest with another column encoder than the model's" in refused.output
    assert "predict the data file itself" in refused.output

    refused, line = _retrain(store, second, "--impute", "median")
    assert refused.exit_code == 2 and line["status"] == "error"
    assert "--impute median differs from how the champion (version 2) reads its columns" in line["error"]
    assert "--categorical one-hot, --impute mean" in line["error"]


def test_a_later_window_is_read_with_the_champions_classes(tmp_path):
    """A window file of a later version is coded with the champion's classes: a day of one class (no
    churn) was refused as "only one class present", and a day with a new class as "the window's label
    'churn' (coded 0) is not one of the champion's labels ... with the same coding" (it was 'later')."""
    store, monday = tmp_path / "store", tmp_path / "monday.csv"
    _window(240, 0).to_csv(monday, index=False)
    ran, v1 = _retrain(store, monday, *SPA, "--categorical", "one-hot", "--impute", "mean")
    assert v1["status"] == "promoted"
    quiet = _window(600, 2)
    quiet[quiet.target == "stay"].to_csv(tmp_path / "quiet.csv", index=False)
    ran, v2 = _retrain(store, tmp_path / "quiet.csv")
    assert ran.exit_code == 0 and v2["version"] == 2, ran.output
    model = load_model(ModelStore(store, "churn").path(2))
    assert model.classes_.tolist() == ["churn", "stay"]
    new_class = _window(240, 3)
    new_class.loc[[5, 9], "target"] = "later"
    new_class.to_csv(tmp_path / "new.csv", index=False)
    ran, refused = _retrain(store, tmp_path / "new.csv")
    assert ran.exit_code == 2 and refused["status"] == "error"
    assert "new.csv, row 7: the window's label 'later' is not one of the champion's (version 2) classes ['churn', "
    "'stay']: nothing was published. Fix: a model learns the classes of its first version" in refused["error"]
    assert ModelStore(store, "churn").versions() == [1, 2]


def test_submit_of_rows_without_labels_is_refused_before_any_work(tmp_path):
    path = tmp_path / "rows.csv"
    _window(60, 0).to_csv(path, index=False)
    out = tmp_path / "model"
    ran = invoke("submit", "spa", "--scheduler", "tcp://127.0.0.1:9", "--data", path, "--out", out,
                 "--label-column", "none", "--impute", "mean", "--categorical", "ordinal", "--quiet")  # fmt: skip
    assert ran.exit_code == 2
    assert "--label-column none reads rows without labels, which can be predicted but not learnt from" in ran.output
    assert not (tmp_path / "model.data").exists() and not out.exists()
    ran, line = _retrain(tmp_path / "store", path, *SPA, "--label-column", "none")
    assert ran.exit_code == 2 and "rows without labels" in line["error"]
    assert not (tmp_path / "store" / "churn" / "windows").exists()


def test_predict_reads_the_raw_columns_an_ingested_dataset_kept(tmp_path):
    """A model that imputes its numeric columns predicts a dataset ingested without an encoder (its
    columns are the raw ones, matched by name) as it predicts the file."""
    frame = _window(240, 0).drop(columns="plan")
    frame.to_csv(tmp_path / "train.csv", index=False)
    ran = invoke("run", "spa", "--data", tmp_path / "train.csv", "--impute", "mean", "--model-out", tmp_path / "m",
                 "--trace-out", tmp_path / "t.json", "--quiet")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    complete = _window(90, 3).drop(columns="plan").dropna()[["score", "target", "age"]]  # other column order
    complete.to_csv(tmp_path / "new.csv", index=False)
    assert invoke("data", "ingest", tmp_path / "new.csv", "--out", tmp_path / "ds").exit_code == 0
    predicted = invoke(
        "predict", "--model-dir", tmp_path / "m", "--data", tmp_path / "ds", "--out", tmp_path / "p.parquet"
    )
    assert predicted.exit_code == 0, predicted.output
    expected = load_model(tmp_path / "m").predict(complete.drop(columns="target"))
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "p.parquet")["label"], expected)


def test_number_options_show_their_range_or_none():
    shown = " ".join(invoke("retrain", "--help").output.split())
    assert "None]" not in shown  # an unbounded FiniteFloat shows no range (click's would be x<=None)
    for words in ["(its tail), in (0, 1),", "tolerance (>= 0)", "lambda (> 0)", "delta (>= 0)"]:
        assert words in shown
    assert "[default: 0.2]" in shown
    assert "[default: 10.0; x>0]" in " ".join(invoke("fit", "--help").output.split())  # a bounded one shows it


@pytest.mark.parametrize("encoded", [False, True], ids=["numbers", "encoded"])
def test_a_later_window_file_is_read_by_the_champions_columns(tmp_path, encoded):
    """A day's file with ids beside the features, its columns in another order: the first version was
    told `--features -customer_id --label-column target`; a later window, told nothing, reads the
    champion's features by name and its label column (the ids were taken for a feature and refused as
    text), for a model of numbers and for one that encodes a text column."""
    first, second = tmp_path / "monday.csv", tmp_path / "tuesday.csv"
    for n, (path, seed) in enumerate(((first, 0), (second, 1))):
        day = _window(240, seed).fillna({"age": 40.0, "plan": "basic"})
        if not encoded:
            day = day.drop(columns="plan")
        day.insert(0, "customer_id", [f"c{n}-{i:04d}" for i in range(240)])
        (day if path == first else day[list(reversed(day.columns))]).to_csv(path, index=False)
    store = tmp_path / "store"
    told = ["--features", "-customer_id", "--label-column", "target", *(["--categorical", "one-hot"] * encoded)]
    ran, v1 = _retrain(store, first, *SPA, *told)
    assert ran.exit_code == 0 and v1["version"] == 1, ran.output
    ran, v2 = _retrain(store, second)
    assert ran.exit_code == 0 and v2["status"] in ("promoted", "kept") and v2["version"] == 2, ran.output
    models = [load_model(ModelStore(store, "churn").path(v)) for v in (1, 2)]
    assert models[1].raw_names == models[0].raw_names and models[1].label_name == "target"
    assert "customer_id" not in models[1].raw_names


def test_a_window_without_a_header_continues_a_named_champion_by_position_and_keeps_its_names(tmp_path):
    """A day's file without a header (the champion's columns in its order, the labels last) is read by
    position, as before; the version it makes keeps the champion's feature names and label column (it
    lost them, and the next day's file with ids was then refused), so a named file with ids follows."""
    store = tmp_path / "store"
    days = []
    for n in range(3):
        day = _window(240, n).drop(columns="plan").fillna({"age": 40.0})
        day.insert(0, "customer_id", [f"c{n}-{i:04d}" for i in range(240)])
        days.append(day)
    days[0].to_csv(tmp_path / "monday.csv", index=False)
    days[1].drop(columns="customer_id").to_csv(tmp_path / "tuesday.csv", index=False, header=False)
    days[2].to_csv(tmp_path / "wednesday.csv", index=False)
    ran, _ = _retrain(store, tmp_path / "monday.csv", *SPA, "--features", "-customer_id", "--label-column", "target")
    assert ran.exit_code == 0, ran.output
    ran, v2 = _retrain(store, tmp_path / "tuesday.csv", "--label-column", "last")
    assert ran.exit_code == 0 and v2["version"] == 2, ran.output
    tuesday = load_model(ModelStore(store, "churn").path(2))
    assert tuesday.feature_names == ["age", "score"] and tuesday.label_name == "target"
    ran, v3 = _retrain(store, tmp_path / "wednesday.csv")
    assert ran.exit_code == 0 and v3["version"] == 3, ran.output
