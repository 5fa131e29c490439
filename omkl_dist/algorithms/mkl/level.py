"""MKL-Level (Xu, Jin, King & Lyu, NIPS 2008, "An extended level method for efficient multiple
kernel learning"): ℓ1 MKL by the level method.

The problem is SimpleMKL's: minimise the convex ``J(β)`` (the SVM dual optimum for ``Σ β_m K_m``)
over the simplex; ``∂J/∂β_m = -½ (yα)ᵀK_m(yα)`` at the SVM optimum α. Each iteration (the paper's
Algorithm 1):

1. solve the SVM at β_t: the value ``J(β_t)`` and the gradient, a cutting plane of J;
2. the cutting-plane model ``J_t(β) = max_{i≤t} J(β_i) + ∇J(β_i)·(β − β_i)``; its minimum over the
   simplex is a lower bound ``J_low`` (an LP: scipy's ``linprog`` with HiGHS), the best value so far
   an upper bound ``J_up``; stop when the gap ``(J_up − J_low) / J_up <= tol``;
3. the level ``ℓ = λ J_up + (1 − λ) J_low`` and the next point the Euclidean projection of β_t
   onto ``{β in the simplex : J_t(β) <= ℓ}`` (a small QP: scipy's SLSQP).
"""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from scipy.optimize import linprog, minimize

from ..._validation import Interval
from ._base import MIN_NEIGHBORS, BatchMKL, Solution, SVMSolution, clean_weights, solve_svm, start_weights

if TYPE_CHECKING:
    from .._batch import KernelSpecLike

__all__ = ["MKLLevel"]


def model_minimum(values: np.ndarray, grads: np.ndarray, points: np.ndarray) -> tuple[float, np.ndarray]:
    """``(min over the simplex of the cutting-plane model, its minimiser)``: an LP in (β, z),
    minimise z s.t. ``values[i] + grads[i]·(β − points[i]) <= z``, ``Σβ = 1``, ``β ≥ 0``."""
    T, M = grads.shape
    cost = np.append(np.zeros(M), 1.0)
    A_ub = np.hstack([grads, -np.ones((T, 1))])  # grads[i]·β − z <= grads[i]·points[i] − values[i]
    b_ub = np.einsum("ij,ij->i", grads, points) - values
    result = linprog(
        cost,
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=np.append(np.ones(M), 0.0)[None, :],
        b_eq=[1.0],
        bounds=[(0.0, None)] * M + [(None, None)],
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"MKL-Level: the cutting-plane LP failed ({result.message})")
    return float(result.x[-1]), np.maximum(result.x[:M], 0.0)


def level_projection(
    beta: np.ndarray, level: float, values: np.ndarray, grads: np.ndarray, points: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """The point of the simplex nearest ``beta`` whose cutting-plane model is at most ``level``
    (a QP; ``start``: a feasible point, the model's minimiser)."""
    offsets = values - np.einsum("ij,ij->i", grads, points)
    constraints = [
        {"type": "ineq", "fun": lambda b: level - (offsets + grads @ b), "jac": lambda b: -grads},
        {"type": "eq", "fun": lambda b: b.sum() - 1.0, "jac": lambda b: np.ones((1, len(b)))},
    ]
    result = minimize(
        lambda b: 0.5 * np.sum((b - beta) ** 2),
        start,
        jac=lambda b: b - beta,
        method="SLSQP",
        bounds=[(0.0, None)] * len(beta),
        constraints=constraints,
        options={"ftol": 1e-12, "maxiter": 200},
    )
    return np.maximum(result.x, 0.0) if result.success else start


class MKLLevel(BatchMKL):
    """ℓ1 (simplex) multiple kernel learning by the extended level method.

    Starts from uniform weights; each iteration solves one SVM, the cutting-plane LP and the level
    projection. Weights below 1e-8 are set to 0. Multi-class: one-vs-one.

    Stopping criteria (first met wins; ``stop_reasons_`` says which): the relative gap between the
    best value and the model's lower bound ``(J_up − J_low) / J_up <= tol``; the largest weight
    change of an iteration ``<= tol_weights``; ``max_iter`` iterations.

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
    level : float in (0, 1), default 0.9
        λ: the level's weight on the best value (the paper's setting).
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
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (``duality_gap_``: the final relative gap;
        the weights are the best point found).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2)); y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, 1, -1)
    >>> model = MKLLevel(kernels="gaussian:0.25,1,4;polynomial:1", kernel_normalization="diagonal").fit(X, y)
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
        level: float = 0.9,
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
        self.level = level
        self.max_iter = max_iter
        self.tol = tol
        self.tol_weights = tol_weights
        self.svm_tol = svm_tol
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {**BatchMKL._parameter_constraints, "level": [Interval(Real, 0, 1, closed="neither")]}

    def _solve(self, grams: np.ndarray, y: np.ndarray, params: dict[str, Any]) -> Solution:
        M = len(grams)
        beta = start_weights(params, M)
        points: list[np.ndarray] = []
        values: list[float] = []
        grads: list[np.ndarray] = []
        history: list[float] = []
        best: tuple[np.ndarray, SVMSolution] | None = None
        reason, n_iter, gap = "max_iter", params["max_iter"], np.inf
        for it in range(params["max_iter"]):
            sol = solve_svm(grams, beta, y, params["C"], params["svm_tol"])
            history.append(sol.objective)
            points.append(beta)
            values.append(sol.objective)
            grads.append(-0.5 * sol.g)
            if best is None or sol.objective < best[1].objective:
                best = (beta, sol)
            P, V, G = np.array(points), np.array(values), np.array(grads)
            low, start = model_minimum(V, G, P)
            up = best[1].objective
            gap = (up - low) / abs(up) if up != 0.0 else 0.0
            if gap <= params["tol"]:
                reason, n_iter = "gap", it + 1
                break
            new = clean_weights(
                level_projection(beta, params["level"] * up + (1.0 - params["level"]) * low, V, G, P, start)
            )
            change = float(np.abs(new - beta).max())
            beta = new
            if change <= params["tol_weights"]:
                reason, n_iter = "weight change", it + 1
                break
        found = cast("tuple[np.ndarray, SVMSolution]", best)  # max_iter >= 1: at least one SVM was solved
        return Solution(found[0], found[1], n_iter, float(max(gap, 0.0)), reason, history)
