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
    threads = numba.get_num_threads()
    pieces = min(threads * RANGES_PER_THREAD, -(-n // step))
    if threads == 1 or pieces <= 1:
        kernel(0, n, *args)
        return
    per = -(-n // (pieces * step)) * step
    bounds = list(range(0, n, per)) + [n]
    futures = [_executor(threads).submit(kernel, lo, hi, *args) for lo, hi in zip(bounds[:-1], bounds[1:])]
    for future in futures:
        future.result()


def over_kernel_rows(kernel, m: int, n: int, *args) -> None:
    """``kernel(k_lo, k_hi, t_lo, t_hi, *args)`` -- kernels ``[k_lo, k_hi)`` over rows ``[t_lo, t_hi)``,
    each kernel's rows in order -- over m kernels and n rows, in equal shares of (kernel, row) cells
    per thread: m kernels on T threads in whole kernels leave a thread idle up to a kernel's time
    (13 on 2: 7 against 6, ~8 % of the wall).

    McNaughton's wrap-around: the cells in kernel-major order cut in T equal runs; a kernel cut
    between two runs has its early rows done first by the later run's thread and its late rows last
    by the earlier run's, after them. Whichever thread reaches the early rows first runs them (under
    a lock the other waits on): no thread waits on a task no thread has started, so sharing the pool
    with other callers cannot deadlock."""
    threads = numba.get_num_threads()
    T = min(threads, m)
    if T <= 1 or n == 0:
        kernel(0, m, 0, n, *args)
        return
    cuts = [i * m * n // T for i in range(T + 1)]
    early: dict[int, tuple[int, int, threading.Lock, list[bool]]] = {}  # cut -> kernel, its rows [0, r)
    for i in range(1, T):
        k, r = divmod(cuts[i], n)
        if r:
            early[i] = (k, r, threading.Lock(), [False])

    def run_early(i: int) -> None:
        k, r, lock, done = early[i]
        with lock:
            if not done[0]:
                kernel(k, k + 1, 0, r, *args)
                done[0] = True

    def run(i: int) -> None:
        k_a, r_a = divmod(cuts[i], n)
        k_b = cuts[i + 1] // n
        if i + 1 in early:  # the next run's kernel: its early rows, first
            run_early(i + 1)
        first_whole = k_a + (1 if r_a else 0)
        if first_whole < k_b:
            kernel(first_whole, k_b, 0, n, *args)
        if i in early:  # this run's first kernel: its late rows, last (after its early rows)
            run_early(i)
            kernel(k_a, k_a + 1, r_a, n, *args)

    futures = [_executor(threads).submit(run, i) for i in range(T)]
    for future in futures:
        future.result()
