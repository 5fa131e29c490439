"""MKBoost's unit of parallel work: one SVM on one (one-vs-one pair, kernel) of a boosting trial.

:func:`fit_kernel_task` is pure: it reads the fit's :class:`SharedData` and the round's
:class:`TrialSamples` and returns a small :class:`KernelFit`, so any
:class:`~omkl_dist.algorithms.mkboost_runners.TaskRunner` (threads, a Dask cluster) can run it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import sparse
from sklearn.svm import SVC

from ..kernels import KernelPool
from ._batch import check_gram, kernel_decisions

__all__ = [
    "SharedData",
    "TrialSamples",
    "KernelTask",
    "KernelFit",
    "fit_kernel_task",
    "svm_scale",
    "svm_sign",
    "TIE_TOLERANCE",
]

#: An SVM decision value f with |f| <= TIE_TOLERANCE · (|b| + Σ|y α|) is a tie (predicts +1): it is
#: rounding noise, e.g. a narrow gaussian far from every support vector with an intercept of 0.
TIE_TOLERANCE = 1e-10


@dataclass(frozen=True, eq=False)
class SharedData:
    """Read-only data of one fit, shared once: per one-vs-one pair its rows' features and ±1 labels;
    the SVMs' penalty ``C`` and iteration bound ``max_iter`` (-1: libsvm's own)."""

    X: tuple[np.ndarray, ...]
    y: tuple[np.ndarray, ...]
    kernels: KernelPool
    C: float
    max_iter: int = -1


@dataclass(frozen=True, eq=False)
class TrialSamples:
    """One boosting round's resamples: ``samples[p]`` are positions (with repeats) in pair p's rows,
    None for a pair that has stopped. Shared by all of the round's tasks."""

    samples: tuple[np.ndarray | None, ...]


@dataclass(frozen=True, eq=False)
class KernelTask:
    """Train kernel ``kernel`` on pair ``pair``'s resample of the round."""

    pair: int
    kernel: int


@dataclass(frozen=True, eq=False)
class KernelFit:
    """What a task returns: the SVM's small parts and its ±1 predictions on all the pair's rows.

    ``support`` indexes the resample (positions in it); ``dual_coef[s]`` is ``y α`` of support
    vector s; ``seconds`` is (resample Gram, SVM fit, evaluation on the training set);
    ``converged`` is False when the solver stopped at ``max_iter``.
    """

    pair: int
    kernel: int
    support: np.ndarray
    dual_coef: np.ndarray
    intercept: float
    predictions: np.ndarray
    seconds: tuple[float, float, float]
    converged: bool = True


def fit_kernel_task(shared: SharedData, trial: TrialSamples, task: KernelTask) -> KernelFit:
    """Fit one kernel's SVM on the round's weighted resample and predict every training row (pure).

    Only two kinds of kernel blocks are computed, so memory stays O(n² + block) for N training
    rows and a resample of n: the resample's Gram matrix, on its distinct rows only (a weighted
    resample repeats rows; duplicates are fine for a precomputed-kernel SVC), and the training
    rows against the SVM's support vectors, a block of rows at a time (:func:`kernel_decisions`).
    Predictions follow :func:`svm_sign`.
    """
    t0 = time.perf_counter()
    X, y = shared.X[task.pair], shared.y[task.pair]
    sample = cast(np.ndarray, trial.samples[task.pair])  # tasks are only made for pairs still running
    pool = KernelPool((shared.kernels[task.kernel],))
    distinct, position = np.unique(sample, return_inverse=True)
    rows = X[distinct]
    gram = pool.evaluate(rows)[0]
    check_gram("MKBoost", gram, pool[0].name)
    K = gram[np.ix_(position, position)]
    t1 = time.perf_counter()
    svm = SVC(kernel="precomputed", C=shared.C, max_iter=shared.max_iter).fit(K, y[sample])
    t2 = time.perf_counter()
    dual_coef, intercept = svm.dual_coef_[0].copy(), float(svm.intercept_[0])
    decision = kernel_decisions(
        pool,
        X,
        rows[position[svm.support_]],
        np.zeros(1, dtype=np.int64),
        sparse.csr_matrix(dual_coef[None, :]),
        np.array([intercept]),
        "MKBoost",
    )[:, 0]
    predictions = svm_sign(decision, svm_scale(dual_coef, intercept)).astype(np.int8)
    t3 = time.perf_counter()
    return KernelFit(
        task.pair,
        task.kernel,
        svm.support_.astype(np.int64),
        dual_coef,
        intercept,
        predictions,
        (t1 - t0, t2 - t1, t3 - t2),
        svm.fit_status_ == 0,  # 1: stopped at max_iter
    )


def svm_scale(dual_coef: np.ndarray, intercept: float) -> float:
    """|b| + Σ|y α|: the size of the terms an SVM decision value is summed from."""
    return abs(intercept) + float(np.abs(dual_coef).sum())


def svm_sign(decision: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    """±1 of SVM decision values; |f| <= TIE_TOLERANCE · scale counts as 0, and sign(0) = +1."""
    return np.where(decision >= -TIE_TOLERANCE * np.asarray(scale), 1.0, -1.0)
