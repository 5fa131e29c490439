"""Coordinator: the model's weights, the round schedule, metrics and checkpoint timing
(docs/design.md, "A cluster run").

Per round (a segment of the stream where the in-process engine's segments end: the adapter's
``round_ends``) the coordinator sends every shard one request (the weights, the previous round's
update) and gets one reply. In a kernel-split round each shard learns its kernels and replies
their decision values and updates; the coordinator then replays the combiner over the round
(the adapter's ``replay_round``), which gives the in-process engine's weights, scores and mistakes
bit for bit -- piece by piece (the adapter's ``pieces``: the budget and feature engines' rounds span
several blocks, each learnt, replayed, calibrated and sampled as the in-process call over it).
The coordinator calls the engine's round adapter (:mod:`.rounds`) and never branches on the kind
of engine or rule. Either kind of round leaves the round's online outcome (mistakes,
scores) here, from which the coordinator keeps the mistake curve and learns the probability
calibration (:mod:`.calibration`).

Jobs whose kernels are coupled within a round (:func:`.rounds.splits_rows`) have row-split rounds
instead. Every shard scores a range of the round's rows with all kernels, and the first shard (the
lead) -- on the coordinator's worker, called directly -- runs the recurrence of all kernels over
the round, the in-process code on the same numbers; with the adapter's early start it begins on
its own rows while the others still score theirs. From round to round the coordinator shares the
rows so that each shard's scores arrive about when the lead is ready for them (:mod:`.balance`).

Kernel selection (a model that learns every kernel over a prefix of the stream, then keeps one):
a round ends where the prefix ends, the adapter selects the kernel, and every shard keeps only it
from the next request on.

Shards may be plain objects (tests) or Dask actor handles: a call's result is awaited when it is
awaitable.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import time

import numpy as np

from ..evaluation.curve import MistakeCurve
from .balance import RowBalance
from .rounds import round_adapter
from .shard import ShardAddress


async def _result(value):
    return await value if inspect.isawaitable(value) else value


async def _relay(call, future: concurrent.futures.Future):
    """Await a shard's ``score`` reply and pass its ``F`` to the first shard's thread (or the error,
    so that thread never waits for a reply that will not come)."""
    try:
        out = await call
    except BaseException as exc:
        future.set_exception(exc)
        raise
    out["arrived_at"] = time.perf_counter()
    future.set_result(out["F"])
    return out


def _in_process(shard):
    """The shard object if it lives in this process: a plain object, or an actor on this worker."""
    from distributed import get_worker
    from distributed.actor import Actor

    if not isinstance(shard, Actor):
        return shard
    try:
        worker = get_worker()
    except ValueError:
        return None
    return worker.state.actors.get(shard.key) if shard._address == worker.address else None


def round_record(rows: int, wall: float, coordinator: float, outs, split_rows: bool) -> dict:
    """One round's costs, in seconds: ``wall`` (the coordinator's view, request to combined),
    ``coordinator`` (its own combining work), per shard ``compute`` (thread CPU time: the work,
    whatever else the machine runs), ``compute_wall`` (the same in wall time: longer when the shard
    shares its core) and ``io`` (reading rows and applying the last round's update,
    wall time), the lead's ``serial`` part (a row-split round's recurrence, thread CPU time; 0 in a
    kernel-split round, whose serial part is the coordinator's), its ``wait`` for the others' scores,
    ``early_start`` (whether its recurrence began on its own rows while the others scored theirs:
    :mod:`.balance`), and ``message``: the wall time no shard and no combining accounts for (requests, replies,
    scheduling), the round's wall time minus the coordinator's and the critical path's (the lead's
    scoring, recurrence and wait in a row-split round; the slowest shard in a kernel-split one)."""
    if split_rows:
        lead = outs[0]
        critical = lead["seconds"] + lead["io_seconds"] + lead["wait_seconds"]
    else:
        critical = max(out["seconds"] + out["io_seconds"] for out in outs)
    return {
        "rows": int(rows),
        "wall": wall,
        "coordinator": coordinator,
        "compute": [out["cpu_seconds"] for out in outs],
        "compute_wall": [out["seconds"] for out in outs],
        "io": [out["io_seconds"] for out in outs],
        "serial": outs[0]["serial_cpu_seconds"] if split_rows else 0.0,
        "early_start": bool(split_rows and outs[0].get("early_start")),
        "wait": outs[0]["wait_seconds"] if split_rows else 0.0,
        "message": max(wall - coordinator - critical, 0.0),
    }


class Coordinator:
    """Drives rounds over the shards and keeps the combiner state.

    Parameters
    ----------
    shards : list
        Objects with ``step(request)`` and ``apply(append)``, or the :class:`~.shard.ShardAddress` of
        shard actors.
    parts : list of int arrays
        The kernels each shard owns (positions in the model's kernel list).
    arrays, scalars : dict
        The model's engine state (:meth:`~omkl_dist.engine.protocol.Engine.state`; the coordinator
        keeps its round adapter's ``COMBINER_ARRAYS`` and replays the combiner with its ``replay_round``).
    n_rows : int
        Length of the stream; the job ends there.
    checkpoint_every : int
        Rounds between checkpoints (``run_rounds`` stops at each); 0 = never.
    history : list, optional
        ``(instances seen, mistakes)`` at the points of the job's mistake curve so far (a resumed
        job's; :mod:`omkl_dist.evaluation.curve`).
    select_kernel_at : int or None
        After this many instances only one kernel goes on (the adapter's
        :meth:`~.rounds.SelectsKernel.select_kernel`), as the estimator does in-process.
    round_ends : Rounds
        Where rounds end: the in-process engine's segments (the adapter's ``round_ends``).
    first_row : int
        Instances the model had seen when the job began (a retrain continues a fitted model): the
        mistake curve's points are spaced over the job's rows after it, as in-process.
    samples : list, optional
        ``(rows seen, support vectors per kernel, weight shares)`` so far (a resumed job's): at the
        curve's points for jobs whose model the adapter reads inside a round
        (:meth:`~.rounds.RoundAdapter.samples_inside`; not with kernel selection), else where an
        in-process run's ``partial_fit`` calls end (``feed``), as its trace reads the model.
    feed : Feed, optional
        Where the in-process run's ``partial_fit`` calls end (the estimator's ``feed()``, a
        :class:`~omkl_dist.engine.local.Feed`): a model not read inside a round is read where a
        call would end, and at the job's end. None: at no round's end (a coordinator driven
        without an estimator).
    calibration : RoundCalibration, optional
        The model's probability calibration where the job starts (:mod:`.calibration`): it learns
        from every round's outcome, in the in-process run's batches. None: no calibration is
        learnt (a coordinator driven without an estimator).
    """

    def __init__(
        self,
        shards,
        parts,
        arrays: dict,
        scalars: dict,
        n_rows: int,
        checkpoint_every: int = 0,
        history=None,
        select_kernel_at=None,
        *,
        round_ends,
        first_row: int = 0,
        samples=None,
        calibration=None,
        feed=None,
    ):
        self.shards = [shard.actor() if isinstance(shard, ShardAddress) else shard for shard in shards]
        self.adapter = round_adapter(scalars)  # what the combiner owns, how it is replayed
        # row-split rounds: every shard scores part of the rows with all kernels, the first shard runs
        # the recurrence; else each shard learns its kernels (``parts``) and the combiner is replayed here
        self.split_rows, self.round_ends = self.adapter.SPLITS_ROWS, round_ends
        self._lead = _in_process(self.shards[0])
        if self.split_rows and self._lead is None:
            raise ValueError("row-split rounds need the first shard in the coordinator's process (same worker)")
        self.parts = [np.asarray(p, dtype=np.int64) for p in parts]
        self.scalars = dict(scalars)
        # the combiner's state: what the coordinator owns of the engine's (a model saved before OM-2
        # has no ‖θ_j‖²: zeros)
        self.combiner = {
            name: np.zeros(len(arrays["w"])) if name == "sqnorm" and name not in arrays else np.array(arrays[name])
            for name in self.adapter.COMBINER_ARRAYS
        }
        self.n_seen, self.n_mistakes = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        self.n_rows, self.checkpoint_every = int(n_rows), int(checkpoint_every)
        self.history = [tuple(h) for h in (history or [])]
        self.calibration = calibration
        self.curve = MistakeCurve.over(self.n_rows - int(first_row), first=int(first_row))
        self.m = len(self.combiner["w"])
        self.select_kernel_at = select_kernel_at if select_kernel_at is not None and self.m > 1 else None
        # the model read where the curve has its points, as the in-process trace reads it
        # (not a model that keeps one kernel after a prefix, even resumed after it: as in-process)
        self.sampling = self.adapter.samples_inside(scalars) and select_kernel_at is None
        # else the model read where the in-process run's partial_fit calls end
        self.feed = None if self.sampling else feed
        self.samples = [tuple(s) for s in (samples or [])]
        self.n_support = self.adapter.support_counts(arrays) if self.sampling or self.feed else None
        self.keep = None  # the kernel position every shard must keep, sent with the next request
        self.pending = None
        self._awaited = []  # the scores the first shard's thread waits for in a row-split round
        self.balance = RowBalance(len(self.shards))  # how a row-split round's rows are shared
        self.rounds = 0
        self.timing = {
            "rounds": 0,
            "round_s": 0.0,
            "combine_s": 0.0,
            "shard_s": [0.0] * len(self.shards),
            "shard_io_s": [0.0] * len(self.shards),
            "slowest_shard_s": 0.0,
            "lead_wait_s": 0.0,
            "per_round": [],  # one :func:`round_record` per round (what a cost model of the job reads)
        }

    # --- the round loop ----------------------------------------------------------------------
    async def run_rounds(self, max_rounds: int) -> dict:
        """Run up to ``max_rounds`` rounds (stopping early at the end of the stream or when a
        checkpoint is due), then have every shard apply the last round; returns :meth:`progress`."""
        due = False
        for _ in range(int(max_rounds)):
            if self.n_seen >= self.n_rows:
                break
            await self._round()
            if self.checkpoint_every and self.rounds % self.checkpoint_every == 0:
                due = True
                break
        await self._flush()
        return {**self.progress(), "checkpoint_due": due}

    async def _round(self):
        t_start = time.perf_counter()
        g = self.n_seen
        n = self._round_size(g)
        next_n = self._round_size(g + n) if g + n < self.n_rows else 0  # the shards read those rows ahead
        if self.split_rows:
            t_combine, outs = await self._round_rows(n, next_n)
        else:
            t_combine, outs = await self._round_kernels(n, next_n)
        self.rounds += 1
        now = time.perf_counter()
        self.timing["per_round"].append(round_record(n, now - t_start, now - t_combine, outs, self.split_rows))
        self.timing["combine_s"] += now - t_combine
        self.timing["round_s"] += now - t_start
        self.timing["rounds"] += 1

    def _take(self, start, outcome, y, outs) -> None:
        """Take the outcome of the rows from ``n_seen`` on (a row-split round, or a piece of a
        kernel-split one): the model's samples, support counts, calibration and mistake curve, as
        the in-process run's call over those rows leaves them. ``start``: :meth:`_model_now` before
        the rows (None: the model is not read inside them)."""
        g, mistakes = self.n_seen, outcome["mistakes"]
        if start is not None:
            self._sample(g, start, outcome, y)
        if self.n_support is not None:
            self.n_support = self.adapter.support_after(self.n_support, outcome, self.parts, outs)
        if self.calibration is not None:  # the weights after the rows: the in-process batch's end
            self.calibration.add(g, outcome, y, self.combiner["w"])
        rows, counts = self.curve.points(mistakes, self.n_seen, self.n_mistakes)
        self.history.extend(zip(rows.tolist(), counts.tolist()))
        self.n_seen += len(y)
        self.n_mistakes += int(mistakes.sum())
        if self.select_kernel_at is not None and self.n_seen == self.select_kernel_at:
            self._select_kernel()
        if self.feed is not None and (self.feed.ends_at(self.n_seen) or self.n_seen == self.n_rows):
            self._sample_end()

    def _model_now(self) -> dict:
        """What :meth:`_sample` starts a round from (copies: the round changes the weights)."""
        return {"w": self.combiner["w"].copy(), "logw": self.combiner["logw"].copy(), "n_support": self.n_support}

    def _sample(self, g, start, outcome, y) -> None:
        """The model at the curve's points inside the round from row ``g`` (the adapter's
        :meth:`~.rounds.RoundAdapter.samples`), as the in-process engine reads it."""
        rows = self.curve.rows(g, len(y))
        if len(rows):
            support, weights = self.adapter.samples(self.scalars, start, outcome, y, rows - g - 1)
            self.samples.extend(zip(rows.tolist(), support.tolist(), weights.tolist()))

    def _sample_end(self) -> None:
        """The model where an in-process ``partial_fit`` call ends (this round's end), as the
        in-process trace reads the estimator then: its support vectors per kernel and weight shares
        (the adapter's :meth:`~.rounds.RoundAdapter.weight_shares` of the combiner)."""
        weights = self.adapter.weight_shares(self.combiner, self.scalars)
        self.samples.append((self.n_seen, self.n_support.tolist(), weights.tolist()))

    def _round_size(self, g):
        """Rows of the round starting at instance g: the in-process segment."""
        n = self.round_ends.length(g, self.n_rows - g)
        if self.select_kernel_at is not None and g < self.select_kernel_at:
            n = min(n, self.select_kernel_at - g)
        return n

    async def _round_kernels(self, n, next_n):
        """Every shard learns its kernels over the round; the combiner is replayed here, piece by
        piece (the adapter's ``pieces``), each taken as the in-process call over it."""
        g, w = self.n_seen, self.combiner["w"].copy()
        calls = [
            self._call(
                i,
                "step",
                {"n": n, "w": w, "append": self.pending, "labels": i == 0, "keep": self.keep, "next_n": next_n},
            )
            for i in range(len(self.shards))
        ]
        self.keep = None
        outs = await asyncio.gather(*calls)
        t_combine = time.perf_counter()
        self._time_shards(outs)
        y = outs[0]["y"]
        for index, (lo, hi) in enumerate(self.adapter.pieces(self.scalars, g, n)):
            start = self._model_now() if self.sampling else None
            piece = [self.adapter.piece_of(out, index, lo, hi) for out in outs]
            outcome, self.pending = self.adapter.replay_round(
                self.combiner, self.scalars, y[lo:hi], self.parts, piece, g + lo
            )
            self._take(start, outcome, y[lo:hi], piece)
        return t_combine, outs

    async def _round_rows(self, n, next_n):
        """Every shard scores a range of the round's rows with all kernels; the first shard (in
        this process) runs the recurrence over the whole round, starting on its own rows while
        the others' are still being scored (it holds the weights: they are copied here)."""
        start = self._model_now() if self.sampling else None
        ranges = self.balance.ranges(n)
        requests = [
            {"n": n, "lo": lo, "hi": hi, "append": self.pending, "keep": self.keep, "next_n": next_n}
            for lo, hi in ranges
        ]
        self.keep = None
        scores = [concurrent.futures.Future() for _ in requests[1:]]  # handed to the first shard's thread
        self._awaited = scores
        lead = self._call(0, "score_and_learn", requests[0], scores)  # started before the others' replies
        others = [_relay(self._call(i, "score", request), scores[i - 1]) for i, request in enumerate(requests) if i]
        outs = await asyncio.gather(lead, *others)
        t_combine = time.perf_counter()
        learned = outs[0]
        self.timing["lead_wait_s"] += learned["wait_seconds"]
        self._time_shards(outs)
        self.balance.update(ranges, outs)
        self.combiner.update(learned["arrays"])
        self.pending = learned["update"]
        self._take(start, learned, learned["y"], outs)
        return t_combine, outs

    def _call(self, i, method, *args):
        """Shard ``i``'s method, awaitable. The shard on this coordinator's own worker is called
        directly (in a thread: its work releases the GIL), skipping an actor round trip."""
        if i == 0 and self._lead is not None:
            return asyncio.get_running_loop().run_in_executor(None, getattr(self._lead, method), *args)
        return _result(getattr(self.shards[i], method)(*args))

    def _time_shards(self, outs):
        for i, out in enumerate(outs):
            self.timing["shard_s"][i] += out["seconds"]
            self.timing["shard_io_s"][i] += out["io_seconds"]
        self.timing["slowest_shard_s"] += max(out["seconds"] + out["io_seconds"] for out in outs)

    def _select_kernel(self):
        """The end of the prefix over which every kernel learns: only the adapter's choice goes on."""
        chosen = self.adapter.select_kernel(self.combiner)
        self.combiner = {name: value[[chosen]].copy() for name, value in self.combiner.items()}
        if self.n_support is not None:
            self.n_support = self.n_support[[chosen]]
        self.parts = [np.array([0] if chosen in part else [], dtype=np.int64) for part in self.parts]
        self.m, self.keep, self.select_kernel_at = 1, chosen, None

    async def _flush(self):
        if self.pending is not None:
            pending, self.pending, keep, self.keep = self.pending, None, self.keep, None
            await asyncio.gather(*(_result(shard.apply(pending, keep)) for shard in self.shards))

    def abort(self) -> None:
        """The job gave this attempt up (a worker is gone): the first shard's thread stops waiting
        for scores that will not come (else it would wait out ``SCORES_TIMEOUT`` holding a thread)."""
        for future in self._awaited:
            if not future.done():
                future.set_exception(RuntimeError("the job's attempt was abandoned (a worker left)"))

    # --- reporting ---------------------------------------------------------------------------
    def progress(self) -> dict:
        return {
            "n_seen": self.n_seen,
            "n_mistakes": self.n_mistakes,
            "n_rows": self.n_rows,
            "done": self.n_seen >= self.n_rows,
            "timing": dict(self.timing),
        }

    def state(self) -> dict:
        """The combiner state (arrays), counters, mistake curve and calibration
        (:meth:`RoundCalibration.state`, or None), for a checkpoint or the final model."""
        if self.pending is not None:
            raise RuntimeError("state() between rounds only (the last round is not applied yet)")
        return {
            "arrays": {name: value.copy() for name, value in self.combiner.items()},
            "n_seen": self.n_seen,
            "n_mistakes": self.n_mistakes,
            "history": list(self.history),
            "samples": list(self.samples),
            "calibration": None if self.calibration is None else self.calibration.state(),
        }
