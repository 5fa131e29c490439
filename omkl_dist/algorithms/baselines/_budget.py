"""Shared base of the budget baselines of the Budget-OMKL paper (RBP, Forgetron, BOGD, BPAS).

Each kernel of the pool gets its own budget learner with at most ``budget`` support vectors; every
learner sees every instance (deterministic update) and the combined prediction is
``sign(Σ_k θ_k f_k(x))`` with Hedge weights θ = w / Σ w, ``w_k ← w_k γ^{loss_k}`` (see
:mod:`omkl_dist.engine.budget`). The estimators run on :class:`~omkl_dist.engine.budget.BudgetEngine`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...core.program import compile_program
from ...engine.budget import BudgetEngine
from ...kernels import make_pool
from ..base import OnlineKernelClassifier, check_positive_int, check_unit_interval


def check_positive_finite(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


class BudgetBaseline(OnlineKernelClassifier):
    """Budget baseline estimators: subclasses set ``_learner`` and their ``__init__`` parameters."""

    _learner = None  # "rbp", "forgetron", "bogd" or "bpas"

    @classmethod
    def _engine_class(cls):
        return BudgetEngine

    def _check_params(self):
        check_positive_int("budget", self.budget)
        check_unit_interval("gamma", self.gamma)
        check_positive_int("block_size", self.block_size)
        if hasattr(self, "eta"):
            check_positive_finite("eta", self.eta)

    def _engine_params(self) -> dict:
        return {"eta": float(getattr(self, "eta", 0.1)), "lam": float(getattr(self, "lam", 0.0)),
                "gamma": float(self.gamma)}

    def _start(self, n_features, n_rows):
        self.kernel_pool_ = make_pool(self._kernel_spec())
        seed = self.random_state
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**63))
        elif not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"random_state must be None or a non-negative integer, got {seed!r}")
        self.seed_ = int(seed)
        self.engine_ = BudgetEngine(compile_program(self.kernel_pool_), n_features, learner=self._learner,
                                    budget=int(self.budget), seed=self.seed_, block_size=int(self.block_size),
                                    **self._engine_params())

    def _publish(self):
        e = self.engine_
        self.weights_ = e.w / e.w.sum()
        self.n_support_ = e.n_support()
        self.mistakes_ = int(e.n_mistakes)
        self.n_samples_seen_ = int(e.n_seen)
        self.kernel_mistakes_ = e.kernel_mistakes.copy()
        self.active_kernel_names_ = [self.kernel_pool_.names[i] for i in e.kernel_ids]

    def _combine(self, F):
        w = self.engine_.w
        return F @ (w / w.sum())
