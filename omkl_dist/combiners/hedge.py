"""Hedge combination of kernel classifiers, as in OMKC Algorithms 1-4 (Hoi et al.): weights discounted
by ``beta`` on the kernels that erred and were updated.

Weights are kept renormalised so that ``max_k w_k == 1`` after every update: then
``q_k = w_k / max_j w_j`` is ``w_k`` itself, and 10^6 instances never underflow the leading weight
(trailing weights may underflow to 0, i.e. to a probability below 1e-308, which is what they are).
``sgn(0) = 0``: a kernel classifier with no opinion abstains from the vote.
"""

from __future__ import annotations

from numba import njit

from .codes import DD, DS, SD
from .votes import sgn, vote_of


@njit(cache=True, nogil=True)
def hedge_score(rule, f, w, u, p_weights, delta, penalise):
    """Combined score of one instance and which kernels Hedge may update (``penalise`` mask).

    ``u``: this instance's uniforms (one per kernel); ``p_weights``: the weights the stochastic
    *update* sampling uses (current ones, or the block-start snapshot in block-sync mode).
    """
    m = f.shape[0]
    score = 0.0
    if rule == DD:  # Algorithm 1: theta = w / sum(w)
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


@njit(cache=True, nogil=True)
def hedge_class_votes(rule, f, w, u, p_weights, delta, penalise, votes):
    """Multi-class :func:`hedge_score`: each kernel's weight goes to its predicted class
    (:func:`~.votes.vote_of`) in place of ``sgn f_k``; ``f`` (m, K), ``votes`` (K) starts at 0."""
    m = f.shape[0]
    total = 0.0
    for k in range(m):
        total += w[k]
    for k in range(m):
        v = vote_of(f[k])
        if rule == DD:
            weight, penalise[k] = w[k] / total, True
        elif rule == DS:
            weight, penalise[k] = (1.0 if u[k] < w[k] else 0.0), True
        else:  # SD, SS: p = (1-δ) q + δ/m selects the kernels to update
            picked = u[k] < (1.0 - delta) * p_weights[k] + delta / m
            penalise[k] = picked
            weight = w[k] if (rule == SD or picked) else 0.0
        if v >= 0:
            votes[v] += weight


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
