"""Readers: every format round-trips, detection follows its rules, and bad input is a DataError
naming the file, the row/column and a fix. Fixture files are made in tmp_path."""

from __future__ import annotations

import gzip
import hashlib

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from omkl_dist.storage import DataError, detect_format, read_dataset

X3 = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -3.25], [2.0, 4.0, 0.0], [-0.5, 1e-3, 7.0]])
Y3 = np.array([-1, 1, 1, -1])


def write(tmp_path, name, content, *, gz=False):
    data = content.encode() if isinstance(content, str) else content
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def dense_text(sep=" ", labels=Y3, X=X3):
    return "".join(sep.join([str(lab)] + [repr(float(v)) for v in row]) + "\n" for lab, row in zip(labels, X))


def libsvm_text(labels=Y3, X=X3):
    lines = []
    for lab, row in zip(labels, X):
        pairs = [f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0]
        lines.append(" ".join([f"{lab:+d}"] + pairs))
    return "\n".join(lines) + "\n"


def check(ds, X=X3, y=Y3):
    np.testing.assert_array_equal(ds.X, X)
    assert ds.X.dtype == np.float64 and ds.X.flags.c_contiguous
    assert ds.y.dtype == np.int64
    np.testing.assert_array_equal(ds.y, y)


# ---------------------------------------------------------------- round trips per format


@pytest.mark.parametrize("gz", [False, True])
def test_libsvm_round_trip(tmp_path, gz):
    path = write(tmp_path, "d.svm", libsvm_text(), gz=gz)
    ds = read_dataset(path)
    assert ds.fmt == "libsvm"
    check(ds)
    assert ds.label_map == [["-1", -1], ["1", 1]]
    assert ds.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_libsvm_n_features_is_max_index_and_one_based(tmp_path):
    path = write(tmp_path, "d", "1 2:1 7:3\n-1 1:2 # comment\n\n-1 3:1\n")
    ds = read_dataset(path)
    assert ds.X.shape == (3, 7)
    np.testing.assert_array_equal(ds.X[0], [0, 1, 0, 0, 0, 0, 3])
    np.testing.assert_array_equal(ds.X[1], [2, 0, 0, 0, 0, 0, 0])


def test_dense_whitespace_tabs_and_crlf(tmp_path):
    text = dense_text().replace(" ", "\t  ", 1).replace("\n", "\r\n")
    ds = read_dataset(write(tmp_path, "d.txt", text))
    assert ds.fmt == "dense"
    check(ds)


def test_dense_shape_header_line_is_skipped(tmp_path):
    ds = read_dataset(write(tmp_path, "madelon_like", f"4 3\n{dense_text()}", gz=True))
    assert ds.fmt == "dense"
    check(ds)


def test_dense_shape_line_that_disagrees_is_reported_as_truncation(tmp_path):
    with pytest.raises(DataError, match=r"declares 9 rows x 3 features but 4 data rows.*truncated"):
        read_dataset(write(tmp_path, "m", f"9 3\n{dense_text()}"))


@pytest.mark.parametrize("sep", [",", ", "])
def test_csv_without_header(tmp_path, sep):
    ds = read_dataset(write(tmp_path, "d.csv", dense_text(sep=sep)))
    assert ds.fmt == "csv"
    check(ds)


def test_csv_with_integer_column_names_header(tmp_path):
    # pandas-style header "0,1,2,3" (a1a.csv, svmguide3.csv): label is column "0"
    text = "0,1,2,3\n" + dense_text(sep=",", labels=["+1" if v > 0 else "-1" for v in Y3])
    ds = read_dataset(write(tmp_path, "a1a.csv", text, gz=True))
    assert ds.fmt == "csv_header"
    check(ds)
    assert ds.feature_names == ["1", "2", "3"]


def test_tsv_header_with_target_column_last(tmp_path):
    rows = ["\t".join([repr(float(v)) for v in x] + [str(int(lab > 0))]) for x, lab in zip(X3, Y3)]
    text = "A\tB\tC\ttarget\n" + "\n".join(rows) + "\n"
    ds = read_dataset(write(tmp_path, "pmlb.tsv.gz", text, gz=True))
    assert ds.fmt == "tsv_header"
    check(ds)
    assert ds.label_map == [["0", -1], ["1", 1]]
    assert ds.feature_names == ["A", "B", "C"]


def test_word_labels_are_kept_as_classes(tmp_path):
    text = "label,a,b\ng,1,2\nb,3,4\ng,5,6\n"
    ds = read_dataset(write(tmp_path, "ion.csv", text))
    assert ds.label_map == [["b", -1], ["g", 1]]
    np.testing.assert_array_equal(ds.y, [1, -1, 1])
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4], [5, 6]])


def test_multiclass_maps_to_0_to_k_minus_1(tmp_path):
    text = "3 1 1\n1.0 2 2\n7 3 3\n3 4 4\n"
    ds = read_dataset(write(tmp_path, "mc.txt", text))
    assert ds.label_map == [["1", 0], ["3", 1], ["7", 2]]
    np.testing.assert_array_equal(ds.y, [1, 0, 2, 1])
    assert ds.class_counts == {"1": 1, "3": 2, "7": 1}


def test_mat_with_sparse_x_and_y(tmp_path):
    path = tmp_path / "s.mat"
    scipy.io.savemat(path, {"X": scipy.sparse.csc_matrix(X3), "y": Y3.reshape(-1, 1).astype(np.int16)})
    ds = read_dataset(path)
    assert ds.fmt == "mat" and ds.permutations is None
    check(ds)


def test_mat_data_with_label_column_and_permutations(tmp_path):
    rng = np.random.default_rng(0)
    perms = np.stack([rng.permutation(4) for _ in range(5)])
    data = np.column_stack([[2, 1, 1, 2], X3])
    raw = tmp_path / "g.mat"
    scipy.io.savemat(raw, {"data": data, "ID_all": (perms + 1).astype(np.uint16)})  # MATLAB: 1-based
    path = write(tmp_path, "g.mat.gz", raw.read_bytes(), gz=True)
    ds = read_dataset(path)
    assert ds.fmt == "mat"
    check(ds, y=[1, -1, -1, 1])
    np.testing.assert_array_equal(ds.permutations, perms)


def test_gzip_detected_by_magic_bytes_not_name(tmp_path):
    plain = read_dataset(write(tmp_path, "a.gz", dense_text()))  # named .gz, not gzip
    packed = read_dataset(write(tmp_path, "b.txt", dense_text(), gz=True))  # gzip, named .txt
    np.testing.assert_array_equal(plain.X, packed.X)


def test_explicit_format_and_alias(tmp_path):
    path = write(tmp_path, "d", dense_text())
    assert read_dataset(path, fmt="dense_ws").fmt == "dense"
    with pytest.raises(DataError, match="unknown format 'xls'"):
        read_dataset(path, fmt="xls")


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("x.txt", b"1 1:0.5 3:2\n", "libsvm"),
        ("x.txt", b"-1\n1 4:1\n", "libsvm"),
        ("x.txt", b"1 0.5 2\n", "dense"),
        ("x.txt", b"1\t0.5\t2\n", "dense"),
        ("x.txt", b"y\ta\tb\n1\t0.5\t2\n", "tsv_header"),
        ("x.txt", b"1, 0.5, 2\n", "csv"),
        ("x.txt", b"0,1,2\n-1,0.5,2\n", "csv_header"),
        ("x.txt", b"target,a\n1,2\n", "csv_header"),
        ("x.csv", b"when,a,y\n2024-01-01 00:00:00,0.5,1\n", "csv_header"),  # a time's "00:00:00,..." is no "3:0.5"
        ("x.txt", b"1,3 1:0.5 2:2\n", "libsvm"),  # multi-label LIBSVM: commas in the labels only
        ("x.mat", b"anything", "mat"),
        ("x.mat.gz", b"anything", "mat"),
        ("x.bin", b"MATLAB 5.0 MAT-file", "mat"),
    ],
)
def test_detect_format_rules(tmp_path, name, content, expected):
    assert detect_format(tmp_path / name, content) == expected


# ---------------------------------------------------------------- bad input


def test_truncated_gzip(tmp_path):
    packed = gzip.compress(dense_text().encode() * 50)
    path = write(tmp_path, "t.txt.gz", packed[: len(packed) // 2])
    with pytest.raises(DataError, match=r"t\.txt\.gz: truncated gzip.*Fix: re-download"):
        read_dataset(path)


def test_corrupt_gzip_crc(tmp_path):
    packed = bytearray(gzip.compress(dense_text().encode()))
    packed[-8] ^= 0xFF  # CRC32 of the trailer
    with pytest.raises(DataError, match="corrupt gzip"):
        read_dataset(write(tmp_path, "c.gz", bytes(packed)))


def test_bzip2_xz_and_one_file_zip_read_as_gzip_does(tmp_path):
    """A download's data.csv.zip, a .bz2 or .xz export: "only gzip is read" before; now the same
    dataset as the plain file, and their damage named as gzip's is."""
    import bz2
    import lzma
    import zipfile

    text = dense_text().encode() * 20
    plain = read_dataset(write(tmp_path, "d.txt", text))
    archive = tmp_path / "d.txt.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("d.txt", text)
        zf.writestr("__MACOSX/._d.txt", b"resource fork")  # (macOS's Compress adds one: not data)
    for name, packed in [("d.txt.bz2", bz2.compress(text)), ("d.txt.xz", lzma.compress(text)), ("d.txt.zip", None)]:
        ds = read_dataset(archive if packed is None else write(tmp_path, name, packed))
        np.testing.assert_array_equal(ds.X, plain.X)
        np.testing.assert_array_equal(ds.y, plain.y)
    for name, packed, what in [("t.bz2", bz2.compress(text), "bzip2"), ("t.xz", lzma.compress(text), "xz")]:
        with pytest.raises(DataError, match=rf"truncated {what} file.*Fix: re-download.*`{what} -t FILE`"):
            read_dataset(write(tmp_path, name, packed[: len(packed) // 2]))
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as zf:
        zf.writestr("train.csv", text)
        zf.writestr("test.csv", text)
    with pytest.raises(DataError, match=r"the zip archive holds 2 files \['train.csv', 'test.csv'\]; one data file"):
        read_dataset(tmp_path / "two.zip")
    damaged = bytearray(archive.read_bytes())
    damaged[40:60] = b"\x00" * 20
    with pytest.raises(DataError, match="corrupt zip file"):
        read_dataset(write(tmp_path, "bad.zip", bytes(damaged)))


def test_other_compression_is_named(tmp_path):
    with pytest.raises(DataError, match="zstd-compressed.*gzip, bzip2, xz and zip are read"):
        read_dataset(write(tmp_path, "d.zst", b"(\xb5/\xfd" + b"\x00" * 20))


@pytest.mark.parametrize(
    "content",
    [b"", b"   \n\n", gzip.compress(b"", mtime=0), gzip.compress(b"\n\n", mtime=0)],
    ids=["empty", "blank-lines", "gzip-empty", "gzip-blank-lines"],
)
def test_empty_file(tmp_path, content):
    with pytest.raises(DataError, match="empty file"):
        read_dataset(write(tmp_path, "e.txt", content))


def test_header_only(tmp_path):
    with pytest.raises(DataError, match="only a header row"):
        read_dataset(write(tmp_path, "h.csv", "target,a,b\n"))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_dataset(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="is a directory.*give a data file, or an ingested dataset"):
        read_dataset(tmp_path)
    write(tmp_path, "rows.csv.gz", "")  # (a folder of CSV files is one table: here of one empty file)
    with pytest.raises(DataError, match=r"its data files \(rows\.csv\.gz\) are empty"):
        read_dataset(tmp_path)
    write(tmp_path, "notes.md", "what the rows are\n")
    with pytest.raises(DataError, match=r"is a directory.*give a data file inside it \(notes\.md, rows\.csv\.gz\)"):
        read_dataset(tmp_path)


def test_tsv_read_as_csv_names_expected_delimiter(tmp_path):
    path = write(tmp_path, "p.tsv", "a\tb\ttarget\n1\t2\t0\n3\t4\t1\n")
    with pytest.raises(DataError, match=r"row 1: expected delimiter ',' .*looks tab-separated.*tsv_header") as err:
        read_dataset(path, fmt="csv_header")
    assert err.value.path == path and err.value.row == 1
    with pytest.raises(DataError, match="expected delimiter ','"):
        read_dataset(write(tmp_path, "q.tsv", "1\t2\t0\n3\t4\t1\n"), fmt="csv")


def test_a_semicolon_or_pipe_separated_file_without_a_header_says_how_to_read_it(tmp_path):
    """With a header, such a file is read (tests/test_spreadsheet_files.py); without one, the fix says to
    give it one, or how to convert it (a ';'-separated export with decimal commas needs decimal=',')."""
    euro = write(tmp_path, "euro.csv", "1,5;-0,25;yes\r\n0,5;2,0;no\r\n")
    with pytest.raises(DataError, match=r"looks ';'-separated\. Fix: give it a header row naming its columns \(it is "
                       r"then read as ssv_header\), or save it comma-separated, with decimal points, e\.g\. with "
                       r"pandas: pd\.read_csv\(path, sep=';', header=None, decimal=','\)\.to_csv"):  # fmt: skip
        read_dataset(euro, fmt="dense")
    piped = write(tmp_path, "p.txt", "1.5|2|yes\n2.5|3|no\n")
    with pytest.raises(DataError, match=r"looks '\|'-separated\. Fix: give it a header row .* psv_header"):
        read_dataset(piped)


def test_a_spreadsheets_formatted_numbers_are_named_as_such(tmp_path):
    """'"1,234.50"' (a quoted number with a thousands separator) was "ragged row: 4 fields, expected 3";
    '$12.50' and '12%' suggested --label-column first although the header's 'label' column holds the
    labels (a label column found by name or given is not second-guessed)."""
    for name, cell in [("thousands", '"1,234.50"'), ("dollar", "$12.50"), ("percent", "12%")]:
        path = write(tmp_path, f"{name}.csv", f"amount,age,label\n15.0,22,yes\n{cell},30,yes\n2.0,41,no\n")
        with pytest.raises(DataError) as err:
            read_dataset(path)
        message = str(err.value)
        assert "row 3, column 1 ('amount'): non-numeric value" in message and "--label-column" not in message
        assert "a number written with a currency sign, percent or thousands separators" in message
        assert "pd.to_numeric(df['amount'].str.replace(" in message
    words = write(tmp_path, "words.csv", "amount,age,label\n15.0,22,yes\nbig,30,yes\n")
    with pytest.raises(DataError, match="non-numeric value 'big'. Fix: features must be numbers"):
        read_dataset(words)


def test_row_with_other_delimiter_is_named(tmp_path):
    path = write(tmp_path, "m.csv", "1,2,3\n-1,4,5\n1\t6\t7\n")
    with pytest.raises(DataError, match=r"row 3: expected delimiter ',' .*tab-separated"):
        read_dataset(path)


def test_non_numeric_field_names_row_column_value(tmp_path):
    path = write(tmp_path, "n.csv", "1,2,3\n-1,4,5\n1,abc,7\n")
    with pytest.raises(DataError, match=r"n\.csv, row 3, column 2: non-numeric value 'abc'") as err:
        read_dataset(path)
    assert (err.value.row, err.value.column) == (3, "2")


def test_non_numeric_field_reports_header_name_and_line(tmp_path):
    path = write(tmp_path, "n.tsv", "\nx\ty\ttarget\n1\t2\t0\n1\tN/A\t1\n", gz=True)
    with pytest.raises(DataError, match=r"row 4, column 2 \('y'\): non-numeric value 'N/A'"):
        read_dataset(path)


def test_header_read_as_data_suggests_header_format(tmp_path):
    with pytest.raises(DataError, match=r"row 1, column 2: non-numeric value 'a'.*csv_header"):
        read_dataset(write(tmp_path, "h.csv", "y,a\n1,2\n0,3\n"), fmt="csv")


def test_empty_field(tmp_path):
    with pytest.raises(DataError, match=r"row 2, column 3: empty field \(missing value\)"):
        read_dataset(write(tmp_path, "e.csv", "1,2,3\n-1,4,\n"))


@pytest.mark.parametrize(
    "name, text, row, got, expected",
    [("r.csv", "1,2,3\n-1,4,5\n1,6\n", 3, 2, 3), ("r.txt", "1 2 3\n\n-1 4 5 6\n", 3, 4, 3)],
)
def test_ragged_rows(tmp_path, name, text, row, got, expected):
    with pytest.raises(DataError, match=rf"row {row}: ragged row: {got} fields, expected {expected} \(as in row 1\)"):
        read_dataset(write(tmp_path, name, text))


def test_line_of_spaces_inside_csv(tmp_path):
    with pytest.raises(DataError, match="row 2: line of only spaces"):
        read_dataset(write(tmp_path, "s.csv", "1,2\n   \n-1,3\n"))


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity", "NaN"])
def test_non_finite_feature_in_text(tmp_path, value):
    path = write(tmp_path, "f.txt", f"1 2 3\n\n-1 4 {value}\n")
    with pytest.raises(DataError, match=r"row 3, column 3: non-finite feature value") as err:
        read_dataset(path)
    assert "impute" in str(err.value)


def test_non_finite_feature_in_libsvm_and_mat(tmp_path):
    with pytest.raises(DataError, match=r"row 3, column 2: non-finite"):
        read_dataset(write(tmp_path, "l.svm", "1 1:1\n# note\n-1 2:nan\n"))
    X = X3.copy()
    X[2, 1] = np.inf
    scipy.io.savemat(tmp_path / "m.mat", {"X": X, "y": Y3})
    with pytest.raises(DataError, match=r"row 3, column 2: non-finite feature value inf"):
        read_dataset(tmp_path / "m.mat")


def test_missing_label(tmp_path):
    with pytest.raises(DataError, match=r"row 2: missing or non-finite label"):
        read_dataset(write(tmp_path, "l.txt", "1 2\nnan 3\n-1 4\n"))


@pytest.mark.parametrize(
    "text, match",
    [
        ("1 1:1\n-1 2:x\n", r"row 2, column 2: value 'x' is not a number"),
        ("1 1:1\n-1 3:1 2:1\n", r"row 2, column 2: feature indices not strictly increasing"),
        ("1 0:1\n", r"row 1, column 0: feature index 0"),
        ("1 1:1\nyes 2:1\n", r"row 2: label 'yes' is not a number"),
        ("1 1:1\n-1 2:1 7\n", r"row 2: token '7' is not `index:value`"),
    ],
)
def test_malformed_libsvm(tmp_path, text, match):
    with pytest.raises(DataError, match=match):
        read_dataset(write(tmp_path, "bad.svm", text), fmt="libsvm")


def test_one_class_binary_refused_unless_declared(tmp_path):
    path = write(tmp_path, "t.csv", "1,2\n1,3\n+1,4\n")
    with pytest.raises(DataError, match=r"only one class \['1'\].*declare the classes"):
        read_dataset(path)
    ds = read_dataset(path, classes=["-1", "1"])
    np.testing.assert_array_equal(ds.y, [1, 1, 1])
    assert ds.class_counts == {"-1": 0, "1": 3}


def test_more_classes_than_requested(tmp_path):
    path = write(tmp_path, "k.txt", "1 0\n2 0\n3 0\n")
    with pytest.raises(DataError, match=r"found 3 classes .* but 2 were requested.*n_classes=3"):
        read_dataset(path, n_classes=2)


def test_label_outside_declared_classes_names_row(tmp_path):
    path = write(tmp_path, "k.txt", "1 0\n-1 0\n\n2 0\n")
    with pytest.raises(DataError, match=r"row 4: label '2' is not one of the declared classes"):
        read_dataset(path, classes=["-1", "1"])


def test_mat_v73_needs_h5py(tmp_path):
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .".ljust(512, b" ")
    path = write(tmp_path, "big.mat", header + b"\x89HDF\r\n\x1a\n" + b"\x00" * 64, gz=True)
    with pytest.raises(DataError, match=r"v7\.3 \(HDF5\).*h5py.*save -v7"):
        read_dataset(path)


def test_mat_without_known_variables(tmp_path):
    scipy.io.savemat(tmp_path / "w.mat", {"features": X3})
    with pytest.raises(DataError, match=r"no X and y \(or data\) variables; found \['features'\]"):
        read_dataset(tmp_path / "w.mat")


def test_mat_x_y_length_mismatch(tmp_path):
    scipy.io.savemat(tmp_path / "w.mat", {"X": X3, "y": Y3[:3]})
    with pytest.raises(DataError, match="X has shape"):
        read_dataset(tmp_path / "w.mat")


def test_damaged_mat(tmp_path):
    scipy.io.savemat(tmp_path / "ok.mat", {"X": X3, "y": Y3})
    path = write(tmp_path, "cut.mat", (tmp_path / "ok.mat").read_bytes()[:200])
    with pytest.raises(DataError, match=r"unreadable \.mat file"):
        read_dataset(path)


def test_binary_garbage(tmp_path):
    with pytest.raises(DataError, match="binary content"):
        read_dataset(write(tmp_path, "x.bin", b"\x00\x01\x02garbage"))


CSV_FILES = {
    "plain": "outcome,a,b\nyes,1,2\nno,3.5,-4\nyes,5e-3,6\n",
    "label last, CRLF, no final newline": "a,b,outcome\r\n1,2,yes\r\n3,4,no\r\n5,6,no",
    "a row with one field more": "outcome,a,b\nyes,1,2\nno,3,4,5\nyes,5,6\n",
    "a row with one field less": "outcome,a,b\nyes,1,2\nno,3\nyes,5,6\n",
    "an empty label": "outcome,a,b\nyes,1,2\n,3,4\nno,5,6\n",
    "an empty line": "outcome,a,b\nyes,1,2\n\nno,5,6\n",
    "a line of spaces": "outcome,a,b\nyes,1,2\n   \nno,5,6\n",
    "a label in quotes with a comma": 'outcome,a,b\nyes,1,2\n"n,o",3,4\nyes,5,6\n',
    "words and numbers as labels": "outcome,a,b\n1,1,2\nx,3,4\n2,5,6\n",
    "a word among the features": "outcome,a,b\nyes,1,2\nno,three,4\nyes,5,6\n",
    "an empty feature": "outcome,a,b\nyes,1,2\nno,,4\nyes,5,6\n",
    "numbers as labels, a bad feature": "outcome,a,b\n1,1,2\n0,x,4\n1,5,6\n",
    "numbers": "outcome,a,b\n1,1.5, -2e-3\n-1,+4,.5\n1,5.,1E+05\n",
    "numbers, spaces around labels": "outcome,a,b\n 1,1,2\n-1 ,3,4\n",
    "non-finite numbers": "outcome,a,b\n1,nan,inf\n-1,-Infinity,2\n",
    "a carriage return alone": "outcome,a,b\r1,1,2\r-1,3,4\r",
    "tabs": "outcome\ta\tb\nyes\t1\t2\nno\t3\t4\n",
    "the header wider than the rows": "outcome,a,b,c\nyes,1,2\nno,3,4\n",
    "labels in UTF-8": "outcome,a,b\n\u00e9t\u00e9,1,2\nhiver,3,4\n",
}


def _read_or_error(path):
    try:
        ds = read_dataset(path, label_column="outcome")
    except DataError as exc:
        return str(exc)
    return ds.X, np.asarray(ds.y), ds.label_map


@pytest.mark.parametrize("name", list(CSV_FILES))
def test_a_csv_reads_as_numpys_reader_and_the_diagnosis_read_it(tmp_path, monkeypatch, name):
    """pyarrow's reader reads a CSV in under a third of numpy's ``loadtxt``'s time, and a file whose
    labels are words no longer waits for a row-by-row check in Python (a 1,000,000-row file of 13
    columns: 9.3 -> 1.3 s; `omkl run` 15.1 -> 7.7 s); the files pyarrow refuses or might split
    otherwise go the old way. Either way: the same arrays, or the same error."""
    from omkl_dist.storage.readers import delimited

    path = write(tmp_path, "f.csv" if "tabs" not in name else "f.tsv", CSV_FILES[name])
    fast = _read_or_error(path)
    monkeypatch.setattr(delimited, "arrow_cells", lambda *args, **kwargs: None)
    slow = _read_or_error(path)
    assert type(fast) is type(slow)
    if isinstance(fast, str):
        assert fast == slow
    else:
        np.testing.assert_array_equal(fast[0].view(np.int64), slow[0].view(np.int64))
        np.testing.assert_array_equal(fast[1], slow[1])
        assert fast[2] == slow[2]


def test_a_whole_word_label_file_needs_no_row_by_row_diagnosis(tmp_path, monkeypatch):
    from omkl_dist.storage.readers import delimited

    def diagnosis(*args, **kwargs):
        raise AssertionError("the row-by-row diagnosis ran")

    monkeypatch.setattr(delimited, "diagnose_delimited", diagnosis)
    for name in ("plain", "label last, CRLF, no final newline"):
        ds = read_dataset(write(tmp_path, f"{len(name)}.csv", CSV_FILES[name]), label_column="outcome")
        assert sorted(label for label, _ in ds.label_map) == ["no", "yes"]


@pytest.mark.parametrize(
    "content",
    [
        b"1 1:2 3:4\n-1 2:1\n",
        b"1:2 3:4\n-1 2:1\n",
        b"1 1:2\n2:1\n",
        b"1 1:2\r\n  \t7:1\r\n",
        b"# 1:2\n+1 1:2\n",
        b"",
    ],
)
def test_rows_without_labels_are_found_as_the_line_start_pattern_finds_them(content):
    from omkl_dist.storage.readers import libsvm

    fast = bool(libsvm.UNLABELLED_ROW.match(content) or libsvm.UNLABELLED_LATER_ROW.search(content))
    assert fast == bool(libsvm.UNLABELLED_ROW.search(content))


def test_a_libsvm_file_is_read_without_mapping_its_rows_to_lines(tmp_path, monkeypatch):
    """The rows' file lines are for error messages: mapping them for every read took 1.6 s of a
    1,000,000-row file's 10 s."""
    from omkl_dist.storage.readers import libsvm

    path = write(tmp_path, "f.svm", "1 1:0.5 3:2\n-1 2:1\n# a comment\n1 3:-1\n")

    def mapped(*args, **kwargs):
        raise AssertionError("the rows were mapped to their lines")

    monkeypatch.setattr(libsvm, "text_lines", mapped)
    ds = read_dataset(path)
    np.testing.assert_array_equal(ds.X, [[0.5, 0, 2], [0, 1, 0], [0, 0, -1]])


CELLS = [
    *["1.5", " 1.5", "1.5 ", "\t1", "+1.5", "-0", "0", ".5", "5.", "1e5", "1E+05", "1e400", "1e-400", "4.9e-324"],
    *["2.2250738585072011e-308", "0.1000000000000000055511151231257827", "9007199254740993", "1" * 30],
    *["nan", "NaN", "-nan", "+nan", "nAn", "inf", "-inf", "+inf", "INF", "infinity", "-Infinity"],
    *["0x1A", "0x1p3", "1_000", "\uff11\uff12", "\u0663", "1.5e", "1d5", "", " ", "1e", "e5", "--1", "1.2.3"],
]


@pytest.mark.parametrize("cell", CELLS)
def test_pyarrow_reads_a_cell_as_loadtxt_does_or_not_at_all(cell):
    """Every spelling of a number is taken with the same bits or refused by both readers (then the
    file goes to loadtxt and the diagnosis, as before)."""
    import io

    from omkl_dist.storage.readers import delimited

    body = f"{cell},2\n3,4\n".encode()
    try:
        numpys = np.loadtxt(io.BytesIO(body), dtype=np.float64, delimiter=",", comments=None, quotechar='"', ndmin=2)
    except ValueError:
        numpys = None
    arrows = delimited.arrow_cells(body, ",")
    assert (arrows is None) == (numpys is None), cell
    if numpys is not None:
        np.testing.assert_array_equal(arrows[0].view(np.int64), numpys.view(np.int64))


def test_pyarrow_reads_a_hundred_thousand_numbers_as_loadtxt_does(tmp_path):
    """Doubles of every magnitude written in every form a CSV meets (shortest repr, %.17g, %.6g, %e,
    integers), read back with the same bits as numpy's reader reads them."""
    import io

    from omkl_dist.storage.readers import delimited

    rng = np.random.default_rng(0)
    values = rng.standard_normal(20_000) * 10.0 ** rng.integers(-300, 300, 20_000)
    integers = rng.integers(-(2**62), 2**62, 20_000)
    cells = [[repr(float(v)), f"{v:.17g}", f"{v:.6g}", f"{v:e}", str(i)] for v, i in zip(values, integers)]
    body = "\n".join(",".join(row) for row in cells).encode() + b"\n"
    arrows = delimited.arrow_cells(body, ",")
    numpys = np.loadtxt(io.BytesIO(body), dtype=np.float64, delimiter=",", comments=None, quotechar='"', ndmin=2)
    np.testing.assert_array_equal(arrows[0].view(np.int64), numpys.view(np.int64))


def test_a_failed_pyarrow_read_returns_only_when_its_threads_let_go_of_the_bytes(tmp_path):
    """pyarrow's CSV reader returns its error while its threads still read ahead (tens of calls in a
    thousand here); one that lets go of the bytes after the interpreter began to exit cannot take the
    GIL and aborts the process (status 134 after a bad-input error, instead of 2). Both readers built
    on it give the bytes back before they return: the count of references to them is as before."""
    import sys

    from omkl_dist.storage.readers import delimited

    body = b"".join(b"s%06d,1.5,2.5,-1\n" % i for i in range(200_000))  # text ids where numbers go
    unheld = sys.getrefcount(body)
    held = 0
    for _ in range(1000):
        assert delimited.arrow_cells(body, ",", label_col=3) is None
        held += sys.getrefcount(body) > unheld
    assert held == 0
    ragged = b"a,b\n" + body
    unheld = sys.getrefcount(ragged)
    for _ in range(100):
        with pytest.raises(DataError, match="could not read the columns"):
            delimited.text_table(ragged, tmp_path / "ids.csv", ",")
        held += sys.getrefcount(ragged) > unheld
    assert held == 0


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "blocks"])
def test_a_date_column_is_named_as_one_and_never_offered_as_labels_or_categories(tmp_path, monkeypatch, streamed):
    """A column of dates or times was "non-numeric value '2026-01-31 08:15'", with the fix to encode it as
    categories (a column per instant) or, at either end of the row, to take it for the labels; a
    parquet timestamp column likewise. Each is now named as a date, with the fix to leave it out or to
    make numbers of it; the whole-file and the block reader alike."""
    import pandas as pd

    from omkl_dist.storage import ingest
    from omkl_dist.storage.readers import blocks

    monkeypatch.setattr(blocks, "STREAM_MIN_BYTES", 0 if streamed else 2**62)
    for cell in ["2026-01-31", "2026-01-31 08:15:00", "2026-01-31T08:15Z", "31/01/2026", "31.01.26 8:15", "08:15:30"]:
        for header, row in [("when,a,label", f"{cell},1.5,yes"), ("a,when,label", f"1.5,{cell},yes")]:
            path = write(tmp_path, "dated.csv", f"{header}\n{row.replace(cell, '1.0')}\n{row}\n")
            with pytest.raises(DataError) as err:
                ingest(path, tmp_path / "ds", overwrite=True) if streamed else read_dataset(path)
            message = str(err.value)
            assert f"row 3, column {header.split(',').index('when') + 1} ('when'): non-numeric value" in message
            assert "a date or time. Fix: a date is no number and no category to encode: leave it out " in message
            assert "(--features -when)" in message and "--label-column" not in message and "one-hot" not in message
    stamped = tmp_path / "stamped.parquet"
    pd.DataFrame(
        {"when": pd.date_range("2026-01-01", periods=3), "a": [1.0, 2.0, 3.0], "label": [1, -1, 1]}
    ).to_parquet(stamped)
    with pytest.raises(DataError, match=r"'when' is timestamp\[\w+\], not numeric. Fix: a date is no number"):
        read_dataset(stamped)
    words = write(tmp_path, "words.csv", "a,b,label\n1.5,2,yes\n2.5,12:30 pm,no\n")  # (not a time we know: a word)
    with pytest.raises(DataError, match="non-numeric value '12:30 pm'. Fix: features must be numbers"):
        read_dataset(words)


@pytest.mark.parametrize("gz", [False, True], ids=["csv", "csv.gz"])
def test_a_folder_of_daily_csv_files_is_one_table(tmp_path, gz):
    """A folder of a day's CSV file each (compressed or not, its name with a space) is read as one table,
    the days in name order under one header (tests/test_folder_of_csvs.py: the rest); with another kind
    of file beside them it is a folder, and the error says what is in the way."""
    days = tmp_path / "daily files"
    days.mkdir()
    suffix = ".csv.gz" if gz else ".csv"
    write(days, f"2026-11-01{suffix}", "a,b,label\n1.5,2,yes\n2.5,1,no\n", gz=gz)
    write(days, f"2026-11-02{suffix}", "a,b,label\n3.5,0,no\n", gz=gz)
    np.testing.assert_array_equal(read_dataset(days).X, [[1.5, 2], [2.5, 1], [3.5, 0]])
    write(days, "notes.md", "what each day holds\n")
    with pytest.raises(DataError, match=r"is a directory, not a data file. .* move the rest \(notes.md\) out of it"):
        read_dataset(days)


def test_column_names_reads_a_tables_names_or_says_it_has_none(tmp_path):
    import pandas as pd

    from omkl_dist.storage import column_names

    pd.DataFrame({"a": [1.0], "b": [2.0], "label": [1]}).to_parquet(tmp_path / "t.parquet")
    named = write(tmp_path, "named.csv.gz", "id,a,b,label\nx,1,2,yes\n", gz=True)
    tabbed = write(tmp_path, "t.tsv", "a\tb\tlabel\n1\t2\tno\n")
    assert column_names(tmp_path / "t.parquet") == ["a", "b", "label"]
    assert column_names(named) == ["id", "a", "b", "label"] and column_names(tabbed) == ["a", "b", "label"]
    for name, text in [("plain.csv", "1,2,3\n4,5,6\n"), ("rows.svm", "+1 1:0.5 3:1\n"), ("empty.csv", "")]:
        assert column_names(write(tmp_path, name, text)) is None
    assert column_names(tmp_path / "missing.csv") is None
