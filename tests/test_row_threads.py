"""Kernels and rows on threads in equal shares (``scoring/row_threads.over_kernel_rows``): every
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
