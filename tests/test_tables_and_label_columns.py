"""Real data as teams have it: labels in the last column or under a name, labels as words, the
positive class chosen, parquet tables (files, folders, in-memory pyarrow tables) read in row
batches. Every file is generated here (UCI's magic04 as published is shaped like the first one)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from omkl_dist.pipelines.cli import main
from omkl_dist.storage import DataError, ingest, load_arrays, read_dataset
from omkl_dist.storage import tables as tables_module


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def magic(tmp_path):
    """magic04.data's shape: ten numbers, then the class letter g/h, no header."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 10)) * 20 + 50
    labels = np.where(X[:, 0] + 10 * rng.normal(size=2000) > 50, "g", "h")
    path = tmp_path / "magic04.data"
    path.write_text("".join(",".join(f"{v:.4f}" for v in row) + f",{lab}\n" for row, lab in zip(X, labels)))
    return path, X, labels


def test_labels_in_the_last_column_as_words(magic, tmp_path):
    path, X, labels = magic
    res = invoke("run", "spa", "--data", path, "--quiet", "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 2
    assert f"row 1, column 11: non-numeric value '{labels[0]}'" in res.output
    assert "if the last column holds the labels, pass --label-column last" in res.output
    res = invoke(
        "run",
        "spa",
        "--data",
        path,
        "--label-column",
        "last",
        "--quiet",
        "--json",
        "--trace-out",
        tmp_path / "t.json",
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.splitlines()[-1])
    assert report["n"] == 2000 and 0 < report["mistake_rate"] < 0.5 and report["instances_per_second"] > 0
    ds = read_dataset(path, label_column="last")
    np.testing.assert_allclose(ds.X, np.round(X, 4))
    assert ds.label_map == [["g", -1], ["h", 1]]
    np.testing.assert_array_equal(ds.y, np.where(labels == "h", 1, -1))
    for spec in (10, "10", -1, "-1"):
        np.testing.assert_array_equal(read_dataset(path, label_column=spec).y, ds.y)


def test_a_text_feature_in_the_middle_suggests_a_label_column_only_where_none_was_found(tmp_path):
    """The fix names the column as the option takes it (a header name, or a 0-based index, said so), and
    says nothing about labels when a header named them (``label``: the text column is a feature)."""
    headless, named, unnamed = tmp_path / "headless.csv", tmp_path / "named.csv", tmp_path / "unnamed.csv"
    headless.write_text("5,1.0,2\n6,abc,3\n")
    named.write_text("age,city,label\n5,paris,yes\n6,lyon,no\n")
    unnamed.write_text("a,b,c\n5,1.0,2\n6,abc,3\n")
    with pytest.raises(DataError, match=r"column 2: .* pass --label-column 1 \(label_column=1, 0-based\); otherwise"):
        read_dataset(headless)
    with pytest.raises(DataError, match=r"column 2 \('b'\): .* pass --label-column b \(label_column='b'\); otherwise"):
        read_dataset(unnamed)
    with pytest.raises(DataError, match=r"column 2 \('city'\): non-numeric value 'paris'. Fix: features must be"):
        read_dataset(named)
    # words in the middle and at the end: the end column is named (the labels the first-column rule missed)
    churn = tmp_path / "churn.csv"
    churn.write_text("age,city,churn\n5,paris,yes\n6,lyon,no\n")
    with pytest.raises(DataError, match=r"\('city'\): .* if column 3 \('churn'\) holds the labels, pass --label-c"):
        read_dataset(churn)
    # a parquet table alike: its text column may be the labels the default rule (the first column) missed
    species = tmp_path / "iris.parquet"
    pq.write_table(pa.table({"length": [5.1, 4.9], "width": [3.5, 3.0], "species": ["setosa", "virginica"]}), species)
    with pytest.raises(DataError, match=r"Fix: if 'species' holds the labels, pass --label-column species \(label"):
        read_dataset(species)
    pq.write_table(pa.table({"x": [5.1, 4.9], "city": ["a", "b"], "label": [1, 2]}), species)
    with pytest.raises(DataError, match=r"not numeric. Fix: encode it"):  # the labels found by their name
        read_dataset(species)


def test_a_first_column_taken_for_labels_that_looks_like_a_feature_is_said(tmp_path):
    """No column named target/label/class/y: the default rule takes the first; when that column has more
    than 10 classes and than one per 20 rows (an age), the read warns and names the last column."""
    rng = np.random.default_rng(0)
    age, city = rng.integers(18, 80, 400), rng.choice(["paris", "rome"], 400)
    churn = np.where(age > 50, "yes", "no")
    table = pd.DataFrame({"age": age, "income": rng.normal(50, 15, 400).round(1), "city": city, "churn": churn})
    table.to_csv(tmp_path / "churn.csv", index=False)
    table.to_parquet(tmp_path / "churn.parquet")
    message = r"the labels are the first column, 'age' .*: \d+ classes in 400 rows.* pass --label-column churn"
    for name in ("churn.csv", "churn.parquet"):
        with pytest.warns(UserWarning, match=message):
            read_dataset(tmp_path / name, categorical="one-hot")
    # a numeric table's ingest streams its columns (not read_dataset): the same warning
    table[["age", "income"]].assign(churn=(churn == "yes").astype(int)).to_parquet(tmp_path / "numeric.parquet")
    with pytest.warns(UserWarning, match=message):
        ingest(tmp_path / "numeric.parquet", tmp_path / "ingested")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_dataset(tmp_path / "churn.csv", label_column="churn", categorical="one-hot").label_map[0][0] == "no"
        table.rename(columns={"churn": "label"}).to_csv(tmp_path / "named.csv", index=False)
        read_dataset(tmp_path / "named.csv", categorical="one-hot")  # the labels found by their name
        few = table.assign(age=age // 10)[["age", "income"]]  # 7 classes: labels as well as a feature
        few.to_csv(tmp_path / "few.csv", index=False)
        read_dataset(tmp_path / "few.csv")
        (tmp_path / "dense.txt").write_text("".join(f"{a} {i:.1f}\n" for a, i in zip(age, table.income)))
        read_dataset(tmp_path / "dense.txt")  # no header: the first column is where such files keep labels


def test_positive_class_names_the_plus_one_label(magic, tmp_path):
    path, _, labels = magic
    ds = read_dataset(path, label_column="last", positive_class="g")
    assert ds.label_map == [["h", -1], ["g", 1]]
    np.testing.assert_array_equal(ds.y, np.where(labels == "g", 1, -1))
    with pytest.raises(DataError, match=r"positive class 'x' is not one of the classes \['g', 'h'\]"):
        read_dataset(path, label_column="last", positive_class="x")
    res = invoke("data", "ingest", path, "--out", tmp_path / "ds", "--label-column", "last", "--positive-class", "g")
    assert res.exit_code == 0, res.output
    assert load_arrays(tmp_path / "ds")[2]["label_map"] == [["h", -1], ["g", 1]]
    three = tmp_path / "three.csv"
    three.write_text("a,1\nb,2\nc,3\n")
    with pytest.raises(DataError, match="binary data; this has 3 class"):
        read_dataset(three, positive_class="a")


def test_word_labels_in_the_first_column_keep_the_first_row(tmp_path):
    """`yes,1.0,2.0` is data, not a header (a header names columns that hold numbers below it)."""
    path = tmp_path / "words.csv"
    path.write_text("yes,1.0,2.0\nno,3.0,4.0\nyes,0.5,0.1\n")
    ds = read_dataset(path)
    assert ds.n_rows == 3 and ds.feature_names is None
    np.testing.assert_array_equal(ds.X[0], [1.0, 2.0])
    header = tmp_path / "header.csv"
    header.write_text("answer,x1,x2\nyes,1.0,2.0\nno,3.0,4.0\n")
    ds = read_dataset(header)
    assert ds.n_rows == 2 and ds.feature_names == ["x1", "x2"]


def test_label_column_by_header_name_and_bad_choices(tmp_path):
    path = tmp_path / "named.csv"
    path.write_text("f1,Outcome,f2\n0.5,pos,1\n0.25,neg,2\n0.75,pos,3\n")
    ds = read_dataset(path, label_column="Outcome")
    np.testing.assert_array_equal(ds.X, [[0.5, 1], [0.25, 2], [0.75, 3]])
    assert ds.feature_names == ["f1", "f2"]
    np.testing.assert_array_equal(read_dataset(path, label_column="outcome").y, ds.y)  # case-insensitive
    with pytest.raises(DataError, match=r"no column named 'Outcom'; did you mean 'Outcome'"):
        read_dataset(path, label_column="Outcom")
    with pytest.raises(DataError, match="label column 7 is outside the file's 3 columns"):
        read_dataset(path, label_column=7)
    plain = tmp_path / "plain.csv"
    plain.write_text("1,0.5\n-1,0.25\n")
    with pytest.raises(DataError, match="no header, so no column is named 'y'"):
        read_dataset(plain, label_column="y")
    libsvm = tmp_path / "x.libsvm"
    libsvm.write_text("1 1:0.5\n-1 1:0.25\n")
    with pytest.raises(DataError, match="label column can be chosen for dense, csv"):
        read_dataset(libsvm, label_column="last")


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    species = np.where(X[:, 0] + X[:, 1] ** 2 > 0.8, "setosa", "virginica")
    return (
        pa.table(
            {
                "a": X[:, 0],
                "b": X[:, 1],
                "c": X[:, 2].astype(np.float32),
                "d": (X[:, 3] > 0),
                "species": species,
                "comment": ["free text"] * n,
            }
        ),
        X,
        species,
    )


def test_parquet_with_string_labels_ingests_in_batches_and_runs(tmp_path, monkeypatch):
    table, X, species = _table()
    path = tmp_path / "flowers.parquet"
    pq.write_table(table, path, row_group_size=700)
    res = invoke("data", "ingest", path, "--out", tmp_path / "ds", "--label-column", "species")
    assert res.exit_code == 2 and "feature column 'comment' is string, not numeric" in res.output
    sizes = []
    batches = tables_module.TableSource.batches

    def recording(self, rows=tables_module.BATCH_ROWS):
        for X_part, lo in batches(self, rows):
            sizes.append(len(X_part))
            yield X_part, lo

    monkeypatch.setattr(tables_module.TableSource, "batches", recording)
    res = invoke(
        "data",
        "ingest",
        path,
        "--out",
        tmp_path / "ds",
        "--label-column",
        "species",
        "--features",
        "a,b,c,d",
        "--chunk-rows",
        1000,
    )
    assert res.exit_code == 0, res.output
    assert sizes and max(sizes) <= 1000 and sum(sizes) == 3000  # never the whole table at once
    Xs, y, meta = load_arrays(tmp_path / "ds")
    expected = np.column_stack([X[:, 0], X[:, 1], X[:, 2].astype(np.float32), X[:, 3] > 0])
    np.testing.assert_array_equal(Xs, expected)
    np.testing.assert_array_equal(y, np.where(species == "virginica", 1, -1))
    assert meta["feature_names"] == ["a", "b", "c", "d"] and meta["label_column"] == "species"
    assert meta["format"] == "parquet" and meta["label_map"] == [["setosa", -1], ["virginica", 1]]
    res = invoke("run", "spa", "--data", tmp_path / "ds", "--quiet", "--json", "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 0 and json.loads(res.output.splitlines()[-1])["n"] == 3000
    # the same file run directly, columns chosen on the command line
    res = invoke(
        "run",
        "spa",
        "--data",
        path,
        "--label-column",
        "species",
        "--features",
        "a,b,c,d",
        "--quiet",
        "--json",
        "--trace-out",
        tmp_path / "t2.json",
    )
    assert res.exit_code == 0 and json.loads(res.output.splitlines()[-1])["n"] == 3000


def test_parquet_folder_and_in_memory_table(tmp_path):
    table, X, species = _table(n=900)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        pq.write_table(table.slice(300 * i, 300), folder / f"part-{i}.parquet")
    meta = ingest(folder, tmp_path / "from-folder", label_column="species", features=["a", "b"])
    renamed = table.select(["a", "b", "species"]).rename_columns(["a", "b", "class"])
    from_table = ingest(renamed, tmp_path / "from-table")  # a column named label, y, target or class
    assert meta["n_rows"] == from_table["n_rows"] == 900 and from_table["format"] == "table"
    np.testing.assert_array_equal(load_arrays(tmp_path / "from-folder")[0], load_arrays(tmp_path / "from-table")[0])


def test_a_folder_file_without_a_column_read_is_named(tmp_path):
    """A folder whose third file lacks column b: read as b's missing values ("row 2001: missing value in
    feature column 'b'", which --impute would fill silently). A column no file's read needs may be absent."""
    table, _, _ = _table(n=900)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        part = table.slice(300 * i, 300)
        part = part.drop_columns(["comment"])
        pq.write_table(part.drop_columns(["b"]) if i == 2 else part, folder / f"part-{i}.parquet")
    with pytest.raises(DataError, match=r"part-2.parquet: this file of the folder has no column 'b'.*Fix: give every"):
        read_dataset(folder, label_column="species")
    assert read_dataset(folder, label_column="species", features=["a", "d"]).X.shape == (900, 2)


def test_pandas_dataframe_ingests_as_its_arrow_table(tmp_path):
    """A pandas DataFrame (its index left out) gives the dataset of the same table in pyarrow."""
    table, _, _ = _table(n=600)
    frame = table.select(["a", "b", "d", "species"]).to_pandas()
    frame.index = frame.index * 7 + 3  # a non-default index is not a column
    meta = ingest(frame, tmp_path / "from-frame", label_column="species")
    ingest(table.select(["a", "b", "d", "species"]), tmp_path / "from-table", label_column="species")
    assert meta["feature_names"] == ["a", "b", "d"] and meta["n_rows"] == 600
    for ours, theirs in zip(load_arrays(tmp_path / "from-frame")[:2], load_arrays(tmp_path / "from-table")[:2]):
        np.testing.assert_array_equal(ours, theirs)


def test_a_parquet_file_of_a_sampled_dataframe_keeps_its_row_numbers_out_of_the_features(tmp_path):
    """``df.sample(...).to_parquet(path)`` stores the frame's index as a column ``__index_level_0__``:
    it was learnt as a feature (the row numbers), and a file to predict without labels took it for the
    labels ("accuracy on the data's labels 0.00 %"). A named index (``set_index("id")``) is a column
    like the others, with a warning; naming the unnamed one still reads it."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x1": rng.normal(size=400), "x2": rng.normal(size=400), "label": rng.integers(0, 2, 400)})
    sampled = frame.sample(300, random_state=1)
    sampled.to_parquet(tmp_path / "train.parquet")
    assert pq.read_schema(tmp_path / "train.parquet").names[-1] == "__index_level_0__"
    ds = read_dataset(tmp_path / "train.parquet")
    assert ds.feature_names == ["x1", "x2"] and ds.X.shape == (300, 2)
    np.testing.assert_array_equal(ds.X, sampled[["x1", "x2"]].to_numpy())
    sampled[["x2", "x1"]].to_parquet(tmp_path / "rows.parquet")  # rows to predict: no labels, columns reordered
    rows = read_dataset(tmp_path / "rows.parquet", optional_labels=True, feature_names=["x1", "x2"])
    assert rows.y is None and rows.feature_names == ["x2", "x1"]
    picked = read_dataset(tmp_path / "train.parquet", features=["x1", "__index_level_0__"])
    np.testing.assert_array_equal(picked.X[:, 1], sampled.index.to_numpy())

    sampled.set_index("x2").to_parquet(tmp_path / "named.parquet")
    with pytest.warns(UserWarning, match="'x2' is the index the pandas DataFrame was saved with, read as a feature"):
        named = read_dataset(tmp_path / "named.parquet")
    assert named.feature_names == ["x1", "x2"]
    with warnings.catch_warnings():  # rows for a model that takes x2: the model's features decide, no warning
        warnings.simplefilter("error")
        scored = read_dataset(tmp_path / "named.parquet", optional_labels=True, feature_names=["x1", "x2"])
    np.testing.assert_array_equal(scored.X, named.X)


def test_a_csv_with_the_row_names_pandas_writes_learns_from_its_named_columns(tmp_path):
    """``df.to_csv(path)`` writes the index as a first column whose header is empty: the row numbers of
    a sampled frame were learnt as a feature named '', and a file to predict without labels took
    them for the labels ("accuracy 0.00 %"). Row names that are not numbers (times) are left out too."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x1": rng.normal(size=400), "x2": rng.normal(size=400)})
    frame["label"] = np.where(frame.x1 > frame.x2, "up", "down")
    sampled = frame.sample(300, random_state=1)
    sampled.to_csv(tmp_path / "train.csv")
    ds = read_dataset(tmp_path / "train.csv")
    assert ds.feature_names == ["x1", "x2"] and sorted(k for k, _ in ds.label_map) == ["down", "up"]
    np.testing.assert_array_equal(ds.X, sampled[["x1", "x2"]].to_numpy())
    chosen = read_dataset(tmp_path / "train.csv", features="x2")  # the named-columns path (pyarrow's table)
    assert chosen.feature_names == ["x2"]
    sampled[["x2", "x1"]].to_csv(tmp_path / "rows.csv")  # rows to predict, no labels
    rows = read_dataset(tmp_path / "rows.csv", optional_labels=True, feature_names=["x1", "x2"])
    assert rows.y is None and rows.feature_names == ["x2", "x1"]
    np.testing.assert_array_equal(rows.X, sampled[["x2", "x1"]].to_numpy())
    sampled.drop(columns="label").to_csv(tmp_path / "unnamed.csv")
    unlabelled = read_dataset(tmp_path / "unnamed.csv", label_column="none", optional_labels=True)
    assert unlabelled.feature_names == ["x1", "x2"]

    timed = sampled.set_axis(pd.date_range("2024-01-01", periods=300, freq="h"))
    timed.to_csv(tmp_path / "timed.csv")  # its rows start "2024-01-01 00:00:00,": not LIBSVM's "1 3:0.5"
    by_time = read_dataset(tmp_path / "timed.csv")
    assert by_time.feature_names == ["x1", "x2"] and by_time.label_map == ds.label_map
    np.testing.assert_array_equal(by_time.X, ds.X)


def test_table_errors_name_the_column_and_row(tmp_path):
    table, _, _ = _table(n=50)
    with pytest.raises(DataError, match=r"no column named 'kind'"):
        ingest(table, tmp_path / "x", label_column="kind")
    holes = table.set_column(0, "a", pa.array([None] + [1.0] * 49))
    with pytest.raises(DataError, match=r"row 1: missing value in feature column 'a'"):
        ingest(holes, tmp_path / "x", label_column="species", features="a,b")
    no_label = table.set_column(4, "species", pa.array(["setosa"] * 10 + [None] + ["virginica"] * 39))
    with pytest.raises(DataError, match=r"row 11: missing label in column 'species'"):
        ingest(no_label, tmp_path / "x", label_column="species", features="a,b")
    assert not (tmp_path / "x").exists()


def test_every_public_estimator_imports_from_the_package():
    import omkl_dist
    from omkl_dist.algorithms.registry import ALGORITHMS

    exported = {getattr(omkl_dist, name) for name in omkl_dist.__all__}
    assert set(ALGORITHMS.values()) <= exported
    from omkl_dist import LpMKL, MKBoost, SimpleMKL  # the batch learners too

    assert {LpMKL, MKBoost, SimpleMKL} <= exported
    with pytest.raises(AttributeError):
        omkl_dist.NotAnEstimator  # noqa: B018


def test_run_notes_features_of_very_different_ranges_once(tmp_path):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(-766, 1000, 400), rng.uniform(0, 1, 400)])  # cod-rna's first feature
    path = tmp_path / "wide.csv"
    path.write_text("".join(f"{1 if a > 0 else -1},{a:.3f},{b:.5f}\n" for a, b in X))
    res = invoke(
        "run", "spa", "--data", path, "--trace-out", tmp_path / "t.json", "--quiet", "--paper-settings"
    )  # raw features
    assert res.exit_code == 0 and res.output.count("try --scaling standard") == 1, res.output
    assert "feature 1 spans -76" in res.output
    res = invoke(
        "run",
        "spa",
        "--data",
        path,
        "--trace-out",
        tmp_path / "t2.json",
        "--quiet",
        "--json",
        "--scaling",
        "minmax",
    )
    assert "advice" not in json.loads(res.output.splitlines()[-1])


def test_a_header_narrower_than_its_rows_is_an_error_not_a_shifted_table(tmp_path):
    """Found by the generated suite: `label,f0` over rows of three numbers read as two named columns."""
    path = tmp_path / "h.csv"
    path.write_text("label,f0\n1,0,2\n0,4,5\n")
    with pytest.raises(DataError, match="the header names 2 columns but the data rows have 3"):
        read_dataset(path)
