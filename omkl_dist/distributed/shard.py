"""KernelShard: one worker's part of a distributed online model (docs/design.md, "A cluster run").

A shard owns the *learning* of some kernels (a kernel-split round: it computes their decision
values and decides their updates) or the scoring of some rows (a row-split round; the lead shard
also runs the recurrence). What it keeps of the model and how it learns are the engine's round
adapter's (:mod:`.rounds`): with a shared support-vector store every shard keeps a copy of the whole
pool (every shard appends the same rows with the same coefficients, sent by the coordinator once
per round), so each kernel is evaluated with exactly the data layout and arithmetic of the
in-process engine and the result is the in-process result bit for bit, however the work is split;
with a buffer per kernel a shard holds only its kernels' buffers and nothing is exchanged but scores.

It reads its rows straight from the zarr store, in the job's order; feature data never pass
through the coordinator or the client.
"""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass

import numpy as np

from ..algorithms.labels import class_codes
from ..engine.protocol import engine_class
from ..kernels import make_pool
from ..preprocessing import Scaler
from ..scoring.program import compile_program
from ..scoring.rows import sqnorms
from .rounds import round_adapter

# how long the first shard of a row-split round waits for another shard's scores before giving up
SCORES_TIMEOUT = 600.0


def engine_program(kernel_pool: str, kernel_ids):
    """The compiled program of the kernels still in a model (``kernel_ids`` index the pool)."""
    pool = make_pool(kernel_pool)
    return compile_program(make_pool([pool[int(i)] for i in kernel_ids]))


@dataclass(frozen=True)
class ShardAddress:
    """Where a shard actor lives: what its coordinator is given in place of the actor's handle.

    A handle passed as a task's argument becomes the task's dependency: the coordinator's worker keeps
    it among its stored results, and the future it holds there keeps the shard's key wanted. On an
    in-process cluster that future is the caller's client's, so the key was never released and every
    job left a shard behind (its model copy and read-ahead thread; measured: one per job). A handle
    made by the coordinator lives as long as the coordinator.
    """

    key: str
    worker: str

    def actor(self):
        from distributed.actor import Actor

        return Actor(KernelShard, self.worker, self.key)


class KernelShard:
    """Learns kernels ``kernels`` (positions in the model's kernel list) over the job's stream.

    Parameters
    ----------
    job : dict
        ``data`` (dataset directory or URL), ``shuffle``, ``seed``, ``start`` and ``limit`` (the
        stream's first row and its end, or None), ``offset`` (rows the model had seen at the
        stream's first row: a warm start), ``kernel_pool`` (spec string), ``scaler``
        (:meth:`Scaler.to_dict`) and ``classes`` (the dataset's sorted internal labels: a
        multi-class model learns their indices, as the estimator codes them).
    kernels : sequence of int
    state : dict
        Where the model starts: ``{"checkpoint": DIR}`` (a saved model, read here) or
        ``{"arrays": ..., "scalars": ...}`` (an engine's :meth:`~omkl_dist.engine.protocol.Engine.state`).
    """

    def __init__(self, job: dict, kernels, state: dict):
        from omkl_dist.storage import open_stream  # storage is the shard's data source, not the algorithms'

        if "checkpoint" in state:
            from omkl_dist.storage.models import read_state

            arrays, meta = read_state(state["checkpoint"])
            scalars = meta["engine"]
        else:
            arrays, scalars = state["arrays"], state["scalars"]
        program = engine_program(job["kernel_pool"], arrays["kernel_ids"])
        kernels = np.asarray(kernels, dtype=np.int64)
        self.rounds = round_adapter(scalars)(engine_class(scalars).from_state(program, arrays, scalars), kernels)
        self.engine = self.rounds.engine  # what this shard keeps of the model
        self.act = kernels  # the model's kernels this shard learns (a part holding only its kernels learns all)
        self.kernel_pool = job["kernel_pool"]
        self.scaler = Scaler.from_dict(job["scaler"])
        # labels as the engine takes them: ±1 (binary model) or class indices (multi-class model; a
        # binary dataset's internal labels are ±1, e.g. for OM-2)
        self.classes = np.asarray(job["classes"]) if self.engine.n_classes > 1 else None
        stream = open_stream(
            job["data"], shuffle=job["shuffle"], seed=job["seed"], start=job.get("start", 0), stop=job["limit"]
        )
        # the engine counts rows over the model's life; a warm start's stream begins at row ``offset``
        offset = int(job.get("offset", 0))
        self.cursor = stream.cursor(self.engine.n_seen - offset)
        self._rows_read = self.engine.n_seen - offset
        self._last = None  # (X, ‖x‖²) of the last round, until the coordinator says which rows to keep
        self._labels = None  # the last round's labels (row-split rounds)
        self._ahead = None  # (n, future of the next round's rows), read while this shard would idle
        self._prepared = None  # the lead of row-split rounds: ((g, n), future of the next round's prepare)
        self._background = None

    def step(self, request: dict) -> dict:
        """One round: keep last round's support vectors, then learn the next ``n`` rows.

        ``request``: ``n``, ``w`` (the model's weights now), ``append`` (the last round's update or
        None), ``keep`` (the one kernel to keep from now on, or None: :meth:`apply`) and ``labels``
        (return the rows' labels). Returns this shard's
        kernels' decision values ``F`` (n × own), the rows they updated on with their
        coefficients, the compute time and the time spent reading rows and appending.
        """
        t_in = time.perf_counter()
        self.apply(request["append"], request.get("keep"))
        n = int(request["n"])
        X, y = self._read(n)
        t0, cpu0 = time.perf_counter(), time.thread_time()
        out = self.rounds.kernel_round(X, y, request["w"], self.act)
        xsq = out.pop("xsq", None)  # (a shared-pool engine: the round's rows may join the pool)
        self._last = (X, xsq) if xsq is not None else None
        out.update(seconds=time.perf_counter() - t0, io_seconds=t0 - t_in, cpu_seconds=time.thread_time() - cpu0)
        if request.get("labels"):
            out["y"] = y
        self._read_ahead(request)
        return out

    def _read(self, n):
        """The round's ``n`` rows, scaled (read ahead at the end of the last round, if it said so)."""
        if self._ahead is None:
            return self._take(n)
        (rows, future), self._ahead = self._ahead, None
        if rows != n:
            raise RuntimeError(f"read {rows} rows ahead for a round of {n}")
        return future.result()

    def _read_ahead(self, request):
        """Start reading the next round's rows (``request["next_n"]``, 0 or absent: none) in a
        thread: the shard has answered this round and its core would otherwise wait for the
        next request (while the first shard runs the recurrence, the coordinator the combiner)."""
        n = int(request.get("next_n") or 0)
        if n:
            self._ahead = (n, self._in_background(self._take, n))

    def _in_background(self, fn, *args) -> concurrent.futures.Future:
        """``fn(*args)`` in this shard's one background thread (tasks run in the order given)."""
        if self._background is None:
            self._background = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="omkl-shard")
        return self._background.submit(fn, *args)

    def _take(self, n):
        X, y = self.cursor.take(n)
        if len(y) != n:
            raise RuntimeError(
                f"the stream ended after {self._rows_read + len(y)} rows, the job expected "
                f"{self._rows_read + n}: was the dataset changed while the job ran?"
            )
        self._rows_read += n
        y = class_codes(y, self.classes, multiclass=True) if self.classes is not None else y
        return self.engine.rows(self.scaler.transform(X)), y.astype(np.float64)

    # --- row-split rounds (RowSplit adapters) -------------------------------------------------------
    def score(self, request: dict) -> dict:
        """Keep last round's support vectors, read the next ``n`` rows and score rows ``lo:hi`` of
        them with every kernel against the pool. Returns ``F`` ((hi-lo) × m) and the times."""
        t_in = time.perf_counter()
        self.apply(request["append"], request.get("keep"))
        n, lo, hi = int(request["n"]), int(request["lo"]), int(request["hi"])
        X, y = self._read(n)
        xsq = sqnorms(X)  # (the rows' squared norms, for a shared pool's append)
        self._last, self._labels = (X, xsq), y
        t0, cpu0 = time.perf_counter(), time.thread_time()
        r = self.rounds
        F = r.score_rows(X, xsq, lo, hi) if hi > lo else np.empty((0, r.score_width))
        seconds, cpu = time.perf_counter() - t0, time.thread_time() - cpu0
        self._read_ahead(request)
        return {"F": F, "seconds": seconds, "io_seconds": t0 - t_in, "cpu_seconds": cpu}

    def score_and_learn(self, request: dict, rest) -> dict:
        """The lead shard's part of a row-split round: :meth:`score` the round's first rows, then
        run the recurrence of every kernel over the whole round, the in-process recurrence on the
        same numbers, given the other shards' scores (``rest``: one
        :class:`concurrent.futures.Future` per other shard, in row order, giving its ``F``). With
        the adapter's early start (:meth:`RowSplit.early_start`) the recurrence starts on this
        shard's rows and goes on over the others' as they arrive; otherwise it needs every score
        first (:meth:`RowSplit.learn_scored`). This shard's engine holds the weights; returns them
        with the round's mistakes and update, the compute and reading times, and the time spent
        waiting for the other shards' scores; and the round's online outcome (``mistakes``, combined
        ``score``, per-kernel ``F``) with its labels ``y``, from which the coordinator learns the
        probability calibration."""
        part = self.score(request)
        t0, cpu0 = time.perf_counter(), time.thread_time()
        (X, xsq), y, r, e = self._last, self._labels, self.rounds, self.engine
        recurrence = r.early_start(X, xsq, y, self._prepared_for(e.n_seen, len(y)))
        if recurrence is not None:  # starts on this shard's rows while the others score theirs
            next_n = int(request.get("next_n") or 0)
            if next_n:  # computed while this shard waits for the others' scores, after the next rows are read
                g = e.n_seen + len(y)
                self._prepared = ((g, next_n), self._in_background(r.prepare, g, next_n))
            feed, finish = recurrence.feed, recurrence.result
        else:  # every score first
            scores = []
            feed, finish = scores.append, lambda: r.learn_scored(X, xsq, y, np.concatenate(scores))
        feed(part["F"])
        wait, ready = 0.0, time.perf_counter()
        for future in rest:
            t_wait = time.perf_counter()
            F = future.result(timeout=SCORES_TIMEOUT)
            wait += time.perf_counter() - t_wait
            feed(F)
        F, score, mistakes, coef = finish()
        e.n_seen += len(y)
        serial = time.thread_time() - cpu0  # the recurrence: the round's part no other shard can take
        return {  # (the per-row arrays stay in this process: the coordinator calls the lead directly)
            "mistakes": mistakes,
            "score": score,
            "F": F,
            "coef": coef,
            "y": y,
            "update": r.learned_update(coef),
            "arrays": r.combiner_arrays(),
            "seconds": part["seconds"] + time.perf_counter() - t0 - wait,
            "io_seconds": part["io_seconds"],
            "wait_seconds": wait,
            "ready_at": ready,
            "score_seconds": part["seconds"],
            "cpu_seconds": part["cpu_seconds"] + serial,
            "serial_cpu_seconds": serial,
            "early_start": recurrence is not None,
        }

    def _prepared_for(self, g, n):
        """The adapter's :meth:`RowSplit.prepare` of the round if computed ahead (else None)."""
        ahead, self._prepared = self._prepared, None
        return ahead[1].result() if ahead is not None and ahead[0] == (g, n) else None

    def apply(self, append, keep=None) -> None:
        """Apply the last round's update (:meth:`RoundAdapter.apply_update`, e.g. a shared pool's new
        support vectors); then, if ``keep`` is a kernel position, drop every other kernel
        (:meth:`SelectsKernel.keep_kernel`)."""
        if append is not None:
            if self._last is None:
                raise RuntimeError("no round to append support vectors from")
            X, xsq = self._last
            self.rounds.apply_update(X, xsq, append)
            self._last = None
        if keep is not None:
            self.rounds.keep_kernel(keep, engine_program(self.kernel_pool, self.engine.kernel_ids[[keep]]))
            self.act = np.array([0] if keep in self.act else [], dtype=np.int64)

    def model_part(self):
        """This shard's part of the whole model (:meth:`RoundAdapter.model_part`: the pool, or its
        kernels' buffers), once the last round is applied."""
        if self._last is not None:
            raise RuntimeError("the last round's support vectors are not applied yet")
        return self.rounds.model_part()
