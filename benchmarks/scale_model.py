"""The cost model behind ``make bench-scale``: a Dask job's wall time on W workers with W cores, from
the per-round costs the coordinator records (:func:`omkl_dist.distributed.coordinator.round_record`).

A round of a job costs

* ``serial``: work only one process can do -- the lead shard's recurrence in a row-split round (the
  kernels' weights couple the rows); and ``coordinator``, the coordinator's combining (its replay of
  the combiner in a kernel-split round);
* ``parallel``: the rest of the shards' compute (scoring rows against the pool, learning a shard's
  kernels), which W shards share; a kernel-split round has at most one shard per kernel, so it is
  shared by ``min(W, shards_max)``;
* ``io``: every shard reads the round's rows and applies the last round's update (replicated: it does
  not shrink with W);
* ``message``: requests, replies, scheduling, fitted as ``message0 + message1 * (W - 1)`` per round
  from the runs measured (the coordinator handles one request and one reply per worker).

plus ``setup``, the job's time outside its rounds (starting the shard actors, collecting the model),
so ``T(W) = setup + serial + parallel / min(W, shards_max) + coordinator + io + rounds * (message0 +
message1 * (W - 1))``
(Amdahl's law with a per-worker message cost), except where the lead's recurrence starts early
(``pipelined``: SPA, OMKC's sampled updates). There the lead runs its recurrence over each other
shard's rows while the later shards still score theirs, and the rows are shared in a geometric
chain (:mod:`omkl_dist.distributed.balance`: each range ``1 + lag`` times the one before, ``lag =
serial / parallel``) so that every shard's scores arrive as the recurrence reaches them; the lead's
core does all the serial work plus the first range's scoring, and the compute takes ``serial +
parallel * lag / ((1 + lag) ** W - 1)`` (``serial + parallel / W`` as ``lag`` goes to 0; on two
workers the balancing the coordinator has always done). Compute is thread CPU
time, so what the machine runs beside the job does not enter the fit; a measured run is predicted at
its own ``stretch`` (its shards' compute in wall time over CPU time: the share of a core they had),
the projection with a core per worker (stretch 1). The terms measured in wall time (coordinator, I/O,
messages, setup) are taken as having run at the same share of a core (divided by the run's stretch):
on a busy machine an assumption, which the validation checks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

PROJECTED = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class RunCosts:
    """One measured run's costs summed over its rounds (seconds)."""

    workers: int
    wall: float
    rounds: int
    serial: float
    coordinator: float
    parallel: float
    io: float
    message: float
    setup: float
    stretch: float = 1.0
    early_start: bool = False

    @classmethod
    def of(cls, workers: int, wall: float, per_round: list[dict]) -> RunCosts:
        """Sum a run's :func:`~omkl_dist.distributed.coordinator.round_record` list: serial = the
        lead's serial part (CPU time); coordinator = the coordinator's (wall time); parallel = every
        shard's compute minus the serial part; io = the shards' mean reading and applying (each
        reads every row); setup = the job's wall time outside its rounds (starting the shards,
        collecting the model); early_start = the lead's recurrence started early in every round that
        had one; stretch = the shards' compute in wall time over their thread CPU
        time (1: each had its core; 3: a third of one, the machine busy with other work). The
        wall-time terms (coordinator, io, message, setup) are divided by the stretch: the processes
        had that share of a core for them too, so they are kept as a core's time."""
        serial = sum(r["serial"] for r in per_round)
        coordinator = sum(r["coordinator"] for r in per_round)
        parallel = sum(sum(r["compute"]) - r["serial"] for r in per_round)
        io = sum(float(np.mean(r["io"])) for r in per_round)
        message = sum(r["message"] for r in per_round)
        setup = max(wall - sum(r["wall"] for r in per_round), 0.0)
        cpu = sum(sum(r["compute"]) for r in per_round)
        s = max(sum(sum(r["compute_wall"]) for r in per_round) / cpu if cpu > 0 else 1.0, 1.0)
        # the wall-time terms as a core's time: they ran with the compute's share of a core
        timed = (coordinator / s, parallel, io / s, message / s, setup / s)
        early = all(r.get("early_start", False) for r in per_round if r["serial"] > 0) and serial > 0
        return cls(int(workers), float(wall), len(per_round), serial, *timed, s, early)


@dataclass(frozen=True)
class CostModel:
    """``T(W)`` of one job (see the module docstring); :meth:`fit` it on measured runs."""

    serial: float
    coordinator: float
    parallel: float
    io: float
    rounds: int
    message0: float
    message1: float
    setup: float = 0.0
    shards_max: int | None = None  # a kernel-split job: its kernels (None: rows, any number of shards)
    pipelined: bool = False  # the lead's recurrence starts early (see the module docstring)

    @classmethod
    def fit(cls, runs: list[RunCosts], shards_max: int | None = None) -> CostModel:
        """The work (serial, parallel, io) is the runs' mean: it does not depend on W. The message
        cost per round is a least-squares line in W - 1 through the runs' mean message time per round
        (one run, or runs of one W: a flat line at their mean). Pipelined if every run's recurrence
        started early."""
        if not runs:
            raise ValueError("fit needs at least one measured run")
        mean = {
            key: float(np.mean([getattr(r, key) for r in runs]))
            for key in ("serial", "coordinator", "parallel", "io", "setup")
        }
        x = np.array([r.workers - 1 for r in runs], dtype=float)
        per_round = np.array([r.message / max(r.rounds, 1) for r in runs])
        if np.ptp(x) == 0:
            message0, message1 = float(per_round.mean()), 0.0
        else:
            message1, message0 = (float(v) for v in np.polyfit(x, per_round, 1))
            if message1 < 0:  # fewer messages cost less on more workers: noise, not a trend
                message0, message1 = float(per_round.mean()), 0.0
        rounds = int(round(np.mean([r.rounds for r in runs])))
        return cls(
            mean["serial"],
            mean["coordinator"],
            mean["parallel"],
            mean["io"],
            rounds,
            max(message0, 0.0),
            message1,
            mean["setup"],
            shards_max,
            all(r.early_start for r in runs),
        )

    def shards(self, workers: int) -> int:
        """Shards sharing the parallel work on ``workers`` workers."""
        return workers if self.shards_max is None else min(workers, self.shards_max)

    def predict(self, workers: int, stretch: float = 1.0) -> float:
        """Wall seconds on ``workers`` workers, one core each; ``stretch``: each shard's compute takes
        this many times its CPU time (a busy machine's share of a core: :attr:`RunCosts.stretch`)."""
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        messages = self.rounds * (self.message0 + self.message1 * (workers - 1))
        return stretch * (self.setup + self.compute(workers) + self.coordinator + self.io + messages)

    def compute(self, workers: int) -> float:
        """The rounds' compute on ``workers`` workers: the serial part plus the parallel part's share
        on the lead's core (a geometric chain's first range if pipelined, else an equal share)."""
        shards = self.shards(workers)
        if not self.pipelined or self.serial <= 0 or self.parallel <= 0 or shards == 1:
            return self.serial + self.parallel / shards
        lag = self.serial / self.parallel
        return self.serial + self.parallel * lag / ((1.0 + lag) ** shards - 1.0)

    def speedup(self, workers: int) -> float:
        """``T(1) / T(workers)``."""
        return self.predict(1) / self.predict(workers)

    def serial_fraction(self) -> float:
        """The share of ``T(1)`` that more workers do not shrink (Amdahl's f): everything but the
        shards' parallel work (for a kernel-split job, what its kernel count caps counts as parallel)."""
        return 1.0 - self.parallel / self.predict(1)

    def compute_serial_fraction(self) -> float:
        """The serial share of the compute alone (the lead's and the coordinator's):
        ``(serial + coordinator) / (serial + coordinator + parallel)``."""
        serial = self.serial + self.coordinator
        return serial / max(serial + self.parallel, 1e-12)

    def to_dict(self) -> dict:
        return asdict(self)


def validate(model: CostModel, runs: list[RunCosts]) -> list[dict]:
    """Each measured run beside the model's prediction for it: ``workers``, ``measured``,
    ``predicted`` (seconds, at the run's measured :attr:`RunCosts.stretch`: the cores it had),
    ``error`` (predicted / measured - 1), ``stretch`` and ``dedicated`` (the prediction with a core
    per worker)."""
    return [
        {
            "workers": r.workers,
            "measured": r.wall,
            "predicted": model.predict(r.workers, r.stretch),
            "error": model.predict(r.workers, r.stretch) / r.wall - 1.0,
            "stretch": r.stretch,
            "dedicated": model.predict(r.workers),
        }
        for r in sorted(runs, key=lambda r: r.workers)
    ]


def projection(model: CostModel, workers=PROJECTED) -> list[dict]:
    """``workers``, predicted ``seconds`` and ``speedup`` over one worker, for each count."""
    return [{"workers": w, "seconds": model.predict(w), "speedup": model.speedup(w)} for w in workers]
