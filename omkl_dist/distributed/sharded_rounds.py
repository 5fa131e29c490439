"""ShardedRounds: the rounds of one online job on a Dask cluster, with kernel shards.

:class:`~.runner.DaskRunner` (and :func:`~.runner.fit_on_cluster`, its form for an estimator) is
the public entry point; underneath, :meth:`ShardedRounds.run` drives one job: one
:class:`~.shard.KernelShard` actor per worker (up to one per kernel) and one
:class:`~.coordinator.Coordinator` actor; the client only starts them, asks the coordinator to
run a batch of rounds at a time (progress), collects the state for checkpoints and the final
model, and rebuilds everything from the last checkpoint when a worker dies. The client is passed
in, never looked up globally.

Actors are not resilient (a dead worker's actors are gone), so recovery is: wait for the cluster
to have workers again (a ``dask worker``'s nanny restarts a killed process), start fresh actors
from the last checkpoint and go on. Every decision depends only on the model state and the
(seed, block, kernel) random streams, so the recovered run ends with the same model.
"""

from __future__ import annotations

import contextlib
import time

from ..engine.local import Feed
from .coordinator import Coordinator
from .rounds import round_adapter
from .shard import KernelShard, ShardAddress, engine_program

# what a job resumes from besides the model: the mistake curve, the model samples, the calibration
RESUMED = ("history", "samples", "calibration")


class WorkerLost(RuntimeError):
    """A worker died (or stopped answering) during a job, more often than the retries allow."""


class ShardedRounds:
    """Run the rounds of online jobs on the cluster behind ``client`` (an engine's state in, the
    final state out; not an :class:`~omkl_dist.engine.protocol.Engine`: it drives shard actors
    that each host one).

    Parameters
    ----------
    client : distributed.Client
    n_shards : int or None
        Kernel shards (default: one per worker; capped at the number of kernels).
    checkpoint_every : int
        Rounds between checkpoints (0 = none); a round is one block (at most 1,024 rows), or for
        SPA whole blocks, more as the stream goes on, up to 16,384 rows
        (:func:`~omkl_dist.engine.local.segmenting`); for the budget and feature engines up to 16
        blocks (:meth:`.rounds.kernel_split.BudgetKernelSplit.round_ends`).
    max_retries : int
        Worker failures tolerated per job before giving up.
    rounds_per_call : int
        Rounds per coordinator call (how often progress is reported).
    call_timeout : float
        Seconds one coordinator call may take before the job counts as stuck.
    worker_timeout : float
        Seconds to wait for the cluster to have its workers again after one was lost.
    """

    def __init__(
        self,
        client,
        *,
        n_shards=None,
        checkpoint_every: int = 0,
        max_retries: int = 3,
        rounds_per_call: int = 16,
        call_timeout: float = 600.0,
        worker_timeout: float = 120.0,
    ):
        self.client = client
        self.job = None
        self.n_shards = n_shards
        self.checkpoint_every = int(checkpoint_every)
        self.max_retries = int(max_retries)
        self.rounds_per_call = int(rounds_per_call)
        self.call_timeout = float(call_timeout)
        self.worker_timeout = float(worker_timeout)
        self.failures = []
        self.n_workers = 0
        self._workers = []
        self._last_checkpoint = None

    def run(
        self,
        job: dict,
        start: dict,
        n_rows: int,
        *,
        on_progress=None,
        on_checkpoint=None,
        select_kernel_at=None,
        calibration=None,
    ) -> dict:
        """Learn until row ``n_rows`` of the stream.

        ``job``: what every shard needs to read and learn (see :class:`KernelShard`). ``start``:
        ``{"arrays", "scalars"}`` (a fresh model's engine state) or
        ``{"checkpoint": DIR, "history": [...], "samples": [...]}`` (a checkpoint's mistake curve and
        model samples so far), either with ``"calibration"``: the
        :meth:`~.calibration.RoundCalibration.state` the job starts from. ``on_progress(progress)``
        is called after every coordinator call; ``on_checkpoint(state)`` must write a checkpoint of
        ``state`` (``arrays``, ``scalars``, ``history``, ``samples``, ``calibration``) and return
        its directory (used to recover). ``select_kernel_at``: instances after which only one kernel
        goes on (:class:`~.coordinator.Coordinator`). ``calibration``: the job's
        :class:`~.calibration.RoundCalibration` (None: none learnt). Returns ``{"arrays",
        "scalars", "history", "samples", "calibration", "timing", "failures"}``: the final engine
        state, mistake curve, model samples and calibration state.
        """
        self.job, self.failures, self._last_checkpoint = job, [], None  # (an engine may run several jobs)
        restore = start
        expected_workers = len(self._current_workers())
        if expected_workers == 0:
            raise RuntimeError("the cluster has no workers; start some (omkl cluster up --workers 2)")
        while True:
            try:
                return self._attempt(restore, n_rows, on_progress, on_checkpoint, select_kernel_at, calibration)
            except Exception as exc:  # noqa: BLE001 - sorted below: a lost worker, or an error of the job
                if not self._workers_changed():
                    raise  # the same workers are all there: a bad job (data, parameters), not a dead worker
                self.failures.append(f"{type(exc).__name__}: {exc}")
                restore = self._last_checkpoint or restore
                if len(self.failures) > self.max_retries:
                    where = restore.get("checkpoint", "the start (no checkpoint written yet)")
                    raise WorkerLost(
                        f"gave up after {len(self.failures)} worker failures (last: {self.failures[-1]}); "
                        f"the last good checkpoint is {where}: fix the cluster and rerun with --resume"
                    ) from exc
                self._wait_for_workers(expected_workers)

    # --- one attempt: actors from ``start`` until done or a failure -------------------------
    def _attempt(self, start, n_rows, on_progress, on_checkpoint, select_kernel_at, calibration):
        arrays, scalars, history = self._coordinator_start(start)
        samples = start.get("samples", [])
        if calibration is not None:  # where this attempt starts: the job's start or the last checkpoint
            calibration = calibration.with_state(start["calibration"])
        program = engine_program(self.job["kernel_pool"], arrays["kernel_ids"])
        workers = self._current_workers()
        if not workers:
            self._wait_for_workers(1)
            workers = self._current_workers()
        self._workers = workers
        self.n_workers = len(workers)
        n_shards = self.n_shards or len(workers)
        adapter = round_adapter(scalars)
        parts = adapter.partition(program, scalars, n_shards)
        shard_state = start if "checkpoint" in start else {"arrays": arrays, "scalars": scalars}
        futures, coord = [], None
        try:
            futures = [
                self.client.submit(
                    KernelShard,
                    self.job,
                    part,
                    shard_state,
                    actor=True,
                    workers=[workers[i % len(workers)]],
                    pure=False,
                )
                for i, part in enumerate(parts)
            ]
            shards = [f.result(timeout=self.call_timeout) for f in futures]
            # on shard 0's worker: the coordinator calls that shard directly
            futures.append(
                self.client.submit(
                    Coordinator,
                    [ShardAddress(f.key, workers[i % len(workers)]) for i, f in enumerate(futures)],
                    parts,
                    arrays,
                    scalars,
                    n_rows,
                    self.checkpoint_every,
                    history,
                    select_kernel_at,
                    round_ends=adapter.round_ends(scalars, program),
                    first_row=int(self.job.get("offset", 0)),
                    samples=samples,
                    calibration=calibration,
                    feed=Feed(*self.job["feed"]) if self.job.get("feed") else None,
                    actor=True,
                    workers=[workers[0]],
                    pure=False,
                )
            )
            coord = futures[-1].result(timeout=self.call_timeout)
            while True:
                progress = self._wait(coord.run_rounds(self.rounds_per_call))
                if on_progress is not None:
                    on_progress(progress)
                if progress["done"] or (progress["checkpoint_due"] and on_checkpoint is not None):
                    state = self._collect(coord, shards, scalars)
                    if progress["done"]:
                        return {
                            **state,
                            "timing": progress["timing"],
                            "failures": list(self.failures),
                            "n_shards": len(parts),
                        }
                    path = on_checkpoint(state)
                    self._last_checkpoint = {"checkpoint": str(path), **{key: state[key] for key in RESUMED}}
        except BaseException:
            if coord is not None:  # free what the abandoned attempt's coordinator still waits for
                with contextlib.suppress(Exception):
                    coord.abort().result(timeout=5)
            raise
        finally:
            for f in futures:
                f.release()

    def _coordinator_start(self, start):
        if "checkpoint" in start:
            from omkl_dist.storage.models import read_state

            arrays, meta = read_state(start["checkpoint"])
            return arrays, meta["engine"], start.get("history", [])
        return start["arrays"], start["scalars"], []

    def _collect(self, coord, shards, scalars) -> dict:
        """The whole model's state: the coordinator's weights and counters, plus the support vectors
        (every shard's copy of the pool is the same; the budget baselines' buffers are per shard)."""
        cstate = coord.state().result(timeout=self.call_timeout)
        scalars = {**scalars, "n_seen": cstate["n_seen"], "n_mistakes": cstate["n_mistakes"]}
        arrays, scalars = round_adapter(scalars).gather(
            cstate["arrays"], scalars, lambda i: shards[i].model_part().result(timeout=self.call_timeout), len(shards)
        )
        return {
            "arrays": arrays,
            "scalars": scalars,
            **{key: cstate[key] for key in RESUMED},
        }

    # --- failures ----------------------------------------------------------------------------
    def _current_workers(self) -> list[str]:
        """The workers the scheduler knows now (asked, not the client's periodically refreshed copy,
        which can still list a worker that has just died)."""
        return sorted(self.client.nthreads())

    def _wait(self, future):
        """The call's result; gives up early if a worker of this attempt leaves the cluster (an actor
        awaiting a dead actor is not always told, so the client watches the workers itself)."""
        deadline = time.monotonic() + self.call_timeout
        while True:
            try:
                return future.result(timeout=1.0)
            except TimeoutError:
                gone = set(self._workers) - set(self._current_workers())
                if gone:
                    raise WorkerLost(f"worker(s) {sorted(gone)} left the cluster during the job") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"a batch of rounds took more than {self.call_timeout:.0f} s") from None

    def _workers_changed(self) -> bool:
        """Whether a worker of the failed attempt is gone (a restarted one has a new address)."""
        time.sleep(1.0)  # let the scheduler notice a loss
        try:
            now = set(self._current_workers())
        except Exception:  # noqa: BLE001 - the scheduler itself is gone: the cluster is lost
            raise WorkerLost("lost the connection to the scheduler during the job") from None
        return not set(self._workers) <= now

    def _wait_for_workers(self, expected: int) -> None:
        """Give the nannies time to restart killed workers; go on with fewer if they don't come."""
        deadline = time.monotonic() + self.worker_timeout
        while time.monotonic() < deadline:
            n = len(self._current_workers())
            if n >= expected:
                return
            time.sleep(0.5)
        if len(self._current_workers()) == 0:
            raise WorkerLost(f"no workers came back within {self.worker_timeout:.0f} s")
