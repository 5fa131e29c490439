"""The uniform rules: Perceptron(u), one Perceptron on the average kernel (1/m) Σ κ_k, and OMKC(U)
(the budget-OMKC paper's fixed uniform vote θ = 1/m of kernels that each learn on their own mistakes).
Neither has weights to update."""

from __future__ import annotations

from numba import njit

from ..learners.perceptron import perceptron_mistake
from .votes import sgn, vote_of


@njit(cache=True, nogil=True, inline="always")
def average_kernel_score(yt, f, z, penalise):
    """Perceptron(u): the average kernel's score ``(1/m) Σ f_k``; every kernel may update and takes the
    average kernel's mistake flag ``z``."""
    m = f.shape[0]
    total = 0.0
    for k in range(m):
        total += f[k]
    s_t = total / m
    zu = perceptron_mistake(yt, s_t)
    for k in range(m):
        z[k] = zu
        penalise[k] = True
    return s_t


@njit(cache=True, nogil=True, inline="always")
def average_kernel_class_scores(f, penalise, votes):
    """Multi-class Perceptron(u): the average kernel's class scores (the mean of the kernels' ``f`` (m, K))."""
    m, K = f.shape
    for k in range(m):
        penalise[k] = True
        for c in range(K):
            votes[c] += f[k, c]
    for c in range(K):
        votes[c] /= m


@njit(cache=True, nogil=True, inline="always")
def uniform_vote(f, penalise):
    """OMKC(U): ``Σ_k sgn(f_k) / m``, every kernel updated on its own mistakes."""
    m = f.shape[0]
    score = 0.0
    for k in range(m):
        score += sgn(f[k]) / m
        penalise[k] = True
    return score


@njit(cache=True, nogil=True, inline="always")
def uniform_class_votes(f, penalise, votes):
    """Multi-class OMKC(U): each kernel's predicted class gets 1/m (:func:`~.votes.vote_of`)."""
    m = f.shape[0]
    for k in range(m):
        v = vote_of(f[k])
        weight, penalise[k] = 1.0 / m, True
        if v >= 0:
            votes[v] += weight
