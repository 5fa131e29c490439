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
    :data:`MAX_PIECES` pieces, which the threads take as :func:`over_kernel_pieces` hands them out.
    Whole kernels on threads left one idle up to a kernel's time at the end (13 on 2: 7 against 6,
    ~8 % of the wall). Fewer than 2 :data:`PIECE_ROWS` rows: whole kernels (:func:`over_rows`)."""
    threads = numba.get_num_threads()
    pieces = min(MAX_PIECES, n // PIECE_ROWS)
    if threads == 1 or pieces <= 1:
        over_rows(_all_rows, m, kernel, n, *args)
        return
    bounds = [n * i // pieces for i in range(pieces + 1)]
    over_kernel_pieces(lambda k_lo, k_hi, p: kernel(k_lo, k_hi, bounds[p], bounds[p + 1], *args), m, pieces)


def over_kernel_pieces(run, m: int, pieces: int, prepare=None, ahead: int = 1, finish=None) -> None:
    """``run(k_lo, k_hi, p)`` -- kernels ``[k_lo, k_hi)`` over piece p -- for every kernel k < m and piece
    p < pieces, each kernel's pieces in order, on numba's thread count of this thread (this thread
    one of them). A thread takes a kernel's piece as it comes free: the next piece of a kernel no
    thread is running, the kernel with the most pieces left first. Pieces taken as the threads come
    free follow a thread that gets less of a shared machine (fixed equal shares made the wall the
    slower thread's), and no kernel waits for the others at a piece's end: the kernels' costs differ,
    and a wait for all of them at every piece left a thread idle up to a kernel's piece each time (a
    ~8 % longer BPAS pass over cod-rna).

    This thread also calls, before taking a kernel's piece: ``prepare(p)`` (optional) for each piece
    in order, before any kernel runs it and at most ``ahead`` pieces beyond the piece the slowest
    kernel is on (what it makes for pieces before ``p - ahead`` is no longer read); and ``finish(p)``
    (optional) for each piece in order once every kernel has run it. (A thread of their own beside
    the kernels' would take a core from them.) On one thread: ``prepare(p)``, ``run(0, m, p)``,
    ``finish(p)``, piece after piece. Re-raises the first error once every thread has stopped."""
    threads = numba.get_num_threads()
    if threads == 1 or m * pieces <= 1:
        for p in range(pieces):
            if prepare is not None:
                prepare(p)
            run(0, m, p)
            if finish is not None:
                finish(p)
        return
    done, busy = [0] * m, [False] * m
    state = {"prepared": 0 if prepare is not None else pieces, "finished": 0 if finish is not None else pieces}
    failed: list[BaseException] = []
    ready = threading.Condition()

    def next_task(lead: bool) -> tuple[str, int]:  # (under ready) what to do next
        if failed:
            return "stop", -1
        slowest = min(done)
        if lead and state["prepared"] < pieces and state["prepared"] <= slowest + ahead:
            return "prepare", state["prepared"]
        if lead and state["finished"] < slowest:
            return "finish", state["finished"]
        if slowest == pieces and (not lead or state["finished"] == pieces):
            return "stop", -1
        free = [k for k in range(m) if not busy[k] and done[k] < state["prepared"]]
        if not free:
            return "wait", -1
        k = min(free, key=done.__getitem__)
        busy[k] = True
        return "run", k

    def work(lead: bool) -> None:
        while True:
            with ready:
                task, arg = next_task(lead)
                while task == "wait":
                    ready.wait()
                    task, arg = next_task(lead)
            try:
                if task == "stop":
                    return
                if task == "prepare":
                    prepare(arg)  # type: ignore[misc]
                elif task == "finish":
                    finish(arg)  # type: ignore[misc]
                else:
                    run(arg, arg + 1, done[arg])
            except BaseException as error:
                with ready:
                    failed.append(error)
                    ready.notify_all()
                raise
            with ready:
                if task == "prepare":
                    state["prepared"] += 1
                elif task == "finish":
                    state["finished"] += 1
                else:
                    busy[arg] = False
                    done[arg] += 1
                ready.notify_all()

    futures = [_executor(threads - 1).submit(work, False) for _ in range(threads - 1)]
    try:
        work(True)
    finally:
        for future in futures:
            future.exception()  # (waits for the thread; its error, if first, is re-raised below)
    if failed:
        raise failed[0]


def _all_rows(lo, hi, kernel, n, *args):
    kernel(lo, hi, 0, n, *args)
