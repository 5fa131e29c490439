"""MKBoost on Dask: a boosting trial's per-kernel SVM fits run as parallel Dask tasks.

:class:`DaskExecutor` implements :class:`omkl_dist.algorithms.mkboost_runners.TaskRunner` on a client the
caller passes in (never a global one):

* ``share`` scatters the fit's training data (per one-vs-one pair: rows and labels, plus the
  kernel pool and C) to every worker once, with ``broadcast=True``;
* ``map`` scatters the round's resamples (:class:`~omkl_dist.algorithms.mkboost_tasks.TrialSamples`) to
  every worker once and runs the round's (pair, kernel) fits as Dask tasks -- batched, about
  ``tasks_per_thread`` tasks per worker thread, since on small data a single SVM fit (milliseconds)
  is too small to pay a task's scheduling cost -- each item naming only its pair and kernel and
  returning only the SVM's small parts and its ±1 predictions on the training rows;
* ``release`` drops the scattered data when the fit ends.

Determinism: all draws happen on the client (``default_rng([seed, pair, trial])``) and the task
function is pure, so the model is bit-identical to a serial or threaded fit provided the workers
compute with the same BLAS as the client. OpenBLAS results depend on its thread count, so every
worker process runs BLAS on one thread (set once, on its first task), as the client does during a
fit; numba's loops run on one thread per task thread. :func:`local_cluster` starts processes with
matching ``*_NUM_THREADS`` from the outset.

Example
-------
>>> from distributed import Client                                    # doctest: +SKIP
>>> from omkl_dist.algorithms.mkboost import MKBoost
>>> with local_cluster(n_workers=2) as cluster, Client(cluster) as client:   # doctest: +SKIP
...     model = MKBoost(variant="D1", random_state=0, executor=DaskExecutor(client)).fit(X, y)
"""

from __future__ import annotations

import os

import dask
import numba
import numpy as np
from distributed import Client, LocalCluster
from threadpoolctl import threadpool_limits

from omkl_dist.cluster.profiler import safe_worker_config

__all__ = ["DaskExecutor", "local_cluster", "BATCH_BELOW_ROWS"]

#: One-vs-one problems smaller than this batch several SVM fits per task (see ``tasks_per_thread``).
BATCH_BELOW_ROWS = 2_000

_blas_capped = False


def _run_batch(items, fn, shared, trial):
    """Worker side: pin BLAS (once per process) and numba (this thread) to one thread, run the items."""
    global _blas_capped
    if not _blas_capped:
        threadpool_limits(limits=1, user_api="blas")  # kept for the life of the worker process
        _blas_capped = True
    numba.set_num_threads(1)
    return [fn(shared, trial, item) for item in items]


class DaskExecutor:
    """Run MKBoost's per-kernel tasks on a Dask cluster through ``client``.

    Parameters
    ----------
    client : distributed.Client
        A connected client; the executor neither creates nor closes it.
    tasks_per_thread : int or None, default None
        Batch a round's fits into about this many tasks per worker thread (counted when a fit
        starts): on small data one SVM fit takes milliseconds, too little to pay a task's
        scheduling cost. None chooses: one task per fit once a one-vs-one problem has at least
        :data:`BATCH_BELOW_ROWS` rows (each fit then takes tens of milliseconds or more and the
        finest split balances the kernels' uneven costs best), 2 per thread below that.

    Notes
    -----
    Copying the executor (``sklearn.base.clone`` of an estimator holding it) returns the same
    object: it is a handle on a cluster, not model state.
    """

    def __init__(self, client: Client, tasks_per_thread: int | None = None):
        self.client = client
        self.tasks_per_thread = tasks_per_thread

    def share(self, data):
        if not isinstance(self.client, Client):
            raise ValueError(f"DaskExecutor: client must be a distributed.Client, got {self.client!r}")
        per_thread = self.tasks_per_thread
        if per_thread is not None and (
            isinstance(per_thread, bool) or not isinstance(per_thread, int) or per_thread < 1
        ):
            raise ValueError(f"DaskExecutor: tasks_per_thread must be None or an integer >= 1, got {per_thread!r}")
        threads = sum(self.client.nthreads().values())
        if threads == 0:
            raise ValueError(f"DaskExecutor: the cluster at {self.client.scheduler.address} has no workers")
        if per_thread is None:
            per_thread = None if max(len(y) for y in data.y) >= BATCH_BELOW_ROWS else 2
        [future] = self.client.scatter([data], broadcast=True, hash=False)
        return future, None if per_thread is None else threads * per_thread

    def map(self, fn, shared, trial, items):
        future, n_tasks = shared
        items = list(items)
        if not items:
            return []
        # The round's resamples go to every worker once; the tasks carry only (pair, kernel).
        [trial_future] = self.client.scatter([trial], broadcast=True, hash=False)
        try:
            n_tasks = len(items) if n_tasks is None else min(n_tasks, len(items))
            batches = [list(b) for b in np.array_split(np.arange(len(items)), n_tasks) if len(b)]
            futures = self.client.map(
                _run_batch,
                [[items[i] for i in b] for b in batches],
                fn=fn,
                shared=future,
                trial=trial_future,
                pure=False,
            )
            return [result for batch in self.client.gather(futures) for result in batch]
        finally:
            trial_future.release()

    def release(self, shared):
        shared[0].release()

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        address = getattr(getattr(self.client, "scheduler", None), "address", None)
        return f"DaskExecutor(client=<Client {address}>)"


def local_cluster(n_workers: int = 2, threads_per_worker: int = 1, **kwargs) -> LocalCluster:
    """A ``LocalCluster`` of worker processes whose numba/BLAS/OpenMP threads match ``threads_per_worker``.

    Extra keyword arguments go to :class:`distributed.LocalCluster`. Its HTTP servers (the
    scheduler's and the workers') listen on 127.0.0.1 only, on free ports, unless told otherwise
    (``dashboard_address=None`` would still open the scheduler's on port 8787 of every interface).
    Its workers run without Dask's profiler on Python 3.11, where it can hang them
    (:mod:`omkl_dist.cluster.profiler`).
    """
    threads = str(int(threads_per_worker))
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    # Dask's default MALLOC_TRIM_THRESHOLD_ (64 KiB) also fixes glibc's mmap threshold at 128 KiB, so
    # every Gram block a task allocates is mapped and page-faulted afresh: measured 13-20 % slower
    # MKBoost tasks than in the client process. Workers keep glibc's adaptive default instead.
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    environ.update(
        {
            "OMP_NUM_THREADS": threads,
            "OPENBLAS_NUM_THREADS": threads,
            "MKL_NUM_THREADS": threads,
            "NUMBA_NUM_THREADS": threads,
        }
    )
    kwargs.setdefault("dashboard_address", "127.0.0.1:0")
    kwargs.setdefault("worker_dashboard_address", "127.0.0.1:0")
    saved = {name: os.environ.get(name) for name in environ}
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ, **safe_worker_config()}):
            return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True, **kwargs)
    finally:  # the nannies set these in this process too: the caller's threads stay as they were
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
