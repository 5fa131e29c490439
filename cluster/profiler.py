"""Dask's worker profiler can hang a whole worker process on CPython 3.11; omkl's clusters run without it.

``sys._current_frames()``, which the profiler calls every 10 ms while a task runs, holds the
interpreter's thread-list lock while it builds frame objects. A garbage collection they trigger can
run a finaliser that hands the GIL to another thread; a thread starting or ending at that moment
takes the GIL and then waits for the thread-list lock, and every thread of the process waits for
good (python/cpython#106883; 3.12 collects garbage only between bytecodes). distributed already keeps
its event-loop watcher off on 3.11 for this reason, but not the worker profiler. A job's actors start
threads (a shard's read-ahead, zarr's I/O loop), so a job could stop forever, its timeouts
included: they run on the blocked event loop. A CI run did, in the shards' constructors of an
in-process cluster. A 30-line script (a loop of ``sys._current_frames()`` among cyclic garbage with a
finaliser, two threads starting threads) hangs 3.11.7 in seconds, and never with collections off
around the call.

So the clusters omkl starts (``omkl cluster up``, :func:`omkl_dist.distributed.mkboost.local_cluster`)
run their workers with the profiler off on 3.11, as do the tests' in-process clusters
(tests/conftest.py), and a job on a cluster whose workers profile on 3.11 warns once per client,
naming the setting.
"""

from __future__ import annotations

import sys
import warnings
import weakref

from omkl_dist._validation import user_stacklevel

CONFIG_KEY = "distributed.worker.profile.enabled"
ENVIRON_KEY = "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"
_WARNED: weakref.WeakSet = weakref.WeakSet()  # the clients already told


def profiler_hangs(version_info=sys.version_info) -> bool:
    """True on the interpreters whose ``sys._current_frames()`` can deadlock (CPython 3.11)."""
    return tuple(version_info[:2]) == (3, 11)


def safe_worker_config() -> dict:
    """Dask settings for the workers of a cluster started here: the profiler off where it can hang."""
    return {CONFIG_KEY: False} if profiler_hangs() else {}


def safe_worker_environ() -> dict[str, str]:
    """:func:`safe_worker_config` as environment variables, for ``dask worker`` processes."""
    return {ENVIRON_KEY: "False"} if profiler_hangs() else {}


def _profiles_on_a_hanging_python(dask_worker) -> bool:
    """On a worker: does its profiler run, on an interpreter where that can hang the process?"""
    return profiler_hangs(sys.version_info) and "profile" in dask_worker.periodic_callbacks


def warn_if_workers_profile(client) -> list[str]:
    """Warn (once per client) if any of its workers runs Dask's profiler on CPython 3.11; returns them."""
    if client in _WARNED:
        return []
    # (a worker that cannot answer now, e.g. restarting, is the job's to handle, not this check's)
    answers = client.run(_profiles_on_a_hanging_python, on_error="ignore")
    risky = sorted(address for address, bad in answers.items() if bad is True)
    if risky:
        _WARNED.add(client)
        warnings.warn(
            f"{len(risky)} worker(s) run Dask's profiler on Python 3.11 ({', '.join(risky[:3])}"
            f"{', ...' if len(risky) > 3 else ''}), which can hang a worker process for good "
            "(python/cpython#106883): start the workers with "
            f"{ENVIRON_KEY}=False (or dask config {CONFIG_KEY}: false); `omkl cluster up` does",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
    return risky
