"""The per-instance recurrences of multi-class models inside one segment: the OMKC family with a
multi-class Perceptron per kernel, OM-2, and SPA with a multi-class passive-aggressive learner per
kernel.

Layout (:mod:`omkl_dist.scoring.support_vectors`): K classes, column ``k·K + c`` holds kernel k's value for class
c. Labels come as class indices 0..K-1 (float64, as the binary recurrences' ±1). As in
:mod:`._recurrence`, ``F_old`` are the scores against the pool at the segment start and the
segment's own support vectors are added from ``G`` (``G[k, t, s] = κ_k(x_t, x_s)``, s < t), so the
result is what instance-by-instance processing gives.

Ties: a kernel's prediction is its highest-scoring class when that is unique, else it abstains
(the multi-class ``sgn(0) = 0``); the *rival* of the true class y is the highest-scoring other
class (the first on ties), and an instance is a mistake when ``score(y) <= score(rival)`` -- so
ties and the all-zero start count as mistakes, as ``y f(x) <= 0`` does for binary models.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..combiners.codes import UNIFORM, discounts_weights
from ..combiners.dispatch import combined_votes
from ..combiners.hedge import hedge_update
from ..combiners.hedge_loss import hedge_loss_step, weighted_class_scores
from ..combiners.votes import rival
from ..learners.pa import pa_step
from ..learners.spa import spa_coef
from ..scoring.gram import gram_column


@njit(cache=True, nogil=True)
def mc_scores_at(t, F_old, G, coef, added, n_added, act, f):
    """f[k, c]: the pool part from the segment start plus the rows added earlier in it, for the
    kernels ``act``."""
    m, K = f.shape
    for k in range(m):
        for c in range(K):
            f[k, c] = F_old[t, k * K + c]
    for j in range(n_added):
        s = added[j]
        for i in range(act.shape[0]):
            k = act[i]
            g = G[k, t, s]
            for c in range(K):
                f[k, c] += coef[s, k * K + c] * g


@njit(cache=True, nogil=True)
def _segment_arrays(n, m, K, act):
    """A segment's outputs ``F`` (n, m·K), class scores (n, K), mistakes, ``coef`` (n, m·K), and the
    work arrays: rows added so far, one row's scores (m, K), the learning kernels' mask."""
    on = np.zeros(m, dtype=np.bool_)
    on[act] = True
    return (
        np.empty((n, m * K)),
        np.empty((n, K)),
        np.zeros(n, dtype=np.bool_),
        np.zeros((n, m * K)),
        np.empty(n, dtype=np.int64),
        np.empty((m, K)),
        on,
    )


@njit(cache=True, nogil=True)
def omkc_mc_block(y, F_old, G, kxx, U, state, params, act, K):
    """Multi-class OMKC and its Perceptron baselines over one segment (see :func:`omkc_block`; the
    records :class:`~.records.HedgeState` and :class:`~.records.OMKCParams`).

    Each kernel is a multi-class Perceptron (Crammer & Singer 2003, the max-score update): when
    ``f_k(y) <= f_k(rival)`` it errs, and if selected for update adds +1 on the true class and -1
    on its own rival class. Hedge discounts the kernels that erred and were updated; the combined
    prediction is the weighted vote of the kernels' predicted classes. Perceptron(u) is one such
    Perceptron on the average kernel (every kernel column gets its update). With ``params.pa`` each
    kernel is the multi-class PA-I learner instead (:mod:`omkl_dist.learners.pa`: +τ on the true
    class and −τ on the rival when ``f_k(y) − f_k(rival) < 1``; ``kxx`` (m, n) the rows' κ_k(x, x)).

    Returns ``(F, votes, mistakes, coef)``: ``F`` (n, m·K) per-kernel class scores before the
    update, ``votes`` (n, K) the combined class scores, the combined prediction's mistakes and
    ``coef`` (n, m·K).
    """
    rule, t0, block_size, block_sync, beta, delta, pa, pa_c = params
    w, wsync, kmistakes = state.w, state.wsync, state.kmistakes
    n = y.shape[0]
    m = F_old.shape[1] // K
    F, votes, mistakes, coef, added, f, on = _segment_arrays(n, m, K, act)
    n_added = np.int64(0)  # not a literal 0: mc_scores_at would be compiled for that type too
    penalise = np.zeros(m, dtype=np.bool_)
    for t in range(n):
        if (t0 + t) % block_size == 0:
            for k in range(w.shape[0]):  # (a loop: a slice assignment compiles numba's shape-error text)
                wsync[k] = w[k]
        mc_scores_at(t, F_old, G, coef, added, n_added, act, f)
        yt = int(y[t])
        for k in range(m):
            for c in range(K):
                F[t, k * K + c] = f[k, c]
        combined_votes(rule, f, w, U[t], wsync if block_sync else w, delta, kmistakes, penalise, votes[t])
        shared = rival(votes[t], yt)  # Perceptron(u): the average kernel's rival, for every kernel
        mistakes[t] = votes[t, yt] <= votes[t, shared]
        any_coef = False
        for k in range(m):
            other = shared if rule == UNIFORM else rival(f[k], yt)
            erred = mistakes[t] if rule == UNIFORM else f[k, yt] <= f[k, other]
            if erred:
                kmistakes[k] += 1
            updated = erred and penalise[k] and on[k]
            if pa:
                step = pa_step(max(0.0, 1.0 - f[k, yt] + f[k, other]), kxx[k, t], penalise[k] and on[k], pa_c, 2)
            else:
                step = 1.0 if updated else 0.0
            if step != 0.0:
                coef[t, k * K + yt] = step
                coef[t, k * K + other] = -step
                any_coef = True
            penalise[k] = erred and step != 0.0  # Hedge's discount: the kernels that erred and learnt
        if discounts_weights(rule):
            hedge_update(w, penalise, beta)
        if any_coef:
            added[n_added] = t
            n_added += 1
    return F, votes, mistakes, coef


@njit(cache=True, nogil=True)
def om2_alphas(sqnorm, q, out):
    """OM-2's kernel factors α_j = (1/q) (‖θ_j‖ / ‖θ‖_{2,q})^{q-2} (Algorithm 1, line 11), 0 while
    θ = 0. The group norm is taken relative to the largest ‖θ_j‖, so large q cannot overflow."""
    m = sqnorm.shape[0]
    top = 0.0
    for j in range(m):
        top = max(top, np.sqrt(max(sqnorm[j], 0.0)))
    if top == 0.0:
        out[:] = 0.0
        return
    total = 0.0
    for j in range(m):
        total += (np.sqrt(max(sqnorm[j], 0.0)) / top) ** q
    group = top * total ** (1.0 / q)
    for j in range(m):
        out[j] = (np.sqrt(max(sqnorm[j], 0.0)) / group) ** (q - 2.0) / q


@njit(cache=True, nogil=True)
def om2_block(y, F_old, G, kxx, sqnorm, q, bounded_norm, act, K):
    """OM-2 (Jie, Orabona et al., Algorithm 1) over one segment; mutates ``sqnorm`` (‖θ_j‖², per kernel).

    θ_j's class-c coefficients live in the pool (the raw scores r_j(x, c) = Σ_s β_s[c] κ_j(x_s, x));
    the score is s(x, c) = Σ_j α_j r_j(x, c). With the rival ŷ and margin m_t = s(y) − s(ŷ), the
    loss is |1 − m_t|_+; on a positive loss η_t = min(1, 1 − 2 m_t / ‖z_t‖²_{2,q}) (clipped at 0:
    with unnormalised kernels ‖z_t‖ can be small), and the row joins every kernel's expansion with
    +η_t on y and −η_t on ŷ. ‖z_t‖²_{2,q} = (Σ_j (2 κ_j(x_t, x_t))^{q/2})^{2/q} exactly, or its
    bound for normalised kernels 2 F^{2/q} (``bounded_norm``). ‖θ_j‖² is updated incrementally:
    + 2η (r_j(y) − r_j(ŷ)) + η² · 2κ_j(x_t, x_t).

    Returns ``(F, scores, mistakes, coef)``: ``F`` (n, m·K) raw per-kernel class scores, ``scores``
    (n, K) the combined ones, mistakes (``s(y) <= s(ŷ)``) and ``coef`` (n, m·K).
    """
    n = y.shape[0]
    m = F_old.shape[1] // K
    F, scores, mistakes, coef, added, f, on = _segment_arrays(n, m, K, act)
    n_added = np.int64(0)  # not a literal 0: mc_scores_at would be compiled for that type too
    alpha = np.empty(m)
    om2_alphas(sqnorm, q, alpha)  # recomputed only when an update changes the norms
    n_on = act.shape[0]
    for t in range(n):
        mc_scores_at(t, F_old, G, coef, added, n_added, act, f)
        yt = int(y[t])
        for c in range(K):
            s = 0.0
            for j in range(m):
                s += alpha[j] * f[j, c]
            scores[t, c] = s
        for j in range(m):
            for c in range(K):
                F[t, j * K + c] = f[j, c]
        other = rival(scores[t], yt)
        margin = scores[t, yt] - scores[t, other]
        mistakes[t] = margin <= 0.0
        if margin >= 1.0:
            continue
        if bounded_norm:
            zsq = 2.0 * n_on ** (2.0 / q)
        else:
            total = 0.0
            for j in range(m):
                if on[j]:
                    total += (2.0 * kxx[j, t]) ** (q / 2.0)
            zsq = total ** (2.0 / q)
        eta = min(1.0, 1.0 - 2.0 * margin / zsq) if zsq > 0.0 else 0.0
        if not eta > 0.0:
            continue
        for j in range(m):
            if on[j]:
                sqnorm[j] += 2.0 * eta * (f[j, yt] - f[j, other]) + eta * eta * 2.0 * kxx[j, t]
                coef[t, j * K + yt] = eta
                coef[t, j * K + other] = -eta
        om2_alphas(sqnorm, q, alpha)
        added[n_added] = t
        n_added += 1
    return F, scores, mistakes, coef


@njit(cache=True, nogil=True)
def spa_mc_rows(a, F_part, rows, fast, lazy, state, params, out):
    """Rows ``a : a + len(F_part)`` of multi-class SPA over a segment (the binary
    :func:`~._recurrence._spa_rows` with class scores): each kernel is a multi-class
    passive-aggressive learner (Crammer et al. 2006, the max-score multi-class PA) with the rival
    class r: margin f(y) − f(r), hinge loss |1 − margin|_+, and, if selected for update and
    sampled with ρ = min(α, ℓ)/β, the step τ = min(η/ρ, ℓ / ‖φ(x, y) − φ(x, r)‖²) with
    ‖φ(x, y) − φ(x, r)‖² = 2κ(x, x), as +τ on y and −τ on r. Hedge discounts by the hinge loss (or
    by mistakes, ``hedge_mistake``); the combined class scores are Σ θ_k f_k(x, c), θ = w / Σ w.
    ``Fk`` (m, K, n) holds the segment's own terms; ``F``, ``coef`` (n, m·K), ``score`` (n, K)."""
    y, G, Xb, XbT, xsq, kxx, U, on = rows
    logw, w, wsync, kmistakes = state
    t0, block_size, block_sync, log_gamma, delta, alpha, beta, eta, hedge_mistake = params
    Fk, col, F, score, mistakes, coef = out
    n = y.shape[0]
    m, K = Fk.shape[0], Fk.shape[1]
    f = np.empty((m, K))
    discounts = np.empty(m)
    rivals = np.empty(m, dtype=np.int64)
    want = np.zeros(m, dtype=np.bool_)
    for t in range(a, a + F_part.shape[0]):
        if (t0 + t) % block_size == 0:
            for k in range(w.shape[0]):  # (a loop: a slice assignment compiles numba's shape-error text)
                wsync[k] = w[k]
        for k in range(m):
            for c in range(K):
                f[k, c] = F_part[t - a, k * K + c] + Fk[k, c, t]
                F[t, k * K + c] = f[k, c]
        yt = int(y[t])
        weighted_class_scores(w, f, score[t])
        mistakes[t] = score[t, yt] <= score[t, rival(score[t], yt)]
        pw = wsync if block_sync else w
        any_coef = False
        for k in range(m):
            r = rival(f[k], yt)
            margin = f[k, yt] - f[k, r]
            loss = max(0.0, 1.0 - margin)
            discounts[k] = (1.0 if margin <= 0.0 else 0.0) if hedge_mistake else loss
            if margin <= 0.0:
                kmistakes[k] += 1
            selected = U[t, k, 0] < (1.0 - delta) * pw[k] + delta
            tau = spa_coef(1.0, loss, 2.0 * kxx[k, t], selected and on[k], U[t, k, 1], alpha, beta, eta)
            rivals[k], want[k] = r, tau != 0.0
            if tau != 0.0:
                coef[t, k * K + yt] = tau
                coef[t, k * K + r] = -tau
                any_coef = True
        hedge_loss_step(logw, discounts, log_gamma, w, t == a)  # (w = exp(logw) after row a)
        if any_coef:
            if lazy:
                gram_column(Xb, XbT, xsq, t, col, fast[0], want, fast[1], fast[2])
            for k in range(m):
                if want[k]:
                    for c in (yt, rivals[k]):
                        v = coef[t, k * K + c]
                        if lazy:
                            for i in range(t + 1, n):
                                Fk[k, c, i] += v * col[k, i]
                        else:
                            for i in range(t + 1, n):
                                Fk[k, c, i] += v * G[k, i, t]
