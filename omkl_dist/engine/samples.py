"""The model's support-vector counts and kernel weights at chosen rows inside a segment, read off the
segment's outcome after the fact (the compiled recurrences are not touched: nothing slows them).

A trace samples the model where its mistake curve has its points (:mod:`omkl_dist.evaluation.curve`),
which lie inside blocks. For the shared-pool engine's binary Hedge rules the recurrence's outcome
holds all that is needed to know the model after any row of a segment: a kernel gains a support
vector exactly where its coefficient is non-zero, the OMKC rules discount a kernel's weight exactly
where it updated on a mistake (:func:`~omkl_dist.combiners.hedge.hedge_update` of the update flags), and SPA's
log-weights follow from each row's per-kernel scores and label
(:func:`~omkl_dist.combiners.hedge_loss.hedge_loss_step`). :func:`pool_samples` repeats those
weight updates -- the same functions on the same numbers in the same order, so the same bits -- from
the segment's starting weights. The in-process engine and a cluster's coordinator call it on the
same arrays, so their traces are equal.

Rules outside this (multi-class models, OM-2, and the budget and OKS engines) have no samples
inside a segment (:func:`samples_inside` says which), nor has Perceptron(*), whose model drops
kernels mid-stream.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..combiners.codes import DD, DS, DU, LEADER, SD, SPA, SS, UNIFORM, discounts_weights
from ..combiners.hedge import hedge_update
from ..combiners.hedge_loss import hedge_loss
from ..learners.spa import hinge
from ._multiclass import om2_alphas
from .hyper import OMKCHyper, SPAHyper

# the binary shared-pool rules whose model after any row follows from the segment's outcome
# (LEADER's weights never change; Perceptron(*), which drops kernels mid-stream, is not read inside a block)
SAMPLED_RULES = (DD, DS, SD, SS, DU, UNIFORM, LEADER, SPA)


def samples_inside(scalars: dict) -> bool:
    """Whether :func:`pool_samples` reads the model inside a segment of this engine state."""
    return "rule" in scalars and int(scalars["rule"]) in SAMPLED_RULES and int(scalars.get("n_classes", 1)) == 1


@njit(cache=True, nogil=True)
def _hedge_path(w, updated, beta, discounts, rows, out):
    """``w`` after each row of ``rows`` (sorted), row t discounting the kernels ``updated[t]``."""
    j = 0
    for t in range(updated.shape[0]):
        if discounts:
            hedge_update(w, updated[t], beta)
        while j < rows.shape[0] and rows[j] == t:
            out[j] = w
            j += 1


@njit(cache=True, nogil=True)
def _hedge_loss_path(logw, y, F, log_gamma, hedge_mistake, rows, out):
    """SPA's weights after each row of ``rows``: ``logw += loss · log γ`` per row, less its maximum
    (:func:`~omkl_dist.combiners.hedge_loss.weights_from_log`), exponentiated where sampled."""
    m = logw.shape[0]
    j = 0
    for t in range(F.shape[0]):
        for k in range(m):
            logw[k] += hedge_loss(y[t], F[t, k], hinge(y[t], F[t, k]), hedge_mistake) * log_gamma
        top = -np.inf
        for k in range(m):
            if logw[k] > top:
                top = logw[k]
        for k in range(m):
            logw[k] -= top
        while j < rows.shape[0] and rows[j] == t:
            for k in range(m):
                out[j, k] = np.exp(logw[k])
            j += 1


def pool_samples(scalars: dict, start: dict, F, coef, y, rows) -> tuple[np.ndarray, np.ndarray]:
    """Support vectors per kernel and kernel weight shares after rows ``rows`` (sorted indices into
    the segment) of a segment of a binary shared-pool model (:func:`samples_inside`).

    ``start``: the model at the segment's start: ``w``, ``logw`` (copies, or arrays not used again)
    and ``n_support`` per kernel; ``F``, ``coef``: the segment's per-kernel scores and coefficients
    (n, m); ``y``: its labels (±1). Returns ``(n_support, weights)``, each (len(rows), m)."""
    rows = np.asarray(rows, dtype=np.int64)
    rule = int(scalars["rule"])
    stop = int(rows[-1]) + 1 if len(rows) else 0  # the rows after the last sampled one are not read
    F, coef, y = F[:stop], np.asarray(coef)[:stop], y[:stop]
    support = start["n_support"] + _support_gained(coef, rows)
    weights = np.empty((len(rows), len(start["w"])))
    if rule == SPA:
        hyper = SPAHyper.from_scalars(scalars)
        logw = np.array(start["logw"], dtype=np.float64)
        F, y = np.ascontiguousarray(F, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64)
        _hedge_loss_path(logw, y, F, np.log(hyper.gamma), bool(hyper.hedge_mistake), rows, weights)
    else:
        beta = OMKCHyper.from_scalars(scalars).beta
        w = np.array(start["w"], dtype=np.float64)
        # the kernels that erred and learnt (every Perceptron that learnt erred; a PA-I learner need not)
        erred = np.asarray(y, dtype=np.float64)[:, None] * np.asarray(F) <= 0.0
        _hedge_path(w, np.ascontiguousarray((coef != 0.0) & erred), beta, bool(discounts_weights(rule)), rows, weights)
    return support, weights / weights.sum(axis=1, keepdims=True)


def _support_gained(coef, rows) -> np.ndarray:
    """Support vectors each kernel gained by each of ``rows`` (sorted) of a segment's coefficients
    ``coef`` (n, m): the non-zeros at or before the row, counted over the few rows that have any
    (a segment keeps few; a cumulative count of every row costs a pass over (n, m) integers)."""
    kept = np.flatnonzero(np.any(coef != 0.0, axis=1))
    gained = np.zeros((len(kept) + 1, coef.shape[1]), dtype=np.int64)
    np.cumsum(coef[kept] != 0.0, axis=0, dtype=np.int64, out=gained[1:])
    return gained[np.searchsorted(kept, rows, side="right")]


def support_per_kernel(alpha, m: int) -> np.ndarray:
    """Support vectors per kernel among rows of shared-pool coefficients ``alpha`` ((rows, m K),
    kernel k's K class columns at ``k K .. k K + K − 1``): the rows with a non-zero coefficient
    for any of its classes, as :meth:`~omkl_dist.scoring.support_vectors.SupportVectors.n_support`
    counts them."""
    alpha = np.asarray(alpha)
    per_class = alpha.reshape(alpha.shape[0], m, alpha.shape[1] // m) != 0.0
    return np.count_nonzero(np.any(per_class, axis=2), axis=0).astype(np.int64)


def pool_support(arrays: dict) -> np.ndarray:
    """Support vectors per kernel of a shared-pool state's arrays (its pool's coefficients)."""
    return support_per_kernel(arrays["pool_alpha"], len(arrays["w"]))


def om2_factors(sqnorm, q: float) -> np.ndarray:
    """OM-2's kernel factors α_j from the kernels' ‖θ_j‖² (0 before the first update)."""
    out = np.zeros(len(sqnorm))
    om2_alphas(np.asarray(sqnorm, dtype=np.float64), float(q), out)
    return out


def factor_shares(alpha: np.ndarray) -> np.ndarray:
    """OM-2's kernel weight shares: the factors α normalised, uniform before the first update."""
    return alpha / alpha.sum() if alpha.sum() > 0 else np.full(len(alpha), 1.0 / len(alpha))
