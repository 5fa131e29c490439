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
"""

from __future__ import annotations

import math

from numba import njit

from ._budget import place, slot_coef, slot_value

FORGET_BOUND = 15.0 / 32.0
# φ = 1 when the constraint holds at φ = 1 up to rounding: the self-tuned rule keeps Q on the bound
# 15/32 M, and the next removals of equal-weight support vectors are then exactly tight (A + B + C = 0
# in exact arithmetic), which rounding alone would turn into φ = 1 − 1 ulp
PHI_ONE_TOL = 1e-12


@njit(cache=True)
def forgetron_phi(sigma, sigma_mu, Q, M):
    """Self-tuned shrinking coefficient φ_t (``sigma_mu`` = σ_r μ_t, ``M`` = mistakes so far)."""
    a = sigma * sigma - 2.0 * sigma_mu
    b = 2.0 * sigma
    c = Q - FORGET_BOUND * M
    if a + b + c <= PHI_ONE_TOL * (abs(a) + b + abs(c)):
        return 1.0
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        disc = 0.0
    return -2.0 * c / (b + math.sqrt(disc))


@njit(cache=True)
def forgetron_psi(phi, sigma, sigma_mu):
    """Ψ(φσ, φμ) = (φσ)² + 2φσ − 2 (φσ)(φμ): the damage bound of removing r after shrinking."""
    lam = phi * sigma
    return lam * lam + 2.0 * lam - 2.0 * phi * phi * sigma_mu


@njit(cache=True, inline="always")
def _two_sum_into(hi, lo, j, v):
    """``hi[j] + lo[j] += v`` as a double-double (Knuth's TwoSum): the accumulators add terms of both
    signs and large size (polynomial kernels on raw data) whose sum may be small."""
    h = hi[j]
    s = h + v
    bp = s - h
    lo[j] += (h - (s - bp)) + (v - bp)
    hi[j] = s


@njit(cache=True)
def forgetron_step(t, y, f, kxx, budget, used, head, scale, Q, M, coef, a_blk, entry, acc, acc_lo, acc_blk,
                   acc_lo_blk, Krow, Gc):
    """One instance for one kernel; returns ``(loss, used, head, scale, Q, M, added)``.

    ``coef``/``a_blk`` hold unscaled coefficients (coefficient = scale · a); ``acc + acc_lo`` (buffer
    slots) and ``acc_blk + acc_lo_blk`` (block rows) the double-double accumulators of f' at each
    support vector, in the same unscaled units.
    """
    if y * f > 0.0:
        return 0.0, used, head, scale, Q, M, False
    if kxx <= 0.0:
        return 1.0, used, head, scale, Q, M, False
    M += 1
    a = y / scale
    for j in range(used):  # f' = f + y κ(x_t, ·) at every current support vector
        v = a * slot_value(j, t, Krow, Gc, entry)
        r = entry[j]
        if r < 0:
            _two_sum_into(acc, acc_lo, j, v)
        else:
            _two_sum_into(acc_blk, acc_lo_blk, r, v)
    if used < budget:
        place(used, t, a, coef, a_blk, entry)
        acc_blk[t] = a * kxx
        acc_lo_blk[t] = 0.0
        return 1.0, used + 1, head, scale, Q, M, True
    r = head
    ar = slot_coef(r, coef, a_blk, entry)
    acc_r = acc[r] + acc_lo[r] if entry[r] < 0 else acc_blk[entry[r]] + acc_lo_blk[entry[r]]
    sigma = scale * abs(ar)                    # σ_r (a_r has the sign of y_r)
    sigma_mu = scale * scale * ar * acc_r      # σ_r · y_r f'(x_r)
    phi = forgetron_phi(sigma, sigma_mu, Q, float(M))
    Q += forgetron_psi(phi, sigma, sigma_mu)
    scale *= phi
    place(r, t, a, coef, a_blk, entry)
    acc_blk[t] = a * kxx
    acc_lo_blk[t] = 0.0
    head = head + 1 if head + 1 < budget else 0
    return 1.0, used, head, scale, Q, M, True
