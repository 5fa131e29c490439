"""The one dispatch point of the OMKC-family rules: the engines call :func:`combined_score` (binary) and
:func:`combined_votes` (multi-class) with a rule code from :mod:`.codes`, in the in-process recurrence
and in the coordinator's replay alike."""

from __future__ import annotations

from numba import njit

from .codes import DU, LEADER, UNIFORM
from .hedge import hedge_class_votes, hedge_score
from .leader import leader_class_scores, leader_score
from .uniform import average_kernel_class_scores, average_kernel_score, uniform_class_votes, uniform_vote


@njit(cache=True, nogil=True, inline="always")
def combined_score(rule, yt, f, z, w, u, p_weights, delta, kmistakes, penalise):
    """The combined score of one instance; sets which kernels may update (``penalise``) and, for
    Perceptron(u), every kernel's mistake flag ``z`` to the average kernel's.

    ``u``: this instance's uniforms; ``p_weights``: the weights the stochastic update sampling uses."""
    if rule == UNIFORM:
        return average_kernel_score(yt, f, z, penalise)
    if rule == LEADER:
        return leader_score(f, kmistakes, penalise)
    if rule == DU:
        return uniform_vote(f, penalise)
    return hedge_score(rule, f, w, u, p_weights, delta, penalise)


@njit(cache=True, nogil=True)
def combined_votes(rule, f, w, u, p_weights, delta, kmistakes, penalise, votes):
    """The combined class scores of one instance (``votes``) and which kernels may update
    (``penalise``), ``f`` (m, K) the kernels' class scores. Perceptron(u) and the leader rule put the
    deciding classifier's own scores in ``votes``; the voting rules each kernel's vote for its class."""
    votes[:] = 0.0
    if rule == UNIFORM:
        average_kernel_class_scores(f, penalise, votes)
    elif rule == LEADER:
        leader_class_scores(f, kmistakes, penalise, votes)
    elif rule == DU:
        uniform_class_votes(f, penalise, votes)
    else:
        hedge_class_votes(rule, f, w, u, p_weights, delta, penalise, votes)
