"""What the `omkl serve` tests share: a small store of generated models, and a real server process."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time

import numpy as np

from omkl_dist import OMKC
from omkl_dist.model import Model
from omkl_dist.persistence import save_model
from omkl_dist.storage.model_store import ModelStore

FEATURES = ["a", "b", "c"]
LABELS = [["stay", -1], ["churn", 1]]
SERVE = [sys.executable, "-m", "omkl_dist.pipelines.cli", "serve"]


def rows(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` generated rows of three features and their labels (churn when a + b/2 > 0)."""
    X = np.random.default_rng(seed).normal(size=(n, 3))
    return X, np.where(X[:, 0] + X[:, 1] / 2 > 0, "churn", "stay")


def publish(store: ModelStore, seed: int, *, promote: bool = True, kernels: str = "omkc16+norm") -> int:
    """A model trained on generated rows, published as the store's next version (``kernels``: a
    small pool keeps a model that goes on learning cheap)."""
    X, y = rows(seed, 60)
    estimator = OMKC(kernels=kernels, random_state=seed).fit(X, np.where(y == "churn", 1, -1))
    staged = store.staging_dir()
    try:
        model = Model(estimator, label_map=LABELS, feature_names=FEATURES)
        save_model(model, staged / "model", lineage={"key": f"test-{seed}"})
        done = store.publish(
            staged / "model", reason="test", promote=promote, expect_champion=store.aliases().get("champion")
        )
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return int(done["version"])


@contextlib.contextmanager
def server(*args, startup: float = 120.0):
    """``omkl serve ARGS --port 0`` in a child process; yields ``(process, base URL)``; always stopped."""
    proc = subprocess.Popen(
        [*SERVE, *map(str, args), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = _listening(proc, startup)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _listening(proc: subprocess.Popen, timeout: float) -> str:
    """The URL the server printed once it listens (its stderr if it exits first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if " listening on " in line:
            return line.rsplit(" listening on ", 1)[1].strip()
        if not line and proc.poll() is not None:
            raise AssertionError(f"omkl serve exited {proc.returncode}:\n{proc.stderr.read()[-3000:]}")
    raise AssertionError("omkl serve did not start listening in time")


def call(app, method: str, path: str, **kwargs):
    """One request to an ASGI app in this process (httpx over the ASGI transport)."""
    import anyio
    import httpx

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://serve") as client:
            return await client.request(method, path, **kwargs)

    return anyio.run(go)
