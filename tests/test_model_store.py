"""The versioned model store (storage/model_store.py): numbered immutable versions, aliases, the
event log, rollback, gc, verify, the writers' lock, and what a damaged or misused store does."""

from __future__ import annotations

import fcntl
import json
import os
import shutil

import numpy as np
import pytest

from omkl_dist.algorithms import KernelPerceptron
from omkl_dist.model import Model
from omkl_dist.persistence import load_model, save_model
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.model_store import EVENTS, LOCK, REFS, ModelStore, StoreLocked
from omkl_dist.storage.outputs import OutputBusy


def _model(seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    return KernelPerceptron(n_epochs=1).fit(X, np.where(X[:, 0] > 0, 1, -1))


def _publish(store: ModelStore, seed: int, promote: bool = True) -> int:
    staged = store.staging_dir()
    save_model(Model(_model(seed)), staged / "model", lineage={"key": f"k{seed}"})
    done = store.publish(
        staged / "model",
        reason="test",
        promote=promote,
        expect_champion=store.aliases().get("champion"),
        key=f"k{seed}",
    )
    shutil.rmtree(staged, ignore_errors=True)
    return done["version"]


def test_versions_aliases_events_and_rollback(tmp_path):
    store = ModelStore(tmp_path / "store", "m")
    assert store.versions() == [] and store.aliases() == {} and store.events() == []
    assert [_publish(store, s) for s in (1, 2, 3)] == [1, 2, 3]
    assert store.aliases() == {"champion": 3}
    assert store.champion_history() == [1, 2, 3]
    assert store.resolve("champion") == 3 and store.resolve("v2") == 2 and store.resolve(1) == 1
    assert store.find("k2") == 2 and store.find("nope") is None
    # a rerun of a published key returns the version (no new number)
    staged = store.staging_dir()
    save_model(Model(_model(2)), staged / "model", lineage={"key": "k2"})
    again = store.publish(staged / "model", reason="rerun", key="k2")
    assert again == {"version": 2, "promoted": False, "existing": True, "champion": 3}
    assert not (staged / "model").exists()
    # rollback walks back through the champions the log recorded; a promotion pushes again
    assert store.rollback() == {"from": 3, "to": 2}
    assert store.rollback() == {"from": 2, "to": 1}
    with pytest.raises(DataError, match="no earlier champion"):
        store.rollback()
    assert store.promote(3)["previous"] == 1
    assert store.promote(2, "challenger") == {"alias": "challenger", "version": 2, "previous": None}
    assert store.aliases() == {"champion": 3, "challenger": 2}
    kinds = [e["event"] for e in store.events()]
    assert kinds == ["publish", "promote"] * 3 + ["rollback", "rollback", "promote", "alias"]
    assert store.verify()["problems"] == []
    # the versions load as ordinary saved models
    model = load_model(store.path(2))
    assert store.lineage(2) == {"key": "k2"} and model.estimator.n_samples_seen_ == 60


def test_gc_keeps_aliased_versions_and_numbers_are_never_reused(tmp_path):
    store = ModelStore(tmp_path, "m")
    for s in range(1, 6):
        _publish(store, s, promote=s == 2)
    store.promote(4, "canary")
    assert store.gc(keep=1) == [1, 3]  # 2 (champion), 4 (canary) and the newest (5) stay
    assert store.versions() == [2, 4, 5]
    assert store.events()[-1] == {**store.events()[-1], "event": "cleanup", "versions": [1, 3]}
    store.promote(2, "canary")
    assert store.gc(keep=0) == [4, 5]
    assert _publish(store, 9) == 6  # never 3, 4 or 5 again
    assert store.verify()["problems"] == []


def test_bad_stores_and_references(tmp_path):
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(DataError, match="is a file, not a folder"):
        ModelStore(afile, "m")
    with pytest.raises(DataError, match="model name"):
        ModelStore(tmp_path, "../escape")
    with pytest.raises(DataError, match="a local folder"):
        ModelStore("s3://bucket/store", "m")
    store = ModelStore(tmp_path / "s", "m")
    _publish(store, 1, promote=False)
    with pytest.raises(DataError, match="no alias 'champion'.*omkl models list"):
        store.resolve("champion")
    with pytest.raises(DataError, match="no version 7"):
        store.resolve("7")
    with pytest.raises(DataError, match="alias 'bad alias' is not valid"):
        store.promote(1, "bad alias")
    (store.dir / REFS).write_text("{not json")
    with pytest.raises(DataError, match="refs.json is damaged"):
        store.aliases()


def test_hand_edited_version_is_refused_and_named(tmp_path):
    store = ModelStore(tmp_path, "m")
    _publish(store, 1)
    _publish(store, 2)
    meta_path = store.path(2) / "model.json"
    meta = json.loads(meta_path.read_text())
    meta["params"]["kernel"] = "gaussian:1"  # an edit that keeps valid JSON
    meta_path.write_text(json.dumps(meta))
    result = store.verify()
    assert result["versions"][1] == "ok" and "edited or damaged" in result["versions"][2]
    assert result["problems"] and "version 2" in result["problems"][0]
    with pytest.raises(DataError, match=r"versions/2.*edited or damaged"):
        load_model(store.path(2))
    # a flipped byte in an array's chunk is caught by its sha256
    chunk = next(p for p in (store.path(1) / "state.zarr").rglob("c/*") if p.is_file())
    data = bytearray(chunk.read_bytes())
    data[-1] ^= 0xFF
    chunk.write_bytes(bytes(data))
    assert store.verify()["versions"][1] != "ok"


def test_lock_timeout_raises_store_locked(tmp_path):
    store = ModelStore(tmp_path, "m", lock_timeout=0.2)
    _publish(store, 1)
    fd = os.open(store.dir / LOCK, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another writer holds it
    try:
        with pytest.raises(StoreLocked, match="locked by another writer") as info:
            store.promote(1, "x")
        assert isinstance(info.value, OutputBusy)  # the CLI's exit 75
    finally:
        os.close(fd)
    assert store.promote(1, "x")["version"] == 1


def test_dead_writers_staging_is_swept_and_a_cut_log_line_ignored(tmp_path):
    store = ModelStore(tmp_path, "m")
    _publish(store, 1)
    dead = store.dir / "staging" / "999999999-abcd"
    dead.mkdir(parents=True)
    (dead / "half").write_text("partial")
    with open(store.dir / EVENTS, "a") as fh:
        fh.write('{"event": "publ')  # a write cut by a crash
    assert [e["event"] for e in store.events()] == ["publish", "promote"]
    _publish(store, 2)
    assert not dead.exists()
    assert store.verify()["problems"] == []
