"""Naive multi-kernel FOGD and NOGD (Lu, Hoi, Wang, Zhao & Liu, "Large Scale Online Kernel
Learning", JMLR 17(47), 2016, Algorithms 1 and 2) plugged into Hedge, one instance at a time.

No blocks and none of the learners' compiled loops (only the library's arithmetic: ``cos_sin``,
``fma_arrays``, ``kernel_values``). Kernel k keeps its weights as a list of class vectors; every row:

* FOGD: ``p = u · x`` for the kernel's D directions (the library's draws,
  :func:`omkl_dist.randomness.features.gaussian_projection`: the same numbers by construction),
  summed in feature order from 0.0 by fused multiply-adds (the compiled loop's order and rounding:
  :func:`omkl_dist.scoring._fma.fma_arrays`), ``z = (cos p, sin p)`` by the
  library's vectorised :func:`omkl_dist.scoring._vtrig.cos_sin` (the same mathematical quantity as
  ``math.cos``/``math.sin``, within 1 ulp of them: it is how the library computes them, so the
  reference calls it on the same inputs rather than libm's);
* NOGD: kernel values from dot products and squared norms summed in feature order (``cumsum``),
  turned into values by the library's kernel arithmetic (:func:`omkl_dist.learners._budget.kernel_values`:
  the same exp); while the kernel's budget has room, the kernel predictor ``f(x) = Σ_j α_j κ(x_j, x)`` and on
  ``y f(x) < 1`` the row joins with ``α = η y``; at the first positive loss with a full budget, the
  Nyström map ``z(x) = Λ^{-1/2} Vᵀ (κ(x_1, x), …, κ(x_B, x))`` from the top ``rank`` eigenpairs
  (Λ, V) of the budget's Gram matrix, ``w = Λ^{1/2} Vᵀ α`` (the authors' ``w = α pinv(M)``: the
  same function on the budget's span), then the linear step on z (the switch row included). The
  eigendecomposition is the library's one place for it
  (:func:`omkl_dist.learners.nystrom.nystrom_start`): LAPACK's bits are the same for both callers;
* the score ``f = w · z`` summed in the compiled loop's order of eight lanes (``_dot_in_lanes``: how
  the library takes the same sum without one chain of dependent adds);
  ``y f < 1`` (multi-class: ``f_y − f_r < 1``, r the highest-scoring other class) ⇒ ``w += η y z``
  (``+η z`` on y, ``−η z`` on r), each weight by a fused multiply-add.

Hedge: θ = w / Σ w, prediction ``Σ θ_k f_k`` (a mistake when ``y score <= 0``; multi-class when the
true class does not score above every other), ``logw_k += ℓ_k log γ`` with ℓ_k the kernel's mistake
indicator (or hinge loss), ``w = exp(logw − max logw)``.
"""

from __future__ import annotations

import math

import numpy as np

from omkl_dist.kernels import make_pool
from omkl_dist.learners._budget import kernel_values
from omkl_dist.learners.nystrom import nystrom_start
from omkl_dist.randomness.features import gaussian_projection
from omkl_dist.scoring._fma import fma_arrays
from omkl_dist.scoring._vtrig import cos_sin
from omkl_dist.scoring.program import compile_program


def _sum_in_order(a):
    return float(np.cumsum(a)[-1]) if len(a) else 0.0


def _dot_in_lanes(w, z):
    """``w · z`` in the library's order for a score over features (``feature_score``): eight
    lanes (lane l: the terms i ≡ l mod 8 of the first len - len mod 8, in order), added pairwise,
    then the last len mod 8 terms in order, each term added by a fused multiply-add (one rounding).
    The same quantity as any sum of the products; this order is how the compiled loop takes it
    without one chain of dependent adds."""
    n8 = len(z) - len(z) % 8
    lanes = np.zeros(8)
    for i in range(0, n8, 8):
        lanes = fma_arrays(w[i : i + 8], z[i : i + 8], lanes)
    s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
    for i in range(n8, len(z)):
        s = fma_arrays(w[i : i + 1], z[i : i + 1], np.array([s]))[0]
    return float(s)


def _step(w, step, z):
    """``w + step z`` with one rounding per weight (the library's fused step), in place."""
    w[:] = fma_arrays(np.full(len(z), step), z, w)


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
    f = np.array([_dot_in_lanes(Wk[c * P : (c + 1) * P], z) for c in range(K)])
    if K == 1:
        margin = yt * f[0]
        if margin < 1.0:
            _step(Wk[:P], eta * yt, z)
    else:
        r = _rival(f, int(yt))
        margin = f[int(yt)] - f[r]
        if margin < 1.0:
            _step(Wk[int(yt) * P : (int(yt) + 1) * P], eta, z)
            _step(Wk[r * P : (r + 1) * P], -eta, z)
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
            p = np.zeros(D)
            for j in np.flatnonzero(X[t]):  # (a zero feature's term leaves p as it is)
                p = fma_arrays(np.full(D, X[t, j]), U[k][:, j], p)
            z = np.empty(2 * D)
            cos_sin(p, z[:D], z[D:])
            f[k], losses[k] = _ogd_step(W[k], z, y[t], eta, K, hedge_hinge)
        F[t] = f.ravel()
        s, mistakes[t] = hedge.predict(f, y[t])
        scores.append(s)
        hedge.update(losses)
    return {"mistakes": mistakes, "score": np.array(scores), "F": F, "W": W, "w": hedge.w}


def _kernel_values(kind, param, norm, x, S):
    """κ(x, s) for the rows s of S: dot products and squared norms summed in feature order."""
    c = len(S)
    out = np.empty(c)
    if c:
        S = np.asarray(S)
        dots = np.array([_sum_in_order(x * s) for s in S])
        ssq = np.array([_sum_in_order(s * s) for s in S])
        xsq = _sum_in_order(x * x)
        kernel_values(kind, param, norm, dots, xsq, 0, x[None, :], ssq, 0, S, c, out, np.empty(c), np.empty(c))
    return out


class _NystromKernel:
    """One kernel of NOGD: its budget (rows, class coefficients), then its map and weights."""

    def __init__(self, kind, param, norm, budget, n_components, n_classes):
        self.spec = (kind, param, norm)
        self.B, self.P, self.K = budget, n_components, n_classes
        self.S, self.A = [], []
        self.MT = self.W = None

    def features(self, kv):
        """``z_i = Σ_j M[i, j] kv_j`` in budget order from +0.0, each term by a fused multiply-add."""
        z = np.zeros(self.P)
        for j in range(len(kv)):
            z = fma_arrays(np.full(self.P, kv[j]), self.MT[j, : self.P], z)
        return z

    def learn(self, x, yt, eta, hedge_hinge):
        K = self.K
        kv = _kernel_values(*self.spec, x, self.S)
        if self.W is not None:  # Nyström phase: the linear learner on z
            return _ogd_step(self.W, self.features(kv), yt, eta, K, hedge_hinge)
        A = np.array(self.A).reshape(len(self.S), K)
        f = np.array([_sum_in_order(A[:, c] * kv) for c in range(K)])
        r = -1 if K == 1 else _rival(f, int(yt))
        margin = yt * f[0] if K == 1 else f[int(yt)] - f[r]
        loss = max(0.0, 1.0 - margin) if hedge_hinge else (1.0 if margin <= 0.0 else 0.0)
        if margin < 1.0 and len(self.S) < self.B:  # the row joins the budget
            a = np.zeros(K)
            if K == 1:
                a[0] = eta * yt
            else:
                a[int(yt)], a[r] = eta, -eta
            self.S.append(x.copy())
            self.A.append(a)
        elif margin < 1.0:  # the switch, then this row's step on its features
            G = np.array([_kernel_values(*self.spec, s, self.S) for s in self.S])
            self.MT, W0 = nystrom_start(G, np.array(self.A), self.P)
            self.W = W0.reshape(-1).copy()
            z = self.features(kv)
            P = self.P
            if K == 1:
                _step(self.W[:P], eta * yt, z)
            else:
                _step(self.W[int(yt) * P : (int(yt) + 1) * P], eta, z)
                _step(self.W[r * P : (r + 1) * P], -eta, z)
        return f, loss


def naive_nogd(X, y, kernels, *, budget, n_components, eta=0.1, gamma=0.99, hedge_hinge=False, n_classes=1):
    """NOGD with Hedge over the kernels of a pool spec. Returns ``mistakes``, ``score``, ``F``
    (n, m K), per kernel ``W`` (None before its switch) and ``budget`` (its rows), and ``w``."""
    program = compile_program(make_pool(kernels))
    m, K = program.m, n_classes
    learners = [
        _NystromKernel(int(program.kinds[k]), float(program.param[k]), bool(program.norm[k]), budget, n_components, K)
        for k in range(m)
    ]
    hedge = _Hedge(m, gamma, K)
    F = np.empty((len(y), m * K))
    mistakes = np.zeros(len(y), dtype=bool)
    scores = []
    for t in range(len(y)):
        f, losses = np.empty((m, K)), np.empty(m)
        for k in range(m):
            f[k], losses[k] = learners[k].learn(X[t], y[t], eta, hedge_hinge)
        F[t] = f.ravel()
        s, mistakes[t] = hedge.predict(f, y[t])
        scores.append(s)
        hedge.update(losses)
    return {
        "mistakes": mistakes,
        "score": np.array(scores),
        "F": F,
        "W": [lr.W for lr in learners],
        "budget": [np.array(lr.S) for lr in learners],
        "w": hedge.w,
    }
