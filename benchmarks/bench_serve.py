"""``make bench``'s serving part: ``omkl serve`` as a real server process under a real HTTP load
generator in another process (N concurrent keep-alive HTTP/1.1 connections on asyncio, each
sending its next request when the last one is answered), for a SPA model (beta = 300, the 16 kernels, 18 features,
learnt on a generated stream) and an OM-2 model of the same data.

Measured per model: single-row ``/v1/predict`` and ``/v1/learn`` requests per second with p50/p99
latency at 1, 8 and 64 clients, and rows/s of 1,000-row learn batches. The server, the load
generator and everything else share the machine's cores, so the numbers are the whole system's.

``python -m benchmarks.bench_serve`` runs it (``--seconds`` per measurement); results in
``benchmarks/results/serve.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS, kept_notes

FEATURES, TRAIN_ROWS, SEED = 18, {"spa": 20_000, "om2": 5_000}, 0
CLIENTS = (1, 8, 64)
BATCH_ROWS = 1_000


# --- the load generator (run in its own process: --load) -----------------------------------------
# Each client is one keep-alive HTTP/1.1 connection (asyncio streams): it sends a request, reads the
# status line, the headers and Content-Length bytes of body, and sends the next. (httpx's async
# client was tried first: at 64 concurrent clients its own overhead, not the server, set the pace.)
async def _client(host: str, port: int, path: str, kind: str, bodies: list[bytes], k: int, step: int, stop: float, out):
    reader, writer = await asyncio.open_connection(host, port)
    i = k
    try:
        while time.perf_counter() < stop:
            body = bodies[i % len(bodies)]
            head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {kind}\r\n"
            started = time.perf_counter()
            writer.write(head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            status = int((await reader.readline()).split()[1])
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            out.append((time.perf_counter() - started, status))
            i += step
    finally:
        writer.close()


async def _load(url: str, path: str, kind: str, bodies: list[bytes], clients: int, seconds: float) -> dict:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    out: list[tuple[float, int]] = []
    started = time.perf_counter()
    stop = started + seconds
    await asyncio.gather(
        *(_client(parts.hostname, parts.port, path, kind, bodies, k, clients, stop, out) for k in range(clients))
    )
    elapsed = time.perf_counter() - started
    ms = np.array([t for t, _ in out]) * 1e3
    return {
        "requests": len(out),
        "failures": sum(status != 200 for _, status in out),
        "seconds": elapsed,
        "requests_per_second": len(out) / elapsed,
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
    }


def _bodies(path: str, rows: int, n_bodies: int, seed: int, body: str) -> list[bytes]:
    """Request bodies of ``rows`` generated rows each (with labels for /v1/learn), JSON or Arrow IPC."""
    from omkl_dist.storage.synth import iter_blocks

    X, y = next(iter_blocks(rows=rows * n_bodies, features=FEATURES, seed=SEED, first_row=seed))
    out = []
    for k in range(n_bodies):
        part, labels = X[k * rows : (k + 1) * rows], y[k * rows : (k + 1) * rows]
        if body == "arrow":
            out.append(_arrow(part, labels if path == "/v1/learn" else None))
            continue
        doc: dict = {"rows": part.tolist()}
        if path == "/v1/learn":
            doc["labels"] = labels.tolist()
        out.append(json.dumps(doc).encode())
    return out


def _arrow(X: np.ndarray, labels: np.ndarray | None) -> bytes:
    import pyarrow as pa

    columns = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    table = pa.table(columns if labels is None else {**columns, "label": labels})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def measure(url: str, path: str, *, rows: int, clients: int, seconds: float, seed: int, body: str = "json") -> dict:
    """One measurement by a load-generator child process."""
    args = ["--load", url, "--path", path, "--rows", str(rows), "--clients", str(clients)]
    args += ["--seconds", str(seconds), "--seed", str(seed), "--body", body]
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_serve", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the load generator failed:\n{done.stderr[-3000:]}")
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return {"endpoint": path, "body": body, "rows_per_request": rows, "clients": clients, **result}


# --- the server and its models -------------------------------------------------------------------
def _publish(store, algo: str) -> None:
    from omkl_dist import OM2, SPA
    from omkl_dist.model import Model
    from omkl_dist.persistence import save_model
    from omkl_dist.storage.synth import iter_blocks

    X, y = next(iter_blocks(rows=TRAIN_ROWS[algo], features=FEATURES, seed=SEED))
    estimator = SPA(beta=300.0) if algo == "spa" else OM2()
    model = Model(estimator.partial_fit(X, y), label_map=[[-1, -1], [1, 1]])
    staged = store.staging_dir()
    save_model(model, staged / "model", lineage={"algo": algo})
    store.publish(staged / "model", reason="bench", promote=True, expect_champion=store.aliases().get("champion"))
    shutil.rmtree(staged, ignore_errors=True)


class Server:
    """``omkl serve --learn`` on 127.0.0.1 (a free port) in a child process."""

    def __init__(self, store_root: Path, name: str, *mode: str) -> None:
        args = ["serve", "--store", str(store_root), "--model", name, "--port", "0", *mode]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "omkl_dist.pipelines.cli", *args], stdout=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if " listening on " not in line:
            self.stop()
            raise RuntimeError(f"omkl serve did not start: {line!r}")
        self.url = line.rsplit(" listening on ", 1)[1].strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=120)


def _measurements(algo: str, url: str, seconds: float, log) -> list[dict]:
    """Single-row predict and learn at each number of clients, then 1,000-row learn batches."""
    plan = [("/v1/predict", 1, c, "json") for c in CLIENTS] + [("/v1/learn", 1, c, "json") for c in CLIENTS]
    plan += [("/v1/learn", BATCH_ROWS, c, body) for body in ("json", "arrow") for c in (1, 8)]
    rows = []
    for k, (path, n, clients, body) in enumerate(plan):
        seed = (k + 1) * 10**5
        row = {"model": algo, **measure(url, path, rows=n, clients=clients, seconds=seconds, seed=seed, body=body)}
        row["rows_per_second"] = row["requests_per_second"] * n
        log(
            f"{algo} {path} {n} row(s) ({body}) x {clients} clients: {row['requests_per_second']:,.0f} req/s, "
            f"{row['rows_per_second']:,.0f} rows/s, p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms"
        )
        rows.append(row)
    return rows


def run_serve_bench(results: Path, *, seconds: float = 5.0, log=print) -> dict:
    from omkl_dist.storage.model_store import ModelStore

    rows, load_before = [], os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for algo in ("spa", "om2"):
            store = ModelStore(Path(tmp) / "store", algo)
            _publish(store, algo)
            learn = ["--learn", "--wal-dir", str(Path(tmp) / f"wal-{algo}")]
            server = Server(store.root, algo, *learn, "--publish-rows", "1000000000", "--publish-seconds", "100000")
            try:
                measure(server.url, "/v1/predict", rows=1, clients=1, seconds=1.0, seed=0)  # (warm-up)
                rows += _measurements(algo, server.url, seconds, log)
            finally:
                server.stop()
    report = {
        "rows": rows,
        "seconds_per_measurement": seconds,
        "load_average": [load_before, os.getloadavg()[0]],  # (the machine's 1-minute load, before and after)
        "models": {
            "spa": f"SPA beta=300, omkc16+norm, {FEATURES} features, {TRAIN_ROWS['spa']:,} generated rows",
            "om2": f"OM-2, omkc16+norm, {FEATURES} features, {TRAIN_ROWS['om2']:,} generated rows",
        },
        "notes": kept_notes(results / "serve.json"),  # (paragraphs written beside the table, by hand)
    }
    (results / "serve.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def markdown(report: dict) -> list[str]:
    lines = [
        "## Serving (`omkl serve`)",
        "",
        "A real `omkl serve --learn` process on 127.0.0.1 under an HTTP load generator in another process",
        "(N keep-alive HTTP/1.1 connections on asyncio, each sending its next request when the last is answered), "
        f"{report['seconds_per_measurement']:g} s per measurement,",
        "all on the same 2 cores. Models: " + "; ".join(report["models"].values()) + ". "
        "`python -m benchmarks.bench_serve`.",
        "",
        "| model | endpoint | body | rows/request | clients | requests/s | rows/s | p50 ms | p99 ms | failed |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines_notes = [
        "",
        f"The machine's 1-minute load average was {report['load_average'][0]:.1f} before and "
        f"{report['load_average'][1]:.1f} after the run (2 cores; other work running beside it).",
        "Concurrent predictions are scored together in one model call (`omkl_dist/serving/batching.py`): most of",
        "a call's cost does not depend on its rows (the scan's BLAS products have one fixed tile shape, for",
        "bit-identical results), so more clients make bigger batches, not more calls. Learn requests are grouped by",
        "the one writer (one fsync per group). OM-2 keeps every mistaken row as a support vector of every kernel:",
        "each of its calls scans tens of thousands of them, and learning makes the model, and the next call, larger.",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['model']} | `{r['endpoint']}` | {r['body']} | {r['rows_per_request']:,} | {r['clients']} | "
            f"{r['requests_per_second']:,.0f} | {r['rows_per_second']:,.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
            f"{r['failures']} |"
        )
    for note in report.get("notes", ()):
        lines_notes += ["", note]
    return lines + lines_notes


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="Seconds per measurement.")
    parser.add_argument("--load", help=argparse.SUPPRESS)  # child mode: generate load against this URL
    parser.add_argument("--path", default="/v1/predict", help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--clients", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--body", default="json", choices=["json", "arrow"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        bodies = _bodies(args.path, args.rows, 64 if args.rows == 1 else 16, args.seed, args.body)
        kind = "application/vnd.apache.arrow.stream" if args.body == "arrow" else "application/json"
        print(json.dumps(asyncio.run(_load(args.load, args.path, kind, bodies, args.clients, args.seconds))))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = run_serve_bench(RESULTS, seconds=args.seconds, log=lambda msg: print(msg, flush=True))
    print("\n".join(markdown(report)))


if __name__ == "__main__":
    main()
