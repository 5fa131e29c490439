"""Budget Passive-Aggressive, simple variant BPA-S (Wang & Vucetic, "Online passive-aggressive
algorithms on a budget", AISTATS 2010).

PA-I step with aggressiveness C (the BOMKL paper's learning rate η): when the hinge loss ℓ is
positive, the new support vector gets ``α_t = y τ`` with ``τ = min(C, ℓ / κ(x_t, x_t))``. When the
buffer is full, one old support vector r is removed and only the new coefficient is adjusted,
``α_t ← α_t + α_r κ(x_r, x_t) / κ(x_t, x_t)`` (projection of the removed term on κ(x_t, ·)); r minimises
the weight degradation ``α_r² (κ(x_r, x_r) − κ(x_r, x_t)² / κ(x_t, x_t))`` (the PA objective's only
r-dependent part: the loss after the update is the same for every r). Ties: the lowest slot. The new
support vector takes r's slot. κ(x_t, x_t) = 0 (zero function): no update, no division.
"""

from __future__ import annotations

from numba import njit

from ._budget import hinge, place, slot_coef, slot_value


@njit(cache=True)
def bpas_step(t, y, f, kxx, budget, used, C, coef, a_blk, entry, kxx_buf, kxx_blk, Krow, Gc):
    """One instance for one kernel; returns ``(hinge loss, used, added)`` (BPA-S never rescales)."""
    loss = hinge(y, f)
    if loss <= 0.0 or kxx <= 0.0:
        return loss, used, False
    tau = loss / kxx
    if tau > C:
        tau = C
    a = tau * y
    if used < budget:
        place(used, t, a, coef, a_blk, entry)
        kxx_blk[t] = kxx
        return loss, used + 1, True
    best = 0
    best_deg = 0.0
    best_k = 0.0
    for j in range(budget):
        ar = slot_coef(j, coef, a_blk, entry)
        krt = slot_value(j, t, Krow, Gc, entry)
        r = entry[j]
        krr = kxx_buf[j] if r < 0 else kxx_blk[r]
        deg = ar * ar * (krr - krt * krt / kxx)
        if j == 0 or deg < best_deg:
            best, best_deg, best_k = j, deg, krt
    a += slot_coef(best, coef, a_blk, entry) * best_k / kxx
    place(best, t, a, coef, a_blk, entry)
    kxx_blk[t] = kxx
    return loss, used, True
