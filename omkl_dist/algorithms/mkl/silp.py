"""MKL-SILP (Sonnenburg, Rätsch, Schäfer & Schölkopf, JMLR 2006): ℓ1 MKL as a semi-infinite LP.

The problem is SimpleMKL's, min over the simplex of ``J(β) = max_α Σα - ½ Σ_m β_m (yα)ᵀK_m(yα)``,
written as ``max θ`` over ``(β, θ)`` with ``Σβ = 1, β ≥ 0`` and ``Σ_m β_m S_m(α) ≥ θ`` for *every*
α of the SVM's feasible set, where ``S_m(α) = ½ (yα)ᵀK_m(yα) - Σα`` (so ``Σ_m β_m S_m(α*) = -J(β)``
at the SVM optimum α* of β). Column generation (the paper's Algorithm 1, the "wrapper"): solve
the SVM for the current β, add its α as a constraint, solve the LP over the constraints so far
(scipy's ``linprog`` with HiGHS) for the next β and θ, and stop when the new constraint is nearly
satisfied: ``|1 - Σ_m β_m S_m(α) / θ| <= tol``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import linprog

from ._base import MIN_NEIGHBORS, BatchMKL, Solution, clean_weights, solve_svm, start_weights

if TYPE_CHECKING:
    from .._batch import KernelSpecLike

__all__ = ["MKLSILP"]


def silp_step(S: np.ndarray) -> tuple[np.ndarray, float]:
    """The restricted master LP: ``max θ`` s.t. ``S[t] · β ≥ θ`` for every constraint t found so
    far, ``Σβ = 1``, ``β ≥ 0``; returns ``(β, θ)``."""
    T, M = S.shape
    cost = np.zeros(M + 1)
    cost[-1] = -1.0  # minimise -θ
    A_ub = np.hstack([-S, np.ones((T, 1))])  # θ - S[t]·β <= 0
    A_eq = np.append(np.ones(M), 0.0)[None, :]
    result = linprog(
        cost,
        A_ub=A_ub,
        b_ub=np.zeros(T),
        A_eq=A_eq,
        b_eq=[1.0],
        bounds=[(0.0, None)] * M + [(None, None)],
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"MKL-SILP: the master LP failed ({result.message})")
    return np.maximum(result.x[:M], 0.0), float(result.x[-1])


class MKLSILP(BatchMKL):
    """ℓ1 (simplex) multiple kernel learning by semi-infinite linear programming.

    Starts from uniform weights; each iteration solves the SVM on ``Σ β_m K_m`` and the master LP
    over every SVM solution found so far. Weights below 1e-8 are set to 0. Multi-class: one-vs-one.

    Stopping criteria (first met wins; ``stop_reasons_`` says which): the constraint violation
    ``|1 - Σ_m β_m S_m(α) / θ| <= tol`` (the paper's ε_MKL); the largest weight change of an
    iteration ``<= tol_weights``; ``max_iter`` iterations.

    Parameters
    ----------
    C : float > 0 or "auto", default "auto"
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (C by 3-fold cross-validation per pair).
    kernels : str or KernelPool, default "mkboost17"
    kernel_normalization : {"trace", "diagonal", "none"}, default "diagonal"
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (same default: the two solve the same problem).
    min_neighbors : float >= 0 or "auto", default "auto"
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (the effective-neighbour floor of the kept kernels,
        chosen with C by the cross-validation).
    max_iter : int, default 100
    tol : float > 0, default 0.01
    tol_weights : float >= 0, default 1e-5
    svm_tol : float > 0, default 1e-3
    random_state : int >= 0 or None, default 0
        Seeds the cross-validation folds of ``C="auto"``.
    verbose : int >= 0, default 0
        1: progress lines on standard error (each cross-validation fold, the settings chosen, the
        final fit of each one-vs-one pair), at most one every 5 s.

    Attributes
    ----------
    weights_, pair_weights_, kernel_scales_, C_, cv_scores_, kernel_counts_, n_iter_, duality_gap_, objective_,
    stop_reasons_, objective_history_, classes_, pairs_, kernel_names_, support_vectors_,
    dual_coef_, intercept_, n_features_in_
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (``duality_gap_``: the final ε_MKL).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2)); y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, 1, -1)
    >>> model = MKLSILP(kernels="gaussian:0.25,1,4;polynomial:1", kernel_normalization="diagonal").fit(X, y)
    >>> round(float(model.weights_.sum()), 6), bool(model.score(X, y) > 0.9)
    (1.0, True)
    """

    def __init__(
        self,
        *,
        C: float | str = "auto",
        kernels: KernelSpecLike = "mkboost17",
        kernel_normalization: str = "diagonal",
        min_neighbors: float | str = MIN_NEIGHBORS,
        max_iter: int = 100,
        tol: float = 0.01,
        tol_weights: float = 1e-5,
        svm_tol: float = 1e-3,
        random_state: int | None = 0,
        verbose: int = 0,
    ) -> None:
        self.C = C
        self.kernels = kernels
        self.kernel_normalization = kernel_normalization
        self.min_neighbors = min_neighbors
        self.max_iter = max_iter
        self.tol = tol
        self.tol_weights = tol_weights
        self.svm_tol = svm_tol
        self.random_state = random_state
        self.verbose = verbose

    def _solve(self, grams: np.ndarray, y: np.ndarray, params: dict[str, Any]) -> Solution:
        M = len(grams)
        beta, theta = start_weights(params, M), -np.inf
        rows: list[np.ndarray] = []
        history: list[float] = []
        reason, n_iter, violation = "max_iter", params["max_iter"], np.inf
        for it in range(params["max_iter"] + 1):
            sol = solve_svm(grams, beta, y, params["C"], params["svm_tol"])
            history.append(sol.objective)
            S = 0.5 * sol.g - np.abs(sol.dual_coef).sum()  # S_m(α): Σ_m β_m S_m = -J(β)
            if np.isfinite(theta):
                violation = abs(1.0 - float(beta @ S) / theta) if theta != 0.0 else np.inf
                if violation <= params["tol"]:
                    reason, n_iter = "constraint violation", it
                    break
            if it == params["max_iter"]:
                break
            rows.append(S)
            new, theta = silp_step(np.array(rows))
            new = clean_weights(new)
            change = float(np.abs(new - beta).max())
            beta = new
            if change <= params["tol_weights"] and it > 0:
                sol = solve_svm(grams, beta, y, params["C"], params["svm_tol"])
                history.append(sol.objective)
                reason, n_iter = "weight change", it + 1
                break
        return Solution(beta, sol, n_iter, float(violation), reason, history)
