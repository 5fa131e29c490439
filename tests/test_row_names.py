"""Row names are not data, whatever they hold: the first column of a table whose header names every
column but it -- pandas' ``df.to_csv()`` writes a frame's index so, R's ``write.csv`` its row names
-- is left out of the features, text (sample ids), numbers or empty alike. Text row names were
refused as a non-numeric feature, with advice to save the file again without them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from omkl_dist.storage import DataError, read_dataset


def _frame(n=40, labels=("yes", "no")):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=n).round(4), "b": rng.normal(size=n).round(4)})
    frame["label"] = [labels[i % len(labels)] for i in range(n)]
    frame.index = [f"sample-{i:03d}" for i in range(n)]
    return frame


def _same(left, right):
    np.testing.assert_array_equal(left.X, right.X)
    np.testing.assert_array_equal(left.y, right.y)
    assert left.label_map == right.label_map and left.feature_names == right.feature_names == ["a", "b"]


@pytest.mark.parametrize("labels", [("yes", "no"), (1, -1)])
@pytest.mark.parametrize("sep", [",", "\t"])
def test_text_row_names_are_left_out_as_numbers_were(tmp_path, labels, sep):
    frame = _frame(labels=labels)
    name = "data.csv" if sep == "," else "data.tsv"
    frame.to_csv(tmp_path / name, sep=sep)  # the index written first, under an empty name
    frame.to_csv(tmp_path / f"plain-{name}", sep=sep, index=False)
    frame.reset_index(drop=True).to_csv(tmp_path / f"numbered-{name}", sep=sep)  # row numbers: read before
    plain = read_dataset(tmp_path / f"plain-{name}", label_column="label")
    _same(read_dataset(tmp_path / name, label_column="label"), plain)
    _same(read_dataset(tmp_path / name), plain)  # the default rule skips row names too
    _same(read_dataset(tmp_path / f"numbered-{name}"), plain)


@pytest.mark.parametrize("labels", ['"yes","no"', "1,-1"])
def test_r_write_csv_row_names_quoted(tmp_path, labels):
    """R's write.csv quotes every name, row name and text (numpy's reader then reads the file)."""
    words = labels.startswith('"')
    pair = labels.split(",")
    rows = [f'"r{i}",{0.25 * i},{-i},{pair[i % 2]}' for i in range(30)]
    (tmp_path / "r.csv").write_text('"","a","b","label"\n' + "\n".join(rows) + "\n")
    plain = "\n".join(f"{0.25 * i},{-i},{pair[i % 2]}" for i in range(30))
    (tmp_path / "plain.csv").write_text('"a","b","label"\n' + plain + "\n")
    ds, reference = read_dataset(tmp_path / "r.csv"), read_dataset(tmp_path / "plain.csv")
    _same(ds, reference)
    assert (ds.label_map[0][0] == "no") == words


def test_rows_to_predict_with_text_row_names(tmp_path):
    frame = _frame().drop(columns="label")
    frame.to_csv(tmp_path / "new.csv")
    ds = read_dataset(tmp_path / "new.csv", label_column="none", optional_labels=True)
    np.testing.assert_array_equal(ds.X, frame.to_numpy())
    assert ds.y is None and ds.feature_names == ["a", "b"]


def test_empty_row_names_and_bad_values_elsewhere(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text(",a,b,label\nr1,0.5,1,yes\n,1.5,2,no\nr3,2.5,3,yes\n")
    assert read_dataset(path).X.tolist() == [[0.5, 1.0], [1.5, 2.0], [2.5, 3.0]]
    path.write_text(",a,b,label\nr1,0.5,1,yes\nr2,1.5,x,no\nr3,2.5,3,yes\n")
    with pytest.raises(DataError, match=r"row 3, column 3 \('b'\): non-numeric value 'x'"):
        read_dataset(path)
    path.write_text(",a,b,label\nr1,0.5,1,yes\nr2,1.5,no\nr3,2.5,3,yes\n")
    with pytest.raises(DataError, match="row 3: ragged row: 3 fields"):
        read_dataset(path)


def test_row_names_chosen_as_the_labels_stay_the_labels(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text(",a,b\nup,0.5,1\ndown,1.5,2\nup,2.5,3\n")
    ds = read_dataset(path, label_column="first")
    assert ds.X.tolist() == [[0.5, 1.0], [1.5, 2.0], [2.5, 3.0]] and sorted(v for v, _ in ds.label_map) == [
        "down",
        "up",
    ]
