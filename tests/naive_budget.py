"""Naive budget baselines (RBP, Forgetron, BOGD, BPAS) plugged into Hedge, one instance at a time,
straight from the original papers.

No numba, no blocks, no scale factors: kernel i keeps a list of support-vector instance indices and a
list of coefficients; ``f_i(x) = Σ_s c_s κ_i(x_s, x)`` is evaluated directly
(:func:`naive_omkc.kernel_column`). A new support vector takes the *position* of the one it replaces
(positions fill 0, 1, ... while the budget has room); random removals use the library's per-(seed,
block, kernel) uniform streams, one draw per instance and kernel, position ``int(u B)``.

Learners (papers):

* RBP (Cavallanti, Cesa-Bianchi & Gentile 2007): on a mistake ``y f(x) <= 0``, if full remove a
  uniformly random support vector, then add ``y κ(x, ·)``.
* Forgetron, self-tuned (Dekel, Shalev-Shwartz & Singer 2005): on a mistake, ``f' = f + y κ(x, ·)``;
  if over budget, r = the oldest support vector, ``μ = y_r f'(x_r)``, σ_r = |c_r|,
  ``φ = max{φ ∈ (0, 1] : Ψ(φσ_r, φμ) + Q <= 15/32 M}`` with Ψ(λ, μ) = λ² + 2λ − 2λμ (found from
  the roots of the quadratic with ``numpy.roots``), ``Q += Ψ(φσ_r, φμ)``, all coefficients × φ,
  r removed.
* BOGD (Zhao et al. 2012): on a positive hinge loss ``f ← (1 − ηλ) f + η y κ(x, ·)``; if full, one
  of the old support vectors removed uniformly at random and the other old ones × B/(B − 1).
* BPA-S (Wang & Vucetic 2010): on a positive hinge loss, ``α = y min(C, ℓ/κ(x, x))``; if full,
  remove the r minimising ``c_r² (κ(x_r, x_r) − κ(x_r, x)²/κ(x, x))`` (first position on ties) and
  set ``α += c_r κ(x_r, x)/κ(x, x)``.

κ(x, x) = 0 (zero function): no update (BOGD still shrinks). Hedge: θ = w / Σ w, prediction
``Σ θ_i f_i``; ``logw_i += loss_i log γ`` with loss = mistake indicator (RBP, Forgetron) or hinge
loss (BOGD, BPAS).

Stochastic update (``update="S"``, OMKC (S, D) of Hoi et al., Algorithm 3): kernel i's learner takes
its step only when drawn, ``u_i < p_i = (1 − δ) q_i + δ/m`` with q = w / max w of the weights at the
start of the instance's block (``block_size`` 1: the current weights), and only a drawn kernel's
loss discounts its weight. Two uniforms per instance and kernel: the draw, then the removal's.
"""

from __future__ import annotations

import math

import numpy as np

from omkl_dist.randomness import uniforms

from naive_omkc import kernel_column


def _dot(c, k):
    """Σ c_s k_s, correctly rounded (``math.fsum``): duplicated support vectors with opposite
    coefficients cancel exactly and leave the true small residue, not rounding noise."""
    return math.fsum(float(a) * float(b) for a, b in zip(c, k))


def _kxx(spec, x):
    return float(kernel_column(spec, x[None, :], x)[0])


def _forgetron_psi(lam, mu_phi, norm2):
    """Ψ(λ, μ) = norm2 λ² + 2λ − 2λμ (norm2 = 1 binary, 2 multi-class: ‖φ(x, y) − φ(x, r)‖² <= 2)."""
    return norm2 * lam * lam + 2 * lam - 2 * lam * mu_phi


def _forgetron_phi(sigma, mu, Q, M, norm2=1.0):
    """max{φ ∈ (0, 1] : Ψ(φσ, φμ) + Q <= 15/32 M}."""

    def g(phi):
        return _forgetron_psi(phi * sigma, phi * mu, norm2) + Q - 15.0 / 32.0 * M

    scale = abs(norm2 * sigma * sigma - 2 * sigma * mu) + 2 * sigma + abs(Q - 15.0 / 32.0 * M)
    if g(1.0) <= 1e-12 * scale:  # holds at φ = 1 up to rounding (the rule keeps Q exactly on its bound)
        return 1.0
    roots = np.roots([norm2 * sigma * sigma - 2 * sigma * mu, 2 * sigma, Q - 15.0 / 32.0 * M])
    real = [float(r.real) for r in roots if abs(r.imag) <= 1e-12 * max(1.0, abs(r.real)) and 0 < r.real <= 1]
    return max(real)


def _draws(learner, update, delta, w, wsync, seed, t, m, block_size):
    """``(selected, u)``: which kernels learn from instance t, and the removal uniforms (RBP, BOGD)."""
    removal = learner in ("rbp", "bogd")
    if update == "D":
        u = uniforms(seed, t, t + 1, range(m), block_size)[0] if removal else np.zeros(m)
        return np.ones(m, bool), u
    draws = uniforms(seed, t, t + 1, range(m), block_size, 2 if removal else 1)[0]
    u_draw, u = (draws[:, 0], draws[:, 1]) if removal else (draws, np.zeros(m))
    return u_draw < (1.0 - delta) * (wsync / wsync.max()) + delta / m, u


def naive_budget(
    X, y, specs, *, learner, budget, gamma=0.99, eta=0.1, lam=0.0, seed=0, block_size=256, update="D", delta=0.01
):
    """Run one of the four learners per kernel plus Hedge; returns a dict with ``mistakes``, ``score``,
    ``F``, ``loss``, ``sv`` (instance indices per kernel, by position), ``coef`` and ``w``."""
    T, m, B = len(y), len(specs), budget
    sv = [[] for _ in range(m)]
    coef = [[] for _ in range(m)]
    Q, M = np.zeros(m), np.zeros(m)
    logw = np.zeros(m)
    wsync = np.ones(m)  # the weights at the start of the current block
    out = {"mistakes": np.zeros(T, bool), "score": np.zeros(T), "F": np.zeros((T, m)), "loss": np.zeros((T, m))}
    for t in range(T):
        x, yt = X[t], y[t]
        w = np.exp(logw - logw.max())
        if update == "S" and t % block_size == 0:
            wsync = w
        selected, u = _draws(learner, update, delta, w, wsync, seed, t, m, block_size)
        f = np.array([_dot(coef[i], kernel_column(specs[i], X[sv[i]], x)) if sv[i] else 0.0 for i in range(m)])
        out["F"][t] = f
        theta = w / w.sum()
        out["score"][t] = float(np.dot(theta, f))
        out["mistakes"][t] = yt * out["score"][t] <= 0
        for i in range(m):
            spec, S, c = specs[i], sv[i], coef[i]
            kxx = _kxx(spec, x)
            hinge = max(0.0, 1.0 - yt * f[i])
            if learner in ("rbp", "forgetron"):
                out["loss"][t, i] = loss = float(yt * f[i] <= 0)
            else:
                out["loss"][t, i] = loss = hinge
            if not selected[i]:  # not drawn: no step, no discount
                out["loss"][t, i] = 0.0
                continue
            if learner == "rbp" and loss and kxx > 0:
                if len(S) < B:
                    S.append(t)
                    c.append(yt)
                else:
                    j = min(int(u[i] * B), B - 1)
                    S[j], c[j] = t, yt
            elif learner == "forgetron" and loss and kxx > 0:
                M[i] += 1
                if len(S) < B:
                    S.append(t)
                    c.append(yt)
                else:
                    r = int(np.argmin(S))  # the oldest support vector
                    xr = X[S[r]]
                    f_prime_r = _dot(c, kernel_column(spec, X[S], xr)) + yt * float(
                        kernel_column(spec, x[None, :], xr)[0]
                    )
                    sigma, mu = abs(c[r]), y[S[r]] * f_prime_r
                    phi = _forgetron_phi(sigma, mu, Q[i], M[i])
                    lam_r = phi * sigma
                    Q[i] += _forgetron_psi(lam_r, phi * mu, 1.0)
                    c[:] = [phi * v for v in c]
                    S[r], c[r] = t, phi * yt
            elif learner == "bogd" and loss > 0:
                c[:] = [(1 - eta * lam) * v for v in c]
                if kxx > 0:
                    if len(S) < B:
                        S.append(t)
                        c.append(eta * yt)
                    else:
                        j = min(int(u[i] * B), B - 1)
                        if B > 1:
                            c[:] = [v * (B / (B - 1)) for v in c]
                        S[j], c[j] = t, eta * yt
            elif learner == "bpas" and loss > 0 and kxx > 0:
                alpha = min(eta, loss / kxx) * yt
                if len(S) < B:
                    S.append(t)
                    c.append(alpha)
                else:
                    k_rt = kernel_column(spec, X[S], x)
                    k_rr_all = [_kxx(spec, X[s]) for s in S]
                    best, best_deg = 0, 0.0
                    for j in range(B):
                        k_rr = k_rr_all[j]
                        deg = c[j] * c[j] * (k_rr - k_rt[j] * k_rt[j] / kxx)
                        if j == 0 or deg < best_deg:
                            best, best_deg = j, deg
                    alpha += c[best] * k_rt[best] / kxx
                    S[best], c[best] = t, alpha
        logw += out["loss"][t] * np.log(gamma)
    out["sv"] = sv
    out["coef"] = coef
    out["w"] = np.exp(logw - logw.max())
    return out


def _rival(scores, y):
    """The highest-scoring class other than y (the first on ties)."""
    others = [c for c in range(len(scores)) if c != y]
    return max(others, key=lambda c: (scores[c], -c))


def naive_budget_mc(
    X,
    y,
    specs,
    n_classes,
    *,
    learner,
    budget,
    gamma=0.99,
    eta=0.1,
    lam=0.0,
    seed=0,
    block_size=256,
    update="D",
    delta=0.01,
):
    """The multi-class rules of the four learners (labels 0..K−1), one instance at a time.

    Kernel i's class scores ``f_i(x, c) = Σ_s c_s[c] κ_i(x_s, x)``; the rival r of y is its highest-scoring
    other class, the margin ``f_i(x, y) − f_i(x, r)``, the pair ``e = e_y − e_r``:

    * RBP: on ``margin <= 0`` add ``e`` at x (random removal when full).
    * Forgetron: on ``margin <= 0`` add ``e``; when over budget, r_old = the oldest, σ = its positive
      coefficient, ``μ = f'(x_old, y_old) − f'(x_old, r_old)`` (its own pair), Ψ(λ, μ) = 2λ² + 2λ − 2λμ.
    * BOGD: on ``ℓ = [1 − margin]_+ > 0``: ``f ← (1 − ηλ) f + η e κ(x, ·)`` (removal as binary).
    * BPAS: on ℓ > 0: ``α = min(C, ℓ / 2κ(x, x)) e``; when full remove the j minimising
      ``‖c_j‖² (κ(x_j, x_j) − κ(x_j, x)² / κ(x, x))`` and add ``c_j κ(x_j, x) / κ(x, x)`` to α.

    Hedge: class scores ``Σ_i θ_i f_i(x, c)`` (summed in kernel order), a mistake when
    ``score(y) <= score(rival)``; ``logw_i += loss_i log γ`` with the mistake indicator (RBP, Forgetron) or ℓ.
    Returns ``mistakes``, ``F`` (T, m K), ``loss``, ``sv``, ``coef`` (per kernel a (n_sv, K) array), ``w``.
    """
    T, m, B, K = len(y), len(specs), budget, n_classes
    sv = [[] for _ in range(m)]
    coef = [[] for _ in range(m)]
    Q, M = np.zeros(m), np.zeros(m)
    logw = np.zeros(m)
    wsync = np.ones(m)  # the weights at the start of the current block
    out = {
        "mistakes": np.zeros(T, bool),
        "F": np.zeros((T, m * K)),
        "loss": np.zeros((T, m)),
        "kernel_mistakes": np.zeros(m, dtype=np.int64),
    }
    for t in range(T):
        x, yt = X[t], int(y[t])
        w = np.exp(logw - logw.max())
        if update == "S" and t % block_size == 0:
            wsync = w
        selected, u = _draws(learner, update, delta, w, wsync, seed, t, m, block_size)
        f = np.zeros((m, K))
        for i in range(m):
            if sv[i]:
                kc = kernel_column(specs[i], X[sv[i]], x)
                f[i] = [_dot([v[c] for v in coef[i]], kc) for c in range(K)]
        out["F"][t] = f.ravel()
        total = sum(w)
        score = [sum((w[i] / total) * f[i, c] for i in range(m)) for c in range(K)]
        out["mistakes"][t] = score[yt] <= score[_rival(score, yt)]
        for i in range(m):
            spec, S, c = specs[i], sv[i], coef[i]
            kxx = _kxx(spec, x)
            r = _rival(f[i], yt)
            margin = f[i, yt] - f[i, r]
            out["kernel_mistakes"][i] += margin <= 0
            e = np.zeros(K)
            e[yt], e[r] = 1.0, -1.0
            hinge = max(0.0, 1.0 - margin)
            loss = float(margin <= 0) if learner in ("rbp", "forgetron") else hinge
            out["loss"][t, i] = loss
            if not selected[i]:  # not drawn: no step, no discount
                out["loss"][t, i] = 0.0
                continue
            if learner == "rbp" and loss and kxx > 0:
                if len(S) < B:
                    S.append(t)
                    c.append(e)
                else:
                    j = min(int(u[i] * B), B - 1)
                    S[j], c[j] = t, e
            elif learner == "forgetron" and loss and kxx > 0:
                M[i] += 1
                if len(S) < B:
                    S.append(t)
                    c.append(e)
                else:
                    old = int(np.argmin(S))
                    x_old = X[S[old]]
                    k_old = kernel_column(spec, X[S], x_old)
                    k_new = float(kernel_column(spec, x[None, :], x_old)[0])
                    f_prime = [_dot([v[q] for v in c], k_old) + e[q] * k_new for q in range(K)]
                    y_old, r_old = int(np.argmax(c[old])), int(np.argmin(c[old]))
                    sigma, mu = float(c[old][y_old]), f_prime[y_old] - f_prime[r_old]
                    phi = _forgetron_phi(sigma, mu, Q[i], M[i], norm2=2.0)
                    Q[i] += _forgetron_psi(phi * sigma, phi * mu, 2.0)
                    c[:] = [phi * v for v in c]
                    S[old], c[old] = t, phi * e
            elif learner == "bogd" and loss > 0:
                c[:] = [(1 - eta * lam) * v for v in c]
                if kxx > 0:
                    if len(S) < B:
                        S.append(t)
                        c.append(eta * e)
                    else:
                        j = min(int(u[i] * B), B - 1)
                        if B > 1:
                            c[:] = [v * (B / (B - 1)) for v in c]
                        S[j], c[j] = t, eta * e
            elif learner == "bpas" and loss > 0 and kxx > 0:
                alpha = min(eta, loss / (2 * kxx)) * e
                if len(S) < B:
                    S.append(t)
                    c.append(alpha)
                else:
                    k_jt = kernel_column(spec, X[S], x)
                    degradation = [
                        sum(v * v for v in c[j]) * (_kxx(spec, X[S[j]]) - k_jt[j] * k_jt[j] / kxx) for j in range(B)
                    ]
                    best = int(np.argmin(degradation))  # the first on ties
                    alpha = alpha + c[best] * k_jt[best] / kxx
                    S[best], c[best] = t, alpha
        logw += out["loss"][t] * np.log(gamma)
    out["sv"] = sv
    out["coef"] = [np.array(v).reshape(len(v), K) for v in coef]
    out["w"] = np.exp(logw - logw.max())
    return out
