"""The one model artifact: a model saved by ``omkl run --model-out`` and opened with ``load_model``
predicts raw rows in the user's own labels, equal on every row to ``omkl predict``; ``omkl predict``
scores rows without labels (CSV, parquet, LIBSVM), matching columns to the model's by name; the
``Model`` wrapper's DataFrame checks and its ``partial_fit`` in the user's labels. Rows without
labels ingested as a dataset (dense and csr) are predicted alike, in process and on a cluster, and
every learner refuses such a dataset with one message."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from omkl_dist import SPA, KernelPerceptron, Model, load_model, save_model
from omkl_dist.distributed.runner import DaskRunner
from omkl_dist.job import Job
from omkl_dist.pipelines.cli import main
from omkl_dist.pipelines.retrain import retrain
from omkl_dist.preprocessing import Scaler
from omkl_dist.runner import LocalRunner
from omkl_dist.storage import DataError, dataset_info, load_arrays, open_stream, read_dataset

NAMES = ["tenure", "spend", "calls"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def churn(tmp_path_factory):
    """300 customers (three numeric columns of very different scales, labels churn/stay) and the
    model ``omkl run`` saves from them with standard scaling."""
    root = tmp_path_factory.mktemp("churn")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3)) * [1.0, 50.0, 0.01] + [0.0, 100.0, 3.0]
    y = np.where(X[:, 0] + (X[:, 1] - 100.0) / 50.0 > 0.2, "churn", "stay")
    rows = "".join(f"{label},{a!r},{b!r},{c!r}\n" for (a, b, c), label in zip(X.tolist(), y))
    (root / "churn.csv").write_text(",".join(["label", *NAMES]) + "\n" + rows)  # labels first: the default
    ran = invoke(
        "run", "spa", "--data", root / "churn.csv", "--scaling", "standard",
        "--model-out", root / "model", "--quiet", "--json",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    return root, X, y


def _predict(root, data, out, *extra, model="model"):
    result = invoke("predict", "--model-dir", root / model, "--data", data, "--out", out, "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1]), pq.read_table(out)


def test_load_model_predicts_raw_rows_as_omkl_predict_does(churn, tmp_path):
    root, X, y = churn
    model = load_model(root / "model")
    assert model.classes_.tolist() == ["churn", "stay"] and model.feature_names_in_.tolist() == NAMES
    assert model.scaler.method == "standard" and model.job["settings"]["scaling"] == "standard"
    result, table = _predict(root, root / "churn.csv", tmp_path / "p.parquet")
    assert table.column_names == ["row", "label", "decision", "true_label"]
    predicted = model.predict(X)
    assert (table["label"].to_numpy(zero_copy_only=False) == predicted).all()  # every row
    np.testing.assert_array_equal(table["decision"].to_numpy(), model.decision_function(X))
    assert result["accuracy"] == model.score(X, y) == np.mean(predicted == y) > 0.8
    # the scaler matters: the estimator alone on raw rows disagrees
    assert (model.estimator.predict(X) != model.estimator.predict(model.transform(X))).any()


def test_an_estimator_fitted_on_a_dataframe_keeps_its_column_names_when_saved(tmp_path):
    """A bare SPA fitted on a DataFrame and saved: the loaded model took any DataFrame's columns in any
    order (x3, x1, x2 read as x1, x2, x3). The names are kept, a Model matches by them, and hands the
    estimator a DataFrame of its own columns (no "X does not have valid feature names" warning)."""
    import warnings

    from omkl_dist import save_model

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["x1", "x2", "x3"])
    y = np.where(X.x1 - 2 * X.x2 > 0, "up", "down")
    spa = SPA(n_epochs=1, kernels="gaussian:1;linear").fit(X, y)
    shuffled = X[["x3", "x1", "x2"]]
    with pytest.raises(ValueError, match="Feature names must be in the same order as they were in fit"):
        spa.predict(shuffled)
    loaded = load_model(save_model(spa, tmp_path / "m"))
    assert loaded.feature_names == ["x1", "x2", "x3"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(loaded.decision_function(shuffled), spa.decision_function(X))
        np.testing.assert_array_equal(Model(spa).decision_function(shuffled), spa.decision_function(X))
        Model(spa).partial_fit(shuffled[:10], y[:10])


def test_omkl_predict_scores_unlabelled_csv_parquet_and_libsvm(churn, tmp_path):
    root, X, _ = churn
    want = load_model(root / "model").predict(X)
    reordered = [2, 0, 1]  # columns in another order: matched to the model's by name
    csv = tmp_path / "new.csv"
    csv.write_text(
        ",".join(NAMES[j] for j in reordered)
        + "\n"
        + "".join(",".join(map(repr, r)) + "\n" for r in X[:, reordered].tolist())
    )
    parquet = tmp_path / "new.parquet"
    pd.DataFrame(X[:, reordered], columns=[NAMES[j] for j in reordered]).to_parquet(parquet)
    libsvm = tmp_path / "new.libsvm"
    libsvm.write_text("".join(" ".join(f"{j + 1}:{v!r}" for j, v in enumerate(r)) + "\n" for r in X.tolist()))
    for data in (csv, parquet, libsvm):
        result, table = _predict(root, data, tmp_path / f"{data.suffix[1:]}.parquet", "--label-column", "none")
        assert table.column_names == ["row", "label", "decision"], data
        assert (table["label"].to_numpy(zero_copy_only=False) == want).all(), data
        assert result["rows"] == len(X) and result["accuracy"] is None
    pd.DataFrame(X[:, :2], columns=NAMES[:2]).assign(age=1.0).to_parquet(parquet)
    refused = invoke("predict", "--model-dir", root / "model", "--data", parquet, "--out", tmp_path / "x.parquet",
                     "--label-column", "none")  # fmt: skip
    assert refused.exit_code != 0 and "missing ['calls']" in refused.output and "['age']" in refused.output
    with pytest.raises(DataError, match="--label-column none"):  # rows to learn from need labels
        read_dataset(libsvm)


def test_omkl_predict_finds_a_named_tables_labels_by_the_models_label_column(churn, tmp_path):
    """Without --label-column: a table (CSV with a header, parquet) is read by the model's features
    and the name of the column it learnt its labels from ('label'): rows without that column have
    no labels, and every column that is neither is written beside the predictions as it is (ids);
    another name holds the labels when --label-column names it."""
    root, X, y = churn
    want = load_model(root / "model").predict(X)
    assert load_model(root / "model").label_name == "label"
    order = [2, 0, 1]
    features = pd.DataFrame(X[:, order], columns=[NAMES[j] for j in order])
    features.to_csv(tmp_path / "new.csv", index=False)
    features.to_parquet(tmp_path / "new.parquet")
    for data in (tmp_path / "new.csv", tmp_path / "new.parquet"):
        result, table = _predict(root, data, tmp_path / f"{data.suffix[1:]}.parquet")
        assert table.column_names == ["row", "label", "decision"], data
        assert (table["label"].to_numpy(zero_copy_only=False) == want).all() and result["accuracy"] is None
    ids = [f"cust-{i}" for i in range(len(y))]
    labelled = features.assign(customer=ids)
    labelled.insert(1, "label", y)  # the model's label column, in the middle, beside an id
    for suffix in ("csv", "parquet"):
        source = tmp_path / f"labelled.{suffix}"
        if suffix == "csv":
            labelled.to_csv(source, index=False)
        else:
            labelled.to_parquet(source)
        result, table = _predict(root, source, tmp_path / f"labelled-{suffix}.parquet")
        assert table.column_names == ["row", "label", "decision", "true_label", "customer"], suffix
        assert result["accuracy"] == np.mean(want == y) and table["customer"].to_pylist() == ids
    renamed = features.assign(outcome=y, customer=ids)  # the labels under another name: carried, unless named
    renamed.to_csv(tmp_path / "renamed.csv", index=False)
    result, table = _predict(root, tmp_path / "renamed.csv", tmp_path / "renamed.parquet")
    assert table.column_names == ["row", "label", "decision", "outcome", "customer"] and result["accuracy"] is None
    shown = invoke("predict", "--model-dir", root / "model", "--data", tmp_path / "renamed.csv", "--out",
                   tmp_path / "renamed.csv.gz")  # fmt: skip
    assert "beside the predictions as they are: outcome, customer" in shown.output
    assert "the rows have no column 'label', the model's labels" in shown.output
    result, table = _predict(root, tmp_path / "renamed.csv", tmp_path / "named.parquet", "--label-column", "outcome")
    assert table.column_names == ["row", "label", "decision", "true_label", "customer"]
    assert result["accuracy"] == np.mean(want == y)


def test_omkl_predict_of_a_model_without_its_label_column_takes_the_one_other_column(churn, tmp_path):
    """A model that does not know its label column (saved from Python without ``label_name``): a
    table's single other column holds the labels, whatever its name; of two others, the default
    rule's choice is refused when it is not clear."""
    root, X, y = churn
    model = load_model(root / "model")
    model.label_name = None
    save_model(model, tmp_path / "unnamed")
    want = model.predict(X)
    features = pd.DataFrame(X, columns=NAMES)
    features.insert(1, "outcome", y)  # labels in the middle, under a name the default rule does not know
    features.to_csv(tmp_path / "labelled.csv", index=False)
    result, table = _predict(tmp_path, tmp_path / "labelled.csv", tmp_path / "labelled.parquet", model="unnamed")
    assert table.column_names == ["row", "label", "decision", "true_label"]
    assert result["accuracy"] == np.mean(want == y)
    features.assign(region="north").to_csv(tmp_path / "two.csv", index=False)  # two others: the default rule
    refused = invoke("predict", "--model-dir", tmp_path / "unnamed", "--data", tmp_path / "two.csv", "--out",
                     tmp_path / "two.parquet")  # fmt: skip
    assert refused.exit_code == 2 and "2 columns are not the model's features (['outcome', 'region'])" in refused.output


@pytest.fixture(scope="module")
def unlabelled(churn, tmp_path_factory):
    """The churn rows without their labels, as CSV and parquet (ingested dense) and LIBSVM
    (ingested csr), each ingested with ``--label-column none``; and the model of their labelled
    twin that sparse rows take: unscaled (standard scaling would densify them, and is refused)."""
    root, X, _ = churn
    ran = invoke("run", "spa", "--data", root / "churn.csv", "--scaling", "none", "--model-out", root / "model-raw",
                 "--quiet", "--json")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    folder = tmp_path_factory.mktemp("unlabelled")
    csv = folder / "new.csv"
    csv.write_text(",".join(NAMES) + "\n" + "".join(",".join(map(repr, r)) + "\n" for r in X.tolist()))
    parquet = folder / "new.parquet"
    pd.DataFrame(X, columns=NAMES).to_parquet(parquet)
    libsvm = folder / "new.libsvm"
    libsvm.write_text("".join(" ".join(f"{j + 1}:{v!r}" for j, v in enumerate(r)) + "\n" for r in X.tolist()))
    datasets = {}
    for source, layout in ((csv, "dense"), (parquet, "dense"), (libsvm, "csr")):
        out = folder / f"{source.suffix[1:]}-ds"
        ingested = invoke("data", "ingest", source, "--out", out, "--label-column", "none", "--layout", layout,
                          "--chunk-rows", 128)  # fmt: skip
        assert ingested.exit_code == 0, ingested.output
        assert "labels:    none" in ingested.output
        datasets[source.suffix[1:]] = out
    return datasets


def test_omkl_predict_scores_unlabelled_ingested_datasets(churn, unlabelled, tmp_path):
    root, X, _ = churn
    for name, dataset in unlabelled.items():
        model = "model-raw" if name == "libsvm" else "model"
        want = load_model(root / model).predict(X)
        meta = dataset_info(dataset)
        assert (meta["labelled"], meta["label_map"], meta["n_classes"]) == (False, [], 0), name
        assert not (dataset / "labels.parquet").exists() and (meta.get("layout") == "csr") == (name == "libsvm")
        assert "features (no labels) match" in invoke("data", "verify", dataset).output
        result, table = _predict(root, dataset, tmp_path / f"{name}.parquet", "--block-rows", 100, model=model)
        assert table.column_names == ["row", "label", "decision"], name
        assert (table["label"].to_numpy(zero_copy_only=False) == want).all(), name
        assert result["rows"] == len(X) and result["accuracy"] is None


def test_every_learner_refuses_an_unlabelled_dataset(churn, unlabelled, tmp_path):
    dataset = unlabelled["csv"]
    message = "has no labels .* can be predicted, not learnt from"
    ran = invoke("run", "spa", "--data", dataset, "--quiet")
    assert ran.exit_code != 0 and "can be predicted, not learnt from" in ran.output
    job = Job.from_estimator(SPA(), dataset)
    for runner in (LocalRunner(), DaskRunner(None)):  # refused before any data is read or cluster asked
        with pytest.raises(DataError, match=message):
            runner.fit(job, dataset)
    with pytest.raises(DataError, match=message):  # omkl retrain's window
        retrain(tmp_path / "store", "m", dataset)
    with pytest.raises(DataError, match=message):
        open_stream(dataset)
    X, y, _ = load_arrays(dataset, optional_labels=True)
    assert y is None and X.shape == churn[1].shape


@pytest.mark.cluster
def test_omkl_predict_scores_an_unlabelled_dataset_on_a_cluster(churn, unlabelled, tmp_path):
    from distributed import LocalCluster

    root, X, _ = churn
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        for name, model in (("parquet", "model"), ("libsvm", "model-raw")):
            want = load_model(root / model).predict(X)
            result, table = _predict(
                root, unlabelled[name], tmp_path / f"{name}.parquet", "--block-rows", 128,
                "--scheduler", cluster.scheduler_address, model=model,
            )  # fmt: skip
            assert table.column_names == ["row", "label", "decision"] and result["where"].startswith("dask")
            assert (table["label"].to_numpy(zero_copy_only=False) == want).all(), name


def test_model_matches_dataframe_columns_by_name_and_learns_in_the_users_labels():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 3)) * [1.0, 20.0, 3.0]
    y = np.where(X[:, 0] > 0, "yes", "no")
    scaler = Scaler("minmax").fit(X[:40])
    internal = np.where(y == "yes", 1, -1)
    label_map = [["no", -1], ["yes", 1]]
    model = Model(KernelPerceptron(), scaler=scaler, label_map=label_map, feature_names=["a", "b", "c"])
    model.partial_fit(X[:40], y[:40]).partial_fit(X[40:], y[40:])
    reference = KernelPerceptron().partial_fit(scaler.transform(X[:40]), internal[:40])
    reference.partial_fit(scaler.transform(X[40:]), internal[40:])
    for name, value in reference.to_state()[0].items():
        np.testing.assert_array_equal(model.estimator.to_state()[0][name], value, err_msg=name)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    assert (model.predict(frame[["c", "a", "b"]]) == model.predict(X)).all()
    assert set(model.predict(X)) <= {"yes", "no"} and model.classes_.tolist() == ["no", "yes"]
    with pytest.raises(ValueError, match=r"missing \['c'\]; not the model's \['d'\]"):
        model.predict(frame.rename(columns={"c": "d"}))
    with pytest.raises(ValueError, match="label 'maybe' is not one of"):
        model.partial_fit(X[:2], ["maybe", "no"])
    # a missing value written as text in a DataFrame read from a file: named by column, row and value
    # (numpy's bare "could not convert string to float: 'n/a'" before)
    text = frame[["c", "a", "b"]].astype(object)
    text.loc[3, "a"] = "n/a"
    with pytest.raises(ValueError, match=r"X must be numeric: column 'a' holds 'n/a' at row 3 .*impute"):
        model.predict(text)
