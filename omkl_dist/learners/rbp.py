"""Random Budget Perceptron (Cavallanti, Cesa-Bianchi & Gentile, "Tracking the best hyperplane with a
simple budget Perceptron", Machine Learning 2007).

Kernel Perceptron with at most B support vectors: on a mistake ``y f(x) <= 0``, if the buffer is
full, remove a support vector chosen uniformly at random, then add ``y κ(x, ·)``.

Random removal: one uniform ``u = U[t, k]`` per instance and kernel from
:func:`omkl_dist.randomness.uniforms` (stream of (seed, global block, kernel id)); the removed
support vector is the one in slot ``int(u B)`` (see :mod:`._budget`: a new support vector takes the
slot of the one it replaces, so the slot order is a fixed, reproducible order of the B support
vectors and ``int(u B)`` is uniform over them).

An instance with κ(x, x) = 0 (the zero vector under a polynomial kernel) is the zero function in the
kernel's feature space: the mistake is counted, nothing is added or removed.

Multi-class (K > 2 classes, :func:`rbp_mc_step`): the budget Perceptron on the multi-class Perceptron
of Crammer & Singer ("Ultraconservative online algorithms for multiclass problems", JMLR 2003, the
"max" update): with class scores f(x, c) and the rival r (highest-scoring class other than y), a
mistake is ``f(x, y) <= f(x, r)``; it adds ``+1`` on class y and ``−1`` on class r at x, i.e. the pair
φ(x, y) − φ(x, r), and the random removal is unchanged.
"""

from __future__ import annotations

from numba import njit

from ._budget import free_or_random_slot, place, place_pair


@njit(cache=True)
def rbp_step(t, y, f, kxx, u, hp, used, slots):
    """One instance (block row t, label y, decision value f) for one kernel (hyper-parameters ``hp``,
    :class:`~.records.BudgetParams`; its :class:`~.records.Slots`).

    Returns ``(loss, used, slot)``: the Hedge loss (mistake indicator 1/0), the slots in use and the
    slot row t took as a support vector (coefficient y; -1: none; RBP never rescales).
    """
    if y * f > 0.0:
        return 0.0, used, -1
    if kxx <= 0.0:
        return 1.0, used, -1
    j, used = free_or_random_slot(u, hp.budget, used)
    place(j, t, y, slots.coef, slots.entry)
    return 1.0, used, j


@njit(cache=True)
def rbp_mc_step(t, y, r, margin, kxx, u, hp, used, slots):
    """Multi-class: block row t with label y, rival r and margin ``f(x, y) − f(x, r)``; returns
    ``(loss, used, slot)`` (the new support vector: +1 on y, −1 on r)."""
    if margin > 0.0:
        return 0.0, used, -1
    if kxx <= 0.0:
        return 1.0, used, -1
    j, used = free_or_random_slot(u, hp.budget, used)
    place_pair(j, t, hp.n_classes, 1.0, y, r, slots.coef, slots.entry)
    return 1.0, used, j
