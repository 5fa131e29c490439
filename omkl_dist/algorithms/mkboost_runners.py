"""Where MKBoost's per-kernel tasks run: the :class:`TaskRunner` protocol and the in-process runners.

``share`` makes the training data available to tasks once per fit, ``map`` runs the pure
:func:`omkl_dist.algorithms.mkboost_tasks.fit_kernel_task` over one trial's kernels and returns only
predictions and the SVMs' small parts. :class:`SerialRunner` and :class:`ThreadRunner` live here; the
Dask runner is :class:`omkl_dist.distributed.mkboost.DaskExecutor`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from numbers import Integral
from typing import Any, Protocol, runtime_checkable

import numba

from .._validation import Interval, check_param

__all__ = ["TaskRunner", "SerialRunner", "ThreadRunner", "as_runner"]


@runtime_checkable
class TaskRunner(Protocol):
    """What :class:`~omkl_dist.algorithms.mkboost.MKBoost` needs from an executor (``executor=`` parameter).

    ``share(data)`` is called once per fit with the read-only
    :class:`~omkl_dist.algorithms.mkboost_tasks.SharedData` and returns a
    handle; ``map(fn, handle, trial, items)`` returns ``[fn(data, trial, item) for item in items]``
    in order (possibly in parallel, elsewhere), where ``trial`` is the round's
    :class:`~omkl_dist.algorithms.mkboost_tasks.TrialSamples`,
    common to all its items (a runner sends it once per round, not with every item);
    ``release(handle)`` is called when the fit ends.
    """

    def share(self, data: Any) -> Any: ...

    def map(self, fn: Callable[[Any, Any, Any], Any], shared: Any, trial: Any, items: Sequence[Any]) -> list[Any]: ...

    def release(self, shared: Any) -> None: ...


class SerialRunner:
    """Run the tasks one after another in the calling thread (the default)."""

    def share(self, data: Any) -> Any:
        return data

    def map(self, fn: Callable[[Any, Any, Any], Any], shared: Any, trial: Any, items: Sequence[Any]) -> list[Any]:
        # A task's blocks are small: numba's thread pool costs more to wake than it saves.
        previous = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return [fn(shared, trial, item) for item in items]
        finally:
            numba.set_num_threads(previous)

    def release(self, shared: Any) -> None:
        pass

    def __repr__(self) -> str:
        return "SerialRunner()"

    def __eq__(self, other: object) -> bool:
        return type(other) is SerialRunner

    def __hash__(self) -> int:
        return hash(SerialRunner)


def _one_numba_thread() -> None:
    # Thread-local in numba: each worker thread runs its compiled loops alone, so k threads use
    # k cores instead of k × (numba's pool).
    numba.set_num_threads(1)


class ThreadRunner:
    """Run the tasks on a pool of ``max_workers`` threads (libsvm and numba release the GIL).

    The pool lives from ``share`` to ``release``, i.e. one fit.

    Examples
    --------
    >>> import numpy as np
    >>> from omkl_dist.algorithms.mkboost import MKBoost
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> MKBoost(n_trials=3, random_state=0, executor=ThreadRunner(2)).fit(X, y).score(X, y) > 0.9
    True
    """

    def __init__(self, max_workers: int = 2) -> None:
        self.max_workers = max_workers

    def share(self, data: Any) -> tuple[Any, ThreadPoolExecutor]:
        check_param("ThreadRunner", "max_workers", self.max_workers, [Interval(Integral, 1, None, closed="left")])
        return data, ThreadPoolExecutor(self.max_workers, initializer=_one_numba_thread)

    def map(
        self,
        fn: Callable[[Any, Any, Any], Any],
        shared: tuple[Any, ThreadPoolExecutor],
        trial: Any,
        items: Sequence[Any],
    ) -> list[Any]:
        data, pool = shared
        return list(pool.map(functools.partial(fn, data, trial), items))

    def release(self, shared: tuple[Any, ThreadPoolExecutor]) -> None:
        shared[1].shutdown(wait=True)

    def __repr__(self) -> str:
        return f"ThreadRunner(max_workers={self.max_workers})"

    def __eq__(self, other: object) -> bool:  # a value: clone()'s deep copy compares equal
        return type(other) is ThreadRunner and other.max_workers == self.max_workers

    def __hash__(self) -> int:
        return hash((ThreadRunner, self.max_workers))


class _FuturesRunner:
    """Adapter for a user's ``concurrent.futures.Executor``."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    def share(self, data: Any) -> Any:
        return data

    def map(self, fn: Callable[[Any, Any, Any], Any], shared: Any, trial: Any, items: Sequence[Any]) -> list[Any]:
        return list(self.executor.map(functools.partial(fn, shared, trial), items))

    def release(self, shared: Any) -> None:
        pass


def as_runner(executor: TaskRunner | Executor | None) -> TaskRunner:
    """The :class:`TaskRunner` for an ``executor`` parameter value."""
    if executor is None:
        return SerialRunner()
    if isinstance(executor, TaskRunner):
        return executor
    if isinstance(executor, Executor):
        return _FuturesRunner(executor)
    raise ValueError(
        "MKBoost: executor must be None (serial), a TaskRunner (share/map/release, e.g. ThreadRunner(2) "
        f"or omkl_dist.distributed.mkboost.DaskExecutor(client)) or a concurrent.futures.Executor, "
        f"got {executor!r}"
    )
