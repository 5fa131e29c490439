"""ℓp-norm MKL (Kloft, Brefeld, Sonnenburg & Zien, JMLR 2011): closed-form weight updates.

Kernel weights θ ≥ 0 with ‖θ‖_p <= 1 (p > 1). For fixed θ the SVM on ``Σ θ_m K_m`` gives α; the
block norms are ``‖w_m‖² = θ_m² (yα)ᵀ K_m (yα)`` and the optimal weights for them are

    θ_m = ‖w_m‖^{2/(p+1)} / (Σ_m' ‖w_m'‖^{2p/(p+1)})^{1/p},

which lie on the unit p-sphere. The two steps alternate. MKBoost's paper uses p = 2.
"""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import Interval
from ._base import MIN_NEIGHBORS, BatchMKL, Solution, SVMSolution, solve_svm, start_weights

if TYPE_CHECKING:
    from .._batch import KernelSpecLike

__all__ = ["LpMKL"]


def lp_update(theta: np.ndarray, g: np.ndarray, p: float) -> np.ndarray:
    """Kloft et al.'s closed-form θ from the current θ and ``g_m = (yα)ᵀ K_m (yα)``."""
    w2 = theta**2 * np.maximum(g, 0.0)  # ‖w_m‖²; g >= 0 for PSD kernels up to rounding
    num = w2 ** (1.0 / (p + 1.0))
    theta_new: np.ndarray = num / np.sum(w2 ** (p / (p + 1.0))) ** (1.0 / p)
    return theta_new


def lp_duality_gap(sol: SVMSolution, theta: np.ndarray, p: float) -> float:
    """Relative gap ``½ (‖g‖_{p*} - Σ θ_m g_m) / J(θ)`` with p* = p/(p-1) (≥ 0 by Hölder)."""
    p_star = p / (p - 1.0)
    dual_norm = np.sum(np.maximum(sol.g, 0.0) ** p_star) ** (1.0 / p_star)
    return float(0.5 * (dual_norm - theta @ sol.g) / sol.objective)


class LpMKL(BatchMKL):
    """ℓp-norm multiple kernel learning by alternating the SVM and the closed-form weight update.

    Starts from uniform weights θ_m = M^{-1/p} (on the unit p-sphere). Multi-class: one-vs-one.

    Stopping criteria (checked every iteration, first met wins; ``stop_reasons_`` says which):

    * relative duality gap ``(J(θ) - [Σα - ½ ‖((yα)ᵀK_m(yα))_m‖_{p*}]) / J(θ) <= tol``,
      p* = p/(p-1), the ℓp analogue of SimpleMKL's gap;
    * largest weight change of an update ``max_m |Δθ_m| <= tol_weights``;
    * ``max_iter`` weight updates.

    Parameters
    ----------
    p : float > 1, default 2.0
    C : float > 0 or "auto", default "auto"
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (C by 3-fold cross-validation per pair).
    kernels : str or KernelPool, default "mkboost17"
    kernel_normalization : {"trace", "diagonal", "none"}, default "diagonal"
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (same default, so the two are comparable).
    min_neighbors : float >= 0 or "auto", default "auto"
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (the effective-neighbour floor of the kept kernels,
        chosen with C by the cross-validation).
    max_iter : int, default 100
    tol : float > 0, default 0.01
    tol_weights : float >= 0, default 1e-4
    svm_tol : float > 0, default 1e-3
    random_state : int >= 0 or None, default 0
        Seeds the cross-validation folds of ``C="auto"``.
    verbose : int >= 0, default 0
        1: progress lines on standard error (each cross-validation fold, the settings chosen, the
        final fit of each one-vs-one pair), at most one every 5 s.

    Attributes
    ----------
    weights_ : ndarray, shape (n_kernels,)
        θ with ‖θ‖_p = 1 (binary); multi-class: the mean over the one-vs-one pairs (‖·‖_p <= 1).
    pair_weights_, kernel_scales_, C_, cv_scores_, kernel_counts_, n_iter_, duality_gap_, objective_, stop_reasons_,
    objective_history_, classes_, pairs_, kernel_names_, support_vectors_, dual_coef_,
    intercept_, n_features_in_
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2)); y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, 1, -1)
    >>> model = LpMKL(p=2.0, kernels="gaussian:0.25,1,4;polynomial:1", kernel_normalization="diagonal").fit(X, y)
    >>> round(float(np.linalg.norm(model.weights_, 2)), 6)
    1.0
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    def __init__(
        self,
        *,
        p: float = 2.0,
        C: float | str = "auto",
        kernels: KernelSpecLike = "mkboost17",
        kernel_normalization: str = "diagonal",
        min_neighbors: float | str = MIN_NEIGHBORS,
        max_iter: int = 100,
        tol: float = 0.01,
        tol_weights: float = 1e-4,
        svm_tol: float = 1e-3,
        random_state: int | None = 0,
        verbose: int = 0,
    ) -> None:
        self.p = p
        self.C = C
        self.kernel_normalization = kernel_normalization
        self.min_neighbors = min_neighbors
        self.kernels = kernels
        self.max_iter = max_iter
        self.tol = tol
        self.tol_weights = tol_weights
        self.svm_tol = svm_tol
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {**BatchMKL._parameter_constraints, "p": [Interval(Real, 1, None, closed="neither")]}

    def _solve(self, grams: np.ndarray, y: np.ndarray, params: dict[str, Any]) -> Solution:
        p, M = params["p"], len(grams)
        theta = start_weights(params, M, M ** (-1.0 / p))
        sol = solve_svm(grams, theta, y, params["C"], params["svm_tol"])
        history = [sol.objective]
        reason, n_iter = "max_iter", params["max_iter"]
        for it in range(params["max_iter"]):
            if lp_duality_gap(sol, theta, p) <= params["tol"]:
                reason, n_iter = "duality gap", it
                break
            new = lp_update(theta, sol.g, p)
            change = float(np.abs(new - theta).max())
            theta = new
            sol = solve_svm(grams, theta, y, params["C"], params["svm_tol"])
            history.append(sol.objective)
            if change <= params["tol_weights"]:
                reason, n_iter = "weight change", it + 1
                break
        return Solution(theta, sol, n_iter, lp_duality_gap(sol, theta, p), reason, history)
