"""Shared base of the budget baselines of the Budget-OMKL paper (RBP, Forgetron, BOGD, BPAS) and of the
Projectron / Projectron++ (the authors' C++ toolbox has them beside those).

Each kernel of the pool gets its own budget learner with at most ``budget`` support vectors; every
learner sees every instance (deterministic update; ``update="S"``: only the kernels drawn for it, the
C++ toolbox's "_sd" forms) and the combined prediction is
``sign(Σ_k θ_k f_k(x))`` with Hedge weights θ = w / Σ w, ``w_k ← w_k γ^{loss_k}`` (see
:mod:`omkl_dist.engine.budget`). More than two classes: each learner's multi-class rule (its module
in :mod:`omkl_dist.learners`) and the class with the highest ``Σ_k θ_k f_k(x, c)``. The estimators run
on :class:`~omkl_dist.engine.budget.BudgetEngine`.
"""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..._validation import Interval, StrOptions, validate_params
from ...engine.budget import BudgetEngine
from ...engine.local import Feed, kernel_split_feed
from .._batch import UNIT_TEST_KERNELS
from ..base import POSITIVE_INT, OnlineKernelClassifier

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ...scoring.program import KernelProgram

# the parameters of every budget baseline; those with a step size add ``ETA``
CONSTRAINTS: dict[str, Any] = {
    **OnlineKernelClassifier._parameter_constraints,
    "budget": [POSITIVE_INT],
    "gamma": [Interval(Real, 0, 1, closed="neither")],
    "update": [StrOptions({"D": "deterministic", "S": "stochastic"})],
    "delta": [Interval(Real, 0, 1, closed="right")],
}
ETA = [Interval(Real, 0, None, closed="neither")]


class BudgetBaseline(OnlineKernelClassifier):
    """Budget baseline estimators: subclasses set ``_learner`` and their ``__init__`` parameters."""

    _learner: str | None = None  # "rbp", "forgetron", "bogd", "bpas", "projectron" or "projectron++"
    _parameter_constraints = CONSTRAINTS
    _unit_test_params = tuple(  # the deterministic and the stochastic update
        {
            "kernels": UNIT_TEST_KERNELS,
            "budget": 30,
            "block_size": 16,
            "n_epochs": 1,
            "shuffle": False,
            "random_state": 0,
            "update": update,
        }
        for update in ("D", "S")
    )

    budget: int
    gamma: float
    update: str
    delta: float

    def feed_rows(self) -> int:
        validate_params(self, ["block_size"])
        return int(self.block_size)  # a cluster round's pieces: the blocks

    def feed(self) -> Feed:
        """A block per call early on, then about 4,096 rows of whole blocks (the kernels learn apart:
        :func:`~omkl_dist.engine.local.kernel_split_feed`)."""
        return kernel_split_feed(self.feed_rows())

    def _engine_params(self) -> dict[str, Any]:
        return {
            "eta": float(getattr(self, "eta", 0.1)),
            "lam": float(getattr(self, "lam", 0.0)),
            "gamma": float(self.gamma),
        }

    def _takes_sparse_rows(self) -> bool:
        return False  # the budget learners keep dense support vectors: sparse X is densified

    def _new_engine(self, program: KernelProgram, n_features: int) -> BudgetEngine:
        # cast: every concrete baseline sets _learner (BudgetEngine refuses a None)
        return BudgetEngine(
            program,
            n_features,
            learner=cast(str, self._learner),
            budget=int(self.budget),
            seed=self.seed_,
            block_size=int(self.block_size),
            n_classes=self._class_columns(),
            update=str(self.update),
            delta=float(self.delta),
            **self._engine_params(),
        )

    def _combine(self, F: NDArray[np.float64]) -> NDArray[np.float64]:
        w: NDArray[np.float64] = self.engine_.w
        theta = w / w.sum()
        scores: NDArray[np.float64] = F @ theta if F.ndim == 2 else np.einsum("nmc,m->nc", F, theta)
        return scores
