"""SPA: Sparse Passive-Aggressive learning for budget online multiple kernel classification
(Lu, Hoi et al., "Budget OMKC", Algorithm 1).

One SPA learner per kernel (see :mod:`omkl_dist.learners.spa`), Hedge weights discounted by the
hinge loss, ``w_k <- w_k γ^{ℓ_k}``, combined prediction ``sign(Σ θ_k f_k(x))`` with θ = w / Σ w,
kernel k selected for update with probability ``(1 - δ) w_k / max w + δ``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..combiners.hedge import SPA as SPA_RULE
from .base import OnlineKernelClassifier, check_positive_int, check_unit_interval


class SPA(OnlineKernelClassifier):
    """Budget online multiple kernel classification by sparse passive-aggressive updates.

    Parameters
    ----------
    kernels : str or list, default "omkc16"
    gamma : float in (0, 1), default 0.99
        Hedge discount per unit of hinge loss.
    delta : float in (0, 1), default 0.001
        Smoothing of the update-selection probability.
    eta : float > 0, default 0.1
        Aggressiveness (learning rate).
    alpha, beta : floats with beta >= alpha > 0, defaults 1 and 3
        Support-vector sampling ρ = min(α, ℓ)/β: at most α T / β support vectors per kernel in
        expectation.
    budget : int or None
        Expected support vectors per kernel; sets β = α T / budget (at least α).
    expected_instances : int or None
        T for ``budget``: the stream length. Default: the rows given to ``fit`` (or to the first
        ``partial_fit`` call, which is only right if that call holds the whole stream).
    block_size, block_sync, random_state : as in :class:`~omkl_dist.algorithms.OMKC`.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = SPA(random_state=0).fit(MinMaxScaler().fit_transform(X), y)
    >>> model.mistakes_ < 0.15 * len(y), int(model.n_support_.max()) < len(y) // 3
    (True, True)
    """

    def __init__(self, kernels="omkc16", gamma=0.99, delta=0.001, eta=0.1, alpha=1.0, beta=3.0, budget=None,
                 expected_instances=None, block_size=256, block_sync=False, random_state=None):
        self.kernels = kernels
        self.gamma = gamma
        self.delta = delta
        self.eta = eta
        self.alpha = alpha
        self.beta = beta
        self.budget = budget
        self.expected_instances = expected_instances
        self.block_size = block_size
        self.block_sync = block_sync
        self.random_state = random_state

    def _check_params(self):
        check_unit_interval("gamma", self.gamma)
        check_unit_interval("delta", self.delta)
        check_positive_int("block_size", self.block_size)
        for name in ("eta", "alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        if self.beta < self.alpha:
            raise ValueError(f"beta must be >= alpha (the sampling probability min(alpha, loss)/beta must stay "
                             f"<= 1), got alpha={self.alpha!r}, beta={self.beta!r}")
        if self.budget is not None:
            check_positive_int("budget", self.budget)
        if self.expected_instances is not None:
            check_positive_int("expected_instances", self.expected_instances)

    def _rule(self):
        return SPA_RULE

    def _start(self, n_features, n_rows):
        horizon = n_rows if self.expected_instances is None else self.expected_instances
        self.beta_ = (float(self.beta) if self.budget is None
                      else max(float(self.alpha), float(self.alpha) * horizon / self.budget))
        super()._start(n_features, n_rows)

    def _engine_params(self):
        return {"gamma": float(self.gamma), "delta": float(self.delta), "alpha": float(self.alpha),
                "spa_beta": self.beta_, "eta": float(self.eta), "block_sync": bool(self.block_sync)}

    def _extra_state(self):
        return {"beta": self.beta_}

    def _restore_extra(self, extra):
        self.beta_ = float(extra["beta"])

    def _combine(self, F):
        w = self.engine_.w
        return F @ (w / w.sum())
