"""The leader rule, Perceptron(*): independent kernel Perceptrons, and the one with the fewest mistakes
so far predicts (the first on ties)."""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True, inline="always")
def leader(kmistakes, m):
    """Of the first ``m`` kernels, the one with the fewest mistakes so far (the first on ties)."""
    best = 0
    for k in range(1, m):
        if kmistakes[k] < kmistakes[best]:
            best = k
    return best


@njit(cache=True, nogil=True, inline="always")
def leader_score(f, kmistakes, penalise):
    """The leader's score; every kernel may update."""
    best = leader(kmistakes, f.shape[0])
    for k in range(f.shape[0]):
        penalise[k] = True
    return f[best]


@njit(cache=True, nogil=True, inline="always")
def leader_class_scores(f, kmistakes, penalise, votes):
    """Multi-class: the leader's class scores in ``votes``; every kernel may update."""
    best = leader(kmistakes, f.shape[0])
    for k in range(f.shape[0]):
        penalise[k] = True
    for c in range(votes.shape[0]):  # (a loop: an array slice assignment compiles numba's shape-error text)
        votes[c] = f[best, c]
