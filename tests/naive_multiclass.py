"""Naive multi-class references, one instance at a time, straight from the papers.

No numba, no blocks, no shared pool. Labels are class indices 0..K-1. A classifier's class scores
are ``f(x, c) = Σ_s β_s[c] κ(x_s, x)`` over its own support-vector list.

* Multi-class kernel Perceptron (Crammer & Singer 2003, max-score update): with the rival
  ``r = argmax_{c≠y} f(x, c)`` (first on ties) it errs when ``f(x, y) <= f(x, r)`` and then adds x
  with +1 on y and −1 on r.
* OMKC (Hoi et al.) with such a Perceptron per kernel: Hedge as in the binary algorithms, each
  kernel voting for its unique top class (no vote on a tie); ``naive_omkc`` documents the rest.
* OM-2 (Jie, Orabona et al., Algorithm 1), with ‖θ_j‖² computed from the expansion each round
  (Σ_c β_c·K_j·β_c) rather than incrementally, so the fast path's incremental norms are checked.
"""

from __future__ import annotations

import math

import numpy as np

from omkl_dist.randomness import uniforms

from naive_omkc import kernel_column, pa_tau


def rival(scores, y):
    others = [c for c in range(len(scores)) if c != y]
    return max(others, key=lambda c: (scores[c], -c))


def vote(scores):
    top = int(np.argmax(scores))
    return top if (scores == scores[top]).sum() == 1 else -1


class _Expansion:
    """One multi-class kernel classifier: support-vector indices and their class coefficients."""

    def __init__(self, spec, X, K):
        self.spec, self.X, self.K = spec, X, K
        self.sv, self.beta = [], []

    def scores(self, t):
        if not self.sv:
            return np.zeros(self.K)
        return kernel_column(self.spec, self.X[self.sv], self.X[t]) @ np.array(self.beta)

    def add(self, t, coef):
        self.sv.append(t)
        self.beta.append(coef)


def _pm(K, y, r, step=1.0):
    coef = np.zeros(K)
    coef[y], coef[r] = step, -step
    return coef


def naive_omkc_mc(
    X, y, K, specs, *, update, combination, beta=0.8, delta=0.01, seed=0, block_size=256, block_sync=False, pa_c=None
):
    """Multi-class OMKC Algorithms 1-4 (and "U"). Returns (mistakes, votes, F (T, m, K), SV lists, w).
    ``pa_c``: each kernel learns by multi-class PA-I (Crammer et al. 2006, max-loss): with the rival r,
    ℓ = [1 − f(x, y) + f(x, r)]_+ and τ = min(C, ℓ / ‖φ(x, y) − φ(x, r)‖²) = min(C, ℓ / 2κ(x, x))."""
    m, T = len(specs), len(y)
    learners = [_Expansion(s, X, K) for s in specs]
    w, wsync = np.ones(m), np.ones(m)
    mistakes, votes, F = np.zeros(T, bool), np.zeros((T, K)), np.zeros((T, m, K))
    for t in range(T):
        if t % block_size == 0:
            wsync = w.copy()
        u = uniforms(seed, t, t + 1, range(m), block_size)[0]
        f = np.array([lr.scores(t) for lr in learners])
        F[t] = f
        q = w / w.max()
        if combination == "U":
            weight, selected = np.full(m, 1.0 / m), np.ones(m, bool)
        elif (update, combination) == ("D", "D"):
            weight, selected = w / w.sum(), np.ones(m, bool)
        elif (update, combination) == ("D", "S"):
            weight, selected = (u < q).astype(float), np.ones(m, bool)
        else:
            p = (1 - delta) * (wsync / wsync.max() if block_sync else q) + delta / m
            selected = u < p
            weight = q if combination == "D" else np.where(selected, q, 0.0)
        for i in range(m):
            if vote(f[i]) >= 0:
                votes[t, vote(f[i])] += weight[i]
        mistakes[t] = votes[t, y[t]] <= votes[t, rival(votes[t], y[t])]
        for i in range(m):
            r = rival(f[i], y[t])
            erred = f[i, y[t]] <= f[i, r]
            if not selected[i]:
                continue
            if pa_c is None:
                step = 1.0 if erred else 0.0
            else:
                kxx = kernel_column(specs[i], X[t : t + 1], X[t])[0]
                step = pa_tau(max(0.0, 1.0 - f[i, y[t]] + f[i, r]), 2.0 * kxx, pa_c)
            if step > 0:  # Hedge discounts a kernel that erred and learnt
                if erred and combination != "U":
                    w[i] *= beta
                learners[i].add(t, _pm(K, y[t], r, step))
        w = w / w.max()
    return mistakes, votes, F, [lr.sv for lr in learners], w


def naive_perceptron_u_mc(X, y, K, specs):
    """Perceptron(u): one multi-class Perceptron with the kernel (1/m) Σ_i κ_i."""
    T, m = len(y), len(specs)
    sv, beta = [], []
    mistakes = np.zeros(T, bool)
    for t in range(T):
        f = np.zeros(K)
        if sv:
            kbar = sum(kernel_column(s, X[sv], X[t]) for s in specs) / m
            f = kbar @ np.array(beta)
        r = rival(f, y[t])
        mistakes[t] = f[y[t]] <= f[r]
        if mistakes[t]:
            sv.append(t)
            beta.append(_pm(K, y[t], r))
    return mistakes, sv


def naive_perceptron_star_mc(X, y, K, specs, validation_size):
    """Perceptron(*): every kernel's multi-class Perceptron learns on the validation prefix (the
    one with fewest mistakes so far predicts), then only the best kernel goes on."""
    T, m = len(y), len(specs)
    learners = [_Expansion(s, X, K) for s in specs]
    kmist = np.zeros(m, int)
    alive = list(range(m))
    mistakes = np.zeros(T, bool)
    for t in range(T):
        if t == validation_size:
            alive = [int(np.argmin(kmist))]
        f = {i: learners[i].scores(t) for i in alive}
        leader = min(alive, key=lambda i: (kmist[i], i))
        mistakes[t] = f[leader][y[t]] <= f[leader][rival(f[leader], y[t])]
        for i in alive:
            r = rival(f[i], y[t])
            if f[i][y[t]] <= f[i][r]:
                kmist[i] += 1
                learners[i].add(t, _pm(K, y[t], r))
    return mistakes, alive[0], [lr.sv for lr in learners]


def naive_om2(X, y, K, specs, *, p, bounded_norm=False, n_epochs=1):
    """OM-2, Algorithm 1, cycling ``n_epochs`` times over the rows (stopping after an epoch with no
    update). θ is the list of (row, y, ŷ, η); w_j = α_j θ_j. Returns (mistakes per round over all
    epochs, scores (rounds, K), η per round, the kept rows, final α)."""
    F_, T = len(specs), len(y)
    q = p / (p - 1.0)
    gram = [np.stack([kernel_column(spec, X, X[t]) for t in range(T)]) for spec in specs]  # [j][s, t]
    rows, coefs = [], []  # θ_j = Σ coefs[i] ⊗ ψ_j(x_rows[i]) for every kernel j

    def raw(j, t):  # r_j(x_t, c) for every class c
        if not rows:
            return np.zeros(K)
        return gram[j][rows, t] @ np.array(coefs)

    def theta_sqnorms():  # ‖θ_j‖² = Σ_c β_c · K_j · β_c over the expansion
        if not rows:
            return np.zeros(F_)
        B = np.array(coefs)
        return np.array([float(np.einsum("ac,ab,bc->", B, G[np.ix_(rows, rows)], B)) for G in gram])

    mistakes, scores, etas = [], [], []
    for _ in range(n_epochs):
        updates = 0
        for t in range(T):
            norms = np.sqrt(np.maximum(theta_sqnorms(), 0.0))
            group = np.sum(norms**q) ** (1.0 / q)
            alpha = np.zeros(F_) if group == 0 else (norms / group) ** (q - 2.0) / q
            r = np.array([raw(j, t) for j in range(F_)])
            s = alpha @ r
            yh = rival(s, y[t])
            margin = s[y[t]] - s[yh]
            mistakes.append(margin <= 0)
            scores.append(s)
            eta = 0.0
            if 1.0 - margin > 0:
                if bounded_norm:
                    zsq = 2.0 * F_ ** (2.0 / q)
                else:
                    kxx = np.array([G[t, t] for G in gram])
                    zsq = np.sum((2.0 * kxx) ** (q / 2.0)) ** (2.0 / q)
                eta = max(0.0, min(1.0, 1.0 - 2.0 * margin / zsq))
            etas.append(eta)
            if eta > 0:
                rows.append(t)
                coefs.append(_pm(K, y[t], yh, eta))
                updates += 1
        if updates == 0:
            break
    norms = np.sqrt(np.maximum(theta_sqnorms(), 0.0))
    group = np.sum(norms**q) ** (1.0 / q)
    alpha = np.zeros(F_) if group == 0 else (norms / group) ** (q - 2.0) / q
    return np.array(mistakes), np.array(scores), np.array(etas), rows, alpha


def corollary_p(n_kernels):
    q = 2.0 * math.log(n_kernels)
    return q / (q - 1.0) if q > 2.0 else 2.0


def naive_spa_mc(
    X,
    y,
    K,
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
    """SPA (Budget OMKC, Algorithm 1) with a multi-class passive-aggressive learner per kernel:
    rival r, margin f(y) − f(r), loss |1 − margin|_+; selected with p = (1 − δ) w / max w + δ, kept
    with ρ = min(α, ℓ)/β, then +τ on y and −τ on r with τ = min(η/ρ, ℓ / (2 κ(x, x))) (the squared
    norm of φ(x, y) − φ(x, r)). Returns (mistakes, F (T, m, K), SV lists, w)."""
    T, m = len(y), len(specs)
    learners = [_Expansion(s, X, K) for s in specs]
    logw, wsync = np.zeros(m), np.ones(m)
    mistakes, F = np.zeros(T, bool), np.zeros((T, m, K))
    for t in range(T):
        w = np.exp(logw - logw.max())
        if t % block_size == 0:
            wsync = w.copy()
        u = uniforms(seed, t, t + 1, range(m), block_size, draws=2)[0]
        f = np.array([lr.scores(t) for lr in learners])
        F[t] = f
        s = (w / w.sum()) @ f
        mistakes[t] = s[y[t]] <= s[rival(s, y[t])]
        pw = wsync if block_sync else w
        for i in range(m):
            r = rival(f[i], y[t])
            margin = f[i, y[t]] - f[i, r]
            loss = max(0.0, 1.0 - margin)
            if u[i, 0] < (1 - delta) * pw[i] / pw.max() + delta and loss > 0:
                rho = min(alpha, loss) / beta
                kxx = float(kernel_column(specs[i], X[t : t + 1], X[t])[0])
                if u[i, 1] < rho and kxx > 0:
                    learners[i].add(t, _pm(K, y[t], r, min(eta / rho, loss / (2.0 * kxx))))
            discount = loss if hedge_loss == "hinge" else float(margin <= 0)
            logw[i] += discount * np.log(gamma)
    return mistakes, F, [lr.sv for lr in learners], np.exp(logw - logw.max())
