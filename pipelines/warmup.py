"""Compile numba's kernels ahead of their first use, in parallel (``omkl warmup``).

numba compiles each loop of the engine the first time it runs and keeps the machine code in the
package's on-disk cache (:mod:`omkl_dist._numba_cache`): the first block of every code path then
waits 10-20 s, and a process that starts before the cache holds a kernel (a pytest worker, a
``dask worker``, an ``omkl`` command) compiles it again. Warming runs every online algorithm's
small variants (its ``_unit_test_params``, also with normalised kernels) on a few generated rows
-- dense binary, multi-class and sparse, through ``fit``, ``partial_fit`` and the predictions --
and, on an in-process Dask cluster, the shards' rounds on a small stored stream; the batch
classifiers fit once. The algorithms are dealt to ``processes`` fresh interpreters, the slowest
to compile first, those that share compiled kernels to one interpreter where there are fewer
interpreters than kernel families (:func:`interpreter_tasks`). A second warm-up only loads the cache.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the order the tasks go out in: the compile cost's, largest first (a cold `omkl warmup`, one algorithm
# per interpreter, 2 cores: the budget baselines 34 s, OMKC 28, NOGD 26, SPA 24, OKS 10, FOGD 8.5,
# Perceptron 6, OM-2 2); the budget baselines share one engine, so whichever comes first pays for it
ONLINE_ORDER = (
    "rbp",
    "omkc",
    "nogd",
    "spa",
    "oks",
    "fogd",
    "perceptron",
    "om2",
    "omkc-pa",
    "forgetron",
    "bogd",
    "bpas",
    "perceptron-star",
    "perceptron-u",
)
BATCH_ORDER = ("mkboost", "simplemkl", "silp", "level", "lpmkl", "svc")
# warmed one after another in one interpreter: they compile the same engine (the budget baselines'
# block loop holds every learner's step), which two interpreters warming two of them at once both
# compiled (a cold warm-up, loaded machine: Forgetron 147 s beside RBP's 198 s, BOGD and BPAS after them 3-5 s)
ONE_ENGINE = (("rbp", "forgetron", "bogd", "bpas", "projectron", "projectron++"),)
# the algorithms that share compiled kernels: the shared-pool engine's recurrences and scoring
# kernels (OMKC, SPA, OM-2, the Perceptrons; OKS scores with the same kernels), the budget engine,
# the feature learners (FOGD's and NOGD's rows), the batch classifiers. With fewer interpreters than
# families, each family is one task, warmed in turn, so that no kernel is compiled twice at once: cold
# warm-ups on 2 cores took 67-72 s this way against 78-81 s with an algorithm per task, alternately
# (SPA 24.4 s beside OMKC, 9-10.7 s after it; NOGD and FOGD 26.2 + 8.5 s apart, 17.5-21 + 6-7 s in turn)
FAMILIES = (
    ("omkc", "spa", "oks", "perceptron", "om2", "omkc-pa", "perceptron-star", "perceptron-u"),
    *ONE_ENGINE,
    ("nogd", "fogd"),
    BATCH_ORDER,
)
NORMALISED_KERNELS = "gaussian:0.5,1;poly:2+norm;linear+norm"
ROWS, FEATURES = 120, 5


@dataclass(frozen=True)
class Warmed:
    """What one algorithm's warm-up took (compiling, or loading what the cache holds)."""

    algorithm: str
    seconds: float


def algorithms_in_order(names: Sequence[str] | None = None) -> list[str]:
    """``names`` (default: every registered algorithm) in the order they are warmed."""
    from omkl_dist.algorithms.registry import ALGORITHMS, BATCH_ALGORITHMS

    known = [*ONLINE_ORDER, *[a for a in ALGORITHMS if a not in ONLINE_ORDER], *BATCH_ORDER]
    known += [a for a in BATCH_ALGORITHMS if a not in known]
    if not names:
        return known
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ValueError(f"unknown algorithm(s) {unknown}; choose from {sorted(known)}")
    return [a for a in known if a in names]


DONE_MARK = "omkl-warmup-done"  # in the cache folder: a warm-up of every algorithm, with the cluster rounds, ran here


def warmed_up() -> bool:
    """Whether a complete warm-up already ran into this version's cache (a cache that only holds
    what some runs compiled is not: a test or command run after an edit leaves one)."""
    return (Path(os.environ.get("NUMBA_CACHE_DIR", "")) / DONE_MARK).is_file()


def cache_entries() -> int:
    """How many compiled functions numba's cache for these sources holds."""
    folder = Path(os.environ.get("NUMBA_CACHE_DIR", ""))
    return sum(1 for _ in folder.rglob("*.nbc")) if folder.is_dir() else 0


def warm_up(
    names: Sequence[str] | None = None,
    *,
    processes: int | None = None,
    cluster: bool = True,
    on_done: Callable[[Warmed], None] | None = None,
) -> list[Warmed]:
    """Compile (or load) the kernels of ``names`` (default: every algorithm) into numba's cache.

    Parameters
    ----------
    names : algorithm names as ``omkl run`` takes them (``None``: all).
    processes : interpreters compiling at once (default: the cores present, at most the algorithms).
    cluster : also run each online algorithm's rounds on an in-process Dask cluster (the shards'
        own loops).
    on_done : called with each algorithm's :class:`Warmed` as it finishes.

    Returns
    -------
    list of Warmed, in the order the algorithms finished.
    """
    from omkl_dist._numba_cache import use_versioned_cache

    from .entry import collect_once_at_exit

    use_versioned_cache()  # the children inherit the cache folder through the environment
    wanted = processes or os.cpu_count() or 1
    tasks = interpreter_tasks(algorithms_in_order(names), wanted)
    workers = max(1, min(wanted, len(tasks)))
    done = []
    spawn = multiprocessing.get_context("spawn")
    # (each interpreter's exit, which this waits for, as short as a command's)
    with ProcessPoolExecutor(workers, mp_context=spawn, initializer=collect_once_at_exit) as pool:
        for warmed_task in pool.map(_warm_in_turn, tasks, [cluster] * len(tasks)):
            for warmed in warmed_task:
                done.append(warmed)
                if on_done is not None:
                    on_done(warmed)
    if not names and cluster:
        (Path(os.environ["NUMBA_CACHE_DIR"]) / DONE_MARK).touch()
    return done


class Background:
    """``omkl warmup`` in a child process while this one does something else (starting a
    cluster): the workers then find the kernels in the shared cache instead of each compiling them
    in its first round. :meth:`summary` waits for it and says what it took. As a context manager
    it is cancelled when the block raises (a cluster that failed to start has nothing to warm for)::

        with Background(["spa"]) as warming:
            state = up(run_dir)
        print(warming.summary())
    """

    def __init__(self, names: Sequence[str] | None) -> None:
        import subprocess
        import sys

        self.names = list(names) if names else None
        self.failed = False  # (known once summary() returned)
        self._started = time.perf_counter()
        command = [sys.executable, "-m", "omkl_dist.pipelines.cli", "warmup", "--quiet"]
        for name in self.names or ():
            command += ["--algo", name]
        # a session of its own: cancel stops its compiling children with it
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )

    def summary(self) -> str:
        """One line once the warm-up ended: compiled (once per installation) or loaded from the
        cache, and its wall seconds. A warm-up that failed is a warning line (:attr:`failed` is
        then True), not an error: what it was started beside (a cluster) is up all the same, and
        each process compiles what it meets first instead."""
        out, err = self._process.communicate()
        seconds = time.perf_counter() - self._started
        self.failed = self._process.returncode != 0
        if self.failed:
            last = (err.strip().splitlines() or ["no output"])[-1]
            return (
                f"warning: compiling the kernels ahead failed (omkl warmup exited {self._process.returncode}: "
                f"{last}); each worker compiles them on its first use instead"
            )
        which = ", ".join(self.names) if self.names else "every algorithm"
        if "compiled" in out:
            return f"compiling kernels for {which}, once per installation: {seconds:.1f} s"
        return f"kernels for {which} loaded from numba's cache: {seconds:.1f} s"

    def __enter__(self) -> Background:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if kind is not None:
            self.cancel()

    def cancel(self) -> None:
        """Stop the warm-up and the interpreters it started (its own process group, not yet reaped:
        the group id cannot belong to anyone else)."""
        import signal

        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
        self._process.communicate()


def interpreter_tasks(order: list[str], processes: int = 1) -> list[list[str]]:
    """``order`` dealt into the tasks of ``processes`` interpreters, each task where its first
    algorithm comes: with fewer interpreters than :data:`FAMILIES`, a family per task; with more,
    the algorithms of one engine (:data:`ONE_ENGINE`) together and the others one each (a family per
    task would leave the largest family's time to one interpreter while others idle)."""
    groups = FAMILIES if processes < len(FAMILIES) else ONE_ENGINE
    tasks, placed = [], set()
    for name in order:
        if name in placed:
            continue
        group = next((g for g in groups if name in g), (name,))
        task = [a for a in order if a in group]
        tasks.append(task)
        placed.update(task)
    return tasks


def _warm_in_turn(algorithms: list[str], cluster: bool) -> list[Warmed]:
    return [warm_one(algorithm, cluster) for algorithm in algorithms]


def warm_one(algorithm: str, cluster: bool) -> Warmed:
    """One algorithm's warm-up in this interpreter (:func:`warm_up` runs it in child ones;
    ``benchmarks/compile_times.py`` in its own, to time numba's compiles)."""
    from omkl_dist.algorithms.registry import ALGORITHMS

    started = time.perf_counter()
    if algorithm in ALGORITHMS:
        _fit_variants(ALGORITHMS[algorithm])
        if cluster:
            _fit_on_a_cluster(algorithm)
    else:
        _fit_batch(algorithm)
    return Warmed(algorithm, time.perf_counter() - started)


def _rows() -> tuple[Any, Any, Any, Any]:
    """Dense rows, binary and 3-class labels, and the rows' sparse (CSR) copy with zeros."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(ROWS, FEATURES))
    binary = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    binary[::7] *= -1
    return X, binary, rng.integers(0, 3, size=ROWS), sp.csr_matrix(X * (np.abs(X) > 0.5))


def _fit_variants(cls: type) -> None:
    X, binary, classes, sparse = _rows()
    for params in cls._unit_test_params:
        pools = [params.get("kernels"), *_normalised(params.get("kernels"))] if "kernels" in params else [None]
        for kernels in pools:
            variant = {**params, "kernels": kernels} if kernels else dict(params)
            for rows, labels in ((X, binary), (X, classes), (sparse, binary)):
                model = cls(**variant).fit(rows, labels)
                model.predict(rows)
                model.partial_fit(rows[:40], labels[:40])


def _normalised(kernels) -> list[str]:
    """The pool of the normalised variant: none for a pool of gaussians only (FOGD's, which takes
    nothing else; a gaussian's values are normalised already)."""
    gaussians_only = isinstance(kernels, str) and all(p.strip().startswith("gaussian") for p in kernels.split(";"))
    return [] if gaussians_only else [NORMALISED_KERNELS]


def _fit_on_a_cluster(algorithm: str) -> None:
    import dask
    from distributed import Client, LocalCluster

    from omkl_dist.cluster.profiler import safe_worker_config
    from omkl_dist.distributed import fit_on_cluster
    from omkl_dist.job import make_stream_estimator
    from omkl_dist.storage.synth import synthesize

    with (
        tempfile.TemporaryDirectory(prefix="omkl-warmup-") as folder,
        _distributed_logs_at(logging.ERROR),  # (its shutdown's closed-comm notices are no news here)
        dask.config.set(safe_worker_config()),  # its workers run in this process: no profiler where it hangs one
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        ) as local,
        Client(local) as client,
    ):
        data = Path(folder) / "stream"
        synthesize(data, rows=ROWS * 4, features=FEATURES, seed=1, chunk_rows=ROWS * 2)
        estimator = make_stream_estimator(algorithm, {}, n_rows=ROWS * 4, block_size=64, seed=0)
        fit_on_cluster(client, estimator, data, scaling="minmax", seed=0)


@contextlib.contextmanager
def _distributed_logs_at(level: int):
    """Dask's loggers at ``level`` for a block, then as they were (``LocalCluster(silence_logs=...)``
    restores them when the cluster closes, before its connections' last notices)."""
    logger = logging.getLogger("distributed")
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def _fit_batch(algorithm: str) -> None:
    from omkl_dist.algorithms.registry import BATCH_ALGORITHMS

    X, binary, _, _ = _rows()
    cls = BATCH_ALGORITHMS[algorithm]
    cls(**cls._unit_test_params[0]).fit(X, binary).predict(X)
