"""Online gradient descent on explicit kernel features, one learner per kernel: the update of FOGD
(random Fourier features) and of NOGD after its Nyström phase (Lu, Hoi, Wang, Zhao & Liu, "Large
Scale Online Kernel Learning", JMLR 17(47), 2016, Algorithms 1 and 2).

Kernel k's model is a weight vector ``w_k`` over its features ``z_k(x)`` (P of them): the score is
``f_k(x) = w_k · z_k(x)``, summed in feature order, and on a positive hinge loss ``y f_k(x) < 1`` the
gradient step ``w_k ← w_k + η y z_k(x)``. Multi-class (K classes, a weight vector per class): the
multi-class hinge loss of Crammer & Singer on the rival r (highest-scoring other class),
``ℓ = [1 − f_k(x, y) + f_k(x, r)]_+``; on ``ℓ > 0`` the step ``+η z`` on class y, ``−η z`` on r.

What each kernel hands the Hedge combiner per row: its score(s) ``F`` before the update and the loss
that discounts its weight, the mistake indicator ``y f_k(x) <= 0`` (``f_k(x, y) <= f_k(x, r)``) or
the hinge loss (``hedge_hinge``). The kernels learn apart (the combiner is replayed afterwards,
:func:`omkl_dist.combiners.hedge_loss.combine`), so the loop runs kernels in parallel, rows in order.
"""

from __future__ import annotations

from numba import njit, prange

from ..combiners.votes import rival


@njit(cache=True, nogil=True, inline="always")
def _score(W, k, off, Z, t, P):
    """``Σ_i W[k, off + i] Z[t, k, i]`` in feature order (the naive reference's ``cumsum``)."""
    s = 0.0
    for i in range(P):
        s += W[k, off + i] * Z[t, k, i]
    return s


@njit(cache=True, nogil=True, inline="always")
def _step(W, k, off, Z, t, P, step):
    for i in range(P):
        W[k, off + i] += step * Z[t, k, i]


@njit(cache=True, nogil=True)
def _binary_rows(Z, y, W, k, eta, hedge_hinge, F, L, t0, t1):
    """Kernel k over rows ``t0:t1`` of the binary model; returns its mistakes."""
    P = Z.shape[2]
    errs = 0
    for t in range(t0, t1):
        f = _score(W, k, 0, Z, t, P)
        F[t, k] = f
        margin = y[t] * f
        if margin <= 0.0:
            errs += 1
        if hedge_hinge:
            L[t, k] = max(0.0, 1.0 - margin)
        else:
            L[t, k] = 1.0 if margin <= 0.0 else 0.0
        if margin < 1.0:
            _step(W, k, 0, Z, t, P, eta * y[t])
    return errs


@njit(cache=True, nogil=True)
def _multiclass_rows(Z, y, W, k, eta, hedge_hinge, n_classes, F, L, t0, t1):
    """Kernel k over rows ``t0:t1`` of the multi-class model (F's columns ``k K .. k K + K − 1``)."""
    P = Z.shape[2]
    K = n_classes
    errs = 0
    for t in range(t0, t1):
        for c in range(K):
            F[t, k * K + c] = _score(W, k, c * P, Z, t, P)
        yt = int(y[t])
        r = rival(F[t, k * K : k * K + K], yt)
        margin = F[t, k * K + yt] - F[t, k * K + r]
        if margin <= 0.0:
            errs += 1
        if hedge_hinge:
            L[t, k] = max(0.0, 1.0 - margin)
        else:
            L[t, k] = 1.0 if margin <= 0.0 else 0.0
        if margin < 1.0:
            _step(W, k, yt * P, Z, t, P, eta)
            _step(W, k, r * P, Z, t, P, -eta)
    return errs


@njit(cache=True, parallel=True)
def _ogd_rows(Z, y, W, eta, hedge_hinge, n_classes, active, F, L, kernel_mistakes):
    """Every kernel k with ``active[k]`` over all rows of ``Z`` (n, m, P): ``F`` (n, m K) scores
    before each update, ``L`` (n, m) the combiner's losses; ``W`` (m, K P) and
    ``kernel_mistakes`` (m) updated in place. Rows are the stream's, in order."""
    n, m = Z.shape[0], Z.shape[1]
    for k in prange(m):
        if not active[k]:
            continue
        if n_classes == 1:
            kernel_mistakes[k] += _binary_rows(Z, y, W, k, eta, hedge_hinge, F, L, 0, n)
        else:
            kernel_mistakes[k] += _multiclass_rows(Z, y, W, k, eta, hedge_hinge, n_classes, F, L, 0, n)


@njit(cache=True, parallel=True)
def _feature_scores(Z, W, n_classes, out):
    """``out[t, k K + c] = w_{k,c} · z_k(x_t)`` for every row and kernel (no update)."""
    n, m, P = Z.shape
    for k in prange(m):
        for t in range(n):
            for c in range(n_classes):
                out[t, k * n_classes + c] = _score(W, k, c * P, Z, t, P)
