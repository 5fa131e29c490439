"""Naive references for the OMKC family, one instance at a time, straight from the papers.

No numba, no blocks, no shared pool: each kernel keeps its own list of support vectors and
coefficients; ``f_i(x) = Σ_s α_s κ_i(x_s, x)`` is evaluated directly with ``‖x_s − x‖²``.
Random numbers are the library's per-(seed, block, kernel) uniform streams (the definition of the
randomness, docs/design.md, "Randomness"). Weights are renormalised by their max after each update (the paper's
q = w / max w; θ = w / Σ w is invariant to that scaling), which avoids underflow.
"""

from __future__ import annotations

import numpy as np

from omkl_dist.randomness import uniforms


def kernel_column(spec, S, x):
    """κ(s, x) for every row s of S (naive formulas), on the kernel's columns if it has a view;
    a normalised kernel's κ(s, x) / sqrt(κ(s, s) κ(x, x)) (0 where a self-value is 0)."""
    if getattr(spec, "normalize", False):
        raw = spec.normalized(False)
        ss = np.array([kernel_column(raw, s[None, :], s)[0] for s in S])
        denom = np.sqrt(ss * kernel_column(raw, x[None, :], x)[0])
        col = kernel_column(raw, S, x)
        return np.where(denom > 0, col / np.where(denom > 0, denom, 1.0), 0.0)
    if spec.columns is not None:
        S, x = S[:, list(spec.columns)], x[list(spec.columns)]
    if spec.kind in ("chi2", "achi2"):
        num, den = (S - x) ** 2 if spec.kind == "chi2" else 2.0 * S * x, S + x
        total = np.where(den != 0, num / np.where(den != 0, den, 1.0), 0.0).sum(axis=1)
        return total if spec.kind == "achi2" else np.exp(-spec.gamma * total)
    if spec.kind == "linear":
        return S @ x
    if spec.kind == "polynomial":
        return (S @ x) ** spec.p
    if spec.kind == "gaussian":
        return np.exp(-((S - x) ** 2).sum(axis=1) / (2.0 * spec.sigma**2))
    if spec.kind == "laplacian":
        return np.exp(-np.abs(S - x).sum(axis=1) / spec.sigma)
    raise ValueError(spec.kind)


def sgn(v):
    return 1.0 if v > 0 else (-1.0 if v < 0 else 0.0)


class _KernelPerceptrons:
    """One kernel Perceptron per kernel; support vectors stored by instance index."""

    def __init__(self, specs, X):
        self.specs, self.X = specs, X
        self.sv = [[] for _ in specs]
        self.coef = [[] for _ in specs]

    def f(self, i, t):
        if not self.sv[i]:
            return 0.0
        return float(np.dot(self.coef[i], kernel_column(self.specs[i], self.X[self.sv[i]], self.X[t])))

    def update(self, i, t, c):
        self.sv[i].append(t)
        self.coef[i].append(c)


def pa_tau(loss, kxx, C):
    """PA-I's step (Crammer et al. 2006): τ = min(C, ℓ / ‖φ(x)‖²); no step for no loss or a zero φ(x)."""
    return min(C, loss / kxx) if loss > 0 and kxx > 0 else 0.0


def naive_omkc(
    X, y, specs, *, update, combination, beta=0.8, delta=0.01, seed=0, block_size=256, block_sync=False, pa_c=None
):
    """OMKC Algorithms 1-4 (and OMKC(U): combination "U"). Returns (mistakes bool array, scores, F,
    support-vector index lists, w). ``pa_c``: each kernel's learner is PA-I with that C (a selected
    kernel with hinge loss ℓ > 0 adds τ y, τ = min(C, ℓ / κ(x, x))) instead of the Perceptron; Hedge
    discounts the kernels that erred and learnt (a PA-I learner does not learn where κ(x, x) = 0)."""
    m, T = len(specs), len(y)
    learners = _KernelPerceptrons(specs, X)
    w = np.ones(m)
    wsync = w.copy()
    mistakes, scores, F = np.zeros(T, bool), np.zeros(T), np.zeros((T, m))
    for t in range(T):
        if t % block_size == 0:
            wsync = w.copy()
        u = uniforms(seed, t, t + 1, range(m), block_size)[0]
        f = np.array([learners.f(i, t) for i in range(m)])
        F[t] = f
        q = w / w.max()
        if (update, combination) == ("D", "U"):  # OMKC(U): fixed uniform vote, weights never change
            score = sum(sgn(f[i]) / m for i in range(m))
            selected = np.ones(m, bool)
        elif (update, combination) == ("D", "D"):
            theta = w / w.sum()
            score = sum(theta[i] * sgn(f[i]) for i in range(m))
            selected = np.ones(m, bool)
        elif (update, combination) == ("D", "S"):
            picked = u < q
            score = sum(sgn(f[i]) for i in range(m) if picked[i])
            selected = np.ones(m, bool)
        else:
            qs = wsync / wsync.max() if block_sync else q
            p = (1 - delta) * qs + delta / m
            picked = u < p
            if update == "S" and combination == "D":
                score = sum(q[i] * sgn(f[i]) for i in range(m))
            else:
                score = sum(q[i] * sgn(f[i]) for i in range(m) if picked[i])
            selected = picked
        scores[t] = score
        mistakes[t] = y[t] * score <= 0
        for i in range(m):
            z = y[t] * f[i] <= 0
            if not selected[i]:
                continue
            if pa_c is None:
                step = 1.0 if z else 0.0
            else:
                step = pa_tau(max(0.0, 1.0 - y[t] * f[i]), kernel_column(specs[i], X[t : t + 1], X[t])[0], pa_c)
            if step > 0:  # Hedge discounts a kernel that erred and learnt
                if z and combination != "U":
                    w[i] *= beta
                learners.update(i, t, step * y[t])
        w = w / w.max()
    return mistakes, scores, F, learners.sv, w


def naive_perceptron_u(X, y, specs):
    """Perceptron(u): one Perceptron with the kernel (1/m) Σ_i κ_i."""
    T, m = len(y), len(specs)
    sv, coef = [], []
    mistakes, scores = np.zeros(T, bool), np.zeros(T)
    for t in range(T):
        f = 0.0
        if sv:
            kbar = sum(kernel_column(s, X[sv], X[t]) for s in specs) / m
            f = float(np.dot(coef, kbar))
        scores[t] = f
        mistakes[t] = y[t] * f <= 0
        if mistakes[t]:
            sv.append(t)
            coef.append(y[t])
    return mistakes, scores, sv


def naive_perceptron_star(X, y, specs, validation_size):
    """Perceptron(*): all kernel Perceptrons learn on the validation prefix (the one with fewest
    mistakes so far predicts); then only the kernel with fewest validation mistakes goes on."""
    T, m = len(y), len(specs)
    learners = _KernelPerceptrons(specs, X)
    kmist = np.zeros(m, int)
    alive = list(range(m))
    mistakes = np.zeros(T, bool)
    for t in range(T):
        if t == validation_size:
            alive = [int(np.argmin(kmist))]
        f = {i: learners.f(i, t) for i in alive}
        leader = min(alive, key=lambda i: (kmist[i], i))
        mistakes[t] = y[t] * f[leader] <= 0
        for i in alive:
            if y[t] * f[i] <= 0:
                kmist[i] += 1
                learners.update(i, t, y[t])
    return mistakes, alive[0], learners.sv
