"""A model knows the column it learnt its labels from (``Model.label_name``), and ``omkl predict``
reads a named table by the model's names: the labels from that column (none when the rows lack it),
the features by name, and every other column -- customer ids, row names, a region -- written
beside the predictions as it is. Before, the one column that was not a feature was taken for the
labels: a file of customer ids and features was "0.00 % accurate", its ids the true labels, and
the training file itself (ids, features, labels) could not be scored at all."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from omkl_dist import load_model
from omkl_dist.pipelines.cli import main
from omkl_dist.storage import ingest, read_dataset
from omkl_dist.storage.readers import blocks

FEATURES = ["f0", "f1", "f2"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _table(n=600, seed=3):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=FEATURES)
    frame.insert(0, "customer_id", [f"C-{i:05d}" for i in range(n)])
    frame["churn"] = np.where(frame.f0 + frame.f1 * frame.f2 > 0, "yes", "no")
    return frame


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model trained with the ids left out (``--features``), on labels named 'churn'."""
    root = tmp_path_factory.mktemp("carried")
    frame = _table()
    frame.to_csv(root / "train.csv", index=False)
    ran = invoke("run", "spa", "--data", root / "train.csv", "--label-column", "churn", "--features",
                 ",".join(FEATURES), "--model-out", root / "model", "--quiet", "--json")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    return root, frame


def _predict(root, data, out, *extra):
    result = invoke("predict", "--model-dir", root / "model", "--data", data, "--out", out, *extra)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_model_knows_its_label_column(trained):
    root, _ = trained
    model = load_model(root / "model")
    assert model.label_name == "churn" and model.feature_names_in_.tolist() == FEATURES
    assert json.loads((root / "model" / "model.json").read_text())["provenance"]["label_name"] == "churn"


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_rows_to_score_keep_their_ids_and_have_no_labels(trained, tmp_path, suffix):
    """Ids and features, no 'churn': every row predicted, the ids beside the predictions, no
    accuracy (it was 0.00 %, the ids read as labels), and a note saying why."""
    root, frame = trained
    rows = frame.drop(columns="churn").assign(region="north")
    source = tmp_path / f"rows.{suffix}"
    if suffix == "csv":
        rows.to_csv(source, index=False)
    else:
        rows.to_parquet(source)
    output = _predict(root, source, tmp_path / "p.csv")
    assert "accuracy" not in output.splitlines()[0]
    assert "beside the predictions as they are: customer_id, region" in output
    assert "note: no accuracy: the rows have no column 'churn', the model's labels" in output
    written = pd.read_csv(tmp_path / "p.csv")
    assert written.columns.tolist() == ["row", "label", "decision", "customer_id", "region"]
    assert written.customer_id.tolist() == rows.customer_id.tolist() and set(written.region) == {"north"}
    want = load_model(root / "model").predict(rows[FEATURES])
    assert written.label.tolist() == want.tolist()


def test_the_training_file_itself_is_scored_with_its_labels_and_ids(trained, tmp_path):
    """Ids, features and 'churn' (refused before: the ids were read as a feature, 'churn' as one
    too), and the ids' types kept in parquet."""
    root, frame = trained
    frame = frame.assign(account=np.arange(len(frame), dtype=np.int64) * 7)
    frame.to_parquet(tmp_path / "train.parquet")
    _predict(root, tmp_path / "train.parquet", tmp_path / "p.parquet", "--proba")
    table = pq.read_table(tmp_path / "p.parquet")
    assert table.column_names == ["row", "label", "decision", "proba_no", "proba_yes", "true_label",
                                  "customer_id", "account"]  # fmt: skip
    assert str(table.schema.field("account").type) == "int64" and table["account"].to_pylist()[:2] == [0, 7]
    assert table["true_label"].to_pylist() == frame.churn.tolist()


def test_labels_under_another_name_are_named_with_label_column(trained, tmp_path):
    root, frame = trained
    renamed = frame.rename(columns={"churn": "outcome"})
    renamed.to_csv(tmp_path / "renamed.csv", index=False)
    _predict(root, tmp_path / "renamed.csv", tmp_path / "carried.csv")
    assert pd.read_csv(tmp_path / "carried.csv").columns.tolist() == ["row", "label", "decision", "customer_id",
                                                                    "outcome"]  # fmt: skip
    output = _predict(root, tmp_path / "renamed.csv", tmp_path / "named.csv", "--label-column", "outcome")
    assert "accuracy on the data's labels" in output
    written = pd.read_csv(tmp_path / "named.csv")
    assert written.columns.tolist() == ["row", "label", "decision", "true_label", "customer_id"]


def test_row_names_and_clashing_names_are_carried_under_their_own_names(trained, tmp_path):
    """pandas' unnamed index (``df.to_csv(path)``) is written as ``row_name``; an input column whose
    name a predictions column has is written as ``input_<name>``."""
    root, frame = trained
    rows = frame.drop(columns="churn").set_index("customer_id").rename_axis(None).assign(label=1.5)
    rows.to_csv(tmp_path / "rows.csv")
    _predict(root, tmp_path / "rows.csv", tmp_path / "p.csv")
    written = pd.read_csv(tmp_path / "p.csv")
    assert written.columns.tolist() == ["row", "label", "decision", "row_name", "input_label"]
    assert written.row_name.tolist() == frame.customer_id.tolist() and set(written.input_label) == {1.5}


def test_a_large_file_with_ids_is_read_block_by_block_too(trained, tmp_path, monkeypatch):
    """The block reader (large CSV files) reads features and labels, and the columns to carry as the
    text they hold: the predictions and the ids are those of the whole-file reader."""
    root, frame = trained
    frame.to_csv(tmp_path / "ids.csv", index=False)
    frame.drop(columns="customer_id").to_csv(tmp_path / "plain.csv", index=False)
    _predict(root, tmp_path / "plain.csv", tmp_path / "whole.csv")
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 97)
    opened = []
    real = blocks.open_blocks

    def spy(*args, **kwargs):
        file = real(*args, **kwargs)
        opened.append(file.path.name)
        return file

    monkeypatch.setattr("omkl_dist.storage.readers.dispatch.open_blocks", spy)
    _predict(root, tmp_path / "plain.csv", tmp_path / "streamed.csv")
    _predict(root, tmp_path / "ids.csv", tmp_path / "carried.csv")
    assert opened == ["plain.csv", "ids.csv"]
    whole, streamed = pd.read_csv(tmp_path / "whole.csv"), pd.read_csv(tmp_path / "streamed.csv")
    pd.testing.assert_frame_equal(whole, streamed)
    carried = pd.read_csv(tmp_path / "carried.csv")
    pd.testing.assert_frame_equal(carried.drop(columns="customer_id"), whole)
    assert carried.customer_id.tolist() == frame.customer_id.tolist()
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 2**62)  # the whole-file reader: the same bytes
    _predict(root, tmp_path / "ids.csv", tmp_path / "carried-whole.csv")
    assert (tmp_path / "carried-whole.csv").read_bytes() == (tmp_path / "carried.csv").read_bytes()


@pytest.mark.parametrize("streamed", [False, True])
def test_an_ingested_file_records_its_label_column_for_the_model(tmp_path, monkeypatch, streamed):
    """Ingested whole or block by block, a CSV's label column is in meta.json, and a model learnt from
    the dataset knows it (omkl submit learns from an ingested copy)."""
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
    frame = _table(300).drop(columns="customer_id")
    frame.to_csv(tmp_path / "t.csv", index=False)
    meta = ingest(tmp_path / "t.csv", tmp_path / "ds", label_column="churn")
    assert meta["label_column"] == "churn"
    ran = invoke("run", "spa", "--data", tmp_path / "ds", "--model-out", tmp_path / "m", "--quiet", "--json")
    assert ran.exit_code == 0, ran.output
    assert load_model(tmp_path / "m").label_name == "churn"


def test_a_cluster_and_a_batch_fit_record_the_label_column(tmp_path):
    """The Dask runner (in-process cluster) and ``omkl fit`` save the label column's name too."""
    from distributed import Client, LocalCluster

    from omkl_dist.distributed.runner import DaskRunner
    from omkl_dist.job import DataWindow, Job

    frame = _table(400).drop(columns="customer_id")
    frame.to_csv(tmp_path / "t.csv", index=False)
    ingest(tmp_path / "t.csv", tmp_path / "ds", label_column="churn")
    job = Job("spa", {}, DataWindow(str(tmp_path / "ds")), block_size=64)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster) as client,
    ):
        result = DaskRunner(client).fit(job, str(tmp_path / "ds"))
    assert result.as_model().label_name == "churn"
    fitted = invoke("fit", "svc", "--data", tmp_path / "t.csv", "--label-column", "churn", "--model-out",
                    tmp_path / "svc", "--json")  # fmt: skip
    assert fitted.exit_code == 0, fitted.output
    assert load_model(tmp_path / "svc").label_name == "churn"


def test_a_dataset_read_to_learn_names_its_label_column(tmp_path):
    frame = _table(50).drop(columns="customer_id")
    frame.to_csv(tmp_path / "t.tsv", sep="\t", index=False)
    frame.to_parquet(tmp_path / "t.parquet")
    for name in ("t.tsv", "t.parquet"):
        assert read_dataset(tmp_path / name, label_column="last").label_name == "churn"
    frame.drop(columns="churn").to_csv(tmp_path / "rows.tsv", sep="\t", index=False)
    assert read_dataset(tmp_path / "rows.tsv", label_column="none", optional_labels=True).label_name is None


def test_a_model_store_version_knows_its_label_column(trained, tmp_path):
    """omkl retrain's versions learn from the store's ingested windows: they record the label column,
    and a version scores rows of ids without labels as a saved model does."""
    from omkl_dist.pipelines.retrain import retrain

    root, frame = trained
    summary = retrain(tmp_path / "store", "churn", root / "train.csv", algo="spa", plots=False,
                      labels={"label_column": "churn", "features": ",".join(FEATURES)})  # fmt: skip
    assert summary["status"] == "promoted"
    frame.drop(columns="churn").to_csv(tmp_path / "rows.csv", index=False)
    scored = invoke("predict", "--store", tmp_path / "store", "--model", "churn", "--data", tmp_path / "rows.csv",
                    "--out", tmp_path / "p.csv")  # fmt: skip
    assert scored.exit_code == 0, scored.output
    assert "the rows have no column 'churn'" in scored.output
    assert pd.read_csv(tmp_path / "p.csv").customer_id.tolist() == frame.customer_id.tolist()


def test_carried_ids_keep_their_text(trained, tmp_path):
    """An id column of a text file is carried as the text it holds: '00123' stays '00123' (read as a
    number it was 123), in CSV and parquet output alike."""
    root, frame = trained
    rows = frame.drop(columns=["churn", "customer_id"]).head(3)
    rows.insert(0, "account", ["00123", "007", "42"])
    rows.to_csv(tmp_path / "rows.csv", index=False)
    _predict(root, tmp_path / "rows.csv", tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().splitlines()[1].endswith(",00123")
    _predict(root, tmp_path / "rows.csv", tmp_path / "p.parquet")
    assert pq.read_table(tmp_path / "p.parquet")["account"].to_pylist() == ["00123", "007", "42"]


@pytest.fixture()
def kept(trained, tmp_path):
    """The rows to score ingested with their ids kept (``--keep customer_id``; ids with leading zeros),
    from CSV (unlabelled) and from parquet (labelled)."""
    root, frame = trained
    rows = frame.assign(customer_id=[f"{i:06d}" for i in range(len(frame))])
    rows.drop(columns="churn").to_csv(tmp_path / "rows.csv", index=False)
    rows.to_parquet(tmp_path / "rows.parquet")
    ran = invoke("data", "ingest", tmp_path / "rows.csv", "--label-column", "none", "--keep", "customer_id",
                 "--out", tmp_path / "csv-ds", "--chunk-rows", 128)  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert "kept:      customer_id (not features: omkl predict writes them out)" in ran.output
    ingest(tmp_path / "rows.parquet", tmp_path / "pq-ds", label_column="churn", keep=["customer_id"], chunk_rows=128)
    return root, rows, tmp_path


def test_an_ingested_datasets_kept_ids_are_written_beside_its_predictions(kept):
    from omkl_dist.storage import dataset_info, verify_dataset

    root, rows, folder = kept
    want = load_model(root / "model").predict(rows[FEATURES])
    for name, labelled in (("csv-ds", False), ("pq-ds", True)):
        meta = verify_dataset(folder / name)
        assert meta["carried"]["columns"] == ["customer_id"] and meta["feature_names"] == FEATURES
        assert dataset_info(folder / name)["n_features"] == 3
        output = _predict(root, folder / name, folder / f"{name}.parquet", "--block-rows", 100)
        table = pq.read_table(folder / f"{name}.parquet")
        assert table["customer_id"].to_pylist() == rows.customer_id.tolist()
        assert table["label"].to_pylist() == want.tolist()
        assert ("true_label" in table.column_names) == labelled and "note: no accuracy" not in output


@pytest.mark.cluster
def test_kept_ids_on_a_cluster(kept):
    """Predicted by tasks on the workers, the blocks in order: the ids beside the same rows."""
    from distributed import LocalCluster

    root, rows, folder = kept
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        _predict(
            root, folder / "csv-ds", folder / "c.csv", "--block-rows", 64, "--scheduler", cluster.scheduler_address
        )
    written = pd.read_csv(folder / "c.csv", dtype={"customer_id": str})
    assert written.customer_id.tolist() == rows.customer_id.tolist()
    assert written.label.tolist() == load_model(root / "model").predict(rows[FEATURES]).tolist()


def test_kept_columns_are_checked_and_refused_where_they_cannot_be(kept):
    from omkl_dist.storage import DataError, dataset_info, verify_dataset

    root, rows, folder = kept
    carried = folder / "csv-ds" / "carried.parquet"
    pq.write_table(pq.read_table(carried).slice(0, 10), carried)  # another file in its place
    with pytest.raises(DataError, match="carried.parquet holds 10 rows of"):
        dataset_info(folder / "csv-ds")
    pq.write_table(pq.read_table(folder / "pq-ds" / "carried.parquet").slice(0), folder / "pq-ds" / "carried.parquet",
                   compression="gzip")  # fmt: skip
    with pytest.raises(DataError, match="carried.parquet does not match its checksum"):
        verify_dataset(folder / "pq-ds")
    with pytest.raises(DataError, match="'customer_id' is both kept"):
        ingest(folder / "rows.parquet", folder / "x", label_column="churn", keep="customer_id",
               features=["customer_id", "f0"])  # fmt: skip
    with pytest.raises(DataError, match=r"no column named 'nope' to leave out \(or keep\); the columns are"):
        ingest(folder / "rows.parquet", folder / "x", label_column="churn", keep="nope")
    (folder / "rows.svm").write_text("1 1:0.5 2:1\n-1 1:1 3:2\n")
    with pytest.raises(DataError, match="--keep name a table's columns, and this libsvm file has no header"):
        ingest(folder / "rows.svm", folder / "y", keep="customer_id")
    assert not (folder / "x").exists() and not (folder / "y").exists()


def test_a_model_learns_from_a_dataset_with_kept_columns_without_them(tmp_path):
    frame = _table(300)
    frame.to_csv(tmp_path / "t.csv", index=False)
    ingest(tmp_path / "t.csv", tmp_path / "ds", label_column="churn", keep="customer_id")
    ran = invoke("run", "spa", "--data", tmp_path / "ds", "--model-out", tmp_path / "m", "--quiet", "--json")
    assert ran.exit_code == 0, ran.output
    assert load_model(tmp_path / "m").feature_names_in_.tolist() == FEATURES
