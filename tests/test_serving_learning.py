"""The learning core of omkl serve (omkl_dist/serving/learning.py): test-then-train answers, bad
requests refused before the log, immutable snapshots, versions published with lineage, and the
recovery after ``kill -9`` that gives the uninterrupted model bit for bit."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from omkl_dist import OM2, SPA
from omkl_dist.model import Model
from omkl_dist.persistence import load_model, save_model
from omkl_dist.serving.learning import LearningService
from omkl_dist.serving.wal import LogBusy, WriteAheadLog
from omkl_dist.storage.model_store import ModelStore

D = 5
KERNELS = "gaussian:0.5,gaussian:2,linear"


def _data(n: int, seed: int = 0, classes: int = 2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    if classes == 2:
        return X, np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "yes", "no")
    return X, np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.4, 0.4])]


def _estimator(kind: str):
    if kind == "spa":
        return SPA(kernels=KERNELS, block_size=8, random_state=0)
    return OM2(kernels=KERNELS, block_size=8, random_state=0)


def _store(tmp_path, kind: str = "spa"):
    """A store whose version 1 (the champion) is a small model learnt on 60 rows."""
    X, y = _data(60, seed=1, classes=2 if kind == "spa" else 3)
    labels = sorted(set(y.tolist()))
    codes = [-1, 1] if kind == "spa" else list(range(3))
    label_map = [[label, code] for label, code in zip(labels, codes, strict=True)]
    internal = np.array([dict(zip(labels, codes, strict=True))[v] for v in y])
    model = Model(_estimator(kind).partial_fit(X, internal), label_map=label_map)
    store = ModelStore(tmp_path / "store", "m")
    staged = store.staging_dir()
    save_model(model, staged / "model", lineage={"algo": kind, "block_size": 8, "label_map": label_map})
    store.publish(staged / "model", reason="test", promote=True, expect_champion=None)
    return store


def _replayed(store, version: int, wal_dir):
    """The reference: version ``version`` learnt in this process, with partial_fit, over every row
    of the log in its order and with its block boundaries (nothing of the service's code)."""
    model = load_model(store.path(version))
    classes = model.estimator.classes_
    log = WriteAheadLog.open(wal_dir)
    try:
        records = list(log.records())
    finally:
        log.close()
    for record in records:
        for rows, labels in record.calls():
            model.estimator.partial_fit(rows, classes[labels])
    return model, records


@contextlib.contextmanager
def _serving(store, **options):
    """A service that publishes only when told, closed without publishing."""
    service = LearningService.open(store, **{"publish_rows": None, "publish_seconds": None, **options})
    try:
        yield service
    finally:
        service.close(publish=False)


def _assert_same(a, b):
    """Two estimators' states, bit for bit (every array, every scalar, the calibration)."""
    arrays_a, meta_a = a.to_state()
    arrays_b, meta_b = b.to_state()
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        assert arrays_a[key].dtype == arrays_b[key].dtype and arrays_a[key].tobytes() == arrays_b[key].tobytes(), key
    assert json.dumps(meta_a, sort_keys=True) == json.dumps(meta_b, sort_keys=True)


@pytest.mark.parametrize("kind", ["spa", "om2"])
def test_learn_answers_test_then_train_and_equals_partial_fit(tmp_path, kind):
    store = _store(tmp_path, kind)
    X, y = _data(90, seed=2, classes=2 if kind == "spa" else 3)
    reference = load_model(store.path(1))
    codes = {original: internal for original, internal in reference.label_map}
    with _serving(store, max_block=16) as service:
        assert service.snapshot().version == 1 and service.snapshot().rows_learnt == 0
        first = 0
        for lo, hi in [(0, 1), (1, 31), (31, 90)]:  # 30 rows: two learning calls (16 + 14)
            ack = service.learn(X[lo:hi], y[lo:hi])
            assert ack.first_row == first and ack.version == 1
            first += hi - lo
            for start in range(lo, hi, 16):  # the reference learns the same calls
                stop = min(start + 16, hi)
                internal = np.array([codes[v] for v in y[start:stop]])
                outcome = reference.estimator.progressive_partial_fit(X[start:stop], internal)
                part = slice(start - lo, stop - lo)
                assert ack.scores[part].tobytes() == outcome["score"].tobytes()
                right = ~outcome["mistakes"]
                assert np.array_equal(ack.predictions[part][right], y[start:stop][right])
                assert not np.any(ack.predictions[part][outcome["mistakes"]] == y[start:stop][outcome["mistakes"]])
        assert ack.scores.shape == ((59,) if kind == "spa" else (59, 3))
        snapshot = service.snapshot()
        assert snapshot.rows_learnt == 90
        _assert_same(snapshot.model.estimator, reference.estimator)
        stats = service.stats()
        assert stats["rows"] == 90 and stats["groups"] == 3 and stats["fsyncs"] == 3


def test_bad_requests_are_refused_before_the_log(tmp_path):
    store = _store(tmp_path)
    X, y = _data(10, seed=3)
    with _serving(store) as service:
        service.learn(X[:4], y[:4])
        before = service.stats()
        nan = X[:2].copy()
        nan[1, 3] = np.nan
        bad = [
            ((X[:2, :4], y[:2]), "rows has 4 features.*expecting 5"),
            ((nan, y[:2]), "NaN or inf.*row 1, column 3"),
            ((X[:2], ["yes", "maybe"]), "label 'maybe' is not one of the model's classes \\['no', 'yes'\\]"),
            ((X[:2], ["yes"]), "1 label\\(s\\).*for 2 row\\(s\\); send one label per row"),
            ((X[:2], [np.nan, 1.0]), "label is NaN"),
            (([[1, 2], [3]], y[:2]), "learn"),
        ]
        for (rows, labels), message in bad:
            with pytest.raises(ValueError, match=message) as info:
                service.learn(rows, labels)
            assert "\n" not in str(info.value)
        after = service.stats()
        for key in ("rows", "line_rows", "log_bytes", "fsyncs", "requests"):
            assert after[key] == before[key], key


def test_a_snapshot_is_never_changed_by_later_learning(tmp_path):
    store = _store(tmp_path)
    X, y = _data(80, seed=4)
    with _serving(store) as service:
        service.learn(X[:20], y[:20])
        held = service.snapshot()
        frozen = copy.deepcopy(held.model.estimator)
        scores = held.model.decision_function(X)
        service.learn(X[20:], y[20:])
        assert service.snapshot() is not held and service.snapshot().rows_learnt == 80
        assert held.rows_learnt == 20
        _assert_same(held.model.estimator, frozen)
        assert np.array_equal(held.model.decision_function(X), scores)


def test_publish_with_lineage_drop_segments_and_recover(tmp_path):
    store = _store(tmp_path)
    wal_dir = tmp_path / "wal"
    X, y = _data(200, seed=5)
    with _serving(store, wal_dir=wal_dir, segment_bytes=600) as service:
        assert service.publish() is None  # nothing new
        for lo in range(0, 120, 10):
            service.learn(X[lo : lo + 10], y[lo : lo + 10])
        segments = service.stats()["log_segments"]
        assert segments > 1
        version = service.publish()
        assert version == 2 and service.snapshot().version == 2 and service.snapshot().rows_learnt == 0
        assert service.stats()["log_segments"] < segments
        service.learn(X[120:150], y[120:150])
        published = service.snapshot().model.estimator
        expected = copy.deepcopy(published)
    lineage = store.lineage(2)
    assert lineage["parent"] == 1 and lineage["algo"] == "spa" and lineage["label_map"] == [["no", -1], ["yes", 1]]
    assert lineage["serving"]["first_row"] == 0 and lineage["serving"]["end_row"] == 120
    assert lineage["window"]["rows"] == [0, 120] and len(lineage["window"]["sha256"]) == 64
    assert store.aliases() == {"champion": 1}  # a served line never moves the champion
    with LearningService.open(store, ref=1, wal_dir=wal_dir, publish_rows=None, publish_seconds=None) as service:
        assert service.snapshot().version == 2 and service.snapshot().rows_learnt == 30
        assert service.stats()["replayed_rows"] == 30
        _assert_same(service.snapshot().model.estimator, expected)
        assert service.learn(X[150:151], y[150:151]).first_row == 150
    # (closing published the 31 rows)
    assert store.versions() == [1, 2, 3] and store.lineage(3)["serving"]["first_row"] == 120


def test_publishes_every_n_rows_in_the_background(tmp_path):
    store = _store(tmp_path)
    X, y = _data(100, seed=6)
    with LearningService.open(store, publish_rows=40, publish_seconds=None) as service:
        for lo in range(0, 100, 10):
            service.learn(X[lo : lo + 10], y[lo : lo + 10])
        deadline = time.monotonic() + 5
        while service.stats()["published"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service.stats()["published"] >= 2
    ends = [store.lineage(v)["serving"]["end_row"] for v in store.versions()[1:]]
    assert len(ends) >= 2 and ends == sorted(ends) and ends[-1] == 100  # (close published the rest)


def test_keep_published_bounds_the_line_and_the_alias_follows_it(tmp_path):
    store = _store(tmp_path)
    X, y = _data(60, seed=9)
    with _serving(store, alias="online", keep_published=2) as service:
        for lo in range(0, 50, 10):
            service.learn(X[lo : lo + 10], y[lo : lo + 10])
            version = service.publish()
            assert store.aliases()["online"] == version
            if version == 3:
                store.promote(2, "pinned")  # an alias keeps a version the line would delete
        stats = service.stats()
    # versions 2..6 published; 2 pinned, 5 and 6 the newest two; 1 (the champion, not the line's) stays
    assert store.versions() == [1, 2, 5, 6] and stats["deleted_versions"] == 2 and stats["gc_error"] is None
    assert store.aliases() == {"champion": 1, "online": 6, "pinned": 2}
    # a restart knows the line's versions: the next publish deletes 5, never 2
    with _serving(store, alias="online", keep_published=2) as service:
        service.learn(X[50:60], y[50:60])
        assert service.publish() == 7
    assert store.versions() == [1, 2, 6, 7]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"alias": "champion"}, "does not move the champion"),
        ({"alias": "no spaces"}, "is not valid"),
        ({"keep_published": 0}, "keep_published must be a whole number"),
    ],
)
def test_publish_options_are_checked_before_the_log_opens(tmp_path, options, message):
    store = _store(tmp_path)
    with pytest.raises(Exception, match=message):
        LearningService.open(store, wal_dir=tmp_path / "wal", **options)
    assert not (tmp_path / "wal").exists() and store.versions() == [1]


def test_a_batch_model_starts_no_learning_line(tmp_path):
    """MKBoost (omkl fit --model-out, imported) learns a training set at once: --learn is one clear error,
    made before the line's log exists."""
    from omkl_dist import MKBoost

    X, y = _data(60, seed=1)
    store = ModelStore(tmp_path / "store", "m")
    staged = store.staging_dir()
    label_map = [["no", -1], ["yes", 1]]
    model = Model(MKBoost(n_trials=2, random_state=0).fit(X, np.where(y == "yes", 1, -1)), label_map=label_map)
    save_model(model, staged / "model", lineage={"algo": "mkboost", "label_map": label_map})
    store.publish(staged / "model", reason="test", promote=True, expect_champion=None)
    with pytest.raises(ValueError, match=r"version 1 of 'm' is a batch model \(MKBoost\): .* omkl retrain"):
        LearningService.open(store, wal_dir=tmp_path / "wal")
    assert not (tmp_path / "wal").exists() and store.versions() == [1]


def test_a_second_service_on_the_line_is_refused(tmp_path):
    store = _store(tmp_path)
    service = LearningService.open(store, publish_rows=None, publish_seconds=None)
    try:
        with pytest.raises(LogBusy, match="in use by another learning service"):
            LearningService.open(store)
    finally:
        service.close()


def test_a_torn_final_record_is_cut_on_open(tmp_path):
    store = _store(tmp_path)
    wal_dir = tmp_path / "wal"
    X, y = _data(40, seed=7)
    service = LearningService.open(store, wal_dir=wal_dir, publish_rows=None, publish_seconds=None)
    service.learn(X[:25], y[:25])
    expected = copy.deepcopy(service.snapshot().model.estimator)
    service.close(publish=False)
    (segment,) = wal_dir.glob("wal-*.log")
    with open(segment, "ab") as fh:  # a record whose write was cut short by the kill
        fh.write(b"OWRC" + bytes(40))
    with _serving(store, wal_dir=wal_dir) as service:
        assert service.stats()["truncated_bytes"] == 44 and service.snapshot().rows_learnt == 25
        _assert_same(service.snapshot().model.estimator, expected)


_CHILD = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    from omkl_dist.serving.learning import LearningService
    from omkl_dist.storage.model_store import ModelStore

    store_root, wal_dir, n_threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = np.random.default_rng(11)
    X = rng.standard_normal((100_000, {d}))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "yes", "no")
    service = LearningService.open(
        ModelStore(store_root, "m"), wal_dir=wal_dir, publish_rows=150, publish_seconds=None, max_block=8
    )
    out = threading.Lock()

    def client(k):
        sizes = np.random.default_rng(k).integers(1, 12, 10_000)
        lo = k * 20_000
        for n in sizes:
            ack = service.learn(X[lo : lo + n], y[lo : lo + n])
            with out:
                print(lo, n, ack.first_row, flush=True)
            lo += n

    clients = [threading.Thread(target=client, args=(k,)) for k in range(n_threads)]
    for thread in clients:
        thread.start()
    for thread in clients:  # (the main thread stays: zarr's thread pool refuses work once it has ended)
        thread.join()
    """
).format(d=D)


def test_kill_9_at_a_random_moment_loses_no_acknowledged_row(tmp_path):
    store = _store(tmp_path)
    wal_dir = tmp_path / "wal"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(store.root), str(wal_dir), "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acked = []
    stop_after = random.Random(os.getpid()).randint(80, 250)  # acknowledgements, i.e. a random moment
    timer = threading.Timer(60, child.kill)  # (a hung child fails the test instead of hanging it)
    timer.start()
    try:
        for line in child.stdout:
            acked.append(tuple(int(v) for v in line.split()))
            if len(acked) >= stop_after:
                os.kill(child.pid, signal.SIGKILL)
                break
        child.wait()
    finally:
        timer.cancel()
    assert child.returncode == -signal.SIGKILL, child.stderr.read()
    assert len(acked) >= stop_after

    service = LearningService.open(store, wal_dir=wal_dir, publish_rows=None, publish_seconds=None)
    recovered, line_rows = service.snapshot(), service.stats()["line_rows"]
    service.close(publish=False)
    assert recovered.version > 1  # it published versions before the kill, so it replayed on top of one
    reference, records = _replayed(store, 1, wal_dir)
    _assert_same(recovered.model.estimator, reference.estimator)
    assert line_rows == records[-1].end_row

    # every acknowledged request is in the log exactly where its answer said, and no row twice
    rng = np.random.default_rng(11)
    X = rng.standard_normal((100_000, D))
    logged = np.concatenate([r.rows for r in records])
    assert records[0].first_row == 0 and all(a.end_row == b.first_row for a, b in zip(records, records[1:]))
    for lo, n, first in acked:
        assert logged[first : first + n].tobytes() == X[lo : lo + n].tobytes()
    assert len(np.unique(logged, axis=0)) == len(logged)


def test_a_copied_model_learns_on_as_the_original(tmp_path):
    """Snapshots are copies (SupportVectors.__deepcopy__): a copy learns on bit for bit, repeated
    rows (the row-key index) included, and the original's later learning leaves it alone."""
    X, y = _data(120, seed=8)
    X[60:90] = X[:30]  # repeated rows: their dot products go through the row-key index
    original = SPA(kernels=KERNELS, block_size=8, random_state=0).partial_fit(X[:50], y[:50])
    twin = copy.deepcopy(original)
    before = copy.deepcopy(twin.to_state()[0])
    original.partial_fit(X[50:], y[50:])
    assert all(before[k].tobytes() == v.tobytes() for k, v in twin.to_state()[0].items())
    twin.partial_fit(X[50:], y[50:])
    _assert_same(twin, original)
