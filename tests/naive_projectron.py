"""Naive Projectron and Projectron++ (Orabona, Keshet & Caputo, JMLR 2009) plugged into Hedge, one
instance at a time, from the paper.

Kernel i keeps a list of support-vector instance indices, their coefficients and the inverse Gram
matrix ``Kinv`` of the support set (NumPy arrays). For instance x with kernel values ``k`` with the
support set (:func:`naive_omkc.kernel_column`):

* ``d = Kinv k``, ``‖δ‖² = κ(x, x) − k·d`` (0 if negative by rounding), ``‖P k‖² = k·d``;
* a mistake ``y f(x) <= 0``: if ``‖δ‖ <= η`` or the support set holds ``budget`` vectors,
  ``c ← c + y d``; else x joins with coefficient y and
  ``Kinv ← [[Kinv + d dᵀ/‖δ‖², −d/‖δ‖²], [−dᵀ/‖δ‖², 1/‖δ‖²]]`` (the paper's block inverse);
* Projectron++ only, a margin error ``0 < y f(x) < 1`` (ℓ = 1 − y f(x)): if ``ℓ − ‖δ‖/η > 0`` and
  ``‖P k‖² > 0``, ``c ← c + τ y d`` with ``τ = min(ℓ/‖P k‖², 1, 2(ℓ − ‖δ‖/η)/‖P k‖²)``.

Multi-class (labels 0..K−1, rival r the highest-scoring other class, margin f(x, y) − f(x, r)): the
same with ``+d`` on class y and ``−d`` on class r, a new support vector +1 on y and −1 on r, and
``‖P ψ‖² = 2 k·d`` in τ. κ(x, x) = 0: no update.

Hedge: θ = w / Σ w, ``logw_i += z_i log γ`` with the mistake indicator z_i of kernel i (drawn kernels
only with ``update="S"``, as :func:`naive_budget.naive_budget`).
"""

from __future__ import annotations

import math

import numpy as np

from naive_budget import _dot, _draws, _kxx, _rival
from naive_omkc import kernel_column


def _extend(Kinv, d, delta2):
    n = len(d)
    out = np.zeros((n + 1, n + 1))
    out[:n, :n] = Kinv + np.outer(d, d) / delta2
    out[:n, n] = out[n, :n] = -d / delta2
    out[n, n] = 1.0 / delta2
    return out


def naive_projectron(
    X, y, specs, *, plus, budget, eta=0.1, gamma=0.99, n_classes=1, seed=0, block_size=256, update="D", delta=0.01
):
    """Returns ``mistakes``, ``F`` (T, m K), ``sv`` (instance indices per kernel), ``coef`` (per kernel:
    a list, or (n_sv, K) for K > 1), ``Kinv`` and ``w``."""
    T, m, K = len(y), len(specs), n_classes
    sv = [[] for _ in range(m)]
    coef = [np.zeros((0, K)) for _ in range(m)]
    Kinv = [np.zeros((0, 0)) for _ in range(m)]
    logw, wsync = np.zeros(m), np.ones(m)
    out = {"mistakes": np.zeros(T, bool), "F": np.zeros((T, m * K))}
    for t in range(T):
        x = X[t]
        w = np.exp(logw - logw.max())
        if update == "S" and t % block_size == 0:
            wsync = w
        selected, _ = _draws("projectron", update, delta, w, wsync, seed, t, m, block_size)
        f = np.zeros((m, K))
        kcols = []
        for i in range(m):
            kcols.append(kernel_column(specs[i], X[sv[i]], x) if sv[i] else np.zeros(0))
            f[i] = [_dot(coef[i][:, c], kcols[i]) for c in range(K)]
        out["F"][t] = f.ravel()
        theta = w / w.sum()
        if K == 1:
            out["mistakes"][t] = y[t] * float(np.dot(theta, f[:, 0])) <= 0
        else:
            score = [sum(theta[i] * f[i, c] for i in range(m)) for c in range(K)]
            out["mistakes"][t] = score[int(y[t])] <= score[_rival(score, int(y[t]))]
        for i in range(m):
            if K == 1:
                e, margin = np.array([y[t]]), y[t] * f[i, 0]
            else:
                yt = int(y[t])
                r = _rival(f[i], yt)
                e, margin = np.zeros(K), f[i, yt] - f[i, r]
                e[yt], e[r] = 1.0, -1.0
            if not selected[i]:
                continue
            logw[i] += float(margin <= 0) * math.log(gamma)
            kxx = _kxx(specs[i], x)
            if kxx <= 0 or margin >= 1 or (margin > 0 and not plus):
                continue
            k = kcols[i]
            d = np.array([sum(Kinv[i][a, b] * k[b] for b in range(len(k))) for a in range(len(k))])
            pk = float(sum(k[a] * d[a] for a in range(len(k))))
            norm_delta = math.sqrt(kxx - pk) if kxx - pk > 0 else 0.0
            if margin > 0:  # margin error (Projectron++)
                ell, norm_pk = 1.0 - margin, pk if K == 1 else 2.0 * pk
                if ell - norm_delta / eta > 0 and norm_pk > 0:
                    tau = min(ell / norm_pk, 1.0, 2.0 * (ell - norm_delta / eta) / norm_pk)
                    coef[i] = coef[i] + np.outer(d, tau * e)
            elif norm_delta <= eta or len(sv[i]) == budget:
                coef[i] = coef[i] + np.outer(d, e)
            else:
                Kinv[i] = _extend(Kinv[i], d, norm_delta * norm_delta)
                sv[i].append(t)
                coef[i] = np.vstack([coef[i], e[None, :]])
    out["sv"] = sv
    out["coef"] = [c[:, 0] if K == 1 else c for c in coef]
    out["Kinv"] = Kinv
    out["w"] = np.exp(logw - logw.max())
    return out
