"""SimpleMKL (Rakotomamonjy, Bach, Canu & Grandvalet, JMLR 2008): reduced-gradient descent on the simplex.

MKBoost's paper compares against it as "MKL-SD". The objective is the optimal SVM dual value for a
weighted kernel sum, ``J(d) = max_α Σα_i - ½ Σ_ij α_i α_j y_i y_j Σ_m d_m K_m(i, j)``, minimised
over ``d ≥ 0, Σ d_m = 1``; its gradient is ``∂J/∂d_m = -½ (yα)ᵀ K_m (yα)`` at the SVM optimum.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import Interval
from ._base import MIN_NEIGHBORS, BatchMKL, Solution, SVMSolution, clean_weights, solve_svm, start_weights

if TYPE_CHECKING:
    from .._batch import KernelSpecLike

__all__ = ["SimpleMKL"]

_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def descent_direction(d: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Reduced-gradient direction on the simplex (paper eq. 12, as in the authors' toolbox).

    With μ = argmax d: ``D_m = -(∂J/∂d_m - ∂J/∂d_μ)`` for every m ≠ μ with d_m > 0 or a negative
    reduced gradient (the others would leave the simplex), ``D_μ = -Σ_{m≠μ} D_m`` so Σ D = 0.
    """
    mu = int(np.argmax(d))
    reduced = grad - grad[mu]
    D = np.where((d > 0.0) | (reduced < 0.0), -reduced, 0.0)
    D[mu] = 0.0
    D[mu] = -D.sum()
    return D


class SimpleMKL(BatchMKL):
    """SimpleMKL: ℓ1 (simplex) multiple kernel learning by reduced-gradient descent.

    Each iteration (the paper's Algorithm 1): solve the SVM on ``Σ d_m K_m``; build the reduced
    gradient direction D; while moving to the simplex boundary along D lowers J, go there, zero the
    kernel that hit the boundary and update D; then golden-section line search on [0, γ_max]
    (one SVM per trial step). Weights below 1e-8 are set to 0. Multi-class: one-vs-one.

    Stopping criteria (checked every iteration, first met wins; ``stop_reasons_`` says which):

    * relative duality gap ``(J(d) - [Σα - ½ max_m (yα)ᵀK_m(yα)]) / J(d) <= tol`` (toolbox
      default 0.01);
    * largest weight change of an iteration ``max_m |Δd_m| <= tol_weights``;
    * zero reduced gradient (no descent direction);
    * ``max_iter`` iterations.

    Parameters
    ----------
    C : float > 0 or "auto", default "auto"
        The SVM penalty, or "auto": chosen per one-vs-one pair from
        :data:`~omkl_dist.algorithms.mkl.C_GRID` (2^-1, 2^1, ..., 2^15) by stratified 3-fold
        cross-validation on the pair's training rows (folds from ``random_state``; the smallest C
        among the most accurate). The folds walk the grid upwards, each solve starting from the
        previous C's weights, and a solution with no support vector at the bound (every α_i < C) is
        taken for the larger Cs unchanged (it is their optimum too). The MKBoost paper's protocol is
        C = 50 with ``kernel_normalization="trace"`` and ``min_neighbors=0`` (``omkl reproduce mkboost``).
    kernels : str or KernelPool, default "mkboost17"
    kernel_normalization : {"trace", "diagonal", "none"}, default "diagonal"
        Scale each K_m to unit mean diagonal (gaussians unchanged), to unit trace (the SimpleMKL
        paper and toolbox), or not at all; fitted on each pair's (each fold's) training rows and
        applied to test kernels. Unit trace is unit diagonal divided by n, so it divides the
        effective C by n: trace with C is diagonal with C/n (measured: the same accuracies), and a
        fixed C grid means the same on every data size only on the diagonal scale -- the default.
    min_neighbors : float >= 0 or "auto", default "auto"
        Drop (weight 0) every kernel under which a training row has on average fewer than this many
        effective neighbours, ``(1/n) Σ_i Σ_{j≠i} κ̂(x_i, x_j)²`` with κ̂ the kernel at unit diagonal,
        measured on each pair's training rows before learning (no labels). ℓ1-MKL maximises the
        margin on the training rows, and the narrower a gaussian the larger that margin: a kernel whose
        Gram is the identity (a gaussian far narrower than the distances between rows) is a per-row
        slack that beats every smooth kernel, and ℓ1-MKL puts most of the weight on it at every C; among
        the kernels left it still favours the narrowest. It cannot choose a width itself, so the floor
        chooses it. "auto" (the default): the floor is chosen with C by the same cross-validation among
        1, n/16 and n/4 (n the pair's training rows; the lowest on ties; with a given C only the floor is
        cross-validated) -- as a tuned single-kernel SVM chooses its width. On the MKBoost paper's
        binary sets this brings SimpleMKL, SILP and Level to the accuracy of one tuned gaussian SVM or
        above it (mean of 5 splits), where a floor of 1 stays 1.4-3.0 points below it on german.numer and
        svmguide3 (BENCHMARKS.md "Batch MKL accuracy"); it fits about three times as many SVMs as a
        fixed floor. A number: that floor (1
        drops only the kernels that memorise); 0 keeps every kernel (the paper's protocol).
        ``neighbor_floor_`` says which floor each pair used.
    max_iter : int, default 100
    tol : float > 0, default 0.01
        Relative duality-gap threshold.
    tol_weights : float >= 0, default 1e-4
        Weight-change threshold.
    svm_tol : float > 0, default 1e-3
        Tolerance of the inner ``SVC``.
    random_state : int >= 0 or None, default 0
        Seeds the cross-validation folds of ``C="auto"`` (None: 0).
    verbose : int >= 0, default 0
        1: progress lines on standard error (each cross-validation fold, the settings chosen, the
        final fit of each one-vs-one pair), at most one every 5 s.
    line_search_tol : float in (0, 1), default 0.05
        The golden-section search stops when its bracket is shorter than this fraction of γ_max.

    Attributes
    ----------
    weights_ : ndarray, shape (n_kernels,)
        Kernel weights d (on the simplex); multi-class: the mean over the one-vs-one pairs.
    pair_weights_ : ndarray, (n_pairs, n_kernels)
    kernel_scales_ : ndarray, (n_pairs, n_kernels)
        Normalisation factors s_m (1 for a dropped kernel); the learned kernel is Σ_m d_m s_m κ_m.
    C_ : ndarray, (n_pairs,)
        The C of each pair's SVM (``C`` itself unless "auto").
    neighbor_floor_ : ndarray, (n_pairs,)
        The effective-neighbour floor each pair's kernels were kept by (``min_neighbors`` or its choice).
    cv_scores_ : ndarray, (n_pairs, n_floors · n_C) or (n_pairs, 0)
        The cross-validated accuracy of each (floor, C), floor-major (3 floors with "auto", else 1; the 9
        Cs of the grid with ``C="auto"``, else 1); empty when neither is "auto".
    kernel_counts_ : ndarray of int
        Pairs in which each kernel has a non-zero weight.
    n_iter_, duality_gap_, objective_ : ndarray, (n_pairs,)
    stop_reasons_ : list of str
    objective_history_ : list of ndarray
        J(d) after every iteration, per pair (non-increasing up to the inner SVM's tolerance).
    classes_, pairs_, kernel_names_, support_vectors_, dual_coef_, intercept_, n_features_in_

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2)); y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, 1, -1)
    >>> model = SimpleMKL(kernels="gaussian:0.25,1,4;polynomial:1", kernel_normalization="diagonal").fit(X, y)
    >>> bool(abs(model.weights_.sum() - 1) < 1e-12 and (model.weights_ >= 0).all())
    True
    >>> bool(model.score(X, y) > 0.9)
    True
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
        tol_weights: float = 1e-4,
        svm_tol: float = 1e-3,
        random_state: int | None = 0,
        verbose: int = 0,
        line_search_tol: float = 0.05,
    ) -> None:
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
        self.line_search_tol = line_search_tol

    _parameter_constraints = {
        **BatchMKL._parameter_constraints,
        "line_search_tol": [Interval(Real, 0, 1, closed="neither")],
    }

    def _solve(self, grams: np.ndarray, y: np.ndarray, p: dict[str, Any]) -> Solution:
        M = len(grams)

        def svm(d: np.ndarray) -> SVMSolution:
            return solve_svm(grams, d, y, p["C"], p["svm_tol"])

        d = start_weights(p, M)
        sol = svm(d)
        history = [sol.objective]
        reason, n_iter = "max_iter", p["max_iter"]
        for it in range(p["max_iter"]):
            gap = duality_gap(sol, d)
            if gap <= p["tol"]:
                reason, n_iter = "duality gap", it
                break
            D = descent_direction(d, -0.5 * sol.g)
            if not (D < 0.0).any():
                reason, n_iter = "zero reduced gradient", it
                break
            d_new, sol = self._step(d, D, sol, svm, p["line_search_tol"])
            change = float(np.abs(d_new - d).max())
            d = d_new
            history.append(sol.objective)
            if change <= p["tol_weights"]:
                reason, n_iter = "weight change", it + 1
                break
        return Solution(d, sol, n_iter, duality_gap(sol, d), reason, history)

    @staticmethod
    def _step(
        d: np.ndarray, D: np.ndarray, sol: SVMSolution, svm: Callable[[np.ndarray], SVMSolution], line_search_tol: float
    ) -> tuple[np.ndarray, SVMSolution]:
        """Descent-direction update to the boundary, then golden-section line search (Algorithm 1)."""
        mu = int(np.argmax(d))
        while True:
            negative = np.flatnonzero(D < 0.0)
            if len(negative) == 0:
                return d, sol
            ratios = -d[negative] / D[negative]
            nu = int(negative[np.argmin(ratios)])
            gamma_max = float(ratios.min())
            d_edge = d + gamma_max * D
            d_edge[nu] = 0.0
            d_edge = clean_weights(np.maximum(d_edge, 0.0))
            sol_edge = svm(d_edge)
            if sol_edge.objective >= sol.objective:
                break
            # J still decreases at the boundary: go there, drop kernel ν, move its share to μ.
            d, sol = d_edge, sol_edge
            D = D.copy()
            D[mu] -= D[nu]
            D[nu] = 0.0
        return golden_section(d, D, gamma_max, sol, svm, line_search_tol)


def golden_section(
    d: np.ndarray,
    D: np.ndarray,
    gamma_max: float,
    sol_0: SVMSolution,
    svm: Callable[[np.ndarray], SVMSolution],
    tol: float,
) -> tuple[np.ndarray, SVMSolution]:
    """Minimise J(d + γD) over γ ∈ (0, γ_max); returns the best point evaluated, γ = 0 included
    (J(d + γ_max D) >= J(d) is known, so the boundary itself never wins)."""
    candidates = [(sol_0.objective, 0.0, d, sol_0)]

    def evaluate(gamma: float) -> float:
        point = clean_weights(np.maximum(d + gamma * D, 0.0))
        sol = svm(point)
        candidates.append((sol.objective, gamma, point, sol))
        return sol.objective

    a, b = 0.0, gamma_max
    c, e = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    jc, je = evaluate(c), evaluate(e)
    while b - a > tol * gamma_max:
        if jc < je:
            b, e, je = e, c, jc
            c = b - _GOLDEN * (b - a)
            jc = evaluate(c)
        else:
            a, c, jc = c, e, je
            e = a + _GOLDEN * (b - a)
            je = evaluate(e)
    _, _, point, sol = min(candidates, key=lambda item: (item[0], item[1]))
    return point, sol


def duality_gap(sol: SVMSolution, d: np.ndarray) -> float:
    """Relative MKL duality gap ``½ (max_m g_m - Σ d_m g_m) / J(d)`` (≥ 0 on the simplex)."""
    return float(0.5 * (sol.g.max() - d @ sol.g) / sol.objective)
