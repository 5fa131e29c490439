"""Naive multi-kernel FOGD and NOGD (Lu, Hoi, Wang, Zhao & Liu, "Large Scale Online Kernel
Learning", JMLR 17(47), 2016, Algorithms 1 and 2) plugged into Hedge, one instance at a time.

No numba, no blocks. Kernel k keeps its weights as a list of class vectors; every row:

* FOGD: ``p = u · x`` for the kernel's D directions (the library's draws,
  :func:`omkl_dist.randomness.features.gaussian_projection`: the same numbers by construction; the
  product one row at a time through the library's fixed-shape call, so its bits are the block
  engine's), ``z = (cos p, sin p)`` (``math``'s, libm's);
* NOGD: while the kernel's budget has room, the kernel predictor ``f(x) = Σ_j α_j κ(x_j, x)`` and on
  ``y f(x) < 1`` the row joins with ``α = η y``; at the first positive loss with a full budget, the
  Nyström map ``z(x) = Λ^{-1/2} Vᵀ (κ(x_1, x), …, κ(x_B, x))`` from the top ``rank`` eigenpairs
  (Λ, V) of the budget's Gram matrix, ``w = Λ^{1/2} Vᵀ α`` (the authors' ``w = α pinv(M)``: the
  same function on the budget's span), then the linear step on z;
* the score ``f = w · z`` summed in feature order (``cumsum``: the order of the compiled loop);
  ``y f < 1`` (multi-class: ``f_y − f_r < 1``, r the highest-scoring other class) ⇒ ``w += η y z``
  (``+η z`` on y, ``−η z`` on r).

Hedge: θ = w / Σ w, prediction ``Σ θ_k f_k`` (a mistake when ``y score <= 0``; multi-class when the
true class does not score above every other), ``logw_k += ℓ_k log γ`` with ℓ_k the kernel's mistake
indicator (or hinge loss), ``w = exp(logw − max logw)``.
"""

from __future__ import annotations

import math

import numpy as np

from omkl_dist.randomness.features import gaussian_projection
from omkl_dist.scoring._blas import fixed_shape_dots


def _sum_in_order(a):
    return float(np.cumsum(a)[-1]) if len(a) else 0.0


def _rival(scores, yt):
    r = -1
    for c in range(len(scores)):
        if c != yt and (r < 0 or scores[c] > scores[r]):
            r = c
    return r


class _Hedge:
    def __init__(self, m, gamma, n_classes):
        self.logw, self.w = np.zeros(m), np.ones(m)
        self.log_gamma, self.K = math.log(gamma), n_classes

    def predict(self, f, yt):
        """Combined score(s) of per-kernel scores f (m, K) and whether the row is a mistake."""
        total = 0.0
        for wk in self.w:
            total += wk
        scores = np.zeros(self.K)
        for c in range(self.K):
            s = 0.0
            for k in range(len(self.w)):
                s += (self.w[k] / total) * f[k, c]
            scores[c] = s
        if self.K == 1:
            return scores[0], yt * scores[0] <= 0.0
        return scores, scores[int(yt)] <= scores[_rival(scores, int(yt))]

    def update(self, losses):
        for k in range(len(self.w)):
            self.logw[k] += losses[k] * self.log_gamma
        top = max(self.logw)
        for k in range(len(self.w)):
            self.logw[k] -= top
            self.w[k] = math.exp(self.logw[k])


def _ogd_step(Wk, z, yt, eta, K, hedge_hinge):
    """Score(s) of one kernel on features z, its loss for Hedge and the gradient step (in place)."""
    P = len(z)
    f = np.array([_sum_in_order(Wk[c * P : (c + 1) * P] * z) for c in range(K)])
    if K == 1:
        margin = yt * f[0]
        if margin < 1.0:
            Wk[:P] += (eta * yt) * z
    else:
        r = _rival(f, int(yt))
        margin = f[int(yt)] - f[r]
        if margin < 1.0:
            Wk[int(yt) * P : (int(yt) + 1) * P] += eta * z
            Wk[r * P : (r + 1) * P] += -eta * z
    loss = max(0.0, 1.0 - margin) if hedge_hinge else (1.0 if margin <= 0.0 else 0.0)
    return f, loss


def naive_fogd(
    X, y, sigmas, *, n_components, eta=0.1, gamma=0.99, seed=0, hedge_hinge=False, n_classes=1, kernel_ids=None
):
    """FOGD with Hedge over gaussian kernels of widths ``sigmas``. Returns ``mistakes``, ``score``,
    ``F`` (n, m K), ``W`` (m, K 2D) and the Hedge weights ``w``."""
    n, d = X.shape
    m, K, D = len(sigmas), n_classes, n_components
    ids = range(m) if kernel_ids is None else kernel_ids
    U = [gaussian_projection(seed, k, D, d, s) for k, s in zip(ids, sigmas)]
    W = np.zeros((m, K * 2 * D))
    hedge = _Hedge(m, gamma, K)
    F = np.empty((n, m * K))
    mistakes = np.zeros(n, dtype=bool)
    scores = []
    for t in range(n):
        f, losses = np.empty((m, K)), np.empty(m)
        for k in range(m):
            p = fixed_shape_dots(X[t : t + 1], U[k])[0]
            z = np.array([math.cos(v) for v in p] + [math.sin(v) for v in p])
            f[k], losses[k] = _ogd_step(W[k], z, y[t], eta, K, hedge_hinge)
        F[t] = f.ravel()
        s, mistakes[t] = hedge.predict(f, y[t])
        scores.append(s)
        hedge.update(losses)
    return {"mistakes": mistakes, "score": np.array(scores), "F": F, "W": W, "w": hedge.w}
