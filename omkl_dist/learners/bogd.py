"""Bounded Online Gradient Descent with uniform sampling, BOGD (Zhao, Wang, Wu, Jin & Hoi, "Fast
bounded online gradient descent algorithms for scalable kernel-based online learning", ICML 2012).

Online gradient descent on the regularised hinge loss ``λ/2 ‖f‖² + [1 − y f(x)]_+`` with step η:
when the hinge loss is positive, ``f ← (1 − ηλ) f + η y κ(x, ·)``. When the buffer already holds B
support vectors, one of the B old ones is removed uniformly at random and the B − 1 others are
multiplied by B/(B − 1) (an unbiased estimate of the old function); the new one keeps η y.

Choices (the BOMKL paper does not give them): the shrink by (1 − ηλ) applies on the rounds with a
positive loss (the update rule above; the MATLAB code of the BOMKL authors' group also shrinks on
zero-loss rounds, which differs by a factor (1 − ηλ) per such round: nothing for their λ = 1/T²).
With B = 1 the old support vector is simply replaced (no others to rescale). The removed slot is
``int(u B)`` for the instance's uniform u (see :mod:`.rbp`). κ(x, x) = 0: the shrink applies, nothing
is added. Shrinking and rescaling change only the kernel's scale factor (O(1)).

Multi-class (K > 2 classes, :func:`bogd_mc_step`): the same gradient step on the multi-class hinge
loss of Crammer & Singer ("On the algorithmic implementation of multiclass kernel-based vector
machines", JMLR 2001) with the rival r (highest-scoring class other than y):
``ℓ = [1 − f(x, y) + f(x, r)]_+``, whose gradient is −(φ(x, y) − φ(x, r)); so on a positive loss
``f ← (1 − ηλ) f + η (φ(x, y) − φ(x, r))`` (+η on class y, −η on class r at x), removal and rescaling
as above.
"""

from __future__ import annotations

from numba import njit

from ._budget import free_or_random_slot, hinge, place, place_pair


@njit(cache=True)
def bogd_step(t, y, f, kxx, u, hp, used, scale, slots):
    """One instance for one kernel (:class:`~.records.BudgetParams` ``hp``); returns ``(hinge loss, used,
    scale, slot)`` (the slot row t took, -1: none)."""
    loss = hinge(y, f)
    j, used, scale = _step_slot(loss, kxx, u, hp.budget, used, scale, hp.eta, hp.lam)
    if j >= 0:
        place(j, t, hp.eta * y / scale, slots.coef, slots.entry)
    return loss, used, scale, j


@njit(cache=True, inline="always")
def _step_slot(loss, kxx, u, budget, used, scale, eta, lam):
    """The shrinking and slot of a step with hinge loss ``loss``: ``(slot or -1 if nothing is added, used,
    scale)``."""
    if loss <= 0.0:
        return -1, used, scale
    scale *= 1.0 - eta * lam
    if kxx <= 0.0:
        return -1, used, scale
    full = used == budget
    j, used = free_or_random_slot(u, budget, used)
    if full and budget > 1:
        scale *= budget / (budget - 1.0)
    return j, used, scale


@njit(cache=True)
def bogd_mc_step(t, y, r, margin, kxx, u, hp, used, scale, slots):
    """Multi-class: label y, rival r, margin ``f(x, y) − f(x, r)``; returns ``(hinge loss, used, scale,
    slot)``."""
    loss = hinge(1.0, margin)
    j, used, scale = _step_slot(loss, kxx, u, hp.budget, used, scale, hp.eta, hp.lam)
    if j >= 0:
        place_pair(j, t, hp.n_classes, hp.eta / scale, y, r, slots.coef, slots.entry)
    return loss, used, scale, j
