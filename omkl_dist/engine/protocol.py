"""The engine interface: what the estimators, the kernel shards, the coordinator and the Dask engine
call, and the named update/combination rules.

Three engines implement :class:`Engine`: :class:`~.local.LocalEngine` (one shared support-vector
pool: the OMKC family, the Perceptron baselines, SPA, OM-2), :class:`~.budget.BudgetEngine` (a
fixed-size buffer per kernel: RBP, Forgetron, BOGD, BPAS) and :class:`~.oks.OKSEngine` (OKS: a
list of support vectors per kernel, one kernel drawn per row). A saved state names its engine
(``scalars["engine"]``); :func:`engine_class` maps it back. The distributed layer
(:mod:`omkl_dist.distributed`) uses only this interface:

* whether a job's rounds are split by rows or by kernels (:meth:`Engine.splits_rows`), and where
  they end (:meth:`Engine.rounds`: where the in-process engine's segments end);
* in a row-split round (:class:`RowSplit`) every shard scores a range of rows
  (:meth:`RowSplit.score_rows`), the first runs the recurrence over all of them
  (:meth:`RowSplit.learn_scored`) and hands out what the others apply before the next round
  (:meth:`RowSplit.learned_update`, :meth:`RowSplit.apply_update`);
* a kernel shard keeps :meth:`Engine.shard_part` of the model, learns a kernel-split round
  (:class:`KernelSplit`) with :meth:`KernelSplit.kernel_round` and hands back :meth:`Engine.model_part`;
* the coordinator owns :attr:`Engine.COMBINER_ARRAYS` and replays the combiner over a kernel-split
  round with :meth:`KernelSplit.replay_round`;
* the Dask engine rebuilds the whole state from the coordinator's and the shards' parts with
  :meth:`Engine.gather`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from ..combiners import codes

if TYPE_CHECKING:
    from ..scoring.program import KernelProgram
    from .local import Rounds


class Rule(IntEnum):
    """The update/combination rules of :class:`~.local.LocalEngine` (saved states and the compiled
    loops hold their integer values)."""

    DD = codes.DD  #: OMKC (D,D): deterministic update and combination
    DS = codes.DS  #: OMKC (D,S): deterministic update, stochastic combination
    SD = codes.SD  #: OMKC (S,D): stochastic update, deterministic combination
    SS = codes.SS  #: OMKC (S,S)
    UNIFORM = codes.UNIFORM  #: Perceptron(u): every kernel, equal fixed weights
    LEADER = codes.LEADER  #: Perceptron(*): the kernel with the fewest mistakes
    SPA = codes.SPA  #: budget OMKC with stochastic passive-aggressive updates
    DU = codes.DU  #: deterministic update, uniform combination (the kernel Perceptron)
    OM2 = codes.OM2  #: OM-2, the p-norm multi-class learner

    @property
    def stochastic(self) -> bool:
        """Whether the rule draws random numbers per instance."""
        return self in (Rule.DS, Rule.SD, Rule.SS, Rule.SPA)


class Engine(Protocol):
    """An online engine: learns rows in order, scores rows, saves and restores its whole state."""

    COMBINER_ARRAYS: ClassVar[tuple[str, ...]]
    n_seen: int
    n_mistakes: int
    w: np.ndarray
    kernel_ids: np.ndarray
    kernel_mistakes: np.ndarray

    def learn(self, X: np.ndarray, y: np.ndarray, *, keep_scores: bool = False) -> dict[str, Any]:
        """Predict each row, then learn from it: ``mistakes``, ``score`` (and ``F``)."""

    def kernel_scores(self, X: np.ndarray) -> np.ndarray:
        """Per-kernel (per-class) decision values of the current model."""

    def rows(self, X: Any) -> Any:
        """``X`` (dense or ``scipy.sparse``) as this engine keeps rows: a dense array, or CSR for an
        engine on sparse rows (:mod:`omkl_dist.scoring.rows`)."""

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The full state: (numeric arrays, JSON-able scalars)."""

    @classmethod
    def from_state(cls, program: KernelProgram, arrays: dict[str, np.ndarray], scalars: dict[str, Any]) -> Engine:
        """The engine that continues exactly where :meth:`state` was taken."""

    # --- distribution ----------------------------------------------------------------------
    @staticmethod
    def splits_rows(scalars: dict[str, Any]) -> bool:
        """Whether a job's rounds are split by rows (one shard runs the whole recurrence) rather
        than by kernels (each shard learns its kernels, the coordinator replays the combiner)."""

    @staticmethod
    def rounds(scalars: dict[str, Any], program: KernelProgram) -> Rounds:
        """The :class:`~.local.Rounds` of a job: where its rounds (the in-process segments) end."""

    def shard_part(self, positions: np.ndarray) -> Engine:
        """What a kernel shard owning kernel ``positions`` keeps of this engine."""

    def model_part(self) -> object:
        """What this shard contributes to :meth:`gather`."""

    @classmethod
    def gather(
        cls, combiner: dict[str, np.ndarray], scalars: dict[str, Any], part_of: Callable[[int], object], n_shards: int
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The whole state from the coordinator's ``combiner`` arrays and counters (in
        ``scalars``) and shard ``i``'s :meth:`model_part` (``part_of(i)``)."""


class KernelSplit(Engine, Protocol):
    """An engine whose rounds may be split by kernels (:meth:`Engine.splits_rows` False): the
    shared-pool and budget engines."""

    def kernel_round(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, act: np.ndarray) -> dict[str, Any]:
        """A shard's part of a kernel-split round over rows (X, y) with the model's weights ``w``:
        its kernels' decision values ``F`` and what :meth:`replay_round` needs."""

    @staticmethod
    def replay_round(
        combiner: dict[str, np.ndarray],
        scalars: dict[str, Any],
        y: np.ndarray,
        parts: Sequence[np.ndarray],
        outs: Sequence[dict[str, Any]],
        g: int,
    ) -> tuple[np.ndarray, object]:
        """Replay the combiner over a kernel-split round starting at instance ``g`` (updates the
        ``combiner`` arrays in place); returns the rows' mistakes and what the shards must apply
        before the next round (or None)."""


class RowSplit(Engine, Protocol):
    """An engine whose rounds may be split by rows (:meth:`Engine.splits_rows` True): the
    shared-pool engine (SPA, stochastic OMKC, multi-class models) and OKS."""

    lazy_gram: bool  # the recurrence may start on the first shard's rows before the others' arrive
    score_width: int  # columns of :meth:`score_rows`

    def score_rows(self, X: np.ndarray, xsq: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """A shard's part of a row-split round: rows ``lo:hi`` scored against the model as it is,
        ``(hi - lo, score_width)``."""

    def learn_scored(self, X: np.ndarray, xsq: np.ndarray, y: np.ndarray, scores: np.ndarray) -> tuple[Any, ...]:
        """The recurrence over a row-split round given every row's :meth:`score_rows`:
        ``(scores, score, mistakes, coef)``, what :meth:`learned_update` makes the round's update of."""

    def learned_update(self, coef: Any) -> Any:
        """What the other shards apply (:meth:`apply_update`) after a row-split round."""

    def apply_update(self, X: np.ndarray, xsq: np.ndarray, update: Any) -> None:
        """Take a round's update (its rows ``X``, their squared norms ``xsq``)."""


def engine_class(scalars: dict[str, Any]) -> type[Engine]:
    """The engine class a saved state belongs to (``scalars["engine"]``; states from before the
    budget engine have none: the in-process engine)."""
    from .budget import BudgetEngine
    from .local import LocalEngine
    from .oks import OKSEngine

    kind = scalars.get("engine", "local")
    engines = {"local": LocalEngine, "budget": BudgetEngine, "oks": OKSEngine}
    if kind not in engines:
        raise ValueError(f"unknown engine {kind!r} in the saved state; this omkl-dist knows {sorted(engines)}")
    return engines[kind]
