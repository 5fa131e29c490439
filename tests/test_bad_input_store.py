"""Generated hostile model stores (hypothesis): store files valid against their schema, then mutated.

refs.json, events.jsonl lines, the names and kinds of entries in ``versions/``, the markers and a
version's model.json are generated from their schema and then broken -- wrong types, a bool for an
int, missing and extra keys, versions that do not exist, symbolic links to the user's own files.
``omkl models list/verify/gc/promote/rollback`` and ``omkl predict`` from the store must each end
in a result or in one clear ``error:`` line (exit 2) -- never a traceback -- and no file of the
user's, outside the store's own entries, may change. The number of cases is printed at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal

import numpy as np
import pytest
from bad_input_cases import count
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_store import STEPS, first_version, signal_at_steps, stream  # noqa: F401 (fixtures)

from omkl_dist.algorithms import KernelPerceptron
from omkl_dist.model import Model
from omkl_dist.persistence import save_model
from omkl_dist.pipelines.cli import main
from omkl_dist.storage.model_store import EVENTS, MARKER, REFS, ModelStore
from omkl_dist.storage.synth import synthesize

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_WRONG = st.sampled_from([True, False, None, "2", 2.0, -1, 0, 99, [2], {"v": 2}, "", 2**70])


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A store with versions 1, 2 and 3 (champions 1 then 3; canary 2), a dataset to predict, and a
    folder of the user's own files that links may point at."""
    base = tmp_path_factory.mktemp("bad-store")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    model = KernelPerceptron().fit(X, np.where(X[:, 0] > 0, 1, -1))
    store = ModelStore(base / "store", "m")
    for version in (1, 2, 3):
        staged = store.staging_dir()
        save_model(Model(model, job={"key": f"k{version}", "algo": "perceptron"}), staged / "model")
        store.publish(
            staged / "model", reason="t", promote=version != 2, expect_champion=store.aliases().get("champion")
        )
        shutil.rmtree(staged)
    store.promote(2, "canary")
    synthesize(base / "data", rows=300, features=4, seed=1)
    return base


def _mutate_value(draw, doc: dict) -> dict:
    """``doc`` with one key dropped, added, or given a wrong value (nested one level)."""
    how = draw(st.sampled_from(["drop", "extra", "wrong", "nested"]))
    doc = json.loads(json.dumps(doc))
    key = draw(st.sampled_from(sorted(doc)))
    if how == "drop":
        del doc[key]
    elif how == "extra":
        doc[draw(st.sampled_from(["x", "champion", "versions"]))] = draw(_WRONG)
    elif how == "nested" and isinstance(doc[key], dict) and doc[key]:
        doc[key][draw(st.sampled_from(sorted(doc[key])))] = draw(_WRONG)
    else:
        doc[key] = draw(_WRONG)
    return doc


@st.composite
def mutation(draw):
    """(what, apply) where ``apply(store_dir, user_dir)`` breaks one file of the store."""
    target = draw(st.sampled_from(["refs", "event", "version name", "marker", "model.json", "link"]))
    if target == "refs":
        doc = _mutate_value(draw, {"aliases": {"champion": 3, "canary": 2}, "last_version": 3})
        return target, lambda d, u: (d / REFS).write_text(json.dumps(doc))
    if target == "event":
        valid = draw(
            st.sampled_from(
                [
                    {"event": "publish", "version": 4},
                    {"event": "promote", "alias": "champion", "version": 2, "previous": 3},
                    {"event": "rollback", "alias": "champion", "version": 1, "previous": 3},
                    {"event": "cleanup", "versions": [1], "kept": [2, 3]},
                ]
            )
        )
        line = json.dumps(valid if draw(st.booleans()) else _mutate_value(draw, valid))
        line = draw(st.sampled_from([line, "[1, 2]", "7", '"publish"', "{}", line[:-3], "\x00\x01", "NaN"]))
        where = draw(st.sampled_from(["append", "first"]))

        def write_event(d, u):
            lines = (d / EVENTS).read_text().splitlines()
            lines = [*lines, line] if where == "append" else [line, *lines]
            (d / EVENTS).write_text("\n".join(lines) + "\n")

        return target, write_event
    if target == "version name":
        name = draw(st.sampled_from(["0", "007", "abc", "-1", "1.5", "4", "99", "٣", ".hidden", "2 "]))
        kind = draw(st.sampled_from(["folder", "file", "link"]))

        def add_entry(d, u):
            entry = d / "versions" / name
            if kind == "folder":
                entry.mkdir()
                (entry / "notes.txt").write_text("the user's")
            elif kind == "file":
                entry.write_text("the user's")
            else:
                entry.symlink_to(u)

        return target, add_entry
    if target == "marker":
        where = draw(st.sampled_from([".", "m"]))
        doc = {"kind": "omkl-model-store", "schema_version": 1}
        if where == "m":
            doc = {"kind": "omkl-model-store-model", "schema_version": 1, "name": "m"}
        bad = _mutate_value(draw, doc)
        return target, lambda d, u: ((d if where == "m" else d.parent) / MARKER).write_text(json.dumps(bad))
    if target == "model.json":
        version = draw(st.sampled_from([1, 2, 3]))

        def edit_model(d, u):
            path = d / "versions" / str(version) / "model.json"
            path.write_text(json.dumps(_mutate_value(draw, json.loads(path.read_text()))))

        return target, edit_model
    entry = draw(st.sampled_from([REFS, EVENTS, "versions", "staging", ".lock", "versions/1", MARKER]))

    def link(d, u):
        path = d / entry
        if path.is_dir() and not path.is_symlink():
            shutil.copytree(path, u / f"copy-{path.name}")
            shutil.rmtree(path)
            path.symlink_to(u / f"copy-{path.name}")
        else:
            if path.exists():
                shutil.copy(path, u / f"copy-{path.name}")
                path.unlink()
            path.symlink_to(u / f"copy-{path.name}" if entry != ".lock" else u / "notes.txt")

    return target, link


def _snapshot(folder) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) and its content's hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                out[path] = "link -> " + os.readlink(path)
            else:
                with open(path, "rb") as fh:
                    out[path] = hashlib.sha256(fh.read()).hexdigest()
    return out


COMMANDS = [
    ["models", "list", "--store", "{store}", "m"],
    ["models", "verify", "--store", "{store}", "m"],
    ["models", "promote", "--store", "{store}", "m", "1"],
    ["models", "rollback", "--store", "{store}", "m"],
    ["models", "gc", "--store", "{store}", "m", "--keep", "0"],
    ["predict", "--store", "{store}", "--model", "m", "--data", "{data}", "--out", "{out}", "--overwrite"],
]


@SETTINGS
@given(mutation(), st.sampled_from(range(len(COMMANDS))))
def test_store_files_mutated_give_a_result_or_one_clear_error(template, tmp_path_factory, case, which):
    count("store files")
    what, apply = case
    work = tmp_path_factory.mktemp("case")
    shutil.copytree(template / "store", work / "store", symlinks=True)
    user = work / "user"
    user.mkdir()
    (user / "notes.txt").write_text("the user's own file")
    store_dir = work / "store" / "m"
    apply(store_dir, user)
    strangers = {  # what the user put into the store: never touched
        path: digest
        for path, digest in _snapshot(store_dir / "versions").items()
        if os.path.relpath(path, store_dir / "versions").split(os.sep)[0] not in {"1", "2", "3"}
    }
    before = _snapshot(user)
    args = [a.format(store=work / "store", data=template / "data", out=work / "p.parquet") for a in COMMANDS[which]]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 2), (what, args, result.output, result.exception)
    assert "Traceback" not in result.output and not isinstance(result.exception, (AssertionError, TypeError))
    if result.exit_code == 2:
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Fix:" in errors[0] or "Usage" in result.output, (what, result.output)
    assert _snapshot(user) == before, (what, args)
    now = _snapshot(store_dir / "versions") if (store_dir / "versions").exists() else {}
    assert all(now.get(path) == digest for path, digest in strangers.items()), (what, args)


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(st.sampled_from(list(STEPS)), st.sampled_from([signal.SIGINT, signal.SIGTERM])),
        min_size=1,
        max_size=3,
        unique_by=lambda pair: pair[0],
    ),
    st.sampled_from(["0", "1"]),
)
def test_signals_at_steps_of_a_publish(stream, first_version, tmp_path_factory, plan, gate):  # noqa: F811
    """One to three signals, SIGINT or SIGTERM, at steps of a retrain's publish (the gate promoting
    or keeping): nothing changed and "interrupted", or a complete version and its status line."""
    count("signals at each step of a publish")
    signal_at_steps(stream, first_version, tmp_path_factory.mktemp("signals"), plan, "--gate", gate)
