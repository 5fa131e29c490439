"""Kernels and rows on threads (``scoring/row_threads.over_kernel_rows``, ``over_kernel_pieces``): every
(kernel, row) cell is run exactly once and each kernel's rows in order, whatever the thread count --
a kernel cut between two threads' shares must have its early rows done before its late rows."""

from __future__ import annotations

import threading
import time

import pytest

from omkl_dist.scoring import row_threads


@pytest.mark.parametrize(
    ("m", "n", "threads"), [(13, 4096, 2), (13, 2500, 3), (3, 5000, 5), (5, 1, 4), (4, 9, 3), (1, 3000, 2)]
)
def test_over_kernel_rows_runs_every_cell_once_each_kernels_rows_in_order(monkeypatch, m, n, threads):
    monkeypatch.setattr(row_threads.numba, "get_num_threads", lambda: threads)
    lock, runs = threading.Lock(), {k: [] for k in range(m)}

    def kernel(k_lo, k_hi, t_lo, t_hi, delay):
        for k in range(k_lo, k_hi):
            with lock:
                runs[k].append((t_lo, "start"))
            # an early part (rows from 0, not to n) slow: a late part not waiting for it would overlap it
            time.sleep(20 * delay if t_lo == 0 < t_hi < n else delay)
            with lock:
                runs[k].append((t_hi, "end"))

    row_threads.over_kernel_rows(kernel, m, n, 1e-3)
    for k, events in runs.items():
        # start/end pairs one after another (no two parts of a kernel at once), contiguous from 0 to n
        starts, ends = events[0::2], events[1::2]
        assert all(s[1] == "start" for s in starts) and all(e[1] == "end" for e in ends), (k, events)
        assert starts[0][0] == 0 and ends[-1][0] == n, (k, events)
        assert all(ends[i][0] == starts[i + 1][0] for i in range(len(starts) - 1)), (k, events)


@pytest.mark.parametrize(
    ("m", "pieces", "threads", "ahead"), [(16, 15, 2, 2), (5, 7, 3, 1), (1, 4, 2, 2), (3, 1, 2, 1)]
)
def test_over_kernel_pieces_prepares_ahead_and_finishes_in_order_on_the_calling_thread(
    monkeypatch, m, pieces, threads, ahead
):
    """Every (kernel, piece) runs once, each kernel's pieces in order; ``prepare(p)`` before any run of
    p and at most ``ahead`` pieces beyond the slowest kernel; ``finish(p)`` in order, once every
    kernel ran p; both on the calling thread, which also runs kernels' pieces."""
    monkeypatch.setattr(row_threads.numba, "get_num_threads", lambda: threads)
    lock, caller = threading.Lock(), threading.get_ident()
    done, prepared, finished, runners = [0] * m, [], [], set()

    def prepare(p):
        assert threading.get_ident() == caller
        assert p == len(prepared) and p <= min(done) + ahead, (p, done)
        prepared.append(p)

    def run(k_lo, k_hi, p):
        assert k_hi == k_lo + 1 and p < len(prepared)
        with lock:
            runners.add(threading.get_ident())
            assert done[k_lo] == p
        time.sleep(1e-3 * (1 + k_lo % 3))  # (kernels of different costs)
        with lock:
            done[k_lo] += 1

    def finish(p):
        assert threading.get_ident() == caller
        assert p == len(finished) and min(done) > p, (p, done)
        finished.append(p)

    row_threads.over_kernel_pieces(run, m, pieces, prepare, ahead, finish)
    assert done == [pieces] * m and prepared == finished == list(range(pieces))
    assert caller in runners or m * pieces <= threads


@pytest.mark.parametrize("where", ["run", "prepare", "finish"])
def test_over_kernel_pieces_reraises_the_first_error_once_every_thread_stopped(monkeypatch, where):
    monkeypatch.setattr(row_threads.numba, "get_num_threads", lambda: 2)
    lock, running = threading.Lock(), [0]

    def fail_at(name, p):
        if name == where and p == 2:
            raise RuntimeError(f"{name} failed")

    def run(k_lo, k_hi, p):
        with lock:
            running[0] += 1
        try:
            time.sleep(1e-3)
            fail_at("run", p)
        finally:
            with lock:
                running[0] -= 1

    with pytest.raises(RuntimeError, match=f"{where} failed"):
        row_threads.over_kernel_pieces(run, 4, 6, lambda p: fail_at("prepare", p), 1, lambda p: fail_at("finish", p))
    assert running == [0]  # (no thread still running)
