"""Sparse Passive-Aggressive learner (Lu, Hoi et al., Budget OMKC, Algorithm 1 / Proposition 1).

If the kernel is selected for update (c = 1), an instance with hinge loss ℓ becomes a support
vector with probability ρ = min(α, ℓ)/β, and then gets ``τ = min(η / ρ, ℓ / κ(x, x))``: an
unbiased estimate of the PA update with at most α/β of the instances kept in expectation. The Hedge
weights' discount is :func:`omkl_dist.combiners.hedge_loss.hedge_loss`.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def hinge(y, f):
    v = 1.0 - y * f
    return v if v > 0.0 else 0.0


@njit(cache=True, inline="always")
def spa_coef(y, loss, kxx, selected, u_z, alpha, beta, eta):
    """Coefficient of x_t (τ y), 0 when not selected, no loss, not sampled or κ(x, x) = 0."""
    if not selected or loss <= 0.0 or kxx <= 0.0:  # κ(x,x)=0: x is the zero function, nothing to add
        return 0.0
    rho = min(alpha, loss) / beta
    if not u_z < rho:
        return 0.0
    return min(eta / rho, loss / kxx) * y
