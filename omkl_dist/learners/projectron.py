"""The Projectron and Projectron++ (Orabona, Keshet & Caputo, "The Projectron: a bounded kernel-based
Perceptron", ICML 2008; "Bounded Kernel-Based Online Learning", JMLR 10, 2009).

Projectron (binary, one kernel). On a mistake ``y f(x) <= 0``, with S the support set, K_S its Gram
matrix and ``k = (κ(x_j, x))_{j ∈ S}``: the projection of κ(x, ·) on span{κ(x_j, ·)} has coefficients
``d = K_S⁻¹ k``, its squared norm is ``‖P k‖² = k·d`` and the projection error
``‖δ‖² = κ(x, x) − k·d``. If ``‖δ‖ <= η`` the projected update ``f ← f + y Σ_j d_j κ(x_j, ·)`` is taken
(no new support vector); otherwise the Perceptron update adds ``y κ(x, ·)`` and K_S⁻¹ grows by the
paper's block inverse, ``K⁻¹ ← [[K⁻¹ + d dᵀ/‖δ‖², −d/‖δ‖²], [−dᵀ/‖δ‖², 1/‖δ‖²]]``.

Projectron++ adds updates on margin errors ``0 < y f(x) < 1`` (hinge loss ℓ = 1 − y f(x)): when
``ℓ − ‖δ‖/η > 0`` the projected update ``f ← f + τ y P k`` with
``τ = min(ℓ/‖P k‖², 1, 2(ℓ − ‖δ‖/η)/‖P k‖²)`` (the largest PA-I step, C = 1, that keeps the paper's
β_t = τ(2ℓ − τ‖P k‖² − 2‖δ‖/η) >= 0); otherwise nothing. A margin error never adds a support vector.

Capacity. The paper's support set is bounded by η alone (its size cannot be predicted); our buffer
holds at most B support vectors per kernel (``budget``, the memory the engine allocates, as the
authors' C++ toolbox caps it): with a full buffer a mistake takes the projected update whatever ‖δ‖
(the toolbox's rule once its buffer is full). Support vectors are never removed, so slots fill in
order and slot j is row/column j of K_S⁻¹ (``kinv``, B × B per kernel).

Numerics: ``‖δ‖²`` below 0 by rounding counts as 0; κ(x, x) = 0 (the zero function) takes no update.
η > 0, so a support vector is only added with ‖δ‖² > η² > 0 and K_S⁻¹ stays finite.

Where the authors' C++ toolbox (``kernel_projectron.h``, ``kernel_projectronpp.h``) differs, we
follow the paper: it has no η (it adds on every mistake until B is full, then always projects),
computes ``‖δ‖² = 1 − k·d`` (κ(x, x) = 1, wrong for its polynomial kernels), and its Projectron++
takes ``τ = min(ℓ/‖P k‖², 1)`` and skips the update unless ``τ(2ℓ − τ‖P k‖² − 2U‖δ‖) >= 0`` with
``U = ¼ √((B + 1)/ln(B + 1))`` in place of 1/η (its polynomial branch takes the max, not the min).

Multi-class (K > 2 classes; our generalisation, in the hypothesis space the slots represent: each
support vector holds K coefficients, φ(x, c) = κ(x, ·) ⊗ e_c): with the rival r (highest-scoring class
other than y) the update is ψ = φ(x, y) − φ(x, r); its projection on span{φ(x_j, c)} is ``(P k) ⊗
(e_y − e_r)`` (+d on class y, −d on class r), ``‖P ψ‖² = 2 k·d`` and its error ``‖δ_ψ‖ = √2 ‖δ‖``. η
bounds each of the two projections (as the first author's DOGMA library does): a mistake
(``f(x, y) <= f(x, r)``) projects when ``‖δ‖ <= η``, else adds ψ; a margin error (``0 < f(x, y) −
f(x, r) < 1``) projects with ``τ = min(ℓ/‖Pψ‖², 1, 2(ℓ − ‖δ‖/η)/‖Pψ‖²)`` when ``ℓ − ‖δ‖/η > 0``.
"""

from __future__ import annotations

import math

from numba import njit

from ._budget import place, place_pair


@njit(cache=True)
def projection(kxx, used, kinv, V, d):
    """``d = K_S⁻¹ k`` over the first ``used`` slots (``V``: the row's kernel values with them, each
    sum in slot order); returns ``(‖δ‖, ‖P k‖² = k·d)`` with ``‖δ‖² = max(κ(x, x) − k·d, 0)``.

    K_S⁻¹ is exactly symmetric (:func:`extend_inverse`), so ``d`` is built column by column,
    ``d += K⁻¹[j] V[j]`` for j = 0, 1, …: each d_i is the same sum in the same order as a row's dot
    product, but the loop over i has no dependency between its steps and vectorises (a row's dot
    product is a chain of dependent additions: 2-3x slower over B = 100)."""
    for i in range(used):
        d[i] = 0.0
    for j in range(used):
        v = V[j]
        row = kinv[j]
        for i in range(used):
            d[i] += row[i] * v
    pk = 0.0
    for i in range(used):
        pk += V[i] * d[i]
    delta2 = kxx - pk
    return math.sqrt(delta2) if delta2 > 0.0 else 0.0, pk


@njit(cache=True)
def extend_inverse(used, kinv, d, delta):
    """K_S⁻¹ of the support set grown by one (slot ``used``), the paper's block inverse; exactly
    symmetric (``d_i d_j = d_j d_i``)."""
    delta2 = delta * delta
    for i in range(used):
        for j in range(used):
            kinv[i, j] += d[i] * d[j] / delta2
        kinv[i, used] = -d[i] / delta2
        kinv[used, i] = -d[i] / delta2
    kinv[used, used] = 1.0 / delta2


@njit(cache=True, inline="always")
def _margin_step(ell, delta, pk, eta):
    """Projectron++'s step on a margin error (0 when it is skipped): ``min(ℓ/‖Pψ‖², 1,
    2(ℓ − ‖δ‖/η)/‖Pψ‖²)`` if ``ℓ − ‖δ‖/η > 0``."""
    slack = ell - delta / eta
    if slack <= 0.0 or pk <= 0.0:
        return 0.0
    return min(ell / pk, 1.0, 2.0 * slack / pk)


@njit(cache=True)
def projectron_step(t, y, f, kxx, hp, used, slots, V, kinv, d, plus):
    """One instance for one kernel (η = ``hp.eta``; ``plus``: Projectron++); returns ``(mistake
    indicator, used, slot)`` (the slot row t took, -1: none). ``d`` (B) is scratch."""
    coef, entry = slots
    margin = y * f
    loss = 1.0 if margin <= 0.0 else 0.0
    if kxx <= 0.0 or margin >= 1.0 or (margin > 0.0 and not plus):
        return loss, used, -1
    delta, pk = projection(kxx, used, kinv, V, d)
    if margin > 0.0:  # Projectron++'s margin error
        tau = _margin_step(1.0 - margin, delta, pk, hp.eta)
        if tau > 0.0:
            for j in range(used):
                coef[j] += tau * y * d[j]
        return loss, used, -1
    if delta <= hp.eta or used == hp.budget:
        for j in range(used):
            coef[j] += y * d[j]
        return loss, used, -1
    extend_inverse(used, kinv, d, delta)
    place(used, t, y, coef, entry)
    return loss, used + 1, used


@njit(cache=True)
def projectron_mc_step(t, y, r, margin, kxx, hp, used, slots, V, kinv, d, plus):
    """Multi-class: label y, rival r, margin ``f(x, y) − f(x, r)``; returns ``(mistake indicator, used,
    slot)`` as :func:`projectron_step`."""
    coef, entry = slots
    K = hp.n_classes
    loss = 1.0 if margin <= 0.0 else 0.0
    if kxx <= 0.0 or margin >= 1.0 or (margin > 0.0 and not plus):
        return loss, used, -1
    delta, pk = projection(kxx, used, kinv, V, d)
    if margin > 0.0:
        tau = _margin_step(1.0 - margin, delta, 2.0 * pk, hp.eta)
    elif delta <= hp.eta or used == hp.budget:
        tau = 1.0
    else:
        extend_inverse(used, kinv, d, delta)
        place_pair(used, t, K, 1.0, y, r, coef, entry)
        return loss, used + 1, used
    if tau > 0.0:
        for j in range(used):
            coef[j * K + y] += tau * d[j]
            coef[j * K + r] -= tau * d[j]
    return loss, used, -1
