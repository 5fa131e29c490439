"""Shared base of the explicit-feature estimators of Lu, Hoi, Wang, Zhao & Liu, "Large Scale Online
Kernel Learning" (JMLR 17(47), 2016), made multi-kernel as the authors' C++ toolbox does: FOGD
(:mod:`.fogd`) and NOGD (:mod:`.nogd`).

One learner per kernel on its features, every learner sees every row; Hedge over the kernels,
prediction ``Σ_k θ_k f_k(x)`` with θ = w / Σ w and ``w_k ← w_k γ^{ℓ_k}``, ℓ_k the kernel's mistake
indicator (the C++'s discount; ``hedge_loss="hinge"``: its hinge loss). The C++ combines the kernels'
signs, ``Σ_k θ_k sgn f_k(x)``; we combine their scores as SPA and the budget baselines do (the
combiner and its cluster replay are theirs, :mod:`omkl_dist.combiners.hedge_loss`). More than two
classes: each kernel's multi-class hinge-loss step (:mod:`omkl_dist.learners.features`).
"""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import Interval, StrOptions
from ..engine.local import Feed, kernel_split_feed
from .base import OnlineKernelClassifier

if TYPE_CHECKING:
    from numpy.typing import NDArray

HEDGE_LOSSES = ("mistake", "hinge")
CONSTRAINTS: dict[str, Any] = {
    **OnlineKernelClassifier._parameter_constraints,
    "eta": [Interval(Real, 0, None, closed="neither")],
    "gamma": [Interval(Real, 0, 1, closed="neither")],
    "hedge_loss": [StrOptions(set(HEDGE_LOSSES))],
}


class FeatureClassifier(OnlineKernelClassifier):
    """Base of FOGD and NOGD: subclasses set ``__init__`` and :meth:`_new_engine`."""

    _parameter_constraints = CONSTRAINTS

    eta: float
    gamma: float
    hedge_loss: str

    def feed_rows(self) -> int:
        self._check_params()  # (a job asks this before it reads data: a bad parameter stops it there)
        return int(self.block_size)  # a cluster round's pieces: the blocks

    def feed(self) -> Feed:
        """A block per call early on, then about 4,096 rows of whole blocks (the kernels learn apart:
        :func:`~omkl_dist.engine.local.kernel_split_feed`)."""
        return kernel_split_feed(self.feed_rows())

    def _takes_sparse_rows(self) -> bool:
        return False  # features come from dense rows: sparse X is densified

    def _engine_params(self) -> dict[str, Any]:
        return {
            "seed": self.seed_,
            "block_size": int(self.block_size),
            "eta": float(self.eta),
            "gamma": float(self.gamma),
            "hedge_hinge": self.hedge_loss == "hinge",
            "n_classes": self._class_columns(),
        }

    def _combine(self, F: NDArray[np.float64]) -> NDArray[np.float64]:
        w: NDArray[np.float64] = self.engine_.w
        theta = w / w.sum()
        scores: NDArray[np.float64] = F @ theta if F.ndim == 2 else np.einsum("nmc,m->nc", F, theta)
        return scores
