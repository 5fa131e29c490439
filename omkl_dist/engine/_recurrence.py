"""The per-instance recurrences inside one block (docs/design.md, "Block-exact online learning"):
Perceptron+Hedge (OMKC and its baselines) and SPA+Hedge (budget OMKC).

Scores against the pool as it was at the block start come in as ``F_old``; the contribution of
instances added earlier in the same block is added here from the block's own kernel matrix ``G``
(``G[k, t, s] = κ_k(x_t, x_s)``, s < t), so the result is what instance-by-instance processing gives.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numba import njit

from ..combiners.codes import discounts_weights
from ..combiners.dispatch import combined_score
from ..combiners.hedge import hedge_update
from ..combiners.hedge_loss import hedge_loss, hedge_loss_step, weighted_vote
from ..learners.pa import pa_step
from ..learners.perceptron import perceptron_coef, perceptron_mistake
from ..learners.spa import hinge, spa_coef
from ..scoring.gram import gram_column
from ..scoring.rows import transposed
from ._multiclass import spa_mc_rows
from .records import HedgeState, SPAOutputs, SPAParams, SPARows


@njit(cache=True, nogil=True)
def scores_at(t, F_old, G, coef, added, n_added, act, f):
    """f_k(x_t): the pool part from the block start plus the rows added earlier in this block,
    for the kernels ``act`` (all of them locally; a shard's own on a worker)."""
    for k in range(f.shape[0]):
        f[k] = F_old[t, k]
    for j in range(n_added):
        s = added[j]
        for i in range(act.shape[0]):
            k = act[i]
            f[k] += coef[s, k] * G[k, t, s]


@njit(cache=True, nogil=True)
def _omkc_row(t, yt, f, kxx, U_t, state, params, on, z, penalise, F, score, mistakes, coef):
    """Row ``t`` of the OMKC family's recurrence given its per-kernel scores ``f`` (and, for PA-I
    components, κ(x_t, x_t) per kernel in ``kxx[:, t]``): the combined prediction, the coefficients,
    the weights' update; returns whether some kernel kept the row."""
    rule, t0, block_size, block_sync, beta, delta, pa, pa_c = params
    w, wsync, kmistakes = state.w, state.wsync, state.kmistakes
    m = f.shape[0]
    if (t0 + t) % block_size == 0:
        for k in range(w.shape[0]):  # (an array slice assignment compiles numba's shape-error text: ~2 s)
            wsync[k] = w[k]
    for k in range(m):
        F[t, k] = f[k]
        z[k] = perceptron_mistake(yt, f[k])
    s_t = combined_score(rule, yt, f, z, w, U_t, wsync if block_sync else w, delta, kmistakes, penalise)
    score[t] = s_t
    mistakes[t] = yt * s_t <= 0.0
    any_coef = False
    for k in range(m):
        if z[k]:
            kmistakes[k] += 1
        if pa:
            c = yt * pa_step(hinge(yt, f[k]), kxx[k, t], penalise[k] and on[k], pa_c, 1)
        else:
            c = perceptron_coef(yt, z[k], penalise[k]) if on[k] else 0.0
        coef[t, k] = c
        penalise[k] = z[k] and c != 0.0  # Hedge's discount: the kernels that erred and learnt
        any_coef = any_coef or c != 0.0
    if discounts_weights(rule):
        hedge_update(w, penalise, beta)
    return any_coef


@njit(cache=True, nogil=True)
def _omkc_outputs(n, m):
    """A block's outputs ``(F, score, mistakes, coef)`` and a row's scratch ``(f, z, penalise)``."""
    F = np.empty((n, m))
    score = np.empty(n)
    mistakes = np.zeros(n, dtype=np.bool_)
    coef = np.zeros((n, m))
    return F, score, mistakes, coef, np.empty(m), np.zeros(m, dtype=np.bool_), np.zeros(m, dtype=np.bool_)


@njit(cache=True, nogil=True)
def omkc_block(y, F_old, G, kxx, U, state, params, act):
    """Process rows of one block in order; mutates the weight state (:class:`~.records.HedgeState`:
    ``w``, ``wsync``, ``kmistakes``) under the rule and scalars ``params`` (:class:`~.records.OMKCParams`).

    A selected kernel's learner is the Perceptron (adds ``y`` on a mistake) or, with ``params.pa``,
    PA-I (adds ``τ y`` on a positive hinge loss, :func:`~omkl_dist.learners.pa.pa_step`; ``kxx`` (m, n)
    the rows' κ_k(x, x)); either way Hedge discounts the kernels that erred and learnt (a PA-I learner
    learns on every mistake of a selected kernel but where κ(x, x) = 0, x the zero function).

    Only the kernels ``act`` learn (a shard's kernels; all of them in-process): the others keep
    zero coefficients and their combined score and weights are not meaningful.

    Returns ``(F, score, mistakes, coef)``: per-kernel decision values before the update, the
    combined score, whether the combined prediction erred, and each row's coefficient per kernel.
    """
    n = y.shape[0]
    m = F_old.shape[1]
    F, score, mistakes, coef, f, z, penalise = _omkc_outputs(n, m)
    added = np.empty(n, dtype=np.int64)
    n_added = np.int64(0)  # not a literal 0: scores_at would be compiled for that type too
    on = np.zeros(m, dtype=np.bool_)
    on[act] = True
    for t in range(n):
        scores_at(t, F_old, G, coef, added, n_added, act, f)
        if _omkc_row(t, y[t], f, kxx, U[t], state, params, on, z, penalise, F, score, mistakes, coef):
            added[n_added] = t
            n_added += 1
    return F, score, mistakes, coef


@njit(cache=True, nogil=True)
def _omkc_lazy_rows(a, F_part, rows, fast, state, params, out):
    """Rows ``a : a + len(F_part)`` of :class:`OMKCLazySegment`'s recurrence; mutates the weight
    state (:class:`~.records.HedgeState`) and the segment's outputs and scratch ``out``."""
    y, Xb, XbT, xsq, U = rows
    F, score, mistakes, coef, Fk, col, f, z, penalise, on = out
    n = y.shape[0]
    m = Fk.shape[0]
    no_kxx = np.empty((0, 0))  # (Perceptron components only: see local.omkc_lazy_gram)
    for t in range(a, a + F_part.shape[0]):
        for k in range(m):
            f[k] = F_part[t - a, k] + Fk[k, t]
        if _omkc_row(t, y[t], f, no_kxx, U[t], state, params, on, z, penalise, F, score, mistakes, coef):
            gram_column(Xb, XbT, xsq, t, col, fast[0], coef[t] != 0.0, fast[1], fast[2])
            for k in range(m):
                c = coef[t, k]
                if c != 0.0:
                    for i in range(t + 1, n):
                        Fk[k, i] += c * col[k, i]


@njit(cache=True, nogil=True)
def _spa_rows(a, F_part, rows, fast, lazy, state, params, out):
    """Rows ``a : a + len(F_part)`` of SPA's recurrence over a segment (see :class:`SPASegment`; the
    records :class:`~.records.SPARows`, :class:`~.records.HedgeState`, :class:`~.records.SPAParams`,
    :class:`~.records.SPAOutputs`); mutates the weight state and the segment's outputs."""
    y, G, Xb, XbT, xsq, kxx, U, on = rows
    logw, w, wsync, kmistakes = state
    t0, block_size, block_sync, log_gamma, delta, alpha, beta, eta, hedge_mistake = params
    Fk, col, F, score, mistakes, coef = out
    n = y.shape[0]
    m = Fk.shape[0]
    f = np.empty(m)
    losses = np.empty(m)
    discounts = np.empty(m)
    for t in range(a, a + F_part.shape[0]):
        if (t0 + t) % block_size == 0:
            for k in range(m):
                wsync[k] = w[k]
        for k in range(m):
            f[k] = F_part[t - a, k] + Fk[k, t]
        yt = y[t]
        s_t = weighted_vote(w, f)
        for k in range(m):
            F[t, k] = f[k]
        score[t] = s_t
        mistakes[t] = yt * s_t <= 0.0
        pw = wsync if block_sync else w
        any_coef = False
        for k in range(m):
            losses[k] = hinge(yt, f[k])
            discounts[k] = hedge_loss(yt, f[k], losses[k], hedge_mistake)
            if yt * f[k] <= 0.0:
                kmistakes[k] += 1
            selected = U[t, k, 0] < (1.0 - delta) * pw[k] + delta
            c = spa_coef(yt, losses[k], kxx[k, t], selected and on[k], U[t, k, 1], alpha, beta, eta)
            coef[t, k] = c
            any_coef = any_coef or c != 0.0
        hedge_loss_step(logw, discounts, log_gamma, w, t == a)  # (w = exp(logw) after row a)
        if any_coef:
            if lazy:
                gram_column(Xb, XbT, xsq, t, col, fast[0], coef[t] != 0.0, fast[1], fast[2])
            for k in range(m):
                c = coef[t, k]
                if c != 0.0:
                    if lazy:
                        for i in range(t + 1, n):
                            Fk[k, i] += c * col[k, i]
                    else:
                        for i in range(t + 1, n):
                            Fk[k, i] += c * G[k, i, t]


class _FedSegment(ABC):
    """A segment's recurrence fed the rows' scores against the pool in row order -- all at once, or
    in parts as they are computed (a distributed round starts its recurrence on the first rows'
    scores while the later rows are still being scored): ``_run(a, F_part)`` learns rows ``a : a +
    len(F_part)``, ``_outputs()`` gives ``(F, score, mistakes, coef)`` (see :func:`omkc_block`)."""

    n: int
    done: int

    def feed(self, F_part) -> None:
        """Run the recurrence over the next ``len(F_part)`` rows, given their scores against the pool."""
        F_part = np.ascontiguousarray(F_part, dtype=np.float64)
        if self.done + len(F_part) > self.n:
            raise ValueError(f"{self.done + len(F_part)} rows fed to a segment of {self.n}")
        self._run(self.done, F_part)
        self.done += len(F_part)

    def result(self):
        """``(F, score, mistakes, coef)`` of the whole segment (see :func:`omkc_block`)."""
        if self.done != self.n:
            raise RuntimeError(f"only {self.done} of the segment's {self.n} rows were fed")
        return self._outputs()

    @abstractmethod
    def _run(self, a, F_part) -> None: ...

    @abstractmethod
    def _outputs(self): ...


class OMKCLazySegment(_FedSegment):
    """:func:`omkc_block` of every kernel of a dot/gaussian program (binary, Perceptron components:
    :func:`~.local.omkc_lazy_gram`) without the block's kernel matrix: when a row becomes a support
    vector its kernel values against the later rows are computed (:func:`gram_column`, as SPA does:
    ``fast`` is the evaluation plan, the rows' scales and the normalised kernels) and added to their
    scores at once. The stochastic rules keep few rows of a block, so this is a small part of the
    block-wide Gram's work; and it is the recurrence's own, the same wherever it runs (in-process,
    or the lead shard of a row-split round, fed the other shards' scores as they arrive: a row's
    score is its score against the pool plus the earlier rows' terms, the same bits however fed)."""

    def __init__(self, y, Xb, xsq, fast, U, state: HedgeState, params):
        n, m = len(y), len(state.w)
        self.rows = (y, Xb, transposed(Xb), xsq, U)
        self.fast, self.state, self.params = fast, state, params
        F, score, mistakes, coef, f, z, penalise = _omkc_outputs(n, m)
        Fk = np.zeros((m, n))  # the block's own terms of f_k(x_t) so far
        self.out = (F, score, mistakes, coef, Fk, np.empty((m, n)), f, z, penalise, np.ones(m, dtype=np.bool_))
        self.n, self.done = n, 0

    def _run(self, a, F_part) -> None:
        _omkc_lazy_rows(a, F_part, self.rows, self.fast, self.state, self.params, self.out)

    def _outputs(self):
        return self.out[:4]


class SPASegment(_FedSegment):
    """SPA (Budget OMKC, Algorithm 1) over one segment, fed the rows' scores against the pool in
    row order -- all at once, or in parts as they are computed (a distributed round starts its
    recurrence on the first rows' scores while the later rows are still being scored). Mutates
    ``logw``, ``w``, ``wsync``, ``kmistakes``.

    ``U[t, k, 0]`` selects kernel k for update (p = (1-δ) w/max w + δ), ``U[t, k, 1]`` samples
    the support vector (ρ = min(α, ℓ)/β). Combined score Σ θ_k f_k with θ = w / Σ w.

    SPA keeps few rows, so with ``fast`` (a dot/gaussian program) a row's kernel values against
    the later rows are computed when it becomes a support vector (:func:`gram_column`) and ``G``
    is not read; otherwise ``G[k, t, s]`` comes complete from :func:`block_gram`. ``kxx`` holds
    κ_k(x_t, x_t).
    ``fast`` carries the evaluation plan of :func:`~omkl_dist.scoring.program.dot_gauss_plan` and the
    rows' normalisation factors and flags (:func:`~omkl_dist.scoring.program.kernel_scales`); only the
    kernels ``act`` learn (see :func:`omkc_block`). ``hedge_mistake``: discount the weights by
    mistakes instead of hinge losses (:func:`~omkl_dist.combiners.hedge_loss.hedge_loss`).

    A row's score is its score against the pool plus the sum of the segment's earlier support
    vectors' terms (added to the later rows at once, in the order rows are added), so it has the
    same bits however the pool scores are fed.
    """

    def __init__(self, y, G, Xb, xsq, kxx, fast, U, state: HedgeState, params: SPAParams, act, n_classes=1):
        n, m, K = len(y), len(state.w), int(n_classes)
        self.lazy = fast[0].dot_idx.shape[0] + fast[0].g_idx.shape[0] > 0
        self.fast, self.state, self.params = fast, state, params
        self.rows = SPARows(y, G, Xb, transposed(Xb) if self.lazy else Xb, xsq, kxx, U, np.isin(np.arange(m), act))
        # multi-class (K > 1): a learner per kernel with class scores (:func:`.._multiclass.spa_mc_rows`)
        self.recurrence = _spa_rows if K == 1 else spa_mc_rows
        self.out = SPAOutputs(
            np.zeros((m, n) if K == 1 else (m, K, n)),  # Fk: the segment's own terms of f_k(x_t) so far
            np.empty((m, n if self.lazy else 0)),  # col: a new support vector's kernel values (lazy)
            np.empty((n, m * K)),
            np.empty(n if K == 1 else (n, K)),
            np.zeros(n, dtype=np.bool_),
            np.zeros((n, m * K)),
        )
        self.n, self.done = n, 0

    def _run(self, a, F_part) -> None:
        self.recurrence(a, F_part, self.rows, self.fast, self.lazy, self.state, self.params, self.out)

    def _outputs(self):
        return self.out.F, self.out.score, self.out.mistakes, self.out.coef
