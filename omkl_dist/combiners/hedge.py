"""Hedge combination of kernel classifiers, as in OMKC Algorithms 1-4 (Hoi et al.).

Weights are kept renormalised so that ``max_k w_k == 1`` after every update: then
``q_k = w_k / max_j w_j`` is ``w_k`` itself, and 10^6 instances never underflow the leading weight
(trailing weights may underflow to 0, i.e. to a probability below 1e-308, which is what they are).
``sgn(0) = 0``: a kernel classifier with no opinion abstains from the vote.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# combination / update rules, one code per OMKC variant and per Perceptron baseline
DD, DS, SD, SS, UNIFORM, LEADER, SPA, DU, OM2 = 0, 1, 2, 3, 4, 5, 6, 7, 8
# DU: OMKC(U) of the budget-OMKC paper, every kernel updated on its own mistakes, fixed uniform vote;
# OM2: OM-2's p-norm multi-class update (not a Hedge rule: its kernel factors come from ‖θ_j‖)
VARIANTS = {("D", "D"): DD, ("D", "S"): DS, ("S", "D"): SD, ("S", "S"): SS, ("D", "U"): DU}
STOCHASTIC = (DS, SD, SS, SPA)


@njit(cache=True, nogil=True, inline="always")
def sgn(v):
    return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)


@njit(cache=True, nogil=True)
def hedge_score(rule, f, w, u, p_weights, delta, penalise):
    """Combined score of one instance and which kernels Hedge may update (``penalise`` mask).

    ``u``: this instance's uniforms (one per kernel); ``p_weights``: the weights the stochastic
    *update* sampling uses (current ones, or the block-start snapshot in block-sync mode).
    """
    m = f.shape[0]
    score = 0.0
    if rule == DU:  # uniform vote theta = 1/m, weights never change
        for k in range(m):
            score += sgn(f[k]) / m
            penalise[k] = True
    elif rule == DD:  # Algorithm 1: theta = w / sum(w)
        total = 0.0
        for k in range(m):
            total += w[k]
        for k in range(m):
            score += (w[k] / total) * sgn(f[k])
            penalise[k] = True
    elif rule == DS:  # Algorithm 2: m_k ~ Bernoulli(q_k), vote of the sampled kernels
        for k in range(m):
            if u[k] < w[k]:
                score += sgn(f[k])
            penalise[k] = True
    else:  # SD (Algorithm 3) and SS (Algorithm 4): m_k ~ Bernoulli(p_k), p = (1-δ) q + δ/m
        for k in range(m):
            picked = u[k] < (1.0 - delta) * p_weights[k] + delta / m
            penalise[k] = picked
            if rule == SD:
                score += w[k] * sgn(f[k])
            elif picked:
                score += w[k] * sgn(f[k])
    return score


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


@njit(cache=True, nogil=True)
def hedge_update(w, updated, beta):
    """w_k <- w_k * beta for every updated (mistaken and selected) kernel, then renormalise by max."""
    changed = False
    for k in range(w.shape[0]):
        if updated[k]:
            w[k] *= beta
            changed = True
    if changed:
        top = 0.0
        for k in range(w.shape[0]):
            if w[k] > top:
                top = w[k]
        for k in range(w.shape[0]):
            w[k] /= top


@njit(cache=True, nogil=True)
def hedge_loss_update(logw, losses, log_gamma, w):
    """w_k <- w_k * gamma**loss_k for every kernel, in log space (losses can be large: the hinge
    loss of a polynomial kernel on raw data), then ``w = exp(logw - max logw)`` (max 1)."""
    top = -np.inf
    for k in range(logw.shape[0]):
        logw[k] += losses[k] * log_gamma
        if logw[k] > top:
            top = logw[k]
    for k in range(logw.shape[0]):
        logw[k] -= top
        w[k] = np.exp(logw[k])
