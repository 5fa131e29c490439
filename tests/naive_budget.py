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
"""

from __future__ import annotations

import math

import numpy as np

from naive_omkc import kernel_column
from omkl_dist.core.randomness import uniforms


def _dot(c, k):
    """Σ c_s k_s, correctly rounded (``math.fsum``): duplicated support vectors with opposite
    coefficients cancel exactly and leave the true small residue, not rounding noise."""
    return math.fsum(float(a) * float(b) for a, b in zip(c, k))


def _kxx(spec, x):
    return float(kernel_column(spec, x[None, :], x)[0])


def _forgetron_phi(sigma, mu, Q, M):
    """max{φ ∈ (0, 1] : Ψ(φσ, φμ) + Q <= 15/32 M}, Ψ(λ, μ) = λ² + 2λ − 2λμ."""
    def g(phi):
        lam = phi * sigma
        return lam * lam + 2 * lam - 2 * lam * (phi * mu) + Q - 15.0 / 32.0 * M

    scale = abs(sigma * sigma - 2 * sigma * mu) + 2 * sigma + abs(Q - 15.0 / 32.0 * M)
    if g(1.0) <= 1e-12 * scale:  # holds at φ = 1 up to rounding (the rule keeps Q exactly on its bound)
        return 1.0
    roots = np.roots([sigma * sigma - 2 * sigma * mu, 2 * sigma, Q - 15.0 / 32.0 * M])
    real = [float(r.real) for r in roots if abs(r.imag) <= 1e-12 * max(1.0, abs(r.real)) and 0 < r.real <= 1]
    return max(real)


def naive_budget(X, y, specs, *, learner, budget, gamma=0.99, eta=0.1, lam=0.0, seed=0, block_size=256):
    """Run one of the four learners per kernel plus Hedge; returns a dict with ``mistakes``, ``score``,
    ``F``, ``loss``, ``sv`` (instance indices per kernel, by position), ``coef`` and ``w``."""
    T, m, B = len(y), len(specs), budget
    sv = [[] for _ in range(m)]
    coef = [[] for _ in range(m)]
    Q, M = np.zeros(m), np.zeros(m)
    logw = np.zeros(m)
    out = {"mistakes": np.zeros(T, bool), "score": np.zeros(T), "F": np.zeros((T, m)), "loss": np.zeros((T, m))}
    for t in range(T):
        x, yt = X[t], y[t]
        w = np.exp(logw - logw.max())
        u = uniforms(seed, t, t + 1, range(m), block_size)[0] if learner in ("rbp", "bogd") else np.zeros(m)
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
                        kernel_column(spec, x[None, :], xr)[0])
                    sigma, mu = abs(c[r]), y[S[r]] * f_prime_r
                    phi = _forgetron_phi(sigma, mu, Q[i], M[i])
                    lam_r = phi * sigma
                    Q[i] += lam_r * lam_r + 2 * lam_r - 2 * lam_r * (phi * mu)
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
