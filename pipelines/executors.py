"""Where a batch fit's independent per-kernel fits run: a Dask cluster on a scheduler's address, local
threads, or this process. ``omkl fit``, ``omkl reproduce mkboost`` and a retrain of MKBoost share it."""

from __future__ import annotations

import contextlib
import os

from omkl_dist.algorithms.mkboost import TASK_BYTES_PER_ROW2


def default_threads(n_rows: int, ratio: float) -> int:
    """MKBoost's per-kernel SVMs at once when none is asked for: the cores present, but no more than
    half the memory available now holds (a task's Gram matrices grow with the square of its resample,
    ``ratio`` of ``n_rows``); the model is the same for any number."""
    import psutil

    n = max(2, round(ratio * n_rows))
    fits = int(psutil.virtual_memory().available // 2 // (TASK_BYTES_PER_ROW2 * n * n))
    return max(1, min(os.cpu_count() or 1, fits))


def connect_scheduler(address: str, timeout: float = 10.0):
    """A ``distributed.Client`` on a running scheduler.

    Parameters
    ----------
    address : str
        The scheduler's address, e.g. ``tcp://127.0.0.1:8786``.
    timeout : float, default=10.0
        Seconds to wait for the connection.

    Returns
    -------
    distributed.Client
        Not set as the default client; the caller closes it.

    Raises
    ------
    ValueError
        When no scheduler answers there in time, saying how to start one.
    """
    from distributed import Client

    try:
        return Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ValueError(
            f"cannot reach a Dask scheduler at {address!r} within {timeout:g} s ({exc}); start one with "
            "`dask scheduler` and `dask worker ADDR` (or `omkl cluster up`) and pass its address, "
            "e.g. tcp://127.0.0.1:8786"
        ) from None


@contextlib.contextmanager
def executor_for(scheduler: str | None, threads: int, timeout: float = 10.0):
    """MKBoost's executor for the length of a ``with`` block.

    Parameters
    ----------
    scheduler : str or None
        A scheduler's address: the per-kernel fits run as Dask tasks there (the client is closed on exit).
    threads : int
        Without a scheduler, more than one runs the fits on that many local threads.
    timeout : float, default=10.0
        Seconds to wait for the scheduler.

    Yields
    ------
    DaskExecutor, ThreadRunner or None
        None: the fits run serially in this process.
    """
    if scheduler:
        from omkl_dist.distributed.mkboost import DaskExecutor

        client = connect_scheduler(scheduler, timeout)
        try:
            yield DaskExecutor(client)
        finally:
            client.close()
    elif threads > 1:
        from omkl_dist.algorithms.mkboost_runners import ThreadRunner

        yield ThreadRunner(threads)
    else:
        yield None
