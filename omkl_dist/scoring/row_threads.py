"""A block's rows on threads: a serial ``nogil`` kernel over row ranges, one range per thread.

The scans of a tile and the block Gram were ``parallel=True`` loops over the block's rows (numba's
``prange``). Each row's values are independent of the others', so a plain compiled loop over
``[lo, hi)`` called on a few Python threads (it releases the GIL) computes the same bits, and it
compiles in a third of the time: numba compiles a parallel function's loop body as a function of
its own and optimises the body's code again in each (the outlined body and its caller), which made
the scans 4-7 s of CPU each to compile -- most of a first run's wait (issue 39). The threads are
numba's thread count in the calling thread (``NUMBA_NUM_THREADS``, ``numba.set_num_threads``: 1 on
a Dask worker), so the same settings govern them as the parallel loops that remain.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba

RANGES_PER_THREAD = 4  # rows' costs differ (the direct scan skips zero stretches): smaller ranges balance
_POOL: dict[str, object] = {}  # "executor", its "threads" and the "pid" that made it
_LOCK = threading.Lock()


def _executor(threads: int) -> ThreadPoolExecutor:
    """The process's pool of at least ``threads`` threads: made again, larger, if asked for more,
    or in a forked child (whose copy of the pool has no threads behind it)."""
    with _LOCK:
        if _POOL.get("pid") != os.getpid() or _POOL["threads"] < threads:
            _POOL.update(
                executor=ThreadPoolExecutor(max_workers=threads, thread_name_prefix="omkl-rows"),
                threads=threads,
                pid=os.getpid(),
            )
        return _POOL["executor"]  # type: ignore[return-value]


def over_rows(kernel, n: int, *args, step: int = 1) -> None:
    """``kernel(lo, hi, *args)`` over ``[0, n)`` cut in ranges (their bounds multiples of ``step``),
    on numba's thread count of this thread; returns when every range is done, re-raising a
    range's error."""
    start_rows(kernel, n, *args, step=step)()


def start_rows(kernel, n: int, *args, step: int = 1) -> Callable[[], None]:
    """:func:`over_rows` started: returns the function that waits for it (re-raising a range's
    error), so the calling thread can work meanwhile. On one thread the ranges are done first."""
    threads = numba.get_num_threads()
    pieces = min(threads * RANGES_PER_THREAD, -(-n // step))
    if threads == 1 or pieces <= 1:
        kernel(0, n, *args)
        return _done
    per = -(-n // (pieces * step)) * step
    bounds = list(range(0, n, per)) + [n]
    futures = [_executor(threads).submit(kernel, lo, hi, *args) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def wait() -> None:
        for future in futures:
            future.result()

    return wait


def _done() -> None:
    """Nothing to wait for."""
