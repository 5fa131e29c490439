"""Generated hostile outputs (hypothesis): foreign files around and inside what a command writes,
and mutated traces given to ``omkl report``.

Before each writing command (``report``, ``predict``, ``run --model-out``/``--trace-out``,
``data ingest``) the output's folder -- and the output path itself, and the inside of a folder
there -- gets files the user made: names like our lock, work folders and moved-aside copies
(``.NAME.lock``, ``.NAME.tmp-PID``, ``.NAME.old-PID``, our work folder's name shape without its
marker), a user's PNG plots, notes, folders, symbolic links. Whatever the command does -- write,
or refuse with one ``error:`` line -- every foreign entry is byte for byte as it was (the tree is
hashed before and after), and nothing of ours is left beside the output. A mutated trace ends in a
report or in one error naming the file, never a traceback. The number of generated cases is
printed at the end of the run (conftest.py).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bad_input_cases import count, tree_state
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omkl_dist.pipelines.cli import main
from omkl_dist.storage.outputs import REPORT, recognise

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TRACE_SETTINGS = settings(SETTINGS, max_examples=40)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _png_bytes() -> bytes:
    """A PNG image a user drew (matplotlib, no omkl-dist marker)."""
    import io

    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    fig.add_subplot().plot([1, 2])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A small CSV, a saved model, run traces, a dead process id and a PNG of the user's."""
    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    csv = root / "d.csv"
    csv.write_text("".join(f"{lab}," + ",".join(f"{v:.5f}" for v in row) + "\n" for lab, row in zip(y, X)))
    result = invoke("run", "spa", "--data", csv, "--model-out", root / "m", "--trace-out", root / "t.json", "--quiet")
    assert result.exit_code == 0, result.output
    small = root / "small.json"  # two kernels, five points: quick to draw
    document = json.loads((root / "t.json").read_text())
    trace = document["trace"]
    for key in ("n_seen", "mistake_rate", "block_ends", "sampled_at", "n_support", "weights", "instances_per_second"):
        trace[key] = (trace[key] * 5)[:5]
    trace["n_support"] = [row[:2] for row in trace["n_support"]]
    trace["weights"] = [row[:2] for row in trace["weights"]]
    trace["kernel_names"] = trace["kernel_names"][:2]
    small.write_text(json.dumps(document))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return {
        "csv": csv,
        "model": root / "m",
        "trace": root / "t.json",
        "small trace": small,
        "dead": int(dead.stdout),
        "png": _png_bytes(),
        "n": iter(range(10**6)),
    }


# ---------------------------------------------------------------------------------------------
# foreign entries


def _names(out: str, pid: int):
    """File names a user (or an older omkl-dist) may have put beside the output ``out``."""
    return st.sampled_from(
        [
            f".{out}.lock",
            f".{out}.tmp-{pid}",
            f".{out}.tmp-{pid}-abcd1234",
            f".{out}.old-{pid}",
            f".{out}.tmp-{pid}-{pid}-0123456789abcdef",  # our work folder's shape, no marker inside
            f".{out}.tmp-1-1-fedcba9876543210",
            "mistakes.png",
            "report.json",
            "notes.txt",
            f"{out}.bak",
        ]
    )


@st.composite
def foreign_entry(draw, names):
    """(name, what, content): a file (bytes, a PNG, our lock's first line misspelt), a folder, a link."""
    name = draw(names)
    what = draw(st.sampled_from(["file", "file", "png", "folder", "link", "dangling link"]))
    content = draw(
        st.one_of(
            st.binary(max_size=48),
            st.sampled_from([b"", b"omkl-dist output lock", b'{"omkl_report": false}', b"{}", b"\x89PNG\r\n\x1a\n"]),
        )
    )
    return name, what, content


def place(folder: Path, entry, setup, elsewhere: Path) -> None:
    name, what, content = entry
    path = folder / name
    if path.exists() or path.is_symlink():
        return
    if what == "file":
        path.write_bytes(content)
    elif what == "png":
        path.write_bytes(setup["png"])
    elif what == "folder":
        path.mkdir()
        (path / "inside.txt").write_bytes(content)
    else:
        target = elsewhere / f"target-{next(setup['n'])}"
        if what == "link":
            target.write_bytes(content)
        path.symlink_to(target)


@st.composite
def scene(draw, out: str, pid: int):
    """Foreign entries beside ``out``, what sits at ``out`` itself, and entries inside it (a folder)."""
    beside = draw(st.lists(foreign_entry(_names(out, pid)), max_size=5))
    at_out = draw(st.sampled_from(["nothing", "nothing", "empty folder", "folder", "file", "png", "link"]))
    inside = draw(st.lists(foreign_entry(_names("x", pid)), max_size=3)) if at_out == "folder" else []
    return beside, at_out, inside


def build(root: Path, out_name: str, drawn, setup) -> Path:
    beside, at_out, inside = drawn
    folder, elsewhere = root / "work", root / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    out = folder / out_name
    if at_out in ("empty folder", "folder"):
        out.mkdir()
    elif at_out == "file":
        out.write_text("the user's")
    elif at_out == "png":
        out.write_bytes(setup["png"])
    elif at_out == "link":
        (elsewhere / "linked").write_text("the user's")
        out.symlink_to(elsewhere / "linked")
    for entry in inside:
        place(out, entry, setup, elsewhere)
    for entry in beside:
        place(folder, entry, setup, elsewhere)
    return out


def command(kind: str, out: Path, setup) -> list:
    if kind == "report":
        return ["report", setup["small trace"], "--out", out]
    if kind == "predict":
        return ["predict", "--model-dir", setup["model"], "--data", setup["csv"], "--out", out, "--overwrite"]
    if kind == "run --model-out":
        return ["run", "spa", "--data", setup["csv"], "--model-out", out, "--overwrite", "--quiet"]
    if kind == "run --trace-out":
        return ["run", "spa", "--data", setup["csv"], "--trace-out", out, "--quiet"]
    return ["data", "ingest", setup["csv"], "--out", out, "--overwrite"]


OUT_NAMES = {
    "report": "figs",
    "predict": "pred.parquet",
    "run --model-out": "model",
    "run --trace-out": "trace.json",
    "ingest": "ds",
}


@pytest.mark.parametrize("kind", list(OUT_NAMES))
def test_foreign_entries_around_an_output_survive_every_write(kind, setup, tmp_path_factory):
    out_name = OUT_NAMES[kind]

    @SETTINGS
    @given(drawn=scene(out_name, setup["dead"]))
    def case(drawn):
        count("foreign names in output folders")
        root = tmp_path_factory.mktemp("case")
        out = build(root, out_name, drawn, setup)
        before = tree_state(root)
        result = invoke(*command(kind, out, setup))
        assert "Traceback" not in result.output, result.output
        assert result.exit_code in (0, 2), result.output
        if result.exit_code == 2:
            assert result.output.strip().splitlines()[-1].startswith("error: "), result.output
        after = tree_state(root)
        changed = {k: (v, after.get(k)) for k, v in before.items() if after.get(k) != v}
        written = f"work/{out_name}"
        # only an empty folder at the output may give way to a folder output; nothing else moves
        assert all(k == written and v == "folder" for k, (v, _) in changed.items()), changed
        new = set(after) - set(before)
        assert all(k == written or k.startswith(written + "/") for k in new), new

    case()


# ---------------------------------------------------------------------------------------------
# mutated traces

_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=8,
)
_TRACE_KEYS = [
    "n_seen",
    "mistake_rate",
    "block_ends",
    "sampled_at",
    "n_support",
    "weights",
    "instances_per_second",
    "kernel_names",
]


@st.composite
def mutated_trace(draw, valid: dict) -> bytes:
    """A run trace with one to three edits: a key dropped, a value replaced, a list cut or grown,
    a report document's shape, or the text cut short."""
    doc = copy.deepcopy(valid)
    for _ in range(draw(st.integers(1, 3))):
        trace = doc.get("trace") if isinstance(doc.get("trace"), dict) else doc
        key = draw(st.sampled_from(_TRACE_KEYS + ["trace", "report", "kind"]))
        how = draw(st.sampled_from(["drop", "replace", "cut", "grow", "item", "kind"]))
        target = doc if key in ("trace", "report", "kind") else trace
        if how == "drop":
            target.pop(key, None)
        elif how == "replace":
            target[key] = draw(_JSON)
        elif how == "cut" and isinstance(target.get(key), list):
            target[key] = target[key][: draw(st.integers(0, max(len(target[key]) - 1, 0)))]
        elif how == "grow" and isinstance(target.get(key), list):
            target[key] = target[key] + [draw(_JSON)]
        elif how == "item" and isinstance(target.get(key), list) and target[key]:
            target[key][draw(st.integers(0, len(target[key]) - 1))] = draw(_JSON)
        elif how == "kind":
            doc["kind"] = draw(st.sampled_from(["run", "retrain", "other"]))
    text = json.dumps(doc).encode()
    if draw(st.integers(0, 4)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


def test_mutated_traces_end_in_a_report_or_one_error(setup, tmp_path_factory):
    valid = json.loads(setup["trace"].read_text())

    @TRACE_SETTINGS
    @given(content=mutated_trace(valid))
    def case(content):
        count("trace files")
        root = tmp_path_factory.mktemp("trace")
        path, out = root / "t.json", root / "out"
        path.write_bytes(content)
        result = invoke("report", path, "--out", out)
        assert "Traceback" not in result.output, result.output
        if result.exit_code == 0:
            assert recognise(out, REPORT) is None
        else:
            lines = result.output.strip().splitlines()
            assert result.exit_code == 2 and len(lines) == 1, result.output
            assert lines[0].startswith(f"error: {path}: ") and "Fix:" in lines[0], result.output
            assert not out.exists()
        assert sorted(os.listdir(root)) in (["out", "t.json"], ["t.json"])

    case()
