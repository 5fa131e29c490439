"""Shared machinery of the batch MKL baselines: Gram matrices, the inner SVM, C and the kernels' floor by
cross-validation, one-vs-one, prediction.

A subclass implements ``_solve(grams, y, params) -> Solution`` for one binary problem (labels ±1,
``grams`` of shape (M, n, n)); this base validates, loops over one-vs-one pairs, drops the kernels
with too few effective neighbours on the pair's training rows (``min_neighbors``), normalises the others,
picks C and the floor (``"auto"``: :data:`C_GRID` × :func:`neighbor_floors` by stratified 3-fold
cross-validation on the pair's training rows, the folds drawn from ``random_state``), stores the
final SVM of each pair on the shared support-vector set and predicts with ``Σ_m d_m s_m κ_m``.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from ..._validation import Interval, StrOptions, check_array, encode_labels, resolve_seed, validate_params
from ...kernels import KernelPool
from .._batch import (
    KERNEL_SPEC,
    UNIT_TEST_KERNELS,
    AcceptsSparse,
    BatchState,
    OneVsOneVote,
    check_gram,
    check_kernel_overflow,
    compact_support,
    ovo_pairs,
    pair_problem,
)
from .._progress import Progress

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# Weights below this are set to 0 and the rest renormalised (the SimpleMKL toolbox's numerical precision).
WEIGHT_PRECISION = 1e-8
NORMALIZATIONS = ("trace", "diagonal", "none")
POSITIVE = Interval(Real, 0, None, closed="neither")
# C="auto": the values tried, 2^-1 .. 2^15 by factors of 4 (on unit-diagonal kernels; the tuned RBF SVC
# picks C up to 2^13 on the MKBoost paper's binary sets, and 2^11 cost monks1 0.5-2 points: BENCHMARKS.md
# "Batch MKL accuracy"), and the folds.
C_GRID = tuple(2.0**e for e in range(-1, 16, 2))
CV_FOLDS = 3
# min_neighbors' default: the effective-neighbour floor below which a kernel is dropped (see
# effective_neighbors), chosen with C by the cross-validation among 1, n/16 and n/4 (neighbor_floors)
MIN_NEIGHBORS: float | str = "auto"
C_CONSTRAINT = [POSITIVE, StrOptions({"auto": "chosen by cross-validation on the training rows"})]
SEED_CONSTRAINT = [None, Interval(Integral, 0, None, closed="left")]
VERBOSE_CONSTRAINT = [Interval(Integral, 0, None, closed="left")]


# what a pair's fit holds, in n x n matrices of float64 per kernel: its Gram matrices, and with
# cross-validation a fold's training block (4/9) and validation-by-training block (2/9) copied from them
_CV_COPIES = 4 / 9 + 2 / 9


def check_grams_fit(name: str, n_kernels: int, n_rows: int, *, cross_validated: bool) -> None:
    """Refuse a fit whose Gram matrices cannot be held, before computing them: a batch MKL method holds
    every kernel's n x n matrix of a pair's rows (a9a's 16,280 training rows and 10 kernels: 21 GB,
    35 GB with the folds), which would swap for hours or be killed."""
    import psutil

    need = n_kernels * n_rows * n_rows * 8 * (1 + (_CV_COPIES if cross_validated else 0.0))
    available = psutil.virtual_memory().available
    if need > available // 2:
        fits = int(np.sqrt(available // 2 / (n_kernels * 8 * (1 + (_CV_COPIES if cross_validated else 0.0)))))
        raise ValueError(
            f"{name}: {n_kernels} kernels' Gram matrices of {n_rows:,} training rows"
            f"{' and their cross-validation folds' if cross_validated else ''} need {need / 2**30:,.1f} GiB, more "
            f"than half of the {available / 2**30:,.1f} GiB available (about {fits:,} rows fit); train on fewer rows "
            "(omkl fit --test-size), fewer kernels (--kernels), or learn online (omkl run), which keeps no Gram matrix"
        )


def _pair(p: dict[str, Any]) -> str:
    """The one-vs-one pair being fitted, for a progress line (nothing for a binary problem)."""
    return f"pair {p['pair'] + 1}/{p['n_pairs']}: " if p.get("n_pairs", 1) > 1 else ""


def kernel_scales(grams: np.ndarray, normalization: str) -> np.ndarray:
    """Per-kernel factors s_m applied to K_m (training Gram and test kernel alike).

    "trace": unit trace, s_m = 1/tr(K_m) -- Rakotomamonjy et al.'s setting and the SimpleMKL
    toolbox's ``UnitTraceNormalization``; it also divides the effective C by n (the SVM on s·K with
    C is the SVM on K with s·C), so a fixed C means less the more rows there are. "diagonal": unit
    mean diagonal, s_m = n/tr(K_m) (gaussians unchanged): the same kernels up to the common factor
    n, so trace with C is diagonal with C/n, and C keeps a plain SVM's meaning. "none": s_m = 1.
    """
    if normalization == "none":
        return np.ones(len(grams))
    trace = np.einsum("mii->m", grams)
    if (trace <= 0.0).any():
        raise ValueError("a kernel has a zero trace on the training rows; use kernel_normalization='none'")
    scales: np.ndarray = (1.0 if normalization == "trace" else grams.shape[1]) / trace
    return scales


def effective_neighbors(grams: np.ndarray) -> np.ndarray:
    """Per kernel, how many other training rows a row resembles: ``(1/n) Σ_i Σ_{j≠i} κ̂(x_i, x_j)²``
    with κ̂ the kernel scaled to unit diagonal (``κ(x_i, x_j) / √(κ(x_i, x_i) κ(x_j, x_j))``).

    Near 0 for a gaussian far narrower than the distances between rows: its Gram is the identity,
    a kernel that can only memorise the training rows. ℓ1-MKL takes such a kernel for a per-row slack
    (``d I + (1-d) K`` is an ℓ2 soft margin on K) whose margin beats every smooth kernel's, so it
    puts most of the weight on it whatever C is (measured: BENCHMARKS.md "Batch MKL accuracy").
    """
    n = grams.shape[1]
    counts = np.empty(len(grams))
    for m, K in enumerate(grams):
        diag = np.diagonal(K)
        inv = np.zeros(n)
        np.divide(1.0, np.sqrt(diag), out=inv, where=diag > 0.0)  # a zero row resembles nothing
        unit = K * inv[:, None] * inv[None, :]
        counts[m] = (np.einsum("ij,ij->", unit, unit) - np.einsum("ii,ii->", unit, unit)) / n
    return counts


def neighbor_floors(min_neighbors: float | str, n_rows: int) -> tuple[float, ...]:
    """The floors ``min_neighbors`` stands for on ``n_rows`` training rows: itself, or for "auto" the
    candidates cross-validation chooses among with C: 1, n/16 and n/4 neighbours per row."""
    if min_neighbors == "auto":
        return (1.0, n_rows / 16.0, n_rows / 4.0)
    return (float(min_neighbors),)


def kept_kernels(counts: np.ndarray | None, floor: float, n_kernels: int) -> np.ndarray:
    """Indices of the kernels with at least ``floor`` effective neighbours per row (``counts``, from
    :func:`effective_neighbors`; every kernel when the floor is 0; the one with the most when none has
    enough)."""
    if floor <= 0.0 or counts is None:
        return np.arange(n_kernels)
    keep = np.flatnonzero(counts >= floor)
    return keep if len(keep) else np.array([int(np.argmax(counts))])


@dataclass
class SVMSolution:
    """The SVM on ``Σ_m d_m K_m``: support, ``y α`` on it, intercept, dual objective J and
    ``g_m = (y α)ᵀ K_m (y α)`` per kernel (so ∂J/∂d_m = -g_m / 2)."""

    support: np.ndarray
    dual_coef: np.ndarray
    intercept: float
    objective: float
    g: np.ndarray


def solve_svm(grams: np.ndarray, d: np.ndarray, y: np.ndarray, C: float, tol: float) -> SVMSolution:
    """Train ``SVC(kernel="precomputed")`` on the weighted kernel sum and read off J(d) and g."""
    active = np.flatnonzero(d > 0.0)
    K = np.tensordot(d[active], grams[active], axes=1)
    svm = SVC(kernel="precomputed", C=C, tol=tol).fit(K, y)
    sv, beta = svm.support_, svm.dual_coef_[0]
    v = np.zeros(len(y))
    v[sv] = beta
    g = (grams @ v) @ v  # one matrix-vector product per kernel, no (M, s, s) copy of the SV block
    objective = float(np.abs(beta).sum() - 0.5 * d @ g)
    return SVMSolution(sv, beta.copy(), float(svm.intercept_[0]), objective, g)


@dataclass
class Solution:
    """One binary problem's result: weights, final SVM, iterations, gap, why it stopped, J per iteration."""

    weights: np.ndarray
    svm: SVMSolution
    n_iter: int
    gap: float
    reason: str
    history: list[float] = field(default_factory=list)


class BatchMKL(AcceptsSparse, BatchState, OneVsOneVote, ClassifierMixin, BaseEstimator, metaclass=ABCMeta):
    """Base class; subclasses set ``__init__`` parameters and implement ``_solve``."""

    _STATE_ARRAYS = (
        "support_vectors_",
        "intercept_",
        "pair_weights_",
        "kernel_scales_",
        "C_",
        "neighbor_floor_",
        "cv_scores_",
        "weights_",
        "kernel_counts_",
        "n_iter_",
        "duality_gap_",
        "objective_",
    )
    _STATE_JSON: ClassVar[tuple[str, ...]] = ("stop_reasons_",)

    # a fixed C and floor keep scikit-learn's ~55 checks cheap (the defaults fit 82 times); tests/test_mkl.py
    # checks "auto"
    _unit_test_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {"kernels": UNIT_TEST_KERNELS, "max_iter": 10, "C": 1.0, "min_neighbors": 1.0},
    )
    # the C values C="auto" tries, in order (ties go to the first)
    _C_GRID: ClassVar[tuple[float, ...]] = C_GRID

    _parameter_constraints: dict[str, Any] = {
        "C": C_CONSTRAINT,
        "kernels": [KERNEL_SPEC],
        "kernel_normalization": [StrOptions(NORMALIZATIONS)],
        "min_neighbors": [
            Interval(Real, 0, None, closed="left"),
            StrOptions({"auto": "chosen with C by cross-validation among 1, n/16 and n/4 neighbours"}),
        ],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [POSITIVE],
        "tol_weights": [Interval(Real, 0, None, closed="left")],
        "svm_tol": [POSITIVE],
        "random_state": SEED_CONSTRAINT,
        "verbose": VERBOSE_CONSTRAINT,
    }

    def _check_params(self) -> dict[str, Any]:
        """The parameters, validated and converted (``kernels`` as a pool, ``random_state`` a seed)."""
        p = validate_params(self)
        p["pool"], p["normalization"] = p.pop("kernels"), p.pop("kernel_normalization")
        p["seed"] = resolve_seed(type(self).__name__, p.pop("random_state"), default=0)
        return p

    @abstractmethod
    def _solve(self, grams: np.ndarray, y: np.ndarray, p: dict[str, Any]) -> Solution:
        """Weights and final SVM for one binary problem (``grams`` (M, n, n), ``y`` ±1), starting
        from the weights ``p["start"]`` when given (a warm start along the C path), else uniform."""

    def _candidates(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        """The settings cross-validation chooses among (each overrides ``p``), floor-major so that C
        walks upwards within a floor; one: no cross-validation."""
        Cs = self._C_GRID if p["C"] == "auto" else (p["C"],)
        return [{"floor": floor, "C": C} for floor in p["floors"] for C in Cs]

    def _select(
        self, grams: np.ndarray, counts: np.ndarray | None, y: np.ndarray, p: dict[str, Any]
    ) -> tuple[dict[str, Any], np.ndarray]:
        """(the chosen candidate, the mean validation accuracy of each) for one binary problem:
        stratified folds from ``p["seed"]``, each candidate on the kernels its floor keeps
        (``counts``: their effective neighbours), normalisation fitted on each fold's training rows."""
        candidates = self._candidates(p)
        if len(candidates) == 1:
            return candidates[0], np.empty(0)
        fewest = int(min((y > 0).sum(), (y < 0).sum()))
        if fewest < CV_FOLDS:
            auto = [k for k in ("C", "min_neighbors") if p.get(k) == "auto"]  # what the folds choose
            raise ValueError(
                f"{type(self).__name__}: the cross-validation of {' and '.join(k + '=' + repr('auto') for k in auto)} "
                f"uses {CV_FOLDS} folds, but a class has {fewest} training row(s); give more rows or a number "
                f"for {' and '.join(auto)}"
            )
        folds = StratifiedKFold(CV_FOLDS, shuffle=True, random_state=p["seed"])
        correct = np.zeros(len(candidates), dtype=np.int64)  # counts: exact ties, first candidate wins
        for f, (train, val) in enumerate(folds.split(np.zeros(len(y)), y)):
            if f:
                p["progress"](f"{_pair(p)}cross-validation fold {f}/{CV_FOLDS} of {len(candidates)} settings done")
            sol: Solution | None = None
            for i, candidate in enumerate(candidates):
                if i == 0 or candidate["floor"] != candidates[i - 1]["floor"]:  # this floor's kernels
                    keep = kept_kernels(counts, candidate["floor"], len(grams))
                    fold = grams[keep][:, train[:, None], train[None, :]]
                    scales = kernel_scales(fold, p["normalization"])
                    fold *= scales[:, None, None]
                    cross = grams[keep][:, val[:, None], train[None, :]] * scales[:, None, None]
                    sol = None
                if sol is None or not self._same_solution(sol, candidates[i - 1], candidate):
                    start: dict[str, Any] = {"start": sol.weights} if sol is not None and self._warm_starts else {}
                    sol = self._solve(fold, y[train], {**p, **candidate, **start})
                correct[i] += int(np.sum(np.where(decision(cross, sol) >= 0.0, 1.0, -1.0) == y[val]))
        chosen = candidates[int(np.argmax(correct))]
        shown = [f"C={chosen['C']:g}"] + [f"neighbour floor {chosen['floor']:g}"] * bool(chosen["floor"])
        shown += [p["pool"][chosen["kernel"]].name] if "kernel" in chosen else []
        p["progress"](f"{_pair(p)}{len(candidates)} settings cross-validated: {', '.join(shown)}")
        return chosen, correct / len(y)

    # C="auto" walks the grid upwards, each fold's solve starting from the previous C's weights
    _warm_starts: ClassVar[bool] = True

    @staticmethod
    def _same_solution(sol: Solution, before: dict[str, Any], after: dict[str, Any]) -> bool:
        """Whether ``sol`` (optimal at ``before``) is also optimal at ``after``: a larger C and no
        support vector at the bound (every α_i < C). The SVM optimum then satisfies the larger box's
        conditions too, for the learned weights and (J only grows with C) as the best weights."""
        only_C = {k: v for k, v in after.items() if k != "C"} == {k: v for k, v in before.items() if k != "C"}
        return only_C and after["C"] > before["C"] and float(np.abs(sol.svm.dual_coef).max()) < before["C"] * (1 - 1e-9)

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Learn kernel weights and the SVM for each one-vs-one pair of classes.

        Raises
        ------
        ValueError
            Invalid parameters, NaN/inf in X, fewer than two classes, or kernels whose Gram
            values are not finite on X.
        """
        p = self._check_params()
        name = type(self).__name__
        X = check_array(X, owner=name, spread_warning=True, estimator=self, reset=True)
        classes, codes = encode_labels(name, y, X.shape[0])
        pool: KernelPool = p["pool"]
        check_kernel_overflow(name, pool, X)
        pairs = ovo_pairs(len(classes))
        largest = max(len(pair_problem(codes, pair)[0]) for pair in pairs)
        floors = neighbor_floors(p.get("min_neighbors", 0.0), largest)
        check_grams_fit(name, len(pool), largest, cross_validated=len(self._candidates({**p, "floors": floors})) > 1)
        solutions: list[Solution] = []
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        scales: list[np.ndarray] = []
        selected: list[float] = []
        scores: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        floor_of: list[float] = []
        p["progress"] = Progress(name, p["verbose"])
        for index, pair in enumerate(pairs):
            p.update(pair=index, n_pairs=len(pairs))  # (for the progress lines)
            rows, y_pm = pair_problem(codes, pair)
            grams = pool.evaluate(X[rows])
            for m, spec in enumerate(pool):
                check_gram(name, grams[m], spec.name)
            floors = neighbor_floors(p.get("min_neighbors", 0.0), len(y_pm))
            counts = effective_neighbors(grams) if max(floors) > 0.0 else None
            chosen, cv_scores = self._select(grams, counts, y_pm, {**p, "floors": floors})
            keep = kept_kernels(counts, chosen["floor"], len(pool))
            if len(keep) < len(pool):
                grams = grams[keep]
            floor_of.append(chosen["floor"])
            scale = kernel_scales(grams, p["normalization"])
            grams *= scale[:, None, None]
            sol = self._solve(grams, y_pm, {**p, **chosen})
            p["progress"](f"{_pair(p)}fitted on its {len(y_pm):,} rows")
            solutions.append(sol)
            scales.append(np.ones(len(pool)))
            scales[-1][keep] = scale
            weights.append(np.zeros(len(pool)))
            weights[-1][keep] = sol.weights
            selected.append(chosen["C"])
            scores.append(cv_scores)
            parts.append((rows[sol.svm.support], sol.svm.dual_coef))
        rows, self.dual_coef_ = compact_support(parts, X.shape[0])
        self.classes_ = classes
        self.pairs_ = pairs
        self.n_features_in_ = X.shape[1]
        self.kernel_pool_ = pool
        self.kernel_names_ = pool.names
        self.support_vectors_ = X[rows].copy()
        self.intercept_ = np.array([s.svm.intercept for s in solutions])
        self.pair_weights_ = np.array(weights)
        self.kernel_scales_ = np.array(scales)
        self.C_ = np.array(selected, dtype=np.float64)
        self.neighbor_floor_ = np.array(floor_of, dtype=np.float64)
        self.cv_scores_ = np.array(scores, dtype=np.float64)
        self.weights_ = self.pair_weights_.mean(axis=0)
        self.kernel_counts_ = (self.pair_weights_ > 0.0).sum(axis=0)
        self.n_iter_ = np.array([s.n_iter for s in solutions])
        self.duality_gap_ = np.array([s.gap for s in solutions])
        self.objective_ = np.array([s.svm.objective for s in solutions])
        self.stop_reasons_ = [s.reason for s in solutions]
        self.objective_history_ = [np.array(s.history) for s in solutions]
        return self

    def _pair_scores(self, X: ArrayLike) -> np.ndarray:
        if not hasattr(self, "dual_coef_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        name = type(self).__name__
        X = check_array(X, owner=name, n_features=self.n_features_in_, estimator=self)
        used = np.flatnonzero(self.pair_weights_.any(axis=0))
        sub = KernelPool([self.kernel_pool_[int(m)] for m in used])
        scores = np.tile(self.intercept_, (X.shape[0], 1))
        step = max(1, (1 << 22) // max(1, len(self.support_vectors_) * len(used)))
        for start in range(0, X.shape[0], step):
            K = sub.evaluate(X[start : start + step], self.support_vectors_)
            for m, spec in enumerate(sub):
                check_gram(name, K[m], spec.name)
                # (n_pairs × n_sv sparse) @ (n_sv × chunk): every pair's SVM on kernel m at once
                factor = self.pair_weights_[:, used[m]] * self.kernel_scales_[:, used[m]]
                scores[start : start + step] += np.asarray(self.dual_coef_ @ K[m].T).T * factor
        return scores


def decision(cross: np.ndarray, sol: Solution) -> np.ndarray:
    """Scores of a solution on rows whose (normalised) kernels against its training rows are ``cross``
    (M, n_rows, n_train)."""
    active = np.flatnonzero(sol.weights > 0.0)
    K = np.tensordot(sol.weights[active], cross[active][:, :, sol.svm.support], axes=1)
    scores: np.ndarray = K @ sol.svm.dual_coef + sol.svm.intercept
    return scores


def start_weights(p: dict[str, Any], M: int, uniform: float | None = None) -> np.ndarray:
    """A solver's first weights: ``p["start"]`` (a copy) when given, else every weight ``uniform``
    (default 1/M: the simplex's centre)."""
    if p.get("start") is not None:
        return np.array(p["start"], dtype=np.float64)
    return np.full(M, 1.0 / M if uniform is None else uniform)


def clean_weights(d: np.ndarray) -> np.ndarray:
    """Zero the weights below WEIGHT_PRECISION and renormalise onto the simplex."""
    d = np.where(d < WEIGHT_PRECISION, 0.0, d)
    weights: np.ndarray = d / d.sum()
    return weights
