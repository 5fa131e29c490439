"""Generated bad input (hypothesis): readers, ingest, estimators and the command line.

Every generated case must end either in a result or in the package's own error -- a
``DataError`` naming the problem and its fix for data, a ``ValueError`` naming the parameter for
an estimator, exit status 2 with one ``error:`` line for the command line -- never a traceback
from numpy, numba, zarr or pyarrow, and never a hang. An ingest over an existing dataset either
replaces it completely or leaves every byte of it (and of the source) as it was, with no partial
output. The number of generated cases is printed at the end of the run (conftest.py).
"""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse
from bad_input_cases import count
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omkl_dist.algorithms import OMKC, SPA
from omkl_dist.pipelines.cli import main
from omkl_dist.storage import DataError, ingest, read_dataset, verify_dataset
from omkl_dist.storage.synth import synthesize

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# --------------------------------------------------------------------------------------------
# file contents

_NUMBER = st.one_of(st.integers(-5, 5).map(str), st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: f"{v:.3f}"))
_BAD_TOKEN = st.sampled_from(
    [
        "nan",
        "inf",
        "-inf",
        "1e400",
        "",
        "abc",
        "1,5",
        "0x1F",
        "--1",
        "1.2.3",
        "\u00e9",
        '"quoted"',
        "NULL",
        " ",
        "1e-400",
    ]
)
_TOKEN = st.one_of(_NUMBER, _NUMBER, _NUMBER, _BAD_TOKEN)


@st.composite
def delimited_text(draw):
    sep = draw(st.sampled_from([",", "\t", " ", ";"]))
    width = draw(st.integers(1, 5))
    rows = draw(st.lists(st.lists(_TOKEN, min_size=max(width - 1, 1), max_size=width + 1), min_size=0, max_size=8))
    labels = draw(
        st.lists(st.sampled_from(["1", "-1", "0", "2", "yes", "no", "g", ""]), min_size=len(rows), max_size=len(rows))
    )
    lines = [sep.join([lab, *row]) for lab, row in zip(labels, rows)]
    if draw(st.booleans()):
        lines.insert(0, sep.join(["label", *[f"f{i}" for i in range(width)]]))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@st.composite
def libsvm_text(draw):
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        label = draw(st.sampled_from(["1", "-1", "+1", "0", "3", "1", "-1", "x", ""]))
        tokens = []
        for _ in range(draw(st.integers(0, 4))):
            # small indices, wide ones (the sparse csr path from 10,000 features on), overflowing ones
            index = draw(
                st.one_of(
                    st.integers(-2, 12), st.integers(9_990, 60_000), st.sampled_from([10**9, 10**12, 2**31, 2**63])
                )
            )
            value = draw(st.one_of(_NUMBER, _NUMBER, _TOKEN))
            sep = draw(st.sampled_from([":", ":", ":", ":", "=", "::"]))
            tokens.append(f"{index}{sep}{value}")
        rows.append(" ".join([label, *tokens]))
    return "\n".join(rows) + "\n"


@st.composite
def file_bytes(draw):
    kind = draw(
        st.sampled_from(
            ["csv", "libsvm", "libsvm", "random", "gzip", "truncated-gzip", "latin1", "utf16", "mat", "empty", "bom"]
        )
    )
    if kind == "random":
        return kind, draw(st.binary(min_size=0, max_size=200))
    if kind == "empty":
        return kind, draw(st.sampled_from([b"", b"\n", b"   \n\n"]))
    if kind == "mat":
        return kind, b"MATLAB 5.0 MAT-file" + draw(st.binary(min_size=0, max_size=200))
    if kind in ("csv", "libsvm"):
        text = draw(delimited_text()) if kind == "csv" else draw(libsvm_text())
    else:
        text = draw(libsvm_text()) if draw(st.booleans()) else draw(delimited_text())
    if kind == "latin1":
        return kind, text.encode("utf-8", "replace") + "\n1,caf\u00e9\n".encode("latin-1")
    if kind == "utf16":
        return kind, text.encode("utf-16")
    if kind == "bom":
        return kind, b"\xef\xbb\xbf" + text.encode()
    raw = text.encode()
    if kind == "gzip":
        return kind, gzip.compress(raw)
    if kind == "truncated-gzip":
        packed = gzip.compress(raw)
        return kind, packed[: draw(st.integers(0, max(len(packed) - 1, 0)))]
    return kind, raw


def _tree_digest(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def existing(tmp_path_factory):
    """A folder with a dataset that every generated ingest tries to replace."""
    root = tmp_path_factory.mktemp("bad-input")
    synthesize(root / "ds", rows=20, features=2, seed=0)
    return root


def _ingest_case(root: Path, name: str, content: bytes, options: dict):
    source = root / name
    source.write_bytes(content)
    before = _tree_digest(root)
    try:
        ingest(source, root / "ds", overwrite=True, **options)
    except DataError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        assert _tree_digest(root) == before, "a failed ingest changed a file"
    else:
        verify_dataset(root / "ds")
        reading = {k: v for k, v in options.items() if k not in ("chunk_rows", "layout")}
        assert read_dataset(source, **reading).n_rows > 0
    finally:
        source.unlink()
    leftovers = [p.name for p in root.iterdir() if p.name.startswith(".")]
    assert not leftovers, leftovers
    count("readers")


@SETTINGS
@given(
    case=file_bytes(),
    options=st.fixed_dictionaries(
        {},
        optional={
            "n_classes": st.integers(2, 3),
            "label_column": st.sampled_from(["first", "last", "1", "-1", "f0", "nope"]),
            "positive_class": st.sampled_from(["1", "yes", "zzz"]),
            "chunk_rows": st.integers(1, 4),
            "layout": st.sampled_from(["auto", "dense", "csr"]),
        },
    ),
)
def test_generated_files_end_in_data_or_a_data_error(existing, case, options):
    kind, content = case
    name = {"gzip": "x.csv.gz", "truncated-gzip": "x.csv.gz", "mat": "x.mat"}.get(kind, "x.txt")
    _ingest_case(existing, name, content, options)


@SETTINGS
@given(
    columns=st.lists(
        st.sampled_from(["float", "int", "bool", "string", "null-float", "nan", "label-null"]), min_size=1, max_size=4
    ),
    rows=st.integers(0, 6),
    label=st.sampled_from([None, "y", "c0", "missing", "last"]),
)
def test_generated_parquet_tables(existing, columns, rows, label):
    rng = np.random.default_rng(rows)
    data = {"y": pa.array(rng.choice(["a", "b"], size=rows))}
    for i, kind in enumerate(columns):
        values = {
            "float": rng.normal(size=rows),
            "int": rng.integers(-3, 3, size=rows),
            "bool": rng.random(rows) > 0.5,
            "string": rng.choice(["u", "v"], size=rows),
            "nan": np.full(rows, np.nan),
        }.get(kind)
        if kind == "null-float":
            values = pa.array([None] + [1.0] * (rows - 1)) if rows else pa.array([], type=pa.float64())
        if kind == "label-null":
            data["y"] = pa.array([None] * rows, type=pa.string())
            continue
        data[f"c{i}"] = values
    buffer = io.BytesIO()
    pq.write_table(pa.table(data), buffer)
    _ingest_case(existing, "t.parquet", buffer.getvalue(), {} if label is None else {"label_column": label})


# --------------------------------------------------------------------------------------------
# estimators


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # 1e308 features: dot products overflow
@SETTINGS
@given(
    shape=st.tuples(st.integers(0, 5), st.integers(0, 3)),
    fill=st.sampled_from([0.0, np.nan, np.inf, 1e308]),
    dtype=st.sampled_from(["float64", "float32", "int64", "object", "str", "bool"]),
    labels=st.sampled_from(["two", "one", "three", "short", "2d", "nan"]),
    later=st.integers(1, 4),
    cls=st.sampled_from([OMKC, SPA]),
    sparse=st.booleans(),
)
def test_generated_estimator_inputs_end_in_a_model_or_a_value_error(shape, fill, dtype, labels, later, cls, sparse):
    n, d = shape
    X = np.random.default_rng(n * 7 + d).normal(size=(n, d))
    if n and d:
        X[0, 0] = fill
    with np.errstate(invalid="ignore", over="ignore"):  # nan/inf cast to integers: garbage on purpose
        X = X.astype(str) if dtype == "str" else X.astype(dtype)
    if sparse and dtype not in ("str", "object") and X.ndim == 2:
        X = scipy.sparse.csr_matrix(X)  # kept sparse (a model on sparse rows) or refused as the dense X is
    y = {
        "two": np.arange(n) % 2,
        "one": np.zeros(n),
        "three": np.arange(n) % 3,
        "short": np.arange(max(n - 1, 0)) % 2,
        "2d": np.zeros((n, 2)),
        "nan": np.full(n, np.nan),
    }[labels]
    model = cls(kernels="gaussian:1", block_size=2, random_state=0)
    try:
        model.fit(X, y)
        model.partial_fit(np.ones((1, later)), y[:1])  # a later call with another feature count
    except ValueError as exc:
        assert str(exc).startswith(cls.__name__) or "must" in str(exc) or "contains" in str(exc), str(exc)
    count("estimators")


# --------------------------------------------------------------------------------------------
# command line

_OPTIONS = {
    "--block-size": st.sampled_from(["0", "-1", "x", "1", "3000000000000"]),
    "--beta": st.sampled_from(["0", "1", "-0.5", "nan", "inf", "2", "0.5"]),
    "--budget": st.sampled_from(["0", "-3", "1", "10"]),
    "--kernels": st.sampled_from(["", "gaussian:", "poly:x", "nope", "gaussian:2^99", "gaussian:1;;", "omkc16"]),
    "--scaling": st.sampled_from(["minmax", "weird"]),
    "--limit": st.sampled_from(["0", "5", "-2"]),
    "--label-column": st.sampled_from(["first", "9", "ghost"]),
    "--seed": st.sampled_from(["-1", "0", "x"]),
}


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "small.csv"
    rng = np.random.default_rng(0)
    path.write_text("".join(f"{1 if a > 0 else -1},{a:.4f},{b:.4f}\n" for a, b in rng.normal(size=(40, 2))))
    return path


@SETTINGS
@given(
    algo=st.sampled_from(["omkc", "spa", "bpas", "perceptron-star", "nope"]),
    chosen=st.dictionaries(st.sampled_from(sorted(_OPTIONS)), st.just(None), max_size=3),
    data=st.data(),
)
def test_generated_cli_parameters_exit_cleanly(small_csv, algo, chosen, data):
    args = [
        "run",
        algo,
        "--data",
        str(small_csv),
        "--quiet",
        "--trace-out",
        str(small_csv.parent / "t.json"),
        "--overwrite",
    ]
    for option in chosen:
        args += [option, data.draw(_OPTIONS[option])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 2), (args, result.exit_code, result.output, result.exception)
    if result.exit_code == 2:
        assert result.output.startswith(("error: ", "Usage: ")), (args, result.output)
    count("cli")
