"""Row-split rounds (:class:`~.protocol.RowSplit`): every shard scores a range of the round's rows,
the lead shard runs the in-process recurrence over all of them.

:class:`PoolRowSplit` for the shared-pool engine's rules whose kernels are coupled within a round
and for every multi-class model; :class:`OKSRowSplit` for OKS (one kernel works per row, so kernel
shards would idle).
"""

from __future__ import annotations

import numpy as np

from ...combiners.codes import OM2, SD, SPA, SS
from ...engine.local import Rounds
from ...engine.samples import support_per_kernel
from .shared_pool import SharedPool

# rules whose kernels are coupled within a round: the weights every sampled update reads (SPA,
# (S,D), (S,S)), or OM-2's kernel factors from every kernel's norm
COUPLED_RULES = (SPA, SD, SS, OM2)


def every_kernel(program, scalars: dict, n_shards: int) -> list[np.ndarray]:
    """Every shard scores its rows with all kernels."""
    return [np.arange(program.m)] * n_shards


class PoolRowSplit(SharedPool):
    """The shared-pool engine's row-split rounds. The early start: when the engine computes a new
    support vector's kernel values itself (:attr:`LocalEngine.feeds_scores`: SPA, OMKC's sampled
    updates), the recurrence needs no in-block kernel matrix and starts on the lead's rows while the
    others score theirs; its uniforms are drawn ahead. Otherwise the round's own kernel matrix needs
    every row first."""

    SPLITS_ROWS = True
    partition = staticmethod(every_kernel)

    @staticmethod
    def takes(scalars: dict) -> bool:
        """The coupled rules, and every multi-class model (whose recurrence then runs as in-process)."""
        return int(scalars["rule"]) in COUPLED_RULES or int(scalars.get("n_classes", 1)) > 1

    @property
    def score_width(self) -> int:
        """A decision value per kernel and class."""
        return self.engine.program.m * self.engine.n_classes

    def score_rows(self, X, xsq, lo, hi):
        return self.engine.score_rows(X, xsq, lo, hi)

    def early_start(self, X, xsq, y, prepared):
        """:meth:`LocalEngine.scored_segment` with the uniforms drawn ahead, if the engine's
        recurrence computes its in-block kernel values itself; else None."""
        return self.engine.scored_segment(X, xsq, y, prepared) if self.engine.feeds_scores else None

    def prepare(self, g, n):
        """The uniforms of the round's rows (:meth:`LocalEngine.segment_uniforms`)."""
        return self.engine.segment_uniforms(g, n)

    def learn_scored(self, X, xsq, y, scores):
        return self.engine.learn_scored(X, xsq, y, scores)

    @staticmethod
    def support_after(support, outcome: dict, parts, outs):
        """:meth:`SharedPool.support_after`, counted over the rows some kernel kept (the round's
        ``update``, few rows) rather than every row's coefficients."""
        return support + support_per_kernel(outcome["update"][1], len(support))

    @staticmethod
    def learned_update(coef):
        """The rows some kernel kept, with their coefficients (the lead's pool is unchanged by the
        recurrence too: it appends them like the others)."""
        rows = np.flatnonzero(np.any(coef != 0.0, axis=1))
        return rows, coef[rows]

    def combiner_arrays(self) -> dict:
        return {name: np.array(getattr(self.engine, name), copy=True) for name in self.COMBINER_ARRAYS}


class OKSRowSplit:
    """OKS's rounds of one block: every shard runs the speculative pass over its rows
    (:meth:`OKSEngine.score_rows`), the lead the recurrence; the others then take the round's new
    support vectors, weights and counters (a shard that ran the round itself skips them)."""

    COMBINER_ARRAYS = ("w", "logw", "kernel_mistakes", "kernel_updates", "kernel_ids")
    SPLITS_ROWS = True
    partition = staticmethod(every_kernel)

    def __init__(self, engine, positions):
        self.engine = engine  # every shard keeps the whole model (it scores its rows with any kernel)

    @staticmethod
    def takes(scalars: dict) -> bool:
        """Always rows."""
        return True

    @staticmethod
    def round_ends(scalars: dict, program) -> Rounds:
        """A round is one block (the speculative pass reads the weights at the block's start)."""
        block = int(scalars["block_size"])
        return Rounds(block, block, block)

    # --- the model read by the trace at a round's end ----------------------------------------
    @staticmethod
    def samples_inside(scalars: dict) -> bool:
        """False: the trace reads no OKS model inside a round."""
        return False

    @staticmethod
    def support_counts(arrays: dict):
        """Support vectors per kernel of a whole state (each row's ``owner`` kernel)."""
        return np.bincount(arrays["owner"], minlength=len(arrays["w"])).astype(np.int64)

    @staticmethod
    def support_after(support, outcome: dict, parts, outs):
        """Support vectors per kernel after the round: ``support`` plus the round's new ones
        (``coef`` column 0: the kernel + 1, 0 for none)."""
        owner = outcome["coef"][:, 0].astype(np.int64)
        return support + np.bincount(owner[owner > 0] - 1, minlength=len(support))

    @staticmethod
    def weight_shares(combiner: dict, scalars: dict):
        """The normalised weights q, as the lead's engine left them (``w``: what the estimator publishes)."""
        return combiner["w"].copy()

    @property
    def score_width(self) -> int:
        """The drawn kernel, then its K scores."""
        return 1 + self.engine.n_classes

    def score_rows(self, X, xsq, lo, hi):
        return self.engine.score_rows(X, xsq, lo, hi)

    def early_start(self, X, xsq, y, prepared):
        """None: the recurrence needs every row's speculative pass first."""
        return None

    def prepare(self, g, n):
        """Nothing is drawn ahead (no early start)."""
        return None

    def learn_scored(self, X, xsq, y, scores):
        return self.engine.learn_scored(X, xsq, y, scores)

    def learned_update(self, coef):
        """The new support vectors (``coef`` column 0: kernel + 1, 0 for none), the weights and
        counters, and where the round ended."""
        e = self.engine
        rows = np.flatnonzero(coef[:, 0] > 0)
        return rows, coef[rows], e.logw.copy(), e.kernel_mistakes.copy(), e.kernel_updates.copy(), e.n_seen

    def apply_update(self, X, xsq, update) -> None:
        """Take another shard's round (nothing if this engine ran it itself)."""
        rows, coef, logw, kernel_mistakes, kernel_updates, end = update
        e = self.engine
        if end <= e.n_seen:
            return
        e.append_support(X[rows], coef[:, 0].astype(np.int64) - 1, coef[:, 1:])
        e.logw[:] = logw
        e.kernel_mistakes[:], e.kernel_updates[:] = kernel_mistakes, kernel_updates
        e.n_seen = int(end)

    def combiner_arrays(self) -> dict:
        return {name: np.array(getattr(self.engine, name), copy=True) for name in self.COMBINER_ARRAYS}

    def model_part(self) -> dict:
        """The support vectors (the same on every shard once a round is applied)."""
        arrays, _ = self.engine.state()
        return {name: arrays[name] for name in ("sv", "coef", "owner")}

    @classmethod
    def gather(cls, combiner: dict, scalars: dict, part_of, n_shards: int):
        """The coordinator's weights and counters plus one shard's support vectors."""
        return {**combiner, **part_of(0)}, scalars
