"""MLflow for real: a real ``mlflow server`` (SQLite, local artifacts, 127.0.0.1; tests/mlflow_server.py,
from its own cached venv) receives nightly retrains as runs and registered versions, mirrors the
store's aliases, serves our pyfunc flavor, and misses nothing while it is down (``models sync``).

The server's venv is made by ``make mlflow-env`` (CI makes it while lint runs); when it cannot be
installed the tests are skipped with the reason -- and fail under CI=true, where that must be seen.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from omkl_dist import load_model
from omkl_dist.runner import LocalRunner
from omkl_dist.storage.model_store import ModelStore
from omkl_dist.storage.synth import iter_blocks

from mlflow_env import ensure
from mlflow_server import MlflowServer, Relay
from omkl_cli import last_json, omkl_here

mlflow = pytest.importorskip("mlflow", reason="the MLflow tests need the client (pip install '.[mlflow]')")

# a server process and end-to-end `omkl` commands: the full suite only (not make test-fast)
pytestmark = pytest.mark.slow

ROWS, FEATURES = 1500, 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    venv, why = ensure()
    if venv is None:
        msg = f"the MLflow server could not be installed here: {why}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    running = MlflowServer(venv, tmp_path_factory.mktemp("mlflow-server")).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def client(server):
    return mlflow.MlflowClient(tracking_uri=server.uri, registry_uri=server.uri)


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Two nightly windows of one stream, as CSV files (label first)."""
    folder = tmp_path_factory.mktemp("nights")
    paths = []
    for night in range(2):
        X, y = map(
            np.concatenate,
            zip(*iter_blocks(rows=ROWS, features=FEATURES, seed=0, noise=0.01, first_row=night * ROWS)),
        )
        path = folder / f"night{night + 1}.csv"
        path.write_text(
            "".join(f"{int(label)}," + ",".join(f"{v:.17g}" for v in row) + "\n" for label, row in zip(y, X))
        )
        paths.append(path)
    return paths


def retrain(store, name, window, uri, *extra, experiment="nightly"):
    """``omkl retrain --mlflow``: its JSON status line."""
    first = ["--algo", "perceptron-u", "--block-size", "64"] if not ModelStore(store, name).exists() else []
    args = ["retrain", "--store", store, "--model", name, "--data", window, *first, "--gate", "1", "--quiet"]
    return last_json(omkl_here(*args, "--mlflow", "--mlflow-uri", uri, "--experiment", experiment, *extra))


def test_two_nights_are_two_runs_and_two_registered_versions_and_a_rollback_moves_the_alias(
    server, client, nights, tmp_path
):
    store = tmp_path / "store"
    one = retrain(store, "churn", nights[0], server.uri)
    two = retrain(store, "churn", nights[1], server.uri)
    assert (one["status"], two["status"]) == ("promoted", "promoted") and two["version"] == 2
    assert "error" not in two["mlflow"] and two["mlflow"]["aliases"] == {
        "champion": two["mlflow"]["registered_version"]
    }

    experiment = client.get_experiment_by_name("nightly")
    runs = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])
    assert [r.info.run_id for r in runs] == [one["mlflow"]["run_id"], two["mlflow"]["run_id"]]
    run = runs[1]
    lineage = ModelStore(store, "churn").lineage(2)
    # the parameters under the estimator's names, the lineage as tags, the store version
    assert {k: run.data.params[k] for k in lineage["params"]} == {
        k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in lineage["params"].items()
    }
    assert run.data.params["algo"] == "perceptron-u" and run.data.params["block_size"] == "64"
    assert run.data.tags["omkl.parent_version"] == "1" and run.data.tags["omkl.store_version"] == "2"
    assert run.data.tags["omkl.window_digest"] == two["window"]["sha256"]
    assert run.data.tags["omkl.code_version"] == lineage["code"]["omkl-dist"]
    assert run.data.metrics["holdout_mistake_rate"] == two["gate"]["challenger"]
    assert run.data.metrics["store_version"] == 2 and run.data.metrics["drift_alarms"] == 0
    assert run.data.metrics["instances_per_second"] > 0 and run.data.metrics["support_vectors"] > 0
    # the running mistake rate, step = instances the model has seen (night 2 continues night 1's)
    history = client.get_metric_history(run.info.run_id, "running_mistake_rate")
    steps = [m.step for m in history]
    train_rows = two["window"]["train_rows"][1] - two["window"]["train_rows"][0]
    assert steps == sorted(steps) and steps[0] > train_rows and steps[-1] == 2 * train_rows
    assert history[-1].value == pytest.approx(two["train"]["mistake_rate"])
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "report")}
    assert {"report/report.json", "report/mistakes.png"} <= artifacts

    # two registered versions, each tagged with its store version; the champion alias on the second
    versions = {mv.tags["omkl.store_version"]: mv.version for mv in client.search_model_versions("name = 'churn'")}
    assert versions == {"1": one["mlflow"]["registered_version"], "2": two["mlflow"]["registered_version"]}
    assert client.get_model_version_by_alias("churn", "champion").version == versions["2"]
    listing = json.loads(
        omkl_here("models", "list", "--store", store, "churn", "--json", "--mlflow", "--mlflow-uri", server.uri).stdout
    )
    assert [(r["version"], r["mlflow_version"]) for r in listing] == [(1, versions["1"]), (2, versions["2"])]

    # a rollback moves MLflow's alias back
    omkl_here("models", "rollback", "--store", store, "churn", "--mlflow", "--mlflow-uri", server.uri)
    assert client.get_model_version_by_alias("churn", "champion").version == versions["1"]
    # as does any alias a promote sets
    omkl_here(
        "models",
        "promote",
        "--store",
        store,
        "churn",
        "2",
        "--alias",
        "challenger",
        "--mlflow",
        "--mlflow-uri",
        server.uri,
    )
    assert client.get_model_version_by_alias("churn", "challenger").version == versions["2"]
    # and a rerun of night 2 (the same version) registers nothing twice
    again = retrain(store, "churn", nights[1], server.uri)
    assert again["status"] == "exists" and len(client.search_model_versions("name = 'churn'")) == 2


def test_the_pyfunc_model_predicts_what_omkl_predict_writes(server, nights, tmp_path, monkeypatch):
    store = tmp_path / "store"
    retrain(store, "scorer", nights[0], server.uri, "--no-plots")
    omkl_here("predict", "--store", store, "--model", "scorer", "--data", nights[1], "--out", tmp_path / "p.parquet")
    written = pq.read_table(tmp_path / "p.parquet").to_pandas()

    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
    model = mlflow.pyfunc.load_model("models:/scorer@champion")
    names = load_model(ModelStore(store, "scorer").path(1)).feature_names
    raw = pd.read_csv(nights[1], header=None).iloc[:, 1:]
    rows = raw.set_axis(names, axis=1) if names else raw.to_numpy()
    labels = model.predict(rows)
    assert labels.tolist() == written["label"].tolist()
    decision = model.predict(rows, params={"output": "decision"})
    assert decision["label"].tolist() == written["label"].tolist()
    np.testing.assert_array_equal(decision["decision"].to_numpy(), written["decision"].to_numpy())
    with pytest.raises(ValueError, match="'output' must be one of 'label', 'decision'"):
        model.predict(rows, params={"output": "proba"})


def test_mlflow_stopped_mid_retrain_publishes_and_models_sync_registers_it_later(
    server, client, nights, tmp_path, monkeypatch
):
    relay = Relay(server.port).open()
    store = tmp_path / "store"
    try:
        first = retrain(store, "outage", nights[0], relay.uri, "--no-plots", experiment="outage")
        assert first["mlflow"]["registered_version"] and "error" not in first["mlflow"]

        fit = LocalRunner.fit

        def server_goes_down_while_it_trains(self, *args, **kwargs):
            relay.close()
            return fit(self, *args, **kwargs)

        monkeypatch.setattr(LocalRunner, "fit", server_goes_down_while_it_trains)
        second = retrain(store, "outage", nights[1], relay.uri, "--no-plots", experiment="outage")
        monkeypatch.undo()
        assert second["status"] == "promoted" and second["version"] == 2  # published all the same
        assert "not reachable" in second["mlflow"]["error"]
        assert any("omkl models sync" in note for note in second["notes"])
        assert ModelStore(store, "outage").aliases() == {"champion": 2}
        assert client.get_model_version_by_alias("outage", "champion").tags["omkl.store_version"] == "1"
        down = omkl_here("models", "sync", "--store", store, "outage", "--mlflow-uri", relay.uri, check=False)
        assert down.returncode == 1 and "not reachable" in down.stderr

        relay.open()
        synced = last_json(omkl_here("models", "sync", "--store", store, "outage", "--mlflow-uri", relay.uri))
        assert list(synced["registered"]) == ["2"] and synced["aliases"] == {"champion": synced["registered"]["2"]}
        assert client.get_model_version_by_alias("outage", "champion").tags["omkl.store_version"] == "2"
        twice = last_json(omkl_here("models", "sync", "--store", store, "outage", "--mlflow-uri", relay.uri))
        assert twice["registered"] == {} and twice["versions"] == synced["versions"]
        assert len(client.search_model_versions("name = 'outage'")) == 2
    finally:
        relay.close()


def test_log_model_from_a_notebook_round_trips_any_estimator(server, monkeypatch):
    from omkl_dist import OMKC
    from omkl_dist.mlflow import log_model

    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
    X = np.random.default_rng(0).standard_normal((80, 3))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "yes", "no")
    estimator = OMKC(random_state=0).fit(X, y)
    mlflow.set_experiment("notebook")
    with mlflow.start_run():
        info = log_model(estimator, registered_model_name="notebook-omkc")
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    assert loaded.predict(X).tolist() == estimator.predict(X).tolist()
    scores = loaded.predict(X, params={"output": "decision"})["decision"].to_numpy()
    np.testing.assert_array_equal(scores, estimator.decision_function(X))


def test_mlflow_options_are_checked_before_any_work(tmp_path, nights, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    base = ["retrain", "--store", tmp_path / "s", "--model", "m", "--data", nights[0], "--algo", "perceptron-u"]
    no_uri = omkl_here(*base, "--mlflow", check=False)
    assert no_uri.returncode == 2 and "give --mlflow-uri" in no_uri.stderr
    no_flag = omkl_here(*base, "--mlflow-uri", "http://127.0.0.1:9", check=False)
    assert no_flag.returncode == 2 and "add --mlflow" in no_flag.stderr
    assert not (tmp_path / "s").exists()


def test_run_and_fit_say_in_their_text_that_mlflow_was_down(nights, tmp_path):
    """MLflow down fails no job, and the text says so (the JSON's ``mlflow`` block had it alone)."""
    uri = ["--mlflow", "--mlflow-uri", "http://127.0.0.1:9"]
    run = omkl_here("run", "perceptron-u", "--data", nights[0], "--trace-out", tmp_path / "t.json", "--quiet", *uri)
    fit = omkl_here("fit", "mkboost", "--trials", "2", "--data", nights[0], "--quiet", *uri)
    for out in (run.stdout, fit.stdout):
        assert "mlflow           not logged: MLflow at http://127.0.0.1:9 is not reachable" in out, out
        assert "(the job's outputs stand)" in out


def test_run_and_fit_are_one_mlflow_run_each(server, client, nights, tmp_path):
    uri = ["--mlflow", "--mlflow-uri", server.uri, "--experiment", "jobs"]
    run = json.loads(
        omkl_here(
            "run",
            "perceptron-u",
            "--data",
            nights[0],
            "--block-size",
            "64",
            "--trace-out",
            tmp_path / "t.json",
            "--json",
            "--quiet",
            *uri,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    fit = json.loads(
        omkl_here(
            "fit",
            "--algo",
            "mkboost",
            "--trials",
            "3",
            "--test-size",
            "0.8",
            "--data",
            nights[0],
            "--json",
            "--quiet",
            *uri,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    by_id = {r.info.run_id: r for r in client.search_runs([client.get_experiment_by_name("jobs").experiment_id])}
    online, batch = by_id[run["mlflow"]["run_id"]], by_id[fit["mlflow"]["run_id"]]
    text = omkl_here("fit", "mkboost", "--trials", "2", "--data", nights[0], "--quiet", *uri).stdout
    said = text.split("mlflow           run ")[1].split()  # the text names the run it logged
    assert said[1:4] == ["in", "experiment", "'jobs'"] and client.get_run(said[0]).data.tags["omkl.command"] == "fit"
    assert online.data.tags["omkl.command"] == "run" and online.data.params["algo"] == "perceptron-u"
    assert {k: online.data.params[k] for k in run["params"]} == {
        k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in run["params"].items()
    }
    history = client.get_metric_history(online.info.run_id, "running_mistake_rate")
    assert history[-1].step == run["n"] == ROWS and history[-1].value == pytest.approx(run["mistake_rate"])
    assert online.data.metrics["support_vectors"] == run["n_support"]["total"]
    assert batch.data.tags["omkl.command"] == "fit" and batch.data.params["n_trials"] == "3"
    assert batch.data.metrics["accuracy"] == pytest.approx(fit["accuracy"])
