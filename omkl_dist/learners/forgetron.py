"""The self-tuned Forgetron (Dekel, Shalev-Shwartz & Singer, "The Forgetron: a kernel-based Perceptron
on a fixed budget", NIPS 2005 / SIAM J. Comput. 2008).

On a mistake ``y_t f_t(x_t) <= 0`` (M_t = M_{t-1} + 1):

1. Perceptron step: ``f' = f_t + y_t κ(x_t, ·)`` (I' = I ∪ {t}).
2. If |I'| <= B, that is all (no shrinking, no removal).
3. Otherwise, with r the oldest support vector, σ_r its weight (coefficient σ_r y_r) and
   ``μ = y_r f'(x_r)``, shrink every weight (the new one too) by

       φ_t = max{ φ ∈ (0, 1] : Ψ(φ σ_r, φ μ) + Q_t <= (15/32) M_t },   Ψ(λ, μ) = λ² + 2λ − 2λμ,

   set ``Q_{t+1} = Q_t + Ψ(φ_t σ_r, φ_t μ)`` and remove r.

``Ψ(φσ, φμ) + Q − 15/32 M = A φ² + B φ + C`` with ``A = σ² − 2σμ``, ``B = 2σ`` and
``C = Q − 15/32 M < 0`` (Q ≤ 15/32 M_{t-1} holds after every step), so φ = 1 when
``A + B + C <= 0`` (up to a relative rounding tolerance of 1e-12: the rule keeps Q exactly on its
bound, so equality at φ = 1 is common) and otherwise the quadratic's unique root in (0, 1), computed as
``φ = −2C / (B + √(B² − 4AC))`` (the stable form of the root for either sign of A).
The paper's bound assumes κ(x, x) <= 1; on other kernels the rule is applied unchanged.

Block-exact bookkeeping: μ needs ``f'(x_r)`` at the oldest support vector. Because removal is
always of the oldest, every support vector newer than r is still present when r is removed, so
``f'(x_r) = s · acc_r`` with ``acc_r = a_r κ(x_r, x_r) + Σ_{i added after r} a_i κ(x_i, x_r)``
accumulated (as a double-double) when each later support vector is added (O(B) per update, no
Gram matrix).
The slot of the removed r takes the new support vector, so the buffer is a ring and the oldest
slot is ``head``.

An instance with κ(x, x) = 0 is the zero function: no update, and M is not incremented.

Multi-class (K > 2 classes, :func:`forgetron_mc_step`; our generalisation, the paper is binary): the
Perceptron step is the multi-class Perceptron of Crammer & Singer (JMLR 2003, "max" update): with the
rival ŷ (highest-scoring class other than y), a mistake is ``f(x, y) <= f(x, ŷ)`` and adds
``ψ_t = φ(x_t, y_t) − φ(x_t, ŷ_t)`` (+1 on y, −1 on ŷ at x_t), φ(x, c) = κ(x, ·) ⊗ e_c. Support vector r
is the term ``σ_r ψ_r``, so the paper's derivation of Ψ (Lemma 1: the damage of removing ``λ ψ_r`` from
f' against a competitor g with the hinge loss ``[1 − ⟨g, ψ_r⟩]_+``, which the multi-class hinge loss
bounds from above) goes through with ``μ = ⟨f', ψ_r⟩ = f'(x_r, y_r) − f'(x_r, ŷ_r)`` and
``‖ψ_r‖² = 2κ(x_r, x_r)`` in place of ``y_r f'(x_r)`` and ``κ(x_r, x_r)`` <= 1:
``Ψ(λ, μ) = 2λ² + 2λ − 2λμ``. We keep the self-tuned bound ``Q + Ψ <= 15/32 M`` unchanged (as for
kernels with κ(x, x) > 1 in the binary case). The accumulator of slot j holds ``⟨f', ψ_j⟩`` directly: a
later support vector i adds ``σ_i κ(x_i, x_j) ⟨e_{y_i} − e_{ŷ_i}, e_{y_j} − e_{ŷ_j}⟩`` (a weight in
{−2, …, 2}); a slot's pair (y_j, ŷ_j) is the class of its positive and of its negative coefficient.
"""

from __future__ import annotations

import math

from numba import njit

from ._budget import place, place_pair

FORGET_BOUND = 15.0 / 32.0
# φ = 1 when the constraint holds at φ = 1 up to rounding: the self-tuned rule keeps Q on the bound
# 15/32 M, and the next removals of equal-weight support vectors are then exactly tight (A + B + C = 0
# in exact arithmetic), which rounding alone would turn into φ = 1 − 1 ulp
PHI_ONE_TOL = 1e-12


@njit(cache=True)
def forgetron_phi(sigma, sigma_mu, Q, M, norm2):
    """Self-tuned shrinking coefficient φ_t (``sigma_mu`` = σ_r μ_t, ``M`` = mistakes so far, ``norm2``
    the bound on ‖ψ_r‖²: 1 binary, 2 multi-class)."""
    a = norm2 * sigma * sigma - 2.0 * sigma_mu
    b = 2.0 * sigma
    c = Q - FORGET_BOUND * M
    if a + b + c <= PHI_ONE_TOL * (abs(a) + b + abs(c)):
        return 1.0
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        disc = 0.0
    return -2.0 * c / (b + math.sqrt(disc))


@njit(cache=True)
def forgetron_psi(phi, sigma, sigma_mu, norm2):
    """Ψ(φσ, φμ) = norm2 (φσ)² + 2φσ − 2 (φσ)(φμ): the damage bound of removing r after shrinking."""
    lam = phi * sigma
    return norm2 * lam * lam + 2.0 * lam - 2.0 * phi * phi * sigma_mu


@njit(cache=True, inline="always")
def _two_sum_into(hi, lo, j, v):
    """``hi[j] + lo[j] += v`` as a double-double (Knuth's TwoSum): the accumulators add terms of both
    signs and large size (polynomial kernels on raw data) whose sum may be small."""
    h = hi[j]
    s = h + v
    bp = s - h
    lo[j] += (h - (s - bp)) + (v - bp)
    hi[j] = s


@njit(cache=True, inline="always")
def _shrink(h, ah, scale, Q, M, norm2, accs):
    """Removing slot h (unscaled coefficient ``ah``, accumulator ``⟨f', ψ_h⟩ / s``): ``(s φ, Q + Ψ)``."""
    acc_h = accs.acc[h] + accs.acc_lo[h]
    sigma = scale * abs(ah)
    sigma_mu = scale * scale * ah * acc_h
    phi = forgetron_phi(sigma, sigma_mu, Q, float(M), norm2)
    return scale * phi, Q + forgetron_psi(phi, sigma, sigma_mu, norm2)


@njit(cache=True, inline="always")
def _start_accumulator(j, v, accs):
    """A new support vector's accumulator in slot j: ``v`` (its own term of f')."""
    accs.acc[j] = v
    accs.acc_lo[j] = 0.0


@njit(cache=True)
def forgetron_step(t, y, f, kxx, hp, state, slots, accs, values):
    """One instance for one kernel; ``state`` is ``(used, head, scale, Q, M)``; returns ``(loss, state,
    slot)`` (the slot row t took, -1: none).

    The slots' coefficients are unscaled (coefficient = scale · a); ``accs``
    (:class:`~.records.Accumulators`) holds the double-double accumulators of f' at each support
    vector, in the same unscaled units.
    """
    used, head, scale, Q, M = state
    budget = hp.budget
    coef, entry = slots
    V = values.V
    if y * f > 0.0:
        return 0.0, (used, head, scale, Q, M), -1
    if kxx <= 0.0:
        return 1.0, (used, head, scale, Q, M), -1
    M += 1
    a = y / scale
    for j in range(used):  # f' = f + y κ(x_t, ·) at every current support vector
        _two_sum_into(accs.acc, accs.acc_lo, j, a * V[j])
    if used < budget:
        place(used, t, a, coef, entry)
        _start_accumulator(used, a * kxx, accs)
        return 1.0, (used + 1, head, scale, Q, M), used
    r = head
    # a_r has the sign of y_r: σ_r = s |a_r|, σ_r y_r f'(x_r) = s² a_r acc_r
    scale, Q = _shrink(r, coef[r], scale, Q, M, 1.0, accs)
    place(r, t, a, coef, entry)
    _start_accumulator(r, a * kxx, accs)
    head = head + 1 if head + 1 < budget else 0
    return 1.0, (used, head, scale, Q, M), r


@njit(cache=True, inline="always")
def _pair_of(coef, off, K):
    """The classes of a multi-class Forgetron support vector's positive and negative coefficient."""
    pos = neg = 0
    for c in range(K):
        if coef[off + c] > 0.0:
            pos = c
        elif coef[off + c] < 0.0:
            neg = c
    return pos, neg


@njit(cache=True)
def forgetron_mc_step(t, y, r, margin, kxx, hp, state, slots, accs, values):
    """Multi-class: label y, rival r, margin ``f(x, y) − f(x, r)``; returns ``(loss, state, slot)`` as
    :func:`forgetron_step`. Accumulators hold ``⟨f', ψ_j⟩`` per slot, unscaled."""
    used, head, scale, Q, M = state
    budget, K = hp.budget, hp.n_classes
    coef, entry = slots
    V = values.V
    if margin > 0.0:
        return 0.0, (used, head, scale, Q, M), -1
    if kxx <= 0.0:
        return 1.0, (used, head, scale, Q, M), -1
    M += 1
    a = 1.0 / scale
    for j in range(used):  # f' = f + ψ_t: ⟨ψ_t, ψ_j⟩ = κ(x_t, x_j) ⟨e_y − e_r, e_yj − e_rj⟩
        yj, rj = _pair_of(coef, j * K, K)
        weight = int(y == yj) - int(y == rj) - int(r == yj) + int(r == rj)
        if weight != 0:
            _two_sum_into(accs.acc, accs.acc_lo, j, (a * weight) * V[j])
    if used < budget:
        place_pair(used, t, K, a, y, r, coef, entry)
        _start_accumulator(used, (2.0 * a) * kxx, accs)
        return 1.0, (used + 1, head, scale, Q, M), used
    h = head
    # σ_h = s a_h with a_h its positive coefficient, σ_h ⟨f', ψ_h⟩ = s² a_h acc_h
    scale, Q = _shrink(h, coef[h * K + _pair_of(coef, h * K, K)[0]], scale, Q, M, 2.0, accs)
    place_pair(h, t, K, a, y, r, coef, entry)
    _start_accumulator(h, (2.0 * a) * kxx, accs)
    head = h + 1 if h + 1 < budget else 0
    return 1.0, (used, head, scale, Q, M), h
