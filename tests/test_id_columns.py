"""A feature column named like a row identifier whose values are distinct integers (``customer_id``:
1 point more mistakes on a 2,000-row churn table when learnt) is warned of wherever labelled rows are
read for learning -- a file read whole, ingested whole or block by block, a parquet table -- with the
``--features -customer_id`` that leaves it out; not when the features were chosen, nor for rows to
predict. ``--features`` takes the columns to leave out (each with a minus) as well as those to read."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from omkl_dist.storage import ingest, read_dataset
from omkl_dist.storage.id_columns import id_columns, looks_like_id
from omkl_dist.storage.readers import blocks


@pytest.mark.parametrize("name", ["id", "ID", "customer_id", "customerId", "CustomerID", "user-id", "row.id", "uuid"])
def test_identifier_names(name):
    assert looks_like_id(name)


@pytest.mark.parametrize("name", ["paid", "valid", "grid", "GRID", "humid", "idle", "identity", "width", "x"])
def test_names_that_only_end_like_one(name):
    assert not looks_like_id(name)


def test_only_distinct_integers_are_identifiers():
    X = np.column_stack([np.arange(10.0), np.arange(10) * 0.5, np.arange(10) % 3, np.arange(10.0)])
    assert id_columns(X, ["customer_id", "user_id", "store_id", "f"]) == ["customer_id"]
    assert id_columns(X, None) == []


def _frame(n=200):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
    frame.insert(0, "customer_id", rng.permutation(n) + 10_000)
    frame["churn"] = np.where(frame.a > 0, "yes", "no")
    return frame


def _warnings(read):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read()
    return [str(w.message) for w in caught if "row identifier" in str(w.message)]


@pytest.mark.parametrize("streamed", [False, True])
def test_learning_from_a_file_with_an_id_column_warns(tmp_path, monkeypatch, streamed):
    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 211)
    _frame().to_csv(tmp_path / "t.csv", index=False)
    _frame().to_parquet(tmp_path / "t.parquet")
    reads = [
        lambda: read_dataset(tmp_path / "t.csv", label_column="churn"),
        lambda: ingest(tmp_path / "t.csv", tmp_path / "csv-ds", label_column="churn", chunk_rows=64),
        lambda: read_dataset(tmp_path / "t.parquet", label_column="churn"),
        lambda: ingest(tmp_path / "t.parquet", tmp_path / "pq-ds", label_column="churn", chunk_rows=64),
    ]
    for read in reads:
        (message,) = _warnings(read)
        assert "feature column 'customer_id' looks like a row identifier" in message
        assert message.endswith("leave it out: --features -customer_id (features='-customer_id')")


def test_no_warning_when_the_features_are_chosen_or_the_rows_are_predicted(tmp_path):
    _frame().to_csv(tmp_path / "t.csv", index=False)
    assert not _warnings(lambda: read_dataset(tmp_path / "t.csv", label_column="churn", features="customer_id,a,b"))
    assert not _warnings(lambda: ingest(tmp_path / "t.csv", tmp_path / "ds", label_column="churn", features="a,b"))
    rows = lambda: read_dataset(  # noqa: E731 - a model that learnt the ids scores them
        tmp_path / "t.csv", optional_labels=True, feature_names=["customer_id", "a", "b"], label_name="churn"
    )
    assert not _warnings(rows)
    _frame().assign(customer_id=1).to_csv(tmp_path / "same.csv", index=False)  # one value: not an identifier
    assert not _warnings(lambda: read_dataset(tmp_path / "same.csv", label_column="churn"))


def test_features_can_name_the_columns_to_leave_out(tmp_path):
    """``--features -customer_id,-region``: every other column but the label; the same dataset as
    listing them, read whole, ingested, from parquet; mixed or unknown names are refused."""
    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main
    from omkl_dist.storage import DataError, load_arrays

    frame = _frame().assign(region="north")
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.parquet"):
        left_out = read_dataset(tmp_path / name, label_column="churn", features="-customer_id,-region")
        listed = read_dataset(tmp_path / name, label_column="churn", features=["a", "b"])
        assert left_out.feature_names == ["a", "b"]
        assert (left_out.X == listed.X).all() and (left_out.y == listed.y).all()
    ingest(tmp_path / "t.csv", tmp_path / "ds", label_column="churn", features=["-customer_id", "-region"])
    assert (load_arrays(tmp_path / "ds")[0] == listed.X).all()
    ran = CliRunner().invoke(main, ["run", "spa", "--data", str(tmp_path / "t.csv"), "--label-column", "churn",
                                    "--features", "-customer_id,-region", "--quiet", "--json"])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    with pytest.raises(DataError, match=r"lists columns to read and columns to leave out .* at once"):
        read_dataset(tmp_path / "t.csv", label_column="churn", features="-region,a")
    with pytest.raises(DataError, match="no column named 'zone' to leave out"):
        read_dataset(tmp_path / "t.parquet", label_column="churn", features="-zone")


def test_a_text_column_is_refused_with_the_features_that_leave_it_out(tmp_path):
    from omkl_dist.storage import DataError

    _frame().assign(customer_id=lambda f: "C-" + f.customer_id.astype(str)).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(DataError, match=r"leave it out \(--features -customer_id\)"):
        read_dataset(tmp_path / "t.csv", label_column="churn")
