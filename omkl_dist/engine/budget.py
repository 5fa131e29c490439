"""BudgetEngine: the budget baselines of the Budget-OMKL paper (RBP, Forgetron, BOGD, BPAS) as per-kernel
learners with budget B each, combined by Hedge, run block-exactly
(docs/design.md, "Block-exact online learning") and shardable by kernel.

Two halves, called separately by the distributed engine:

* :meth:`BudgetEngine.kernel_step` runs only the per-kernel learners of this engine's kernels over rows
  (global index of the first row ``g``): each kernel k has its own fixed-capacity buffer (rows B × d,
  coefficients, instance indices, a scale factor), independent of every other kernel. It returns the
  decision values before each update, ``F`` (n, m_own), and the per-kernel quantity the combiner
  discounts by, ``loss`` (n, m_own).
* :func:`combine_step` replays the Hedge combiner over those rows (numba, updates the weights in place):
  prediction ``sign(Σ_k θ_k f_k(x))`` with θ = w / Σ w, then ``w_k ← w_k γ^{loss_k}`` with weights kept
  as log-weights, ``w = exp(logw − max logw)`` (:func:`omkl_dist.combiners.hedge.hedge_loss_update`).

Multi-class (``n_classes`` K > 1, labels 0..K−1): every learner follows its multi-class rule (each
learner's module says which and from where); a support vector holds K coefficients, ``F`` has a
column per (kernel, class), the per-kernel loss is the mistake indicator ``f_k(x, y) <= f_k(x, r)``
(r the highest-scoring other class) or the multi-class hinge loss ``[1 − f_k(x, y) + f_k(x, r)]_+``, and
:func:`combine_step_mc` predicts the class with the highest ``Σ_k θ_k f_k(x, c)``.

The combination is not in the paper, which only says the baselines are "plugged into the same
multi-kernel framework"; we use the deterministic update (every kernel's learner sees every
instance) and the deterministic Hedge combination, with the loss each learner's family suggests:
the mistake indicator ``z_k = [y f_k(x) <= 0]`` for the Perceptron-type RBP and Forgetron (like
OMKC(D,D), Hoi et al. 2013), the hinge loss for the gradient/PA-type BOGD and BPAS (like SPA).

Block exactness: per block of rows and kernel, one matrix product of the rows with the kernel's
buffer (BLAS when the data are integers and every partial sum is exact, otherwise dot products
summed in feature order) gives the kernel values against the buffer as it was at the block start;
rows that become support vectors inside the block get their column of the block's own Gram matrix
(from one block dot matrix); removed slots are zeroed and shrinking is a scale factor (see
:mod:`omkl_dist.learners._budget`). Results equal instance-by-instance processing (same mistakes,
decision values to rounding) for any block size and any chunking of the input. Randomness (RBP's
and BOGD's removals) is one uniform per instance and kernel from
:func:`omkl_dist.randomness.uniforms`, keyed by (seed, global block, kernel id), so a shard owning
some kernel ids regenerates exactly its numbers.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..combiners.hedge import hedge_loss_update, weighted_vote
from ..kernels import make_pool
from ..learners._budget import (
    BOGD,
    FORGETRON,
    LEARNER_CODES,
    MSUM_SIZE,
    RBP,
    fixed_dots,
    gram_column,
    kernel_values,
    msum_add,
    msum_value,
    row_sq,
    self_kernel,
)
from ..learners.bogd import bogd_mc_step, bogd_step
from ..learners.bpas import bpas_mc_step, bpas_step
from ..learners.forgetron import forgetron_mc_step, forgetron_step
from ..learners.rbp import rbp_mc_step, rbp_step
from ..randomness import uniforms
from ..scoring.pool import blas_dots_exact, integral_bound, writable
from ..scoring.program import CHI2, LAPLACE, KernelProgram, compile_program
from ..scoring.rows import dense_rows
from ._multiclass import rival, weighted_class_scores
from .local import Rounds, segmenting

__all__ = ["BudgetEngine", "combine", "combine_step", "combine_step_mc", "LEARNERS"]

LEARNERS = tuple(LEARNER_CODES)

# Rows processed together: bounds the per-segment dot products with the buffers (m × S × B doubles)
# and the in-block Gram (S × S per kernel). Segments never cross a global block boundary, and any
# segmentation gives the same result.
MAX_SEGMENT = 512
# Decision values: a rounded sum of n terms is within n·1.1e-16·Σ|terms| of the exact sum, so when
# |sum| > 1e-3 Σ|terms| it is accurate to ~1e-10 relative (n <= 1000) and its sign certain; below
# that (duplicated support vectors with opposite coefficients cancelling) the terms are summed
# exactly, so the sign and value are the true ones, not rounding noise.
_CANCELLED = 1e-3
# a kernel's scale factor is folded into its coefficients when it leaves [1e-100, 1e100]
_SCALE_LO, _SCALE_HI = 1e-100, 1e100


@njit(cache=True, inline="always")
def _class_score(c, K, n_used, entry, ck, a_blk, Krow, Gc, t, parts):
    """Σ_j a_j[c] κ(x_j, x_t) over the slots (unscaled), summed exactly when the terms cancel."""
    fb = 0.0
    fabs = 0.0
    for j in range(n_used):
        r = entry[j]
        v = ck[j * K + c] * Krow[j] if r < 0 else a_blk[r * K + c] * Gc[r, t]
        fb += v
        fabs += abs(v)
    if abs(fb) <= _CANCELLED * fabs:  # heavy cancellation: sum exactly (see msum_add)
        n_parts = 0
        for j in range(n_used):
            r = entry[j]
            n_parts = msum_add(parts, n_parts, ck[j * K + c] * Krow[j] if r < 0 else a_blk[r * K + c] * Gc[r, t])
        fb = msum_value(parts, n_parts)
    return fb


@njit(cache=True)
def _kernel_block(learner, k, y, Xb, xsq, D, XXt, U, kind, param, norm, budget, eta, lam, g, K,
                  sv_X, sv_sq, coef, sv_index, sv_kxx, acc, acc_lo, scale, used, head, Q, M, kmistakes, F, L):
    """Kernel k's learner over the rows of one segment; updates its buffer and writes its scores
    ``F[:, k K : (k + 1) K]`` and ``L[:, k]``. ``K`` = 1: the binary learners (labels ±1, one
    coefficient per slot); K > 1: their multi-class rules (labels 0..K−1, K coefficients per slot)."""
    n = y.shape[0]
    used0 = used[k]
    s, n_used, hd, q, mk = scale[k], used[k], head[k], Q[k], M[k]
    width = max(n, used0, 1)
    Krow = np.empty(max(used0, 1))
    work = np.empty(width)
    scratch = np.empty(width)
    Gc = np.empty((n, n))
    a_blk = np.zeros(n * K)
    kxx_blk = np.zeros(n)
    acc_blk = np.zeros(n)
    acc_lo_blk = np.zeros(n)
    entry = np.full(budget, -1, dtype=np.int64)
    parts = np.empty(MSUM_SIZE)
    fc = np.empty(K)  # one row's class scores
    row = np.empty(K)  # BPAS's scratch
    ck, acck, acclk, kxxk, SV, svsq = coef[k], acc[k], acc_lo[k], sv_kxx[k], sv_X[k], sv_sq[k]
    for t in range(n):
        kernel_values(kind, param, norm, D[t, k], xsq[t], t, Xb, svsq, 0, SV, used0, Krow, work, scratch)
        for c in range(K):
            fc[c] = s * _class_score(c, K, n_used, entry, ck, a_blk, Krow, Gc, t, parts)
            F[t, k * K + c] = fc[c]
        kxx = self_kernel(kind, param, norm, xsq[t])
        if K == 1:
            yt = y[t]
            f = fc[0]
            if yt * f <= 0.0:
                kmistakes[k] += 1
            if learner == RBP:
                loss, n_used, new = rbp_step(t, yt, f, kxx, U[t, k], budget, n_used, ck, a_blk, entry)
            elif learner == FORGETRON:
                loss, n_used, hd, s, q, mk, new = forgetron_step(t, yt, f, kxx, budget, n_used, hd, s, q, mk, ck,
                                                                 a_blk, entry, acck, acclk, acc_blk, acc_lo_blk, Krow,
                                                                 Gc)
            elif learner == BOGD:
                loss, n_used, s, new = bogd_step(t, yt, f, kxx, U[t, k], budget, n_used, s, eta, lam, ck, a_blk,
                                                 entry)
            else:
                loss, n_used, new = bpas_step(t, yt, f, kxx, budget, n_used, eta, ck, a_blk, entry, kxxk, kxx_blk,
                                              Krow, Gc)
        else:
            yt = int(y[t])
            r = rival(fc, yt)
            margin = fc[yt] - fc[r]
            if margin <= 0.0:
                kmistakes[k] += 1
            if learner == RBP:
                loss, n_used, new = rbp_mc_step(t, yt, r, margin, kxx, U[t, k], budget, n_used, K, ck, a_blk, entry)
            elif learner == FORGETRON:
                loss, n_used, hd, s, q, mk, new = forgetron_mc_step(t, yt, r, margin, kxx, budget, n_used, hd, s, q,
                                                                    mk, K, ck, a_blk, entry, acck, acclk, acc_blk,
                                                                    acc_lo_blk, Krow, Gc)
            elif learner == BOGD:
                loss, n_used, s, new = bogd_mc_step(t, yt, r, margin, kxx, U[t, k], budget, n_used, s, eta, lam, K,
                                                    ck, a_blk, entry)
            else:
                loss, n_used, new = bpas_mc_step(t, yt, r, margin, kxx, budget, n_used, eta, K, ck, a_blk, entry,
                                                 kxxk, kxx_blk, Krow, Gc, row)
        L[t, k] = loss
        if new:
            kxx_blk[t] = kxx
            gram_column(kind, param, norm, XXt, xsq, Xb, t, Gc, work, scratch)
        if s < _SCALE_LO or s > _SCALE_HI:  # fold the scale into the coefficients (rare)
            for j in range(n_used):
                r = entry[j]
                if r < 0:
                    for c in range(K):
                        ck[j * K + c] *= s
                    acck[j] *= s
                    acclk[j] *= s
                else:
                    for c in range(K):
                        a_blk[r * K + c] *= s
                    acc_blk[r] *= s
                    acc_lo_blk[r] *= s
            s = 1.0
    for j in range(n_used):  # the block rows still holding a slot become buffer rows
        r = entry[j]
        if r >= 0:
            SV[j, :] = Xb[r]
            svsq[j] = xsq[r]
            for c in range(K):
                ck[j * K + c] = a_blk[r * K + c]
            sv_index[k, j] = g + r
            kxxk[j] = kxx_blk[r]
            acck[j] = acc_blk[r]
            acclk[j] = acc_lo_blk[r]
    scale[k], used[k], head[k], Q[k], M[k] = s, n_used, hd, q, mk


@njit(cache=True, parallel=True)
def _budget_block(learner, y, Xb, xsq, D, XXt, U, kinds, param, norm, budget, eta, lam, g, K,
                  sv_X, sv_sq, coef, sv_index, sv_kxx, acc, acc_lo, scale, used, head, Q, M, kmistakes, F, L):
    for k in prange(kinds.shape[0]):
        _kernel_block(learner, k, y, Xb, xsq, D, XXt, U, kinds[k], param[k], norm[k], budget, eta, lam, g, K,
                      sv_X, sv_sq, coef, sv_index, sv_kxx, acc, acc_lo, scale, used, head, Q, M, kmistakes, F, L)


@njit(cache=True, parallel=True)
def _scores(Xb, xsq, D, kinds, param, norm, K, sv_X, sv_sq, coef, scale, used, out):
    """``out[t, k K + c] = f_k(x_t, c)``: the (class) decision values of the current model (no update)."""
    m = kinds.shape[0]
    width = max(D.shape[2], 1)
    for t in prange(Xb.shape[0]):
        vals = np.empty(width)
        work = np.empty(width)
        scratch = np.empty(width)
        parts = np.empty(MSUM_SIZE)
        for k in range(m):
            n = used[k]
            kernel_values(kinds[k], param[k], norm[k], D[t, k], xsq[t], t, Xb, sv_sq[k], 0, sv_X[k], n, vals, work,
                          scratch)
            for c in range(K):
                acc = 0.0
                aabs = 0.0
                for j in range(n):
                    v = coef[k, j * K + c] * vals[j]
                    acc += v
                    aabs += abs(v)
                if abs(acc) <= _CANCELLED * aabs:
                    n_parts = 0
                    for j in range(n):
                        n_parts = msum_add(parts, n_parts, coef[k, j * K + c] * vals[j])
                    acc = msum_value(parts, n_parts)
                out[t, k * K + c] = scale[k] * acc


@njit(cache=True)
def combine_step(y, F, loss, logw, w, log_gamma):
    """Replay the Hedge combiner over rows; updates ``logw`` and ``w`` in place.

    Row t: score ``Σ_k (w_k / Σ w) F[t, k]``, a mistake when ``y_t · score <= 0``, then
    ``logw_k += loss[t, k] · log γ`` and ``w = exp(logw − max logw)``. Returns ``(score, mistakes)``.
    """
    n = F.shape[0]
    score = np.empty(n)
    mistakes = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        s_t = weighted_vote(w, F[t])
        score[t] = s_t
        mistakes[t] = y[t] * s_t <= 0.0
        hedge_loss_update(logw, loss[t], log_gamma, w)
    return score, mistakes


@njit(cache=True)
def combine_step_mc(y, F, loss, logw, w, log_gamma, K):
    """Multi-class :func:`combine_step`: ``F`` (n, m K) class scores, ``y`` class indices. Row t: class
    scores ``Σ_k (w_k / Σ w) F[t, k K + c]``, a mistake when the true class does not score above every
    other (:func:`~._multiclass.rival`), then the Hedge update. Returns ``(scores (n, K), mistakes)``."""
    n = F.shape[0]
    m = F.shape[1] // K
    score = np.empty((n, K))
    mistakes = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        weighted_class_scores(w, F[t].reshape((m, K)), score[t])
        yt = int(y[t])
        mistakes[t] = score[t, yt] <= score[t, rival(score[t], yt)]
        hedge_loss_update(logw, loss[t], log_gamma, w)
    return score, mistakes


def combine(y, F, loss, logw, w, gamma, n_classes):
    """Replay the Hedge combiner over rows (binary :func:`combine_step` or :func:`combine_step_mc`);
    updates ``logw`` and ``w`` in place and returns ``(score, mistakes)``."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    if n_classes == 1:
        return combine_step(y, F, loss, logw, w, np.log(gamma))
    return combine_step_mc(y, np.ascontiguousarray(F), loss, logw, w, np.log(gamma), n_classes)


@njit(cache=True)
def _weights_from_log(logw, w):
    """``logw -= max; w = exp(logw)``: the normalisation :func:`hedge_loss_update` ends with."""
    top = -np.inf
    for k in range(logw.shape[0]):
        if logw[k] > top:
            top = logw[k]
    for k in range(logw.shape[0]):
        logw[k] -= top
        w[k] = np.exp(logw[k])


def _program_from(kinds, param, norm) -> KernelProgram:
    """A program of independently evaluated kernels (no gaussian chains), e.g. a subset of another."""
    kinds = np.asarray(kinds, dtype=np.int64).copy()
    param = np.asarray(param, dtype=np.float64).copy()
    m = len(kinds)
    return KernelProgram(kinds, param, np.full(m, -1, dtype=np.int64), np.arange(m, dtype=np.int64),
                         bool((kinds == LAPLACE).any()), bool((kinds == CHI2).any()),
                         norm=np.asarray(norm, dtype=np.bool_).copy())


def _as_program(program_or_pool) -> KernelProgram:
    if isinstance(program_or_pool, KernelProgram):
        return program_or_pool
    return compile_program(make_pool(program_or_pool))


def _check_fits_in_memory(m: int, budget: int, d: int, n_classes: int = 1) -> None:
    """The support-vector buffers are allocated whole (m kernels x budget slots x (d + K + 7) values):
    refuse a budget that cannot fit before asking for the memory."""
    import psutil

    need = m * budget * (d + n_classes + 7) * 8
    available = psutil.virtual_memory().available
    if need > available // 2:
        raise ValueError(f"budget={budget:,} support vectors for each of {m} kernels on {d} features needs "
                         f"{need / 2**30:,.1f} GiB, more than half of the {available / 2**30:.1f} GiB of memory "
                         "available; a budget above the number of instances is never reached, so use at most that "
                         "many (`omkl run`/`submit` cap it at the stream's length)")


class BudgetEngine:
    """Block engine for the budget baselines: per-kernel learners with budget B each, plus Hedge.

    Parameters
    ----------
    program_or_pool : KernelProgram, KernelPool, pool spec string or list of kernel specs
    n_features : int
    learner : {"rbp", "forgetron", "bogd", "bpas"}
    budget : int
        Support vectors per kernel (B).
    seed : int
        Seed of the per-(seed, block, kernel) uniform streams (RBP, BOGD).
    block_size : int
        Instances per global block of the random streams (results of RBP/BOGD depend on it).
    kernel_ids : array of int, optional
        Global id of each kernel (the random stream it uses); default ``0..m-1``.
    eta : float
        Step size (BOGD) / aggressiveness C (BPAS).
    lam : float
        BOGD's regulariser λ.
    gamma : float
        Hedge discount.
    n_classes : int
        1: the binary learners (labels ±1); K > 1: their multi-class rules over classes 0..K−1 (see the
        learners' modules), K coefficients per support vector.

    Attributes
    ----------
    w, logw : Hedge weights (max 1) and log-weights, per kernel.
    kernel_mistakes : per-kernel mistakes ``y f_k(x) <= 0`` (multi-class: ``f_k(x, y) <= f_k(x, r)``, r the
        rival class).
    n_seen, n_mistakes : instances processed, combined mistakes.
    sv_X, sv_sq, sv_coef, sv_index, sv_kxx, sv_acc, sv_acc_lo : per-kernel buffers (m, B, d) / (m, B·K) /
        (m, B): rows, squared norms, unscaled coefficients, global instance index (-1 = empty), κ(x, x),
        Forgetron's f' accumulators (double-double: high and low parts). The coefficient of slot j of
        kernel k for class c is ``scale[k] * sv_coef[k, j K + c]`` (binary: K = 1).
    scale, n_used, head, forget_Q, forget_M : per kernel.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    >>> e = BudgetEngine("gaussian:0.5,1,2", 3, learner="bpas", budget=20, seed=0, block_size=64)
    >>> out = e.learn(X, y)
    >>> e.n_support().tolist(), bool(out["mistakes"].mean() < 0.4)
    ([20, 20, 20], True)
    """

    SCALARS = ("learner", "budget", "seed", "block_size", "eta", "lam", "gamma", "n_classes", "n_seen", "n_mistakes")
    KERNEL_ARRAYS = ("kernel_ids", "w", "logw", "kernel_mistakes", "sv_X", "sv_sq", "sv_coef", "sv_index", "sv_kxx",
                     "sv_acc", "sv_acc_lo", "scale", "n_used", "head", "forget_Q", "forget_M")

    def __init__(self, program_or_pool, n_features, *, learner, budget, seed, block_size, kernel_ids=None, eta=0.1,
                 lam=0.0, gamma=0.99, n_classes=1):
        if learner not in LEARNER_CODES:
            raise ValueError(f"learner must be one of {list(LEARNER_CODES)}, got {learner!r}")
        if int(budget) < 1:
            raise ValueError(f"budget must be a positive integer, got {budget!r}")
        self.program = _as_program(program_or_pool)
        if self.program.direct:
            raise ValueError("the budget baselines (RBP, Forgetron, BOGD, BPAS) evaluate kernels on every column and "
                             "have no additive chi-square kernel: use a pool without feature groups and achi2, or OKS "
                             "/ OMKC / OM-2 for kernels on feature groups")
        self.learner = str(learner)
        self.budget, self.seed, self.block_size = int(budget), int(seed), int(block_size)
        self.eta, self.lam, self.gamma = float(eta), float(lam), float(gamma)
        self.n_classes = int(n_classes)
        if self.n_classes < 1:
            raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
        m, B, d, K = self.program.m, self.budget, int(n_features), self.n_classes
        _check_fits_in_memory(m, B, d, K)
        self.kernel_ids = np.arange(m, dtype=np.int64) if kernel_ids is None else np.asarray(kernel_ids, dtype=np.int64)
        if self.kernel_ids.shape != (m,):
            raise ValueError(f"kernel_ids must hold one id per kernel ({m}), got shape {self.kernel_ids.shape}")
        self.w = np.ones(m)
        self.logw = np.zeros(m)
        self.kernel_mistakes = np.zeros(m, dtype=np.int64)
        self.sv_X = np.zeros((m, B, d))
        self.sv_sq = np.zeros((m, B))
        self.sv_coef = np.zeros((m, B * K))
        self.sv_index = np.full((m, B), -1, dtype=np.int64)
        self.sv_kxx = np.zeros((m, B))
        self.sv_acc = np.zeros((m, B))
        self.sv_acc_lo = np.zeros((m, B))
        self.scale = np.ones(m)
        self.n_used = np.zeros(m, dtype=np.int64)
        self.head = np.zeros(m, dtype=np.int64)
        self.forget_Q = np.zeros(m)
        self.forget_M = np.zeros(m, dtype=np.int64)
        self.int_bound = 0.0  # max |x| over every row seen if all are integers, else inf
        self.n_seen = 0
        self.n_mistakes = 0

    # ------------------------------------------------------------------ basics
    @property
    def m(self) -> int:
        return self.program.m

    @property
    def n_features(self) -> int:
        return self.sv_X.shape[2]

    def n_support(self) -> np.ndarray:
        """Support vectors per kernel."""
        return self.n_used.copy()

    def support(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """Kernel ``position``'s support vectors in slot order: (global instance indices, coefficients);
        multi-class: coefficients (n_support, K)."""
        c, K = int(self.n_used[position]), self.n_classes
        coef = self.scale[position] * self.sv_coef[position, :c * K]
        return self.sv_index[position, :c].copy(), coef if K == 1 else coef.reshape(c, K)

    # ------------------------------------------------------------------ the two halves
    def kernel_step(self, X: np.ndarray, y: np.ndarray, g: int) -> dict:
        """Run this engine's per-kernel learners over rows X (first row = global instance ``g``).

        Returns ``{"F": (n, m) decision values before each update, "loss": (n, m)}`` where ``loss`` is
        what the combiner discounts by (mistake indicator for RBP/Forgetron, hinge loss for BOGD/BPAS);
        multi-class: ``F`` (n, m K), column ``k K + c`` kernel k's score of class c, labels class indices.
        Advances ``n_seen``; ``g`` must equal it (the rows continue this engine's stream).
        """
        if int(g) != self.n_seen:
            raise ValueError(f"kernel_step: rows start at global instance {g}, but this engine has seen "
                             f"{self.n_seen}; pass the rows that continue its stream")
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        n, m, K = len(y), self.m, self.n_classes
        if X.ndim != 2 or X.shape != (n, self.n_features):
            raise ValueError(f"kernel_step: X must be ({n}, {self.n_features}), got {X.shape}")
        F, L = np.empty((n, m * K)), np.empty((n, m))
        code = LEARNER_CODES[self.learner]
        pos = 0
        while pos < n:
            gs = self.n_seen
            end = min(n, pos + self.block_size - gs % self.block_size, pos + MAX_SEGMENT)
            Xs, ys = X[pos:end], y[pos:end]
            ns = end - pos
            self.int_bound = max(self.int_bound, integral_bound(Xs))
            exact_blas = blas_dots_exact(self.int_bound, self.int_bound, Xs.shape[1])
            xsq = row_sq(Xs)
            D, XXt = self._dots(Xs, exact_blas)
            if code in (RBP, BOGD):
                U = uniforms(self.seed, gs, gs + ns, self.kernel_ids, self.block_size)
            else:
                U = np.zeros((ns, m))
            Fs, Ls = np.empty((ns, m * K)), np.empty((ns, m))
            _budget_block(code, ys, Xs, xsq, D, XXt, U, self.program.kinds, self.program.param, self.program.norm,
                          self.budget,
                          self.eta, self.lam, gs, K, self.sv_X, self.sv_sq, self.sv_coef, self.sv_index, self.sv_kxx,
                          self.sv_acc, self.sv_acc_lo, self.scale, self.n_used, self.head, self.forget_Q, self.forget_M,
                          self.kernel_mistakes, Fs, Ls)
            F[pos:end], L[pos:end] = Fs, Ls
            self.n_seen += ns
            pos = end
        return {"F": F, "loss": L}

    def _dots(self, Xs, exact_blas):
        """Dot products of the rows with every kernel's buffer, ``D[t, k, j]`` (n, m, max used), and
        among the rows (n, n)."""
        D, _ = self._dots_only(Xs, exact_blas)
        if exact_blas:  # integers: every partial sum exact, BLAS gives the exact value in any order
            return D, Xs @ Xs.T
        n = len(Xs)
        XXt = np.empty((n, 1, n))
        fixed_dots(Xs, np.ascontiguousarray(Xs.T)[None], np.array([n], dtype=np.int64), XXt)
        return D, np.ascontiguousarray(XXt[:, 0])

    rows = staticmethod(dense_rows)  # support vectors are kept dense: sparse rows are densified

    def learn(self, X: np.ndarray, y: np.ndarray, *, keep_scores: bool = False) -> dict:
        """Predict-then-update over rows of X: :meth:`kernel_step` then :func:`combine`.

        Returns ``mistakes`` (bool per row), ``score`` (combined score; multi-class (n, K) class scores)
        and, with ``keep_scores``, ``F`` (per-kernel decision values before each update), as
        :meth:`LocalEngine.learn`.
        """
        step = self.kernel_step(X, y, self.n_seen)
        score, mistakes = combine(y, step["F"], step["loss"], self.logw, self.w, self.gamma, self.n_classes)
        self.n_mistakes += int(mistakes.sum())
        out = {"mistakes": mistakes, "score": score}
        if keep_scores:
            out["F"] = step["F"]
        return out

    def kernel_scores(self, X: np.ndarray, chunk: int = 1024) -> np.ndarray:
        """Per-kernel decision values f_k(x) of the current model, (n, m); multi-class (n, m, K)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        K = self.n_classes
        out = np.empty((len(X), self.m * K))
        for lo in range(0, len(X), chunk):
            Xs = X[lo: lo + chunk]
            exact = blas_dots_exact(max(integral_bound(Xs), self.int_bound), self.int_bound, Xs.shape[1])
            D, _ = self._dots_only(Xs, exact)
            part = np.empty((len(Xs), self.m * K))
            _scores(Xs, row_sq(Xs), D, self.program.kinds, self.program.param, self.program.norm, K, self.sv_X,
                    self.sv_sq,
                    self.sv_coef, self.scale, self.n_used, part)
            out[lo: lo + len(Xs)] = part
        return out if K == 1 else out.reshape(len(X), self.m, K)

    def _dots_only(self, Xs, exact_blas):
        m, n, d = self.m, len(Xs), self.n_features
        cmax = int(self.n_used.max()) if m else 0
        if not cmax:
            return np.empty((n, m, 0)), None
        if exact_blas:  # one product with every buffer stacked (integers: exact whatever the shape)
            S = self.sv_X[:, :cmax].reshape(m * cmax, d)
            return (Xs @ S.T).reshape(n, m, cmax), None
        D = np.empty((n, m, cmax))
        fixed_dots(Xs, np.ascontiguousarray(self.sv_X[:, :cmax].transpose(0, 2, 1)), self.n_used, D)
        return D, None

    # ------------------------------------------------------------------ distribution (engine.protocol)
    COMBINER_ARRAYS = ("w", "logw", "kernel_ids")  # the shards count each kernel's mistakes themselves

    @staticmethod
    def rounds(scalars: dict, program) -> Rounds:
        """A round is one block (in segments of at most ``MAX_SEGMENT`` rows)."""
        return segmenting(None, program, int(scalars["block_size"]))

    @staticmethod
    def splits_rows(scalars: dict) -> bool:
        """Always by kernels: a kernel's buffer and learner are independent of the others'."""
        return False

    def shard_part(self, positions) -> "BudgetEngine":
        """A shard keeps only its kernels' buffers (:meth:`subset`)."""
        return self.subset(positions)

    def kernel_round(self, X, y, w, act) -> dict:
        """Learn this part's kernels over the round (:meth:`kernel_step`; the combiner's weights
        ``w`` are the coordinator's business, ``act`` is every kernel of the part)."""
        return self.kernel_step(X, y, self.n_seen)

    def model_part(self) -> "BudgetEngine":
        """This part's kernels, merged by :meth:`gather`."""
        return self

    @staticmethod
    def replay_round(combiner: dict, scalars: dict, y, parts, outs, g):
        """:func:`combine` over the shards' class scores and losses (kernel k's K columns at
        ``k K .. k K + K − 1``); nothing for the shards to apply."""
        n, m, K = len(y), len(combiner["w"]), int(scalars.get("n_classes", 1))
        F, loss = np.empty((n, m * K)), np.empty((n, m))
        for part, out in zip(parts, outs):
            F[:, (part[:, None] * K + np.arange(K)).ravel()] = out["F"]
            loss[:, part] = out["loss"]
        _, mistakes = combine(y, F, loss, combiner["logw"], combiner["w"], float(scalars["gamma"]), K)
        return mistakes, None

    @classmethod
    def gather(cls, combiner: dict, scalars: dict, part_of, n_shards: int):
        """The shards' kernels merged, with the coordinator's Hedge weights and counters."""
        merged = cls.merge([part_of(i) for i in range(n_shards)], logw=combiner["logw"], w=combiner["w"],
                           n_mistakes=scalars["n_mistakes"])
        return merged.state()

    # ------------------------------------------------------------------ state, shards
    def state(self) -> tuple[dict, dict]:
        """Full learning state as (numeric arrays, JSON-able scalars)."""
        arrays = {name: np.array(getattr(self, name), copy=True) for name in self.KERNEL_ARRAYS}
        arrays["int_bound"] = np.array([self.int_bound])
        scalars = {name: getattr(self, name) for name in self.SCALARS}
        scalars["engine"] = "budget"
        return arrays, scalars

    def __setstate__(self, state):
        self.__dict__.update(writable(state))  # (unpickled from a read-only memory map: goes on learning)

    @classmethod
    def from_state(cls, program, arrays: dict, scalars: dict) -> "BudgetEngine":
        """Rebuild an engine that continues exactly where :meth:`state` was taken."""
        sv_X = np.asarray(arrays["sv_X"], dtype=np.float64)
        program = _as_program(program)
        if sv_X.shape[0] != program.m:
            raise ValueError(f"state has {sv_X.shape[0]} kernels, the program {program.m}")
        engine = cls(program, sv_X.shape[2], learner=scalars["learner"], budget=scalars["budget"],
                     seed=scalars["seed"], block_size=scalars["block_size"], kernel_ids=arrays["kernel_ids"],
                     eta=scalars["eta"], lam=scalars["lam"], gamma=scalars["gamma"],
                     n_classes=scalars.get("n_classes", 1))  # (models saved before multi-class: binary)
        for name in cls.KERNEL_ARRAYS:
            current = getattr(engine, name)
            value = np.array(arrays[name], dtype=current.dtype)
            if value.shape != current.shape:
                raise ValueError(f"state array {name!r} has shape {value.shape}, expected {current.shape}")
            setattr(engine, name, np.ascontiguousarray(value))
        engine.int_bound = float(np.asarray(arrays["int_bound"]).reshape(-1)[0])
        engine.n_seen, engine.n_mistakes = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        return engine

    def subset(self, positions) -> "BudgetEngine":
        """An independent engine holding copies of the given kernels' state (positions into this engine's
        kernels), e.g. one shard of a kernel-sharded run; its ``kernel_step`` gives exactly the columns
        the whole engine would. Combiner state (``w``, ``logw``) is copied but belongs to the coordinator."""
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        if len(pos) == 0 or len(np.unique(pos)) != len(pos) or pos.min() < 0 or pos.max() >= self.m:
            raise ValueError(f"positions must be distinct kernel positions in [0, {self.m}), got {pos.tolist()}")
        part = BudgetEngine(_program_from(self.program.kinds[pos], self.program.param[pos], self.program.norm[pos]),
                            self.n_features,
                            learner=self.learner, budget=self.budget, seed=self.seed, block_size=self.block_size,
                            kernel_ids=self.kernel_ids[pos], eta=self.eta, lam=self.lam, gamma=self.gamma,
                            n_classes=self.n_classes)
        for name in self.KERNEL_ARRAYS:
            setattr(part, name, np.ascontiguousarray(getattr(self, name)[pos]))
        part.int_bound, part.n_seen, part.n_mistakes = self.int_bound, self.n_seen, self.n_mistakes
        return part

    @classmethod
    def merge(cls, parts, *, logw=None, w=None, n_mistakes=None) -> "BudgetEngine":
        """Join shard engines (disjoint kernel ids, same stream position) into one, kernels sorted by id.

        ``logw``/``w``/``n_mistakes``: the coordinator's combiner state, in the merged (kernel-id) order;
        by default the parts' own arrays are joined (``w`` is then recomputed from ``logw``).
        """
        parts = list(parts)
        if not parts:
            raise ValueError("merge needs at least one part")
        first = parts[0]
        for p in parts[1:]:
            for name in ("learner", "budget", "seed", "block_size", "eta", "lam", "gamma", "n_classes", "n_seen",
                         "n_features"):
                if getattr(p, name) != getattr(first, name):
                    raise ValueError(f"cannot merge engines with different {name}: {getattr(first, name)!r} vs "
                                     f"{getattr(p, name)!r}")
        ids = np.concatenate([p.kernel_ids for p in parts])
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"parts share kernel ids: {sorted(ids.tolist())}")
        order = np.argsort(ids, kind="stable")
        kinds = np.concatenate([p.program.kinds for p in parts])[order]
        param = np.concatenate([p.program.param for p in parts])[order]
        norm = np.concatenate([p.program.norm for p in parts])[order]
        out = cls(_program_from(kinds, param, norm), first.n_features, learner=first.learner, budget=first.budget,
                  seed=first.seed, block_size=first.block_size, kernel_ids=ids[order], eta=first.eta, lam=first.lam,
                  gamma=first.gamma, n_classes=first.n_classes)
        for name in cls.KERNEL_ARRAYS:
            setattr(out, name, np.ascontiguousarray(np.concatenate([getattr(p, name) for p in parts])[order]))
        if logw is not None:
            out.logw = np.array(logw, dtype=np.float64)
            if w is None:
                out.w = np.empty_like(out.logw)
                _weights_from_log(out.logw, out.w)
        elif w is None:
            _weights_from_log(out.logw, out.w)
        if w is not None:
            out.w = np.array(w, dtype=np.float64)
        if out.logw.shape != (out.m,) or out.w.shape != (out.m,):
            raise ValueError(f"logw and w must hold one value per kernel ({out.m})")
        out.int_bound = max(p.int_bound for p in parts)
        out.n_seen = first.n_seen
        out.n_mistakes = int(first.n_mistakes if n_mistakes is None else n_mistakes)
        return out
