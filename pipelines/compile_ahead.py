"""A job's first run compiles on two cores: a helper process compiles the pool scans meanwhile.

numba compiles a kernel on its first use, under one lock per process: a fresh ``omkl run spa``
spent ~13 s of one core compiling before it learnt (issue 39), while the machine's other cores
waited. numba's on-disk cache (:mod:`omkl_dist._numba_cache`) is shared by processes, so the work
is split in two, along the order a run meets it:

* this process learns the job's first block (:func:`learn_head`: the rows of the run's first
  block, through :class:`~omkl_dist.runner.LocalRunner` itself, so exactly the run's code path):
  the random streams, the recurrence, the combiner, the evaluation;
* a helper process (:class:`Helper`, ``python -m omkl_dist.pipelines.compile_ahead``) compiles what
  the run meets from its second block on, which the first block does not reach (its pool is
  empty): the scans of the rows against the pool (:func:`compile_scans`, dense and sparse tiles),
  on the same rows of the same job, then exits;

then the run waits for the helper (a bounded time) and learns, loading the scans from the cache.
Whatever the helper does, the run's result is the same: it compiles nothing the run does not
compile (the same functions for the same argument types), numba writes each cache file whole (a
temporary file renamed over it), and both processes save their entries one at a time
(:func:`omkl_dist._numba_cache.lock_cache_writes`: two saves of one function at once could make its
index name the other's code). A helper that fails, hangs past the wait or compiled for other types costs time, never
the run: the run then compiles the rest itself. The helper is started in a session of its own
(a Ctrl-C on the terminal reaches the run only) and is stopped when the run ends, however it
ends; it also exits when its standard input closes (the run died without stopping it).

Only the console script's ``omkl run`` does this (:func:`start`, before the command line's imports,
which the helper's own imports then overlap), for the first run of an algorithm in a cache
(:func:`cold`: a mark in the cache folder, left by a helper that finished; a complete ``omkl
warmup`` counts too), with a fixed setting (an automatic one races candidates first, each
compiling its own) and only where this process may use two cores, one of them idle: else the
run compiles alone, as before; ``OMKL_COMPILE_AHEAD=0`` switches it off, ``=1`` on whatever the
load. ``omkl run`` in a test's
``CliRunner`` or :func:`.run.run_job` called from Python start none.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

HELPER_MODULE = "omkl_dist.pipelines.compile_ahead"
MARK = "compiled-ahead-{algorithm}"  # in the cache folder: the helper compiled this algorithm's scans here
# the run waits for the helper at most this many times as long as it spent on its own part, and at
# least MIN_WAIT seconds (a helper that takes much longer than the run's part is stuck or starved)
WAIT_FACTOR, MIN_WAIT = 3.0, 20.0
# 0: no helper (the run compiles alone, on one core); 1: a helper whatever the load (two cores and
# a cold cache still needed); unset: a helper where a core is idle
SWITCH = "OMKL_COMPILE_AHEAD"
# a helper only where the load average leaves this much of a core idle: on a machine whose cores
# are busy it competes with the run for one (measured: 6 % slower than the run alone)
IDLE_CORE = 0.5
# a file is parsed whole before its head is read: a larger one is not parsed twice more for the head
MAX_FILE_BYTES = 64 * 2**20
NOTHING = 4  # the helper's exit status when it compiled nothing (an automatic setting, no pool scans)


def _children_cpu() -> float:
    """CPU seconds of this process's ended (reaped) children."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def available_cores() -> int:
    """Cores this process may run on (its affinity, where the system tells)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


def _mark(algorithm: str, folder: Path) -> Path:
    return folder / MARK.format(algorithm=algorithm)


def head_job(job, rows: int):
    """``job`` on the first ``rows`` rows of its window: the rows the run starts with (the same
    order), so its kernels see the same kinds of rows (dense or sparse, integers or not, the
    classes)."""
    stop = job.data.start + rows if job.data.stop is None else min(job.data.stop, job.data.start + rows)
    return replace(job, data=replace(job.data, stop=stop))


def learn_head(job, data: str, labels: dict | None) -> bool:
    """Learn the job's first block in this process: what the run compiles first, compiled now.
    Whether it did: a head the whole stream would not refuse may be (one class in it, say), and
    then the run compiles it all itself."""
    import warnings

    from omkl_dist.runner import LocalRunner

    try:
        with warnings.catch_warnings():  # (the run says what it has to say about the data itself)
            warnings.simplefilter("ignore")
            LocalRunner(labels=labels).fit(head_job(job, job.block_size), data)
    except Exception:  # (the run meets the data's real errors itself, and reports them)
        return False
    return True


def compile_scans(job, data: str, labels: dict | None) -> bool:
    """Score rows against a pool of the job's model, so numba compiles the pool scans the run
    meets from its second block on: a pool of the first block's rows with a coefficient in one
    column a row (the sparse tile scan, where the pool has enough columns to be scanned sparsely),
    then one with a coefficient for every kernel (the dense one). The sparse scan first: the dense
    scan's kernel values (squared distances, the gaussian's exponentials) are the functions the
    run's recurrence compiles meanwhile for its in-block values; by the time the helper gets to
    them the run has saved them and the helper loads them (dense first, both processes compiled
    them at once: the helper ended 0.4-1.4 s later, the run waiting for it). Returns False where
    the model has no shared pool to scan (its engine scores otherwise) or the data not two rows."""
    import numpy as np

    from omkl_dist.engine.local import LocalEngine
    from omkl_dist.runner import LocalRunner
    from omkl_dist.scoring.rows import sqnorms

    job, model, rows, _ = LocalRunner(labels=labels).open_job(head_job(job, 2 * job.block_size), data)
    blocks = list(rows.blocks)
    X = blocks[0][0] if len(blocks) == 1 else _stack([b[0] for b in blocks])
    half = X.shape[0] // 2
    if half == 0:
        return False
    for sparse_tile in (True, False):
        model.initialize(rows.n_features, rows.classes, rows.n_rows, sparse=rows.sparse)
        engine = model.engine_
        if not isinstance(engine, LocalEngine):
            return False
        pool = engine.rows(X[:half])
        columns = engine.program.m * engine.n_classes
        coef = np.full((half, columns), 0.5)
        if sparse_tile:  # one column a row: the sparsest pool of these rows (a row without any is not kept)
            coef[np.arange(columns)[None, :] != (np.arange(half) % columns)[:, None]] = 0.0
        engine.append_rows(pool, sqnorms(pool), coef)
        model.decision_function(X[half:])
    return True


def _stack(parts):
    import numpy as np
    import scipy.sparse as sp

    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(parts)


class Helper:
    """The helper process compiling the scans of the job ``omkl run ARGV`` describes (see the
    module's docstring); a context manager that stops it on leaving, however the block ends."""

    def __init__(self, argv: list[str]) -> None:
        self.finished = False  # it compiled the scans and exited cleanly (known after wait)
        self.waited = 0.0  # seconds the run waited for it
        self.cpu_seconds = 0.0  # its CPU time, once reaped
        self._children_cpu = _children_cpu()  # (this process's reaped children's, before it)
        self._process = subprocess.Popen(
            [sys.executable, "-m", HELPER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C on the terminal is the run's to handle
            text=True,
        )
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(list(argv)) + "\n")
        self._process.stdin.flush()  # (kept open: its end tells the helper the run is gone)

    @property
    def pid(self) -> int:
        """The helper's process id (its process group's too)."""
        return self._process.pid

    def wait(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for the helper to finish; whether it compiled the scans."""
        started = time.perf_counter()
        try:
            self.finished = self._process.wait(timeout=max(seconds, 0.0)) == 0
        except subprocess.TimeoutExpired:
            self.finished = False
        self.waited = time.perf_counter() - started
        self._reaped()
        return self.finished

    def note(self) -> str:
        """How the run compiled, for its "compiling took" line."""
        if self.finished:
            return f"on 2 cores: a second process compiled the pool scans meanwhile, {self.cpu_seconds:.1f} s of CPU"
        return "on 1 core: the second process started to compile the pool scans did not"

    def stop(self) -> None:
        """End the helper if it still runs (its own process group: not yet reaped, the id cannot be
        anyone else's) and reap it; again, nothing."""
        if self._process.returncode is None and self._process.poll() is None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._process.stdin is not None and not self._process.stdin.closed:
            try:
                self._process.stdin.close()
            except OSError:  # (a helper that died early: the pipe is broken)
                pass
        self._process.wait()
        self._reaped()

    def _reaped(self) -> None:
        """Its CPU seconds, once it has ended (the run starts no other process meanwhile)."""
        if self._process.returncode is not None and not self.cpu_seconds:
            self.cpu_seconds = _children_cpu() - self._children_cpu

    def __enter__(self) -> Helper:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


_STARTED: list[Helper] = []  # the helper start() started for this process's command line


def start(argv: list[str]) -> Helper | None:
    """Start the helper for ``omkl run ARGV`` if the run looks like a first one
    (:func:`looks_worth_it`): called by the console script before it imports the command line
    (which takes seconds: the helper imports meanwhile). :func:`compile_first_use` takes it over
    once the command has its job; the caller stops it when the command ends (:meth:`Helper.stop`)."""
    try:
        if not looks_worth_it(argv):
            return None
        helper = Helper(argv)
    except Exception:  # (no process to start, a cache folder that cannot be read: the run compiles alone)
        return None
    _STARTED.append(helper)
    return helper


def looks_worth_it(argv: list[str]) -> bool:
    """Whether ``omkl run ARGV`` may gain from a helper, as far as its words tell (without
    importing the command line): not switched off (:data:`SWITCH`), an algorithm named,
    no help asked for, no automatic setting, no data file over :data:`MAX_FILE_BYTES` (the run's
    head and the helper parse it too), two cores and one of them idle (:data:`IDLE_CORE`; or
    ``OMKL_COMPILE_AHEAD=1``), a :func:`cold` cache for the algorithm."""
    switch = os.environ.get(SWITCH, "")
    if switch == "0" or not argv or argv[0].startswith("-") or {"-h", "--help"} & set(argv):
        return False
    if "--scaling=auto" in argv or any(a == "--scaling" and b == "auto" for a, b in zip(argv, argv[1:])):
        return False
    if _option(argv, "--data") is not None and _file_bytes(_option(argv, "--data")) > MAX_FILE_BYTES:
        return False
    cores = available_cores()
    idle = switch == "1" or _load() <= cores - IDLE_CORE
    return cores >= 2 and idle and _can_lock() and cold(argv[0])


def _load() -> float:
    """The system's 1-minute load average (0 where it cannot tell)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def _option(argv: list[str], name: str) -> str | None:
    """The value of option ``name`` in ``argv`` (``--name value`` or ``--name=value``), if given."""
    for word, following in zip(argv, [*argv[1:], None]):
        if word == name:
            return following
        if word.startswith(name + "="):
            return word[len(name) + 1 :]
    return None


def _file_bytes(path: str) -> int:
    """The size of the regular file ``path`` (0 for anything else: a registry name, a folder, a URL)."""
    try:
        return os.stat(path).st_size if Path(path).is_file() else 0
    except (OSError, ValueError):
        return 0


def _can_lock() -> bool:
    """Whether two processes' cache saves can be made exclusive (:func:`omkl_dist._numba_cache.lock_cache_writes`)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return False
    return True


def cold(algorithm: str, folder: Path | None = None) -> bool:
    """Whether no helper finished for ``algorithm`` in numba's cache ``folder`` (default: this
    version's, :func:`omkl_dist._numba_cache.use_versioned_cache`), and no complete warm-up ran
    into it."""
    from omkl_dist._numba_cache import use_versioned_cache

    from .warmup import DONE_MARK

    folder = Path(use_versioned_cache()) if folder is None else folder
    return not (folder / DONE_MARK).is_file() and not _mark(algorithm, folder).exists()


def compile_first_use(job, data: str, labels: dict | None) -> Helper | None:
    """Before ``omkl run`` learns ``job``: if a helper was started for it (:func:`start`), learn the
    job's first block here meanwhile, then wait for the helper (a bounded time) and stop it.
    Returns the helper (:attr:`Helper.finished`: whether it did its part), or None where nothing
    was started (one core, an automatic setting, kernels compiled already, not the console script)."""
    from omkl_dist._numba_cache import lock_cache_writes

    helper = _STARTED.pop() if _STARTED else None
    if helper is None:
        return None
    lock_cache_writes()  # (the helper's saves are locked too: start checked that they can be)
    with helper:
        if job.settings.is_auto:  # (the helper saw it too, and left)
            return None
        started = time.perf_counter()
        if learn_head(job, data, labels):  # (else the data may be refused: say so without waiting)
            helper.wait(max(MIN_WAIT, WAIT_FACTOR * (time.perf_counter() - started)))
    return helper


def _exit_when_orphaned() -> None:
    """Exit as soon as standard input closes: the run that started this helper is gone."""

    def watch() -> None:
        sys.stdin.read()
        os._exit(3)

    threading.Thread(target=watch, daemon=True, name="omkl-orphan-watch").start()


def main() -> None:
    """The helper process: read the command line's words, compile the scans of its job, leave the
    mark; exit status 0 if it compiled them, :data:`NOTHING` where the job has none (or refuses)."""
    from omkl_dist._numba_cache import lock_cache_writes

    from .commands.run import run_group, run_options_job
    from .entry import collect_once_at_exit

    collect_once_at_exit()  # (the run waits for this process's exit)
    argv = json.loads(sys.stdin.readline())
    _exit_when_orphaned()
    lock_cache_writes()
    compiled = []

    def compile_job(algo, params, **options) -> None:
        job, labels = run_options_job(algo, params, **options)
        if not job.settings.is_auto:
            compiled.append(compile_scans(job, options["data"], labels))
            # (also where the model has no pool scans: no helper is needed for it then either)
            _mark(job.algorithm, Path(os.environ["NUMBA_CACHE_DIR"])).touch()

    run_group(compile_job).main(args=argv, prog_name="omkl run", standalone_mode=False)
    sys.exit(0 if any(compiled) else NOTHING)


if __name__ == "__main__":
    main()
