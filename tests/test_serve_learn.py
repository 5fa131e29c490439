"""`/v1/learn` (omkl serve --learn): in this process, the answers (test then train) and the bad learn
requests that leave the model and the write-ahead log unchanged; as a real process under 20
concurrent HTTP clients, killed with SIGKILL and restarted, the model of the acknowledged rows in
the logged order, bit for bit, none lost and none learnt twice."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import httpx
import numpy as np
import pytest

from omkl_dist.persistence import load_model
from omkl_dist.serving.app import Limits, create_app
from omkl_dist.serving.learning import LearningService
from omkl_dist.serving.wal import WriteAheadLog
from omkl_dist.storage.model_store import ModelStore

from serving_helpers import call, publish, rows, server

LEARN_SECONDS = 30  # the soak: 20 clients learning this long, then kill -9
ROWS_PER_CLIENT = 12_000  # more than a client sends in LEARN_SECONDS (~1,000 requests of 1-5 rows)
SMALL_POOL = "gaussian:0.5,gaussian:2,linear"  # (the model learns thousands of rows: a small pool keeps it quick)


def _same_state(a, b) -> None:
    (arrays_a, meta_a), (arrays_b, meta_b) = a.to_state(), b.to_state()
    assert sorted(arrays_a) == sorted(arrays_b) and meta_a == meta_b
    for key in arrays_a:
        assert arrays_a[key].tobytes() == arrays_b[key].tobytes(), key


def _logged(wal_dir) -> list:
    log = WriteAheadLog.open(wal_dir)
    try:
        return list(log.records())
    finally:
        log.close()


def _replayed(store: ModelStore, version: int, records: list):
    """The reference: the version learnt in this process with partial_fit over the logged rows, in
    their order and with their blocks (nothing of the service's code)."""
    model = load_model(store.path(version))
    classes = model.estimator.classes_
    for record in records:
        for X, labels in record.calls():
            model.estimator.partial_fit(X, classes[labels])
    return model


@pytest.fixture()
def learning(tmp_path):
    store = ModelStore(tmp_path / "store", "churn")
    publish(store, 1)
    service = LearningService.open(store, wal_dir=tmp_path / "wal", publish_rows=None, publish_seconds=None)
    try:
        yield store, service, tmp_path / "wal"
    finally:
        service.close(publish=False)


def test_learn_answers_before_learning_and_predict_reads_the_learnt_model(learning):
    store, service, wal_dir = learning
    app = create_app(service)
    X, y = rows(5, 30)
    before = load_model(store.path(1))
    first = call(app, "POST", "/v1/learn", json={"rows": X[:10].tolist(), "labels": y[:10].tolist()}).json()
    assert first["version"] == 1 and first["first_row"] == 0 and first["rows"] == 10 and first["durable"]
    assert first["labels"][0] == before.predict(X[:1]).tolist()[0]  # (the first row: before any learning)
    # the rest as a CSV table with ids and a 'label' column (the model names no label column of its own)
    table = "id,c,a,b,label\n" + "".join(
        f"r{i},{c!r},{a!r},{b!r},{label}\n" for i, ((a, b, c), label) in enumerate(zip(X[10:].tolist(), y[10:]))
    )
    second = call(app, "POST", "/v1/learn", content=table.encode(), headers={"content-type": "text/csv"}).json()
    assert (
        second["first_row"] == 10 and second["rows"] == 20 and second["carried"] == {"id": [f"r{i}" for i in range(20)]}
    )
    answer = call(app, "POST", "/v1/predict", json={"rows": X.tolist()}).json()
    info = call(app, "GET", "/v1/model").json()
    assert info["mode"] == "learn" and info["rows_learnt"] == 30 and info["line_rows"] == 30
    metrics = call(app, "GET", "/metrics").text
    assert "omkl_rows_learnt 30\n" in metrics and "omkl_line_rows 30\n" in metrics
    assert 'omkl_rows_total{endpoint="learn"} 30' in metrics
    service.close(publish=False)  # (the log's lock released: the reference reads it)
    reference = _replayed(store, 1, _logged(wal_dir))
    assert answer["version"] == 1 and answer["decision_values"] == reference.decision_function(X).tolist()


BAD_LEARN = [
    ("unknown label", {"json": {"rows": [[1, 2, 3]], "labels": ["maybe"]}}, 422, "is not one of the model's classes"),
    ("label count", {"json": {"rows": [[1, 2, 3]], "labels": []}}, 400, "0 labels for 1 rows"),
    ("wrong width", {"json": {"rows": [[1, 2]], "labels": ["stay"]}}, 422, "takes 3"),
    ("NaN", {"content": b'{"rows": [[NaN, 2, 3]], "labels": ["stay"]}'}, 400, "NaN is not a number"),
    ("too many rows", {"json": {"rows": [[1, 2, 3]] * 6, "labels": ["stay"] * 6}}, 413, "--max-rows"),
]


@pytest.mark.parametrize("kind, request_kwargs, status, words", BAD_LEARN, ids=[b[0] for b in BAD_LEARN])
def test_a_bad_learn_request_leaves_the_model_and_the_log_unchanged(learning, kind, request_kwargs, status, words):
    _, service, _ = learning
    app = create_app(service, limits=Limits(max_rows=5))
    kwargs = {"headers": {"content-type": "application/json"}, **request_kwargs}
    snapshot, stats = service.snapshot(), service.stats()
    response = call(app, "POST", "/v1/learn", **kwargs)
    assert response.status_code == status and words in response.json()["error"]
    assert response.json()["error"].startswith("POST /v1/learn")
    after = service.stats()
    assert service.snapshot() is snapshot
    assert (after["line_rows"], after["log_bytes"], after["requests"]) == (
        stats["line_rows"],
        stats["log_bytes"],
        stats["requests"],
    )


@pytest.mark.slow
def test_20_clients_learning_then_kill_9_and_restart_give_the_model_of_the_acknowledged_rows(tmp_path):
    store = ModelStore(tmp_path / "store", "churn")
    publish(store, 1, kernels=SMALL_POOL)
    wal_dir = tmp_path / "wal"
    args = ["--store", store.root, "--model", "churn", "--learn", "--wal-dir", wal_dir]
    args += ["--publish-rows", 10**9, "--publish-seconds", 10**6]
    pools = [rows(100 + k, ROWS_PER_CLIENT) for k in range(20)]
    acked, failed = [], []
    # a random moment after LEARN_SECONDS of learning, while the clients send
    kill_at = LEARN_SECONDS + random.Random(os.getpid()).random()

    def client(k: int, url: str) -> None:
        X, y = pools[k]
        sizes, lo = np.random.default_rng(k).integers(1, 6, ROWS_PER_CLIENT), 0
        with httpx.Client(base_url=url, timeout=30) as http:
            for n in sizes:
                if lo + n > len(X):
                    failed.append(f"client {k} ran out of rows: raise ROWS_PER_CLIENT")
                    return
                try:
                    r = http.post(
                        "/v1/learn", json={"rows": X[lo : lo + n].tolist(), "labels": y[lo : lo + n].tolist()}
                    )
                except httpx.HTTPError:
                    return  # (the server was killed)
                if r.status_code != 200:
                    failed.append(r.text)
                    return
                acked.append((k, lo, int(n), r.json()["first_row"]))
                lo += n

    with server(*args) as (proc, url):
        clients = [threading.Thread(target=client, args=(k, url)) for k in range(20)]
        started = time.monotonic()
        for c in clients:
            c.start()
        time.sleep(max(0.0, kill_at - (time.monotonic() - started)))
        os.kill(proc.pid, signal.SIGKILL)  # (the clients still sending)
        proc.wait()
        for c in clients:
            c.join()
    assert not failed and acked  # (killed while the clients were sending: none ran out of rows)

    records = _logged(wal_dir)
    logged = np.concatenate([r.rows for r in records])
    assert records[0].first_row == 0 and all(a.end_row == b.first_row for a, b in zip(records, records[1:]))
    for k, lo, n, first in acked:  # every acknowledged request where its answer said, once
        assert logged[first : first + n].tobytes() == pools[k][0][lo : lo + n].tobytes()
    assert len(np.unique(logged, axis=0)) == len(logged)
    reference = _replayed(store, 1, records)

    probe, _ = rows(9, 20)
    with server(*args, "--publish-alias", "online", "--keep-published", 1) as (_, url):
        with httpx.Client(base_url=url, timeout=30) as http:
            info = http.get("/v1/model").json()
            assert info["version"] == 1 and info["rows_learnt"] == len(logged) == records[-1].end_row
            answer = http.post("/v1/predict", json={"rows": probe.tolist()}).json()
            assert answer["decision_values"] == reference.decision_function(probe).tolist()
    # the restarted server published what it recovered when it stopped (SIGTERM): bit for bit
    newest = store.versions()[-1]
    assert newest == 2 and store.lineage(newest)["parent"] == 1 and store.aliases()["online"] == 2
    _same_state(load_model(store.path(newest)).estimator, reference.estimator)


def test_learning_once_the_learner_stopped_answers_503_and_acknowledges_nothing(learning):
    _, service, _ = learning
    app = create_app(service)
    service.close(publish=False)
    refused = call(app, "POST", "/v1/learn", json={"rows": [[1, 2, 3]], "labels": ["stay"]})
    assert refused.status_code == 503 and refused.json()["error"].startswith("POST /v1/learn")
    assert service.stats()["line_rows"] == 0
    assert call(app, "POST", "/v1/predict", json={"rows": [[1, 2, 3]]}).status_code == 200


@pytest.mark.timeout(120)
def test_a_second_server_on_a_learning_line_is_refused_busy(learning):
    from omkl_cli import omkl_here

    store, _, wal_dir = learning
    busy = omkl_here("serve", "--store", store.root, "--model", "churn", "--learn", "--wal-dir", wal_dir, check=False)
    assert busy.returncode == 75 and busy.stderr.startswith("busy:")
