"""Hedge discounted by a loss, in log space: SPA's combiner (Budget OMKC, Algorithm 1) and the budget
baselines' (:class:`~omkl_dist.engine.budget.BudgetEngine`).

Prediction ``Σ_k θ_k f_k(x)`` with θ = w / Σ w (multi-class: the class with the highest
``Σ_k θ_k f_k(x, c)``), then ``w_k ← w_k γ^{loss_k}`` for every kernel, kept as log-weights
(losses can be large: the hinge loss of a polynomial kernel on raw data), ``w = exp(logw − max logw)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .votes import rival


@njit(cache=True, inline="always")
def hedge_loss(y, f, loss, mistake_only):
    """The loss that discounts a kernel's Hedge weight: its hinge loss (Algorithm 1), or with
    ``mistake_only`` 1 when it misclassifies and 0 otherwise (OMKC's Hedge; what the authors'
    C++ tool's mistake rates are consistent with, see the ``hedge_loss`` parameter of SPA)."""
    if mistake_only:
        return 1.0 if y * f <= 0.0 else 0.0
    return loss


@njit(cache=True, nogil=True, inline="always")
def weighted_vote(w, f):
    """Σ θ_k f_k with θ = w / Σ w: the real-valued combined score of SPA and the budget baselines."""
    total = 0.0
    for k in range(w.shape[0]):
        total += w[k]
    s = 0.0
    for k in range(w.shape[0]):
        s += (w[k] / total) * f[k]
    return s


@njit(cache=True, nogil=True, inline="always")
def weighted_class_scores(w, f, out):
    """``out[c] = Σ_k (w_k / Σ w) f[k, c]``: the Hedge combination of the kernels' class scores f (m, K)."""
    total = 0.0
    for k in range(f.shape[0]):
        total += w[k]
    for c in range(f.shape[1]):
        s = 0.0
        for k in range(f.shape[0]):
            s += (w[k] / total) * f[k, c]
        out[c] = s


@njit(cache=True)
def weights_from_log(logw, w):
    """``logw -= max; w = exp(logw)``: the normalisation every Hedge-loss update ends with."""
    top = -np.inf
    for k in range(logw.shape[0]):
        if logw[k] > top:
            top = logw[k]
    for k in range(logw.shape[0]):
        logw[k] -= top
        w[k] = np.exp(logw[k])


@njit(cache=True, nogil=True)
def hedge_loss_step(logw, losses, log_gamma, w, fresh):
    """``w_k <- w_k γ^{loss_k}`` for every kernel, in log space, then ``w = exp(logw − max logw)`` (max 1):
    ``logw_k += loss_k log γ``, then :func:`weights_from_log`'s normalisation, bit for bit,
    exponentiating only the log-weights it changes: when
    ``w = exp(logw)`` on entry (``fresh`` False), a weight whose log-weight comes out equal keeps
    its value -- the common row in a recurrence, where the leading kernel has no loss (the shift
    is 0) and most kernels none either (a mistake-discounted Hedge). ``fresh``: ``w`` not known
    to match ``logw`` (a recurrence's first row): every weight is exponentiated."""
    top = -np.inf
    for k in range(logw.shape[0]):  # the same sums and maximum as the full update's
        v = logw[k] + losses[k] * log_gamma
        if v > top:
            top = v
    for k in range(logw.shape[0]):
        v = (logw[k] + losses[k] * log_gamma) - top
        if fresh or v != logw[k]:  # (equal values, even +0 and -0, have equal exponentials)
            w[k] = np.exp(v)
        logw[k] = v


@njit(cache=True)
def combine_step(y, F, loss, logw, w, log_gamma):
    """Replay the Hedge combiner over rows; updates ``logw`` and ``w`` in place.

    Row t: score ``Σ_k (w_k / Σ w) F[t, k]``, a mistake when ``y_t · score <= 0``, then
    ``logw_k += loss[t, k] · log γ`` and ``w = exp(logw − max logw)`` (:func:`hedge_loss_step`: the
    weights whose log-weight moved, from the second row on). Returns ``(score, mistakes)``.
    """
    n = F.shape[0]
    score = np.empty(n)
    mistakes = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        s_t = weighted_vote(w, F[t])
        score[t] = s_t
        mistakes[t] = y[t] * s_t <= 0.0
        hedge_loss_step(logw, loss[t], log_gamma, w, t == 0)
    return score, mistakes


@njit(cache=True)
def combine_step_mc(y, F, loss, logw, w, log_gamma, K):
    """Multi-class :func:`combine_step`: ``F`` (n, m K) class scores, ``y`` class indices. Row t: class
    scores ``Σ_k (w_k / Σ w) F[t, k K + c]``, a mistake when the true class does not score above every
    other (:func:`~.votes.rival`), then the Hedge update. Returns ``(scores (n, K), mistakes)``."""
    n = F.shape[0]
    m = F.shape[1] // K
    score = np.empty((n, K))
    mistakes = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        weighted_class_scores(w, F[t].reshape((m, K)), score[t])
        yt = int(y[t])
        mistakes[t] = score[t, yt] <= score[t, rival(score[t], yt)]
        hedge_loss_step(logw, loss[t], log_gamma, w, t == 0)
    return score, mistakes


def combine(y, F, loss, logw, w, gamma, n_classes):
    """Replay the Hedge combiner over rows (binary :func:`combine_step` or :func:`combine_step_mc`);
    updates ``logw`` and ``w`` in place and returns ``(score, mistakes)``."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    if n_classes == 1:
        return combine_step(y, F, loss, logw, w, np.log(gamma))
    return combine_step_mc(y, np.ascontiguousarray(F), loss, logw, w, np.log(gamma), n_classes)
