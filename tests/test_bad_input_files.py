"""Generated bad input (hypothesis): the files the tool reads back, and odd files given to ingest.

A dataset's ``meta.json`` and a model's ``model.json``, valid as written, then mutated -- a value
of the wrong type (a bool for an int, a string for a size), a key removed, a size huge, negative
or zero, nesting hundreds deep, unicode and control characters -- with the hash recomputed as a
careful hand-editor would, are fed to :func:`dataset_info` / :func:`open_stream` /
:func:`load_model` and to ``omkl data info`` / ``omkl predict``; and generated files (line ends,
encodings, byte-order marks, NULs, control characters in contents and names) and special files
(FIFOs, devices, sockets, directories, links to them) to :func:`read_dataset` and ``omkl data
ingest``. Each case ends in a result or in one clear error -- a DataError naming the file, exit
status 2 with exactly one ``error:`` line -- never a traceback, a hang or a large allocation.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

import numpy as np
import pytest
from bad_input_cases import count
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omkl_dist.pipelines.cli import main
from omkl_dist.storage import DataError, dataset_info, ingest, open_stream, read_dataset
from omkl_dist.storage.layout import meta_digest

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
CLI_SETTINGS = settings(SETTINGS, max_examples=40)

# --------------------------------------------------------------------------------------------
# mutations of a JSON document


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


_HOSTILE_VALUES = st.one_of(
    st.sampled_from(
        [True, False, None, 0, -1, 1, 2**31, 2**63, 10**30, -(10**30), 1.5, 1e308, "", "1", "-1", "x" * 300]
    ),
    st.sampled_from([[], {}, [1], {"a": 1}, [[1, 2]], ["1", 1], [True, True], _deep(40), _deep(500)]).map(
        copy.deepcopy  # a later mutation must not change the shared example
    ),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)


def _paths(document: object, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a JSON document (list items by index), the root first."""
    out = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(document, list):
        for i, value in enumerate(document[:4]):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def mutated(draw, document: dict) -> object:
    """``document`` with one to three values replaced or removed (or a key added)."""
    document = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if not path:
            if action == "replace":
                document = draw(_HOSTILE_VALUES)
            continue
        parent = document
        try:
            for key in path[:-1]:
                parent = parent[key]
        except (KeyError, IndexError, TypeError):
            continue
        if action == "remove":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(_HOSTILE_VALUES)
        else:
            parent[path[-1]] = draw(_HOSTILE_VALUES)
    return document


def write_edited(path: Path, document: object) -> None:
    """Write ``document`` with its hash recomputed (a dict), as a careful hand-editor would."""
    if isinstance(document, dict):
        try:
            document["meta_sha256"] = meta_digest(document)
        except (ValueError, RecursionError):  # nothing can hash it: the reader meets it unhashed
            pass
    try:
        text = json.dumps(document)
    except RecursionError:
        text = "[" * 5000 + "]" * 5000
    path.write_text(text)


def assert_one_error_line(result) -> None:
    """The command ended in a result (0) or one ``error:`` line (2), never a traceback."""
    assert result.exit_code in (0, 2), (result.exit_code, result.output[-2000:], result.exception)
    if result.exit_code == 2:
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output[-2000:]


# --------------------------------------------------------------------------------------------
# dataset meta.json


@pytest.fixture(scope="module")
def dataset_dirs(tmp_path_factory):
    """A dense and a csr dataset, each of a few chunks."""
    folder = tmp_path_factory.mktemp("datasets")
    (folder / "small.csv").write_text("".join(f"{1 if i % 3 else -1},{i},{i % 5}\n" for i in range(12)))
    ingest(folder / "small.csv", folder / "dense", chunk_rows=5)
    (folder / "small.svm").write_text("".join(f"{i % 3} 1:{i + 1} 4:2\n" for i in range(12)))
    ingest(folder / "small.svm", folder / "csr", chunk_rows=5, layout="csr")
    return {"dense": folder / "dense", "csr": folder / "csr"}


@pytest.fixture(scope="module")
def meta_documents(dataset_dirs):
    return {name: json.loads((d / "meta.json").read_text()) for name, d in dataset_dirs.items()}


def _dataset_copy(source: Path, scratch: str) -> Path:
    copy = Path(scratch) / "ds"
    shutil.copytree(source, copy)
    return copy


def _read_whole(directory: Path) -> None:
    meta = dataset_info(directory)
    rows = sum(len(y) for _, y in open_stream(directory, block_size=4))
    assert rows == meta["n_rows"]


@SETTINGS
@given(data=st.data(), layout=st.sampled_from(["dense", "csr"]))
def test_mutated_meta_json_ends_in_a_result_or_one_data_error(dataset_dirs, meta_documents, data, layout):
    count("dataset and model files")
    document = data.draw(mutated(meta_documents[layout]))
    with tempfile.TemporaryDirectory() as scratch:
        copy = _dataset_copy(dataset_dirs[layout], scratch)
        write_edited(copy / "meta.json", document)
        try:
            _read_whole(copy)
        except DataError as exc:
            assert "meta.json" in str(exc) or str(copy) in str(exc), exc
            assert "\n" not in str(exc).replace(str(copy), "")


@CLI_SETTINGS
@given(data=st.data(), layout=st.sampled_from(["dense", "csr"]))
def test_mutated_meta_json_through_omkl_data_info(dataset_dirs, meta_documents, data, layout):
    count("dataset and model files")
    document = data.draw(mutated(meta_documents[layout]))
    with tempfile.TemporaryDirectory() as scratch:
        copy = _dataset_copy(dataset_dirs[layout], scratch)
        write_edited(copy / "meta.json", document)
        assert_one_error_line(CliRunner().invoke(main, ["data", "info", str(copy)]))


@SETTINGS
@given(content=st.binary(max_size=300), deep=st.booleans())
def test_meta_json_of_arbitrary_bytes(dataset_dirs, content, deep):
    count("dataset and model files")
    with tempfile.TemporaryDirectory() as scratch:
        copy = _dataset_copy(dataset_dirs["dense"], scratch)
        (copy / "meta.json").write_bytes(b"[" * 100_000 + content if deep else content)
        with pytest.raises(DataError, match="meta.json"):
            dataset_info(copy)


# --------------------------------------------------------------------------------------------
# model.json


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory, dataset_dirs):
    from omkl_dist.algorithms import KernelPerceptron
    from omkl_dist.model import Model
    from omkl_dist.persistence import save_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    folder = tmp_path_factory.mktemp("model") / "m"
    model = KernelPerceptron(kernel="gaussian(sigma=1)").fit(X, y)
    save_model(Model(model, label_map=[["-1", -1], ["1", 1]]), folder)
    return folder


def _model_copy(saved_model: Path, scratch: str, document: object) -> Path:
    copy = Path(scratch) / "m"
    shutil.copytree(saved_model, copy)
    write_edited(copy / "model.json", document)
    return copy


@SETTINGS
@given(data=st.data())
def test_mutated_model_json_ends_in_a_model_or_one_data_error(saved_model, data):
    from omkl_dist.persistence import load_model

    count("dataset and model files")
    document = data.draw(mutated(json.loads((saved_model / "model.json").read_text())))
    with tempfile.TemporaryDirectory() as scratch:
        copy = _model_copy(saved_model, scratch, document)
        try:
            model = load_model(copy)
        except DataError as exc:
            assert str(copy) in str(exc), exc
            return
        scores = model.decision_function(np.zeros((3, model.n_features_in_)))
        assert len(scores) == 3


@CLI_SETTINGS
@given(data=st.data())
def test_mutated_model_json_through_omkl_predict(saved_model, dataset_dirs, data):
    count("dataset and model files")
    document = data.draw(mutated(json.loads((saved_model / "model.json").read_text())))
    with tempfile.TemporaryDirectory() as scratch:
        copy = _model_copy(saved_model, scratch, document)
        args = ["predict", "--model-dir", str(copy), "--data", str(dataset_dirs["dense"])]
        assert_one_error_line(CliRunner().invoke(main, [*args, "--out", str(Path(scratch) / "p.parquet")]))


# --------------------------------------------------------------------------------------------
# special files, encodings, line ends and names given to ingest

_ROWS = st.lists(
    st.tuples(st.sampled_from(["1", "-1", "yes", "no", "é", "\u00a0", "1\x00"]), st.integers(-9, 9), st.integers(0, 9)),
    min_size=1,
    max_size=6,
)
_ENCODINGS = ["utf-8", "utf-8-sig", "latin-1", "utf-16", "utf-32", "cp1252"]
_LINE_ENDS = ["\n", "\r\n", "\r", "\n\r", "\x0b", "\x85", "\u2028"]
_NAME_PARTS = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="/\x00"), min_size=1, max_size=12
)


@st.composite
def odd_text_file(draw) -> tuple[str, bytes]:
    """A small labelled text file in an odd encoding and line ends, under an odd name."""
    sep = draw(st.sampled_from([",", "\t", " ", ";"]))
    lines = [sep.join(map(str, row)) for row in draw(_ROWS)]
    if draw(st.booleans()):
        lines.insert(0, sep.join(["target", "f\u00e9", "g\x1b"]))
    ends = draw(st.lists(st.sampled_from(_LINE_ENDS), min_size=1, max_size=2))
    text = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    encoding = draw(st.sampled_from(_ENCODINGS))
    content = text.encode(encoding, errors="replace")
    if draw(st.booleans()):
        at = draw(st.integers(0, len(content)))
        content = content[:at] + draw(st.binary(min_size=1, max_size=4)) + content[at:]
    name = draw(_NAME_PARTS) + draw(st.sampled_from(["", ".csv", ".txt", ".svm", ".mat", ".parquet"]))
    return name, content


@SETTINGS
@given(case=odd_text_file())
def test_odd_encodings_line_ends_and_names_end_in_data_or_a_data_error(case):
    count("special files and encodings")
    name, content = case
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / name
        path.write_bytes(content)
        try:
            ds = read_dataset(path)
        except DataError:
            return
        assert ds.n_rows >= 1 and np.isfinite(ds.X).all()


@CLI_SETTINGS
@given(case=odd_text_file())
def test_odd_files_through_omkl_data_ingest(case):
    count("special files and encodings")
    name, content = case
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / name
        path.write_bytes(content)
        assert_one_error_line(CliRunner().invoke(main, ["data", "ingest", str(path), "--out", f"{scratch}/out"]))


def _special_file(kind: str, folder: Path) -> tuple[Path, object]:
    """A special file of ``kind`` in ``folder`` and what must be closed afterwards."""
    path = folder / f"{kind.replace('/', '_')}\n.csv"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        return path, server
    elif kind == "directory":
        path.mkdir()
        (path / "a.csv").write_text("1,2\n")
    elif kind == "link to a fifo":
        os.mkfifo(folder / "target")
        path.symlink_to(folder / "target")
    elif kind == "dangling link":
        path.symlink_to(folder / "missing")
    else:  # a device, or a link to one
        path.symlink_to(kind.removeprefix("link to "))
    return path, None


@settings(SETTINGS, max_examples=30)
@given(
    kind=st.sampled_from(
        ["fifo", "socket", "directory", "link to a fifo", "dangling link", "/dev/zero", "link to /dev/urandom"]
    ),
    through_cli=st.booleans(),
)
def test_special_files_are_refused_unread(kind, through_cli):
    count("special files and encodings")
    with tempfile.TemporaryDirectory() as scratch:
        path, resource = _special_file(kind, Path(scratch))
        try:
            if through_cli:
                result = CliRunner().invoke(main, ["data", "ingest", str(path), "--out", f"{scratch}/out"])
                assert result.exit_code == 2
                assert_one_error_line(result)
            else:
                with pytest.raises(DataError):
                    read_dataset(path)
            assert not (Path(scratch) / "out").exists()
        finally:
            if resource is not None:
                resource.close()
