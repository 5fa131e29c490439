"""`omkl serve` as a real process on 127.0.0.1 under real HTTP clients (httpx): follow mode predicts
what the stored model predicts, follows an alias move while clients keep predicting (no request
fails), checks its bearer token, exposes parseable metrics, and listens on loopback only."""

from __future__ import annotations

import gzip
import threading
import time

import httpx
import psutil
import pytest

from omkl_dist.persistence import load_model
from omkl_dist.storage.model_store import ModelStore

from omkl_cli import omkl_here
from serving_helpers import FEATURES, publish, rows, server

pytestmark = pytest.mark.slow


TOKEN = "s3cret-token-of-enough-length"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the module (a process costs seconds): v1 the champion, v2 published beside it."""
    folder = tmp_path_factory.mktemp("serve")
    store = ModelStore(folder / "store", "churn")
    publish(store, 1)
    publish(store, 2, promote=False)
    (folder / "token").write_text(TOKEN + "\n")
    args = ["--store", store.root, "--model", "churn", "--follow", "champion", "--poll-seconds", "0.1"]
    with server(*args, "--token-file", folder / "token") as (proc, url):
        yield store, proc, url


def test_predicts_as_the_stored_model_on_loopback_only_behind_its_token(served):
    store, proc, url = served
    X, _ = rows(7, 5)
    stored = load_model(store.path(1))
    listening = [c.laddr for c in psutil.Process(proc.pid).net_connections("inet") if c.status == "LISTEN"]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening)
    with httpx.Client(base_url=url, timeout=30, headers=AUTH) as client:
        answer = client.post("/v1/predict", json={"rows": X.tolist()}).json()
        assert answer["version"] == 1 and answer["labels"] == stored.predict(X).tolist()
        assert answer["decision_values"] == stored.decision_function(X).tolist()
        by_name = [dict(zip(FEATURES, row, strict=True)) for row in X.tolist()]
        assert client.post("/v1/predict", json={"rows": by_name}).json() == answer
        before = _parse_prometheus(client.get("/metrics").text)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"rows": X[:1].tolist()}
        refused = client.post("/v1/predict", json=body)
        assert refused.status_code == 401 and "bearer token" in refused.json()["error"]
        wrong = client.post("/v1/predict", json=body, headers={"Authorization": f"Bearer {TOKEN[:-1]}"})
        assert wrong.status_code == 401
        assert client.get("/metrics").status_code == 401
        assert client.get("/healthz").status_code == 200 and client.get("/readyz").json()["version"] == 1
        after = _parse_prometheus(client.get("/metrics", headers=AUTH).text)
    key = 'omkl_requests_total{endpoint="predict",status="%s"}'
    assert after[key % 401] - before.get(key % 401, 0) == 2 and after[key % 200] == before[key % 200]
    assert (
        after['omkl_request_seconds_count{endpoint="predict"}']
        == before['omkl_request_seconds_count{endpoint="predict"}'] + 2
    )
    assert after["omkl_model_version"] == 1 and after["omkl_support_vectors"] > 0
    assert 0 <= after["omkl_mistake_rate"] <= 1


def test_follows_a_promotion_while_clients_keep_predicting_without_a_failed_request(served):
    store, _, url = served
    X, _ = rows(7, 5)
    stored = load_model(store.path(2))
    statuses, versions, stop = [], set(), threading.Event()

    def keep_predicting():
        with httpx.Client(base_url=url, timeout=30, headers=AUTH) as client:
            while not stop.is_set():
                r = client.post("/v1/predict", json={"rows": X[:1].tolist()})
                statuses.append(r.status_code)
                if r.status_code == 200:
                    versions.add(r.json()["version"])

    clients = [threading.Thread(target=keep_predicting) for _ in range(4)]
    for c in clients:
        c.start()
    try:
        time.sleep(0.5)
        store.promote(2)
        deadline = time.monotonic() + 20
        while 2 not in versions and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # (requests after the swap too)
    finally:
        stop.set()
        for c in clients:
            c.join()
    assert versions == {1, 2} and len(statuses) > 20 and set(statuses) == {200}
    with httpx.Client(base_url=url, timeout=30, headers=AUTH) as client:
        answer = client.post("/v1/predict", json={"rows": X.tolist()}).json()
        assert answer["version"] == 2 and answer["decision_values"] == stored.decision_function(X).tolist()
        assert client.get("/v1/model").json()["swaps"] == 1


def test_a_saved_model_folder_is_served_as_it_is(tmp_path):
    """`--model-dir`: the folder `omkl run --model-out` writes, served without a store (it was
    'No such option'): predictions as the model's, no version, learning refused with the way to it."""
    store = ModelStore(tmp_path / "store", "churn")
    publish(store, 3)
    X, _ = rows(8, 5)
    saved = load_model(store.path(1))
    with server("--model-dir", store.path(1)) as (proc, url), httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/v1/predict", json={"rows": X.tolist()}).json()
        assert answer["version"] is None and answer["decision_values"] == saved.decision_function(X).tolist()
        # a spreadsheet's rows as they are, ids and all (curl --data-binary @rows.csv -H 'content-type: text/csv')
        table = (
            "id,"
            + ",".join(FEATURES)
            + "\n"
            + "".join(f"r{i}," + ",".join(map(repr, row)) + "\n" for i, row in enumerate(X.tolist()))
        )
        by_csv = client.post("/v1/predict", content=table.encode(), headers={"content-type": "text/csv"}).json()
        assert by_csv == {**answer, "carried": {"id": [f"r{i}" for i in range(5)]}}
        zipped = {"content-type": "text/csv", "content-encoding": "gzip"}  # (curl --data-binary @rows.csv.gz)
        assert client.post("/v1/predict", content=gzip.compress(table.encode()), headers=zipped).json() == by_csv
        refused = client.post("/v1/learn", json={"rows": X[:1].tolist(), "labels": [answer["labels"][0]]})
        assert refused.status_code == 409 and "saved model" in refused.json()["error"]
        described = client.get("/v1/model").json()
        assert described["mode"] == "model-dir" and described["n_features"] == len(FEATURES)
        assert client.get("/readyz").json() == {"status": "ready", "version": None}
        assert "omkl_support_vectors" in _parse_prometheus(client.get("/metrics").text)
    learn = omkl_here("serve", "--model-dir", store.path(1), "--learn", check=False)
    assert learn.returncode == 2 and "omkl models import" in learn.stderr
    neither = omkl_here("serve", "--follow", "champion", check=False)
    assert neither.returncode == 2 and "--model-dir" in neither.stderr


def _parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus' text format, strictly: HELP/TYPE comments, then `name{labels} value` samples;
    a histogram's buckets are cumulative and end at +Inf with its count."""
    samples: dict[str, float] = {}
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram") and name not in types
            types[name] = kind
        elif line.startswith("# HELP "):
            continue
        else:
            key, value = line.rsplit(" ", 1)
            base = key.split("{")[0]
            family = base.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
            assert base in types or family in types, f"sample {key} has no TYPE"
            samples[key] = float(value)
    for key, value in samples.items():
        if key.startswith("omkl_request_seconds_count"):
            endpoint = key[key.index("{") :]
            buckets = [v for k, v in samples.items() if k.startswith("omkl_request_seconds_bucket" + endpoint[:-1])]
            assert buckets == sorted(buckets) and buckets[-1] == value
    return samples


def test_tls_serves_only_clients_with_a_certificate_of_its_ca(tmp_path):
    import ssl

    from omkl_dist.cluster.tls import CA, CERT, KEY, make_certificates

    tls = make_certificates(tmp_path / "tls")
    store = ModelStore(tmp_path / "store", "churn")
    publish(store, 1)
    with server("--store", store.root, "--model", "churn", "--follow", "champion", "--tls-dir", tls) as (_, url):
        assert url.startswith("https://127.0.0.1:")
        anonymous = ssl.create_default_context(cafile=str(tls / CA))
        with pytest.raises(httpx.HTTPError), httpx.Client(base_url=url, verify=anonymous, timeout=30) as client:
            client.get("/v1/model")
        member = ssl.create_default_context(cafile=str(tls / CA))
        member.load_cert_chain(str(tls / CERT), str(tls / KEY))
        with httpx.Client(base_url=url, verify=member, timeout=30) as client:
            assert client.post("/v1/predict", json={"rows": [[0.1, 0.2, 0.3]]}).json()["version"] == 1
