"""``make demo``'s last step: serve the store's champion for a few seconds with ``omkl serve --learn``.

The server (a child process on 127.0.0.1, a free port) is sent the stream's next rows as an
application would send them: each batch first to ``/v1/predict``, then with its labels to
``/v1/learn`` (which answers with the predictions made before learning them). On SIGTERM the
server publishes what it learnt as a new version of the model, with its lineage.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from omkl_dist.storage.model_store import ModelStore
from omkl_dist.storage.synth import iter_blocks


def _post(url: str, doc: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(doc).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict = json.loads(response.read())
    return answer


def serve_champion(store_root: Path, name: str, *, first_row: int, features: int, noise: float, seconds: float) -> None:
    """Serve ``name``'s champion, learning the stream from ``first_row`` on for ``seconds``."""
    store = ModelStore(store_root, name)
    champion = store.resolve("champion")
    command = [sys.executable, "-m", "omkl_dist.pipelines.cli", "serve", "--store", str(store_root)]
    command += ["--model", name, "--learn", "--port", "0", "--publish-seconds", "3600"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        if " listening on " not in line:
            raise SystemExit(f"error: omkl serve did not start ({line.strip() or 'no output'})")
        url = line.rsplit(" listening on ", 1)[1].strip()
        print(f"\nserving: {line.strip()}")
        X, y = next(iter_blocks(rows=20_000, features=features, seed=0, noise=noise, first_row=first_row))
        started = time.perf_counter()
        _post(url + "/v1/predict", {"rows": X[:1].tolist()})  # (the first call loads numba's compiled code)
        print(f"  first prediction answered in {1000 * (time.perf_counter() - started):,.0f} ms")
        sent = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds and sent + 50 <= len(X):
            rows, labels = X[sent : sent + 50].tolist(), y[sent : sent + 50].tolist()
            _post(url + "/v1/predict", {"rows": rows})
            _post(url + "/v1/learn", {"rows": rows, "labels": labels})
            sent += 50
        elapsed = time.perf_counter() - started
        with urllib.request.urlopen(url + "/v1/model", timeout=60) as response:
            info = json.loads(response.read())
        print(
            f"  {sent:,} rows predicted, then learnt from their labels, in {elapsed:.1f} s ({sent // 25} requests): "
            f"the server's running mistake rate {100 * info['mistake_rate']:.2f} % (test then train), "
            f"{info['rows_learnt']:,} rows learnt on top of v{info['version']}"
        )
    finally:
        server.terminate()  # (SIGTERM: the server publishes what it learnt, then exits)
        server.wait(timeout=120)
    newest = store.versions()[-1]
    lineage = store.lineage(newest)
    print(
        f"  stopped: published v{newest} (parent v{lineage.get('parent')}, champion still v{champion}); "
        f"`omkl models show --store {store_root} {name} {newest}` shows its lineage"
    )
