"""Kernel Passive-Aggressive learner, PA-I (Crammer, Dekel, Keshet, Shalev-Shwartz & Singer, "Online
passive-aggressive algorithms", JMLR 7, 2006), as the component learner of OMKC (the "kernel-ddpa" and
"kernel-sdpa" learners of the authors' C++ toolbox).

On a positive hinge loss ℓ = [1 − y f(x)]_+ the instance becomes a support vector with coefficient
``τ y``, ``τ = min(C, ℓ / κ(x, x))`` (binary); multi-class (the max-loss update of the same paper, in the
feature map φ(x, c) = κ(x, ·) ⊗ e_c): ``ℓ = [1 − f(x, y) + f(x, r)]_+`` with r the rival class and
``τ = min(C, ℓ / 2κ(x, x))``, +τ on y and −τ on r. κ(x, x) = 0 (the zero function): no update.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def pa_step(loss, kxx, selected, C, classes):
    """τ of PA-I for an instance of hinge loss ``loss`` (``classes`` 1: binary, 2: a multi-class pair
    update, ‖φ(x, y) − φ(x, r)‖² = 2κ(x, x)); 0 when not selected, no loss or κ(x, x) = 0."""
    if not selected or loss <= 0.0 or kxx <= 0.0:
        return 0.0
    return min(C, loss / (classes * kxx))
