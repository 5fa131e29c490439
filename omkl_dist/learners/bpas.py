"""Budget Passive-Aggressive, simple variant BPA-S (Wang & Vucetic, "Online passive-aggressive
algorithms on a budget", AISTATS 2010).

PA-I step with aggressiveness C (the BOMKL paper's learning rate η): when the hinge loss ℓ is
positive, the new support vector gets ``α_t = y τ`` with ``τ = min(C, ℓ / κ(x_t, x_t))``. When the
buffer is full, one old support vector r is removed and only the new coefficient is adjusted,
``α_t ← α_t + α_r κ(x_r, x_t) / κ(x_t, x_t)`` (projection of the removed term on κ(x_t, ·)); r minimises
the weight degradation ``α_r² (κ(x_r, x_r) − κ(x_r, x_t)² / κ(x_t, x_t))`` (the PA objective's only
r-dependent part: the loss after the update is the same for every r). Ties: the lowest slot. The new
support vector takes r's slot. κ(x_t, x_t) = 0 (zero function): no update, no division.

Multi-class (K > 2 classes, :func:`bpas_mc_step`): the multi-class PA-I step of Crammer, Dekel, Keshet,
Shalev-Shwartz & Singer ("Online passive-aggressive algorithms", JMLR 2006, the max-loss multi-class
update) in the kernel feature map φ(x, c) = κ(x, ·) ⊗ e_c: with the rival r (highest-scoring class other
than y), ``ℓ = [1 − f(x, y) + f(x, r)]_+`` and ``τ = min(C, ℓ / ‖φ(x, y) − φ(x, r)‖²)``,
``‖φ(x, y) − φ(x, r)‖² = 2κ(x, x)``; the new support vector gets +τ on y and −τ on r. A support vector
holds a coefficient vector ``α_j`` over the classes; removing j and projecting ``α_j ⊗ κ(x_j, ·)`` on the
new instance's span {φ(x_t, c)} adds ``α_j κ(x_j, x_t) / κ(x_t, x_t)`` to the new coefficient vector
(it may then touch four classes), and the weight degradation is
``‖α_j‖² (κ(x_j, x_j) − κ(x_j, x_t)² / κ(x_t, x_t))`` (Wang & Vucetic's rule with the vector norm).
"""

from __future__ import annotations

from numba import njit

from ._budget import clear_slot, hinge, place, place_pair, slot_coef, slot_row, slot_value


@njit(cache=True)
def _least_degradation(t, kxx, budget, K, slots, values):
    """``(slot, κ(x_slot, x_t))`` of the support vector whose removal degrades the weights least,
    ``‖α_j‖² (κ(x_j, x_j) − κ(x_j, x_t)² / κ(x_t, x_t))`` (K coefficients per slot; the first on ties)."""
    coef, a_blk, entry = slots
    Krow, Gc, kxx_buf, kxx_blk = values
    best = 0
    best_deg = 0.0
    best_k = 0.0
    for j in range(budget):
        arr, off = slot_row(j, K, coef, a_blk, entry)
        norm2 = 0.0
        for c in range(K):
            norm2 += arr[off + c] * arr[off + c]
        krt = slot_value(j, t, Krow, Gc, entry)
        krr = kxx_buf[j] if entry[j] < 0 else kxx_blk[entry[j]]
        deg = norm2 * (krr - krt * krt / kxx)
        if j == 0 or deg < best_deg:
            best, best_deg, best_k = j, deg, krt
    return best, best_k


@njit(cache=True)
def bpas_step(t, y, f, kxx, hp, used, slots, values):
    """One instance for one kernel (:class:`~.records.BudgetParams` ``hp``, C = ``hp.eta``; its
    :class:`~.records.Slots` and :class:`~.records.BlockValues`); returns ``(hinge loss, used, added)``
    (BPA-S never rescales)."""
    budget, C = hp.budget, hp.eta
    coef, a_blk, entry = slots
    kxx_blk = values.kxx_blk
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
    best, best_k = _least_degradation(t, kxx, budget, 1, slots, values)
    a += slot_coef(best, coef, a_blk, entry) * best_k / kxx
    place(best, t, a, coef, a_blk, entry)
    kxx_blk[t] = kxx
    return loss, used, True


@njit(cache=True)
def bpas_mc_step(t, y, r, margin, kxx, hp, used, slots, values, row):
    """Multi-class: label y, rival r, margin ``f(x, y) − f(x, r)``; returns ``(hinge loss, used, added)``.
    ``row`` (K) is scratch for the removed support vector's coefficients."""
    budget, C, K = hp.budget, hp.eta, hp.n_classes
    coef, a_blk, entry = slots
    kxx_blk = values.kxx_blk
    loss = hinge(1.0, margin)
    if loss <= 0.0 or kxx <= 0.0:
        return loss, used, False
    tau = loss / (2.0 * kxx)
    if tau > C:
        tau = C
    if used < budget:
        place_pair(used, t, K, tau, y, r, coef, a_blk, entry)
        kxx_blk[t] = kxx
        return loss, used + 1, True
    best, best_k = _least_degradation(t, kxx, budget, K, slots, values)
    arr, off = slot_row(best, K, coef, a_blk, entry)
    for c in range(K):
        row[c] = arr[off + c] * best_k / kxx
    clear_slot(best, K, coef, a_blk, entry)
    entry[best] = t
    for c in range(K):
        a_blk[t * K + c] = row[c]
    a_blk[t * K + y] += tau
    a_blk[t * K + r] -= tau
    kxx_blk[t] = kxx
    return loss, used, True
