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

from ._budget import hinge, last_use, place, place_pair


@njit(cache=True, inline="always")
def _least_degradation(kxx, budget, K, slots, values, deg):
    """``(slot, κ(x_slot, x_t))`` of the support vector whose removal degrades the weights least,
    ``‖α_j‖² (κ(x_j, x_j) − κ(x_j, x_t)² / κ(x_t, x_t))`` (K coefficients per slot; the first on ties).
    The degradations go to ``deg`` (B) first, a loop without branches that vectorises (its divisions
    dominated a search that compared as it went), then the first least one is picked
    (:func:`_first_least`). κ(x_t, x_t) = 1 (every gaussian's) skips the divisions: ``v / 1.0`` is ``v``."""
    coef = slots.coef
    V, kxx_slot = values
    divide = kxx != 1.0
    for j in range(budget):
        norm2 = 0.0
        for c in range(K):
            norm2 += coef[j * K + c] * coef[j * K + c]
        krt = V[j]
        r = krt * krt
        deg[j] = norm2 * (kxx_slot[j] - (r / kxx if divide else r))
    best = _first_least(deg, budget)
    return best, V[best]


@njit(cache=True, inline="always")
def _first_least(deg, n):
    """The first j < n whose ``deg[j]`` is least: what ``best = 0; if deg[j] < deg[best]: best = j`` in
    slot order gives (NaNs never taken after slot 0; a NaN in slot 0 is kept), as four interleaved
    scans of every fourth slot (one chain of compares was latency-bound) whose results are merged:
    the least value, on ties the lowest slot."""
    b0 = b1 = b2 = b3 = 0
    m0 = m1 = m2 = m3 = deg[0]
    j = 1
    while j + 3 < n:
        if deg[j] < m0:
            m0, b0 = deg[j], j
        if deg[j + 1] < m1:
            m1, b1 = deg[j + 1], j + 1
        if deg[j + 2] < m2:
            m2, b2 = deg[j + 2], j + 2
        if deg[j + 3] < m3:
            m3, b3 = deg[j + 3], j + 3
        j += 4
    while j < n:
        if deg[j] < m0:
            m0, b0 = deg[j], j
        j += 1
    best, least = b0, m0
    if m1 < least or (m1 == least and b1 < best):
        best, least = b1, m1
    if m2 < least or (m2 == least and b2 < best):
        best, least = b2, m2
    if m3 < least or (m3 == least and b3 < best):
        best, least = b3, m3
    return best


@njit(cache=True)
def bpas_step(t, y, f, kxx, hp, used, slots, values, deg):
    """One instance for one kernel (:class:`~.records.BudgetParams` ``hp``, C = ``hp.eta``; its
    :class:`~.records.Slots` and :class:`~.records.BlockValues`); returns ``(hinge loss, used, slot)``
    (the slot row t took, -1: none; BPA-S never rescales). ``deg`` (B) is scratch.

    One exit, its arrays' last use there (:func:`~._budget.last_use`): no reference counting per call."""
    budget, C = hp.budget, hp.eta
    loss = hinge(y, f)
    new = -1
    if not (loss <= 0.0 or kxx <= 0.0):  # (not "loss > 0 and kxx > 0": a NaN κ(x, x) updates, as before)
        tau = loss / kxx
        if tau > C:
            tau = C
        a = tau * y
        if used < budget:
            new = used
            used += 1
        else:
            new, best_k = _least_degradation(kxx, budget, 1, slots, values, deg)
            a += slots.coef[new] * best_k / kxx
        place(new, t, a, slots.coef, slots.entry)
    last_use(slots, values, deg)
    return loss, used, new


@njit(cache=True)
def bpas_mc_step(t, y, r, margin, kxx, hp, used, slots, values, row, deg):
    """Multi-class: label y, rival r, margin ``f(x, y) − f(x, r)``; returns ``(hinge loss, used, slot)``.
    ``row`` (K) is scratch for the removed support vector's coefficients, ``deg`` (B) for the search."""
    budget, C, K = hp.budget, hp.eta, hp.n_classes
    coef, entry = slots
    loss = hinge(1.0, margin)
    if loss <= 0.0 or kxx <= 0.0:
        return loss, used, -1
    tau = loss / (2.0 * kxx)
    if tau > C:
        tau = C
    if used < budget:
        place_pair(used, t, K, tau, y, r, coef, entry)
        return loss, used + 1, used
    best, best_k = _least_degradation(kxx, budget, K, slots, values, deg)
    for c in range(K):
        row[c] = coef[best * K + c] * best_k / kxx
    entry[best] = t
    for c in range(K):
        coef[best * K + c] = row[c]
    coef[best * K + y] += tau
    coef[best * K + r] -= tau
    return loss, used, best
