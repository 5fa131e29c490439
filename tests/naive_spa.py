"""Naive SPA (Budget OMKC, Algorithm 1), one instance at a time, straight from the paper.

Per kernel: f_i(x) = Σ_s τ_s y_s κ_i(x_s, x) over its own support vectors. Weights are kept as
log-weights (w_i γ^ℓ underflows for the large hinge losses of polynomial kernels on raw data; the
algorithm only uses ratios w_i / max w and w_i / Σ w). Random numbers: the library's
per-(seed, block, kernel) streams with two draws per instance (selection c, sampling Z).
"""

from __future__ import annotations

import numpy as np

from omkl_dist.randomness import uniforms

from naive_omkc import kernel_column


def naive_spa(
    X,
    y,
    specs,
    *,
    gamma=0.99,
    delta=0.001,
    eta=0.1,
    alpha=1.0,
    beta=3.0,
    seed=0,
    block_size=256,
    block_sync=False,
    hedge_loss="hinge",
):
    T, m = len(y), len(specs)
    sv = [[] for _ in range(m)]
    coef = [[] for _ in range(m)]
    logw = np.zeros(m)
    wsync = np.ones(m)
    mistakes, F = np.zeros(T, bool), np.zeros((T, m))
    for t in range(T):
        w = np.exp(logw - logw.max())
        if t % block_size == 0:
            wsync = w.copy()
        u = uniforms(seed, t, t + 1, range(m), block_size, draws=2)[0]
        f = np.array(
            [float(np.dot(coef[i], kernel_column(specs[i], X[sv[i]], X[t]))) if sv[i] else 0.0 for i in range(m)]
        )
        F[t] = f
        theta = w / w.sum()
        mistakes[t] = y[t] * float(np.dot(theta, f)) <= 0
        pw = wsync if block_sync else w
        for i in range(m):
            loss = max(0.0, 1.0 - y[t] * f[i])
            p = (1 - delta) * pw[i] / pw.max() + delta
            if u[i, 0] < p and loss > 0:
                rho = min(alpha, loss) / beta
                z = u[i, 1] < rho
                kxx = float(kernel_column(specs[i], X[t : t + 1], X[t])[0])
                if z and kxx > 0:
                    tau = min(eta / rho, loss / kxx)
                    sv[i].append(t)
                    coef[i].append(tau * y[t])
            discount = loss if hedge_loss == "hinge" else float(y[t] * f[i] <= 0)
            logw[i] += discount * np.log(gamma)
    return mistakes, F, sv, np.exp(logw - logw.max())
