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
"""

from __future__ import annotations

from numba import njit

from ._budget import hinge, place, random_slot


@njit(cache=True)
def bogd_step(t, y, f, kxx, u, budget, used, scale, eta, lam, coef, a_blk, entry):
    """One instance for one kernel; returns ``(hinge loss, used, scale, added)``."""
    loss = hinge(y, f)
    if loss <= 0.0:
        return loss, used, scale, False
    scale *= 1.0 - eta * lam
    if kxx <= 0.0:
        return loss, used, scale, False
    if used < budget:
        j = used
        used += 1
    else:
        j = random_slot(u, budget)
        if budget > 1:
            scale *= budget / (budget - 1.0)
    place(j, t, eta * y / scale, coef, a_blk, entry)
    return loss, used, scale, True
