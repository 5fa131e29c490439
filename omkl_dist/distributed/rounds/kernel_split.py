"""Kernel-split rounds (:class:`~.protocol.KernelSplit`): each shard learns its kernels over the
round, the coordinator replays the combiner over their decision values.

:class:`PoolKernelSplit` for the shared-pool engine's deterministic binary rules (kernels learn
apart within a round), :class:`BudgetKernelSplit` for the budget engine (a buffer per kernel).

A round is made of pieces (:meth:`~.protocol.KernelSplit.pieces`): what the in-process run learns in
one call. The shared pool's round is one piece (one block: every shard appends the rows kept before
the next); the budget and feature engines' kernels need nothing from each other or from the
combiner, so their rounds span several blocks, each a piece the shards learn and the coordinator
replays, calibrates and samples as the in-process run's rows of that block (its calls end at block
ends, :meth:`~omkl_dist.algorithms.base.OnlineKernelClassifier.feed`): one request and one reply per
shard for up to ``ROUND_BLOCKS`` blocks (a pass over 1M rows: ~70 rounds instead of ~980).
"""

from __future__ import annotations

import numpy as np

from ...combiners.codes import STOCHASTIC
from ...combiners.hedge_loss import combine
from ...engine.hyper import OMKCHyper, omkc_params
from ...engine.local import Rounds, segmenting
from ...engine.protocol import Rule
from ...engine.records import HedgeState
from ...randomness import uniforms
from ...scoring.rows import sqnorms
from ..partition import partition_kernels
from .omkc_replay import omkc_combine
from .shared_pool import SharedPool

# the budget and feature engines' rounds: at most this many blocks, and at most ROUND_VALUES decision
# values (rows x kernels x classes: the shards' replies, 8 MB) -- the first rounds 1, 1, 2, 4, ... blocks
ROUND_BLOCKS, ROUND_VALUES = 16, 2**20


def block_pieces(g: int, n: int, block: int) -> list[tuple[int, int]]:
    """The rows ``g .. g + n`` cut where blocks end: ``(lo, hi)`` offsets from ``g``."""
    cuts = [0]
    while cuts[-1] < n:
        cuts.append(min(n, cuts[-1] + block - (g + cuts[-1]) % block))
    return list(zip(cuts[:-1], cuts[1:]))


class PoolKernelSplit(SharedPool):
    """The shared-pool engine's kernel-split rounds: a shard runs the in-process segment for its
    kernels, then appends the rows some kernel kept (with every shard's coefficients)."""

    SPLITS_ROWS = False

    @staticmethod
    def takes(scalars: dict) -> bool:
        """Whatever a row split does not take (:meth:`.row_split.PoolRowSplit.takes`)."""
        return True

    @staticmethod
    def partition(program, scalars: dict, n_shards: int) -> list[np.ndarray]:
        """Runs of kernels in evaluation order (:func:`~..partition.partition_kernels`)."""
        return partition_kernels(program, Rule(scalars["rule"]), n_shards)

    def kernel_round(self, X, y, w, act) -> dict:
        """Learn kernels ``act`` over the round with the weights ``w``: their decision values
        ``F``, the rows they updated on (``rows``, ``coef``) and ``xsq`` (to append those rows)."""
        e = self.engine
        n, m = len(y), e.program.m
        X = e.rows(X)
        xsq = sqnorms(X)
        e.w[:] = w
        if len(act):
            F, _, _, coef = e.run_segment(X, xsq, y, act=act)
        else:  # owns no kernel any more (one kernel kept, another shard's): only keeps its pool copy
            F, coef = np.empty((n, m)), np.zeros((n, m))
        e.n_seen += n
        own = coef[:, act]
        rows = np.flatnonzero(np.any(own != 0.0, axis=1))
        return {"F": np.ascontiguousarray(F[:, act]), "rows": rows, "coef": own[rows], "xsq": xsq}

    @staticmethod
    def pieces(scalars: dict, g: int, n: int) -> list[tuple[int, int]]:
        """One: a round is one block (:meth:`round_ends`)."""
        return [(0, n)]

    @staticmethod
    def piece_of(out: dict, index: int, lo: int, hi: int) -> dict:
        """The reply itself (a round is one piece)."""
        return out

    @staticmethod
    def replay_round(combiner: dict, scalars: dict, y, parts, outs, g):
        """:func:`.omkc_replay.omkc_combine` over the shards' ``F`` and update flags: the round's
        outcome (``mistakes``, combined ``score``, ``F``), and the rows some kernel kept (with their
        coefficients), what every shard appends next."""
        n, m = len(y), len(combiner["w"])
        F, coef = np.empty((n, m)), np.zeros((n, m))
        for part, out in zip(parts, outs):
            F[:, part] = out["F"]
            coef[np.ix_(out["rows"], part)] = out["coef"]
        rule, block_size = int(scalars["rule"]), int(scalars["block_size"])
        U = (
            uniforms(int(scalars["seed"]), g, g + n, combiner["kernel_ids"], block_size)
            if rule in STOCHASTIC
            else np.empty((n, m))
        )
        state = HedgeState(np.empty(0), combiner["w"], combiner["wsync"], combiner["kernel_mistakes"])
        hyper = OMKCHyper.from_scalars(scalars)
        params = omkc_params(rule, g, block_size, bool(scalars["block_sync"]), hyper)
        score, mistakes = omkc_combine(y, F, coef != 0.0, U, state, params)
        kept = np.flatnonzero(np.any(coef != 0.0, axis=1))
        return {"mistakes": mistakes, "score": score, "F": F, "coef": coef}, (kept, coef[kept])


class BudgetKernelSplit:
    """The budget engine's rounds, and the explicit-feature engines' (FOGD, NOGD: the same two
    halves): a shard keeps only its kernels' state and learns them; only scores and losses are
    exchanged (nothing to apply between rounds)."""

    COMBINER_ARRAYS = ("w", "logw", "kernel_ids")  # the shards count each kernel's mistakes themselves
    SPLITS_ROWS = False

    def __init__(self, engine, positions):
        self.engine = engine.subset(positions)

    @staticmethod
    def takes(scalars: dict) -> bool:
        """Always: a kernel's buffer and learner are independent of the others'."""
        return True

    @staticmethod
    def round_ends(scalars: dict, program):
        """Whole blocks, more as the stream goes on (a round from instance g spans g // B blocks, so
        a short job reports early), at most ``ROUND_BLOCKS`` of them and ``ROUND_VALUES`` decision
        values: the kernels read nothing of each other's or of the weights, so a round is only how
        often the shards report (each block is one of its :meth:`pieces`)."""
        block = int(scalars["block_size"])
        values = block * program.m * int(scalars.get("n_classes", 1))
        window = block * min(ROUND_BLOCKS, max(1, ROUND_VALUES // values))
        return Rounds(block, window, window, growth=1)

    @staticmethod
    def pieces(scalars: dict, g: int, n: int) -> list[tuple[int, int]]:
        """The round's blocks (the in-process run's calls end at block ends, wherever the job started)."""
        return block_pieces(g, n, int(scalars["block_size"]))

    @staticmethod
    def piece_of(out: dict, index: int, lo: int, hi: int) -> dict:
        """A shard's reply for the round's piece ``index`` (rows ``lo:hi``): its decision values,
        losses and support vectors per kernel after the piece."""
        return {"F": out["F"][lo:hi], "loss": out["loss"][lo:hi], "n_support": out["n_support"][index]}

    @staticmethod
    def partition(program, scalars: dict, n_shards: int) -> list[np.ndarray]:
        """Runs of kernels (:func:`~..partition.partition_kernels`)."""
        return partition_kernels(program, None, n_shards)

    def kernel_round(self, X, y, w, act) -> dict:
        """Learn this part's kernels over the round, block by block, where the in-process run's calls
        may end (:meth:`BudgetEngine.kernel_step`; the combiner's weights ``w`` are the coordinator's
        business, ``act`` is every kernel of the part): ``F`` and ``loss`` of every row, and the
        support vectors per kernel after each of the round's :meth:`pieces` (a row each)."""
        e = self.engine
        steps, support = [], []
        for lo, hi in block_pieces(e.n_seen, len(y), e.block_size):
            steps.append(e.kernel_step(X[lo:hi], y[lo:hi], e.n_seen))
            support.append(e.n_support())
        return {
            "F": np.concatenate([step["F"] for step in steps]),
            "loss": np.concatenate([step["loss"] for step in steps]),
            "n_support": np.array(support),
        }

    # --- the model read by the trace at a round's end ----------------------------------------
    @staticmethod
    def samples_inside(scalars: dict) -> bool:
        """False: a kernel's buffer lives on its shard (the trace reads no model inside a round)."""
        return False

    @staticmethod
    def support_counts(arrays: dict):
        """Support vectors per kernel of a whole state: its buffers' fill (none for FOGD, whose
        kernels keep a weight vector ``W`` over random features, no buffer)."""
        if "n_used" not in arrays:
            return np.zeros(len(arrays["W"]), dtype=np.int64)
        return np.array(arrays["n_used"], dtype=np.int64)

    @staticmethod
    def support_after(support, outcome: dict, parts, outs):
        """Support vectors per kernel after the round: each shard's buffers' fill (its reply's
        ``n_support``)."""
        support = np.array(support, dtype=np.int64)
        for part, out in zip(parts, outs):
            support[part] = out["n_support"]
        return support

    @staticmethod
    def weight_shares(combiner: dict, scalars: dict):
        """The Hedge weights normalised, as the estimator publishes them (``weights_``)."""
        return combiner["w"] / combiner["w"].sum()

    def apply_update(self, X, xsq, update) -> None:
        """Nothing to apply: :meth:`replay_round` hands out no update."""

    def model_part(self):
        """This part's kernels, merged by :meth:`gather`."""
        return self.engine

    @staticmethod
    def replay_round(combiner: dict, scalars: dict, y, parts, outs, g):
        """:func:`~omkl_dist.combiners.hedge_loss.combine` over the shards' class scores and losses
        (kernel k's K columns at ``k K .. k K + K − 1``): the round's outcome (``mistakes``, combined
        ``score``, ``F``); nothing for the shards to apply."""
        n, m, K = len(y), len(combiner["w"]), int(scalars.get("n_classes", 1))
        F, loss = np.empty((n, m * K)), np.empty((n, m))
        for part, out in zip(parts, outs):
            F[:, (part[:, None] * K + np.arange(K)).ravel()] = out["F"]
            loss[:, part] = out["loss"]
        score, mistakes = combine(y, F, loss, combiner["logw"], combiner["w"], float(scalars["gamma"]), K)
        return {"mistakes": mistakes, "score": score, "F": F}, None

    @classmethod
    def gather(cls, combiner: dict, scalars: dict, part_of, n_shards: int):
        """The shards' kernels merged (their engine's ``merge``: :meth:`BudgetEngine.merge`,
        :meth:`~omkl_dist.engine.features.FeatureEngine.merge`), with the coordinator's Hedge
        weights and counters."""
        parts = [part_of(i) for i in range(n_shards)]
        merged = type(parts[0]).merge(
            parts,
            logw=combiner["logw"],
            w=combiner["w"],
            n_mistakes=scalars["n_mistakes"],
        )
        return merged.state()


class BudgetEngineSplit(BudgetKernelSplit):
    """The budget engine's rounds: :class:`BudgetKernelSplit`'s, the shard told the coordinator's weights at
    the round's start first (a stochastic update draws a block's kernels with its start's weights,
    :meth:`~omkl_dist.engine.budget.BudgetEngine.sync_weights`: its rounds are one block each)."""

    @staticmethod
    def round_ends(scalars: dict, program):
        """:meth:`BudgetKernelSplit.round_ends`; one block with the stochastic update (the weights
        at each block's start are the coordinator's, after it replays the block before)."""
        if scalars["update"] == "S":
            return segmenting(None, program, int(scalars["block_size"]))
        return BudgetKernelSplit.round_ends(scalars, program)

    def kernel_round(self, X, y, w, act) -> dict:
        self.engine.sync_weights(w)
        return super().kernel_round(X, y, w, act)
