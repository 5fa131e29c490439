"""The engine interface: what the estimators call of an in-process engine, and the named
update/combination rules.

Three engines implement :class:`Engine`: :class:`~.local.LocalEngine` (one shared support-vector
pool: the OMKC family, the Perceptron baselines, SPA, OM-2), :class:`~.budget.BudgetEngine` (a
fixed-size buffer per kernel: RBP, Forgetron, BOGD, BPAS, the Projectrons) and :class:`~.oks.OKSEngine` (OKS: a
list of support vectors per kernel, one kernel drawn per row). A saved state names its engine
(``scalars["engine"]``); :func:`engine_class` maps it back. A cluster job reaches an engine through
a round adapter of :mod:`omkl_dist.distributed.rounds`, built on the engine's public methods.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..combiners import codes

if TYPE_CHECKING:
    from ..scoring.program import KernelProgram


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

    n_seen: int
    n_mistakes: int
    w: np.ndarray
    kernel_ids: np.ndarray
    kernel_mistakes: np.ndarray
    n_classes: int  # 1: a binary model (labels ±1); K: labels are class indices 0..K-1

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


def engine_class(scalars: dict[str, Any]) -> type[Engine]:
    """The engine class a saved state belongs to (``scalars["engine"]``; states from before the
    budget engine have none: the in-process engine)."""
    from .budget import BudgetEngine
    from .features import FourierEngine
    from .local import LocalEngine
    from .nystrom import NystromEngine
    from .oks import OKSEngine

    kind = scalars.get("engine", "local")
    engines = {
        "local": LocalEngine,
        "budget": BudgetEngine,
        "oks": OKSEngine,
        "fourier": FourierEngine,
        "nystrom": NystromEngine,
    }
    if kind not in engines:
        raise ValueError(f"unknown engine {kind!r} in the saved state; this omkl-dist knows {sorted(engines)}")
    return engines[kind]
