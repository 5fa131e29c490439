"""Compile a job's kernels on every worker before its first round (issue 39).

numba compiles a kernel on its first use in each process that does not find it in the on-disk
cache: on a fresh cluster every worker would compile in its first round, inside the job's learning
time (10-20 s), one worker after another waiting on the slowest. So :class:`WorkerWarmup` hands each
worker a task that fits a copy of the job's estimator -- its parameters, width, classes and row
layout -- on two blocks of generated rows: that runs the engine's code paths for this job, and
numba compiles them or, if another process already did, loads them from the shared cache
(workers on one machine share it: the first to finish writes it, the others load). The tasks run
while the client fits the scaler and starts the rounds' actors; :meth:`WorkerWarmup.wait` says
what they took. A worker process warms each kind of job once.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

MAX_ROWS = 512  # two blocks of the job's size, at most this many rows
_WARMED: set[str] = set()  # in a worker process: the kinds of job already warmed there
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Warmed:
    """The warm-up of a job's kernels on the workers: ``compiles`` numba made (0: all loaded from
    the cache or warmed before), the ``workers`` it ran on and its wall ``seconds``."""

    compiles: int
    workers: int
    seconds: float

    def summary(self) -> str:
        """One line saying what compiling cost, or an empty one if nothing compiled."""
        if not self.compiles:
            return ""
        return f"compiling kernels on {self.workers} worker(s), once per installation (first use): {self.seconds:.1f} s"


def warm_job_kernels(estimator, n_features: int, classes, sparse: bool) -> int:
    """On a worker: fit a copy of ``estimator`` on two blocks of generated rows of the job's
    shape; returns how many functions numba compiled (0 if this kind of job was warmed here)."""
    key = f"{type(estimator).__name__}|{sorted(estimator.get_params().items())!r}|{n_features}|{len(classes)}|{sparse}"
    with _LOCK:
        if key in _WARMED:
            return 0
        _WARMED.add(key)
    from numba.core import event

    class Count(event.Listener):
        compiles = 0

        def on_start(self, ev) -> None:
            Count.compiles += 1

        def on_end(self, ev) -> None:
            pass

    listener = Count()
    event.register("numba:compile", listener)
    try:
        rows = min(2 * int(getattr(estimator, "block_size", 64) or 64), MAX_ROWS)
        rng = np.random.default_rng(0)
        if sparse:  # a few non-zeros a row, whatever the width (a csr dataset may have millions of features)
            from scipy import sparse as sp

            X = sp.random(rows, n_features, density=min(1.0, 8 / n_features), format="csr", random_state=0)
        else:
            X = rng.uniform(-1.0, 1.0, size=(rows, n_features))
        y = np.asarray(classes)[np.arange(rows) % len(classes)]
        clone(estimator).fit(X, y)
    finally:
        event.unregister("numba:compile", listener)
    return Count.compiles


class WorkerWarmup:
    """The warm-up tasks of one job, one per worker, started at once; :meth:`wait` for them."""

    def __init__(self, client, estimator, n_features: int, classes, sparse: bool):
        self._started = time.perf_counter()
        workers = list(client.scheduler_info()["workers"])
        self._futures = [
            client.submit(
                warm_job_kernels,
                clone(estimator),
                n_features,
                list(classes),
                sparse,
                workers=[address],
                allow_other_workers=False,
                pure=False,
            )
            for address in workers
        ]

    def wait(self) -> Warmed:
        """Block until every worker has the job's kernels. A warm-up that failed is logged and
        passed over: the rounds then compile what they meet (and report a real error themselves)."""
        compiles = 0
        for future in self._futures:
            try:
                compiles += future.result()
            except Exception as exc:  # noqa: BLE001 -- only a head start failed, not the job
                logging.getLogger(__name__).warning(
                    "warming a worker's kernels failed (%s); it compiles in its first round", exc
                )
        return Warmed(compiles, len(self._futures), time.perf_counter() - self._started)
