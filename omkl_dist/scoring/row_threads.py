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


PIECE_ROWS = 1024  # rows of a kernel's piece at least (a piece costs a call, ~20 µs of dispatch)
MAX_PIECES = 4  # pieces per kernel at most


def over_kernel_rows(kernel, m: int, n: int, *args) -> None:
    """``kernel(k, k + 1, t_lo, t_hi, *args)`` -- kernel k over rows ``[t_lo, t_hi)`` -- over m
    kernels and n rows, each kernel's rows in order: a kernel's rows cut in up to
    :data:`MAX_PIECES` pieces, which the threads take as they come free, each the next piece of a
    kernel no thread is running, the kernel with the most pieces left first. Whole kernels on
    threads left one idle up to a kernel's time at the end (13 on 2: 7 against 6, ~8 % of the
    wall); pieces taken as the threads come free also follow a thread that gets less of a shared
    machine (fixed equal shares made the wall the slower thread's). Fewer than
    2 :data:`PIECE_ROWS` rows: whole kernels (:func:`over_rows`)."""
    threads = numba.get_num_threads()
    pieces = min(MAX_PIECES, n // PIECE_ROWS)
    if threads == 1 or pieces <= 1:
        over_rows(_all_rows, m, kernel, n, *args)
        return
    bounds = [n * i // pieces for i in range(pieces + 1)]
    left, busy, failed = [pieces] * m, [False] * m, []
    ready = threading.Condition()

    def next_piece() -> int:  # (under ready) a kernel to run, -1 when none is left, -2 to wait
        free = [k for k in range(m) if left[k] and not busy[k]]
        if failed or not any(left):
            return -1
        return max(free, key=lambda k: left[k]) if free else -2

    def work() -> None:
        while True:
            with ready:
                k = next_piece()
                while k == -2:
                    ready.wait()
                    k = next_piece()
                if k < 0:
                    return
                busy[k] = True
                piece = pieces - left[k]
            try:
                kernel(k, k + 1, bounds[piece], bounds[piece + 1], *args)
            except BaseException:
                with ready:
                    failed.append(k)
                    ready.notify_all()
                raise
            with ready:
                busy[k] = False
                left[k] -= 1
                ready.notify_all()

    futures = [_executor(threads).submit(work) for _ in range(threads)]
    for future in futures:
        future.result()


def _all_rows(lo, hi, kernel, n, *args):
    kernel(lo, hi, 0, n, *args)
