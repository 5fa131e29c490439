"""Naive reference of OKS (Yang et al., AAAI 2012), one instance at a time, straight from the paper.

Algorithm 1 / 2 with the weights w kept as logarithms (the estimator's documented choice: it does
not change q, only keeps exp(−η/p) from underflowing). Kernel values come from the naive formulas
of ``naive_kernels`` on each kernel's columns. Shares nothing with the library except the random
stream definition (``U[t]``: the (t mod B)-th uniform of the stream seeded by (seed, t // B, 0)).
"""

from __future__ import annotations

import math

import numpy as np

from omkl_dist.randomness import uniforms

import naive_kernels


def kappa(spec, x, z) -> float:
    return float(naive_kernels.naive_kernel(spec, x[None, :], z[None, :])[0, 0])


def loss_and_step(algorithm, loss, f, y, K):
    """(loss, mistake, −∇ℓ per class) of score vector f on label y (binary: ±1; K > 1: index)."""
    if K == 1:
        f = f[0]
        if loss == "squared" and algorithm == "general":
            return 0.5 * (f - y) ** 2, False, np.array([y - f])
        wrong = y * f <= 0
        if algorithm == "classification":
            return float(wrong), wrong, np.array([y if wrong else 0.0])
        if loss == "hinge":
            return max(0.0, 1 - y * f), wrong, np.array([y if y * f < 1 else 0.0])
        return math.log1p(math.exp(-y * f)), wrong, np.array([y / (1 + math.exp(y * f))])
    y = int(y)
    r = max((c for c in range(K) if c != y), key=lambda c: (f[c], -c))
    wrong = f[y] <= f[r]
    step = np.zeros(K)
    if algorithm == "classification":
        if wrong:
            step[y], step[r] = 1.0, -1.0
        return float(wrong), wrong, step
    if loss == "hinge":
        value = max(0.0, 1 - f[y] + f[r])
        if value > 0:
            step[y], step[r] = 1.0, -1.0
        return value, wrong, step
    soft = np.exp(f - f.max()) / np.exp(f - f.max()).sum()
    step = -soft
    step[y] += 1.0
    return float(np.log(np.exp(f - f.max()).sum()) + f.max() - f[y]), wrong, step


def naive_oks(X, y, pool, *, K, algorithm, loss, lam, epochs, seed, block_size, logw=None, svs=None, t0=0):
    """Run OKS over ``epochs`` = [(δ, η), ...] passes; returns (logw, svs, per-row records)."""
    m = len(pool)
    logw = np.zeros(m) if logw is None else logw
    svs = [[] for _ in range(m)] if svs is None else svs  # per kernel: [(x, coefficients)]
    picked, wrong, t = [], [], t0
    for delta, eta in epochs:
        for x, label in zip(X, y, strict=True):
            u = uniforms(seed, t, t + 1, [0], block_size)[0, 0]
            q = np.exp(logw - logw.max())
            q = q / q.sum()
            p = (1 - delta) * q + delta / m
            i = int(np.searchsorted(np.cumsum(p), u, side="right"))
            i = min(i, m - 1)
            f = np.zeros(K)
            for z, c in svs[i]:
                f += c * kappa(pool[i], x, z)
            value, err, step = loss_and_step(algorithm, loss, f, label, K)
            logw[i] -= eta * value / p[i]
            if np.any(step != 0):
                svs[i].append((x.copy(), lam * step / p[i]))
            picked.append(i)
            wrong.append(err)
            t += 1
    return logw, svs, np.array(picked), np.array(wrong)
