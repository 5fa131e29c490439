"""BudgetEngine: the budget baselines of the Budget-OMKL paper (RBP, Forgetron, BOGD, BPAS) and the
Projectron / Projectron++ (:mod:`omkl_dist.learners.projectron`) as per-kernel learners with budget B
each, combined by Hedge, run block-exactly
(docs/design.md, "Block-exact online learning") and shardable by kernel.

Two halves, called separately by the distributed engine:

* :meth:`BudgetEngine.kernel_step` runs only the per-kernel learners of this engine's kernels over rows
  (global index of the first row ``g``): each kernel k has its own fixed-capacity buffer (rows B × d,
  coefficients, instance indices, a scale factor), independent of every other kernel. It returns the
  decision values before each update, ``F`` (n, m_own), and the per-kernel quantity the combiner
  discounts by, ``loss`` (n, m_own).
* :func:`~omkl_dist.combiners.hedge_loss.combine_step` replays the Hedge combiner over those rows (numba,
  updates the weights in place): prediction ``sign(Σ_k θ_k f_k(x))`` with θ = w / Σ w, then
  ``w_k ← w_k γ^{loss_k}`` with weights kept as log-weights, ``w = exp(logw − max logw)``
  (:func:`omkl_dist.combiners.hedge_loss.hedge_loss_step`).

Multi-class (``n_classes`` K > 1, labels 0..K−1): every learner follows its multi-class rule (each
learner's module says which and from where); a support vector holds K coefficients, ``F`` has a
column per (kernel, class), the per-kernel loss is the mistake indicator ``f_k(x, y) <= f_k(x, r)``
(r the highest-scoring other class) or the multi-class hinge loss ``[1 − f_k(x, y) + f_k(x, r)]_+``, and
:func:`~omkl_dist.combiners.hedge_loss.combine_step_mc` predicts the class with the highest
``Σ_k θ_k f_k(x, c)``.

The combination is not in the paper, which only describes them as "multiple kernel classification
algorithms whose component classifiers are updated by budget kernel learning algorithms" (section
4.3); we use the deterministic update (every kernel's learner sees every
instance) and the deterministic Hedge combination, with the loss each learner's family suggests:
the mistake indicator ``z_k = [y f_k(x) <= 0]`` for the Perceptron-type RBP, Forgetron and Projectrons (like
OMKC(D,D), Hoi et al. 2013), the hinge loss for the gradient/PA-type BOGD and BPAS (like SPA).

Block exactness: per segment of rows and kernel, the dot products of the rows with the kernel's buffer
as it was at the segment start (each kernel's learner sums its own, in feature order, inside the one
parallel loop over kernels that runs every segment of a chunk of rows) give one matrix of kernel values;
once a row becomes a support vector, the kernel computes the segment's own Gram values from that row
on (one packed triangle from its dot matrix; the gaussians from squared distances computed once per
segment for all of them); a new support vector overwrites the slot it takes and shrinking is a scale factor
(see :mod:`omkl_dist.learners._budget`).
Results equal instance-by-instance processing (same mistakes,
decision values to rounding) for any block size and any chunking of the input. Randomness (RBP's
and BOGD's removals) is one uniform per instance and kernel from
:func:`omkl_dist.randomness.uniforms`, keyed by (seed, global block, kernel id), so a shard owning
some kernel ids regenerates exactly its numbers.

Stochastic update (``update="S"``, the "_sd" learners of the authors' C++ toolbox): as OMKC (S, D)
(Hoi et al., Algorithm 3), kernel k's learner takes its step on a row only when drawn, with
p_k = (1 − δ) q_k + δ/m, q = w / max w, and Hedge discounts only the drawn kernels; the combination
stays deterministic. The draws use the weights of the block start (:meth:`BudgetEngine.sync_weights`,
OMKC's ``block_sync``; blocks of one row are the sequential algorithm), so within a block every kernel
still learns apart from the others: a shard needs only the coordinator's weights at the block start.
Two uniforms per instance and kernel: the draw, then the removal's (RBP, BOGD).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numba import parallel_chunksize

from ..combiners.hedge_loss import combine, weights_from_log
from ..kernels import make_pool
from ..learners._budget import (
    BOGD,
    LEARNER_CODES,
    PROJECTING,
    RBP,
    fixed_dots,
    nonzeros_of,
    row_bounds,
    row_sq,
    segment_dots,
)
from ..learners.records import BudgetParams
from ..randomness import uniforms
from ..scoring._blas import one_blas_thread
from ..scoring.program import GAUSS, KernelProgram, compile_program, independent_program
from ..scoring.row_threads import over_kernel_pieces
from ..scoring.rows import dense_rows
from ..scoring.support_vectors import blas_dots_exact, integral_bound, writable
from ._budget_loops import budget_block, budget_scores
from .records import BudgetBuffers, BudgetKernels, BudgetRows

if TYPE_CHECKING:
    from ..kernels import KernelPool

__all__ = ["BudgetEngine", "LEARNERS"]

LEARNERS = tuple(LEARNER_CODES)

# Rows processed together: bounds the per-segment dot products with the buffers (m × S × B doubles)
# and the in-block Gram (S × S per kernel). A row that becomes a support vector costs its kernel values
# with the segment's later rows (S/2 on average, against B per row for the buffer): BPA-S adds most
# rows, so long segments double its kernel evaluations, and short ones the per-segment work (64: a
# quarter less CPU than 512 for BPAS on cod-rna; 32, once a segment cost no allocations and no
# transposed buffer: 2-6 % less wall than 64 for all four baselines on cod-rna and a9a, 16 slower).
# Segments never cross a global block boundary, and any segmentation gives the same result.
MAX_SEGMENT = 32
# Rows per call of a kernel's learner (a chunk's segments' shared data: CHUNK_ROWS x (2 MAX_SEGMENT + 2 m)
# doubles), and the chunks cut ahead of the slowest kernel's (kept until every kernel is past them)
CHUNK_ROWS = 4096
CHUNKS_AHEAD = 2


def _program_from(kinds, param, norm) -> KernelProgram:
    """A program of independently evaluated kernels (no gaussian chains), e.g. a subset of another."""
    return independent_program(
        np.asarray(kinds, dtype=np.int64).copy(),
        np.asarray(param, dtype=np.float64).copy(),
        np.asarray(norm, dtype=np.bool_).copy(),
    )


def _as_program(program_or_pool) -> KernelProgram:
    if isinstance(program_or_pool, KernelProgram):
        return program_or_pool
    return compile_program(make_pool(program_or_pool))


def _check_fits_in_memory(m: int, budget: int, d: int, n_classes: int = 1, inverse: bool = False) -> None:
    """The support-vector buffers are allocated whole (m kernels x budget slots x (d + K + 7) values, and
    the Projectron's B x B inverse Gram matrix per kernel): refuse a budget that cannot fit before
    asking for the memory."""
    import psutil

    need = m * budget * (d + n_classes + 7 + (budget if inverse else 0)) * 8
    available = psutil.virtual_memory().available
    if need > available // 2:
        raise ValueError(
            f"budget={budget:,} support vectors for each of {m} kernels on {d} features needs "
            f"{need / 2**30:,.1f} GiB, more than half of the {available / 2**30:.1f} GiB of memory "
            "available; a budget above the number of instances is never reached, so use at most that "
            "many (`omkl run`/`submit` cap it at the stream's length)"
        )


class BudgetEngine:
    """Block engine for the budget baselines: per-kernel learners with budget B each, plus Hedge.

    Parameters
    ----------
    program_or_pool : KernelProgram, KernelPool, pool spec string or list of kernel specs
    n_features : int
    learner : {"rbp", "forgetron", "bogd", "bpas", "projectron", "projectron++"}
    budget : int
        Support vectors per kernel (B).
    seed : int
        Seed of the per-(seed, block, kernel) uniform streams (RBP, BOGD).
    block_size : int
        Instances per global block of the random streams (results of RBP/BOGD depend on it).
    kernel_ids : array of int, optional
        Global id of each kernel (the random stream it uses); default ``0..m-1``.
    eta : float
        Step size (BOGD) / aggressiveness C (BPAS) / projection threshold η (Projectron, Projectron++).
    lam : float
        BOGD's regulariser λ.
    gamma : float
        Hedge discount.
    n_classes : int
        1: the binary learners (labels ±1); K > 1: their multi-class rules over classes 0..K−1 (see the
        learners' modules), K coefficients per support vector.
    update : {"D", "S"}
        Every kernel learns from every row (D), or only the kernels drawn for it (S; module docstring).
    delta : float in (0, 1]
        The stochastic update's smoothing δ.

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
    sv_kinv : (m, B, B) the Projectron's inverse Gram matrix of each kernel's support set, slot order
        ((m, 0, 0) for the other learners).
    p_update, p_block : the stochastic update's draw probabilities per kernel, and the block they are of.

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

    SCALARS = (
        "learner",
        "budget",
        "seed",
        "block_size",
        "eta",
        "lam",
        "gamma",
        "n_classes",
        "update",
        "delta",
        "p_block",
        "n_seen",
        "n_mistakes",
    )
    KERNEL_ARRAYS = (
        "kernel_ids",
        "w",
        "logw",
        "kernel_mistakes",
        "sv_X",
        "sv_sq",
        "sv_coef",
        "sv_index",
        "sv_kxx",
        "sv_acc",
        "sv_acc_lo",
        "scale",
        "n_used",
        "head",
        "forget_Q",
        "forget_M",
        "p_update",
        "sv_kinv",
    )

    def __init__(
        self,
        program_or_pool: KernelProgram | KernelPool | str | list[Any],
        n_features: int,
        *,
        learner: str,
        budget: int,
        seed: int,
        block_size: int,
        kernel_ids: np.ndarray | None = None,
        eta: float = 0.1,
        lam: float = 0.0,
        gamma: float = 0.99,
        n_classes: int = 1,
        update: str = "D",
        delta: float = 0.01,
    ) -> None:

        if learner not in LEARNER_CODES:
            raise ValueError(f"learner must be one of {list(LEARNER_CODES)}, got {learner!r}")
        if int(budget) < 1:
            raise ValueError(f"budget must be a positive integer, got {budget!r}")
        self.program = _as_program(program_or_pool)
        if self.program.direct:
            raise ValueError(
                "the budget baselines (RBP, Forgetron, BOGD, BPAS) evaluate kernels on every column and "
                "have no additive chi-square kernel: use a pool without feature groups and achi2, or OKS "
                "/ OMKC / OM-2 for kernels on feature groups"
            )
        self.learner = str(learner)
        self.budget, self.seed, self.block_size = int(budget), int(seed), int(block_size)
        self.eta, self.lam, self.gamma = float(eta), float(lam), float(gamma)
        self.n_classes = int(n_classes)
        if self.n_classes < 1:
            raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
        if update not in ("D", "S") or not 0.0 < float(delta) <= 1.0:
            raise ValueError(f"update must be 'D' or 'S' and delta in (0, 1], got {update!r} and {delta!r}")
        self.update, self.delta = str(update), float(delta)
        m, B, d, K = self.program.m, self.budget, int(n_features), self.n_classes
        projecting = LEARNER_CODES[self.learner] in PROJECTING
        _check_fits_in_memory(m, B, d, K, projecting)
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
        # the Projectron's inverse Gram matrix of each kernel's support set (empty for the other learners)
        self.sv_kinv = np.zeros((m, B, B) if projecting else (m, 0, 0))
        self.p_update = np.ones(m)  # the stochastic update's draw probabilities in block p_block
        self.p_block = -1
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
        coef = self.scale[position] * self.sv_coef[position, : c * K]
        return self.sv_index[position, :c].copy(), coef if K == 1 else coef.reshape(c, K)

    # ------------------------------------------------------------------ the two halves
    def kernel_step(self, X: np.ndarray, y: np.ndarray, g: int, *, then=None) -> dict:
        """Run this engine's per-kernel learners over rows X (first row = global instance ``g``).

        Returns ``{"F": (n, m) decision values before each update, "loss": (n, m)}`` where ``loss`` is
        what the combiner discounts by (mistake indicator for RBP/Forgetron/the Projectrons, hinge loss for BOGD/BPAS);
        multi-class: ``F`` (n, m K), column ``k K + c`` kernel k's score of class c, labels class indices.
        Advances ``n_seen``; ``g`` must equal it (the rows continue this engine's stream). The stochastic
        update takes the rows of one block at a time, after :meth:`sync_weights`. ``then(lo, hi, F[lo:hi],
        loss[lo:hi])``, if given, is called on this thread for consecutive chunks of the rows, in order,
        as soon as every kernel has learnt them (:meth:`learn` combines them meanwhile).
        """
        if int(g) != self.n_seen:
            raise ValueError(
                f"kernel_step: rows start at global instance {g}, but this engine has seen "
                f"{self.n_seen}; pass the rows that continue its stream"
            )
        if self.update == "S" and (
            self.p_block != g // self.block_size or g % self.block_size + len(y) > self.block_size
        ):
            raise ValueError(
                f"kernel_step: the stochastic update learns one block at a time, its draw probabilities set "
                f"by sync_weights at the block start; got rows {g}..{g + len(y)} (blocks of {self.block_size}) "
                f"with probabilities of block {self.p_block}: call sync_weights(w) first, and split at blocks"
            )
        X = dense_rows(X)
        y = np.ascontiguousarray(y, dtype=np.float64)
        n, m, K = len(y), self.m, self.n_classes
        if X.ndim != 2 or X.shape != (n, self.n_features):
            raise ValueError(f"kernel_step: X must be ({n}, {self.n_features}), got {X.shape}")
        F, L = np.empty((n, m * K)), np.empty((n, m))
        code = LEARNER_CODES[self.learner]
        hp = BudgetParams(code, self.budget, self.eta, self.lam, K)
        kernels, buffers = self._kernels(), self.buffers()
        # every kernel's learner runs over all the segments of a chunk of rows in one call (a parallel
        # loop per segment made both threads wait for each other ~900 times a pass over cod-rna: on a
        # busy machine, a descheduled thread stalled the other each time); a kernel goes on to the next
        # chunk without waiting for the others (their costs differ: their kind, how often each learner
        # updates), and the next chunks' segments are cut on this thread meanwhile.
        if n == 0:
            return {"F": F, "loss": L}
        cuts = [*range(0, n, CHUNK_ROWS), n]
        chunks: dict[int, BudgetRows] = {}
        int_bounds = [self.int_bound]  # the integral bound after each chunk

        def cut(p: int) -> None:
            lo, hi = cuts[p], cuts[p + 1]
            chunks[p], bound = self._segments(X[lo:hi], y[lo:hi], code, self.n_seen + lo, int_bounds[-1])
            int_bounds.append(bound)
            for done in [q for q in chunks if q < p - CHUNKS_AHEAD]:  # every kernel is past them
                del chunks[done]

        def learn(k_lo: int, k_hi: int, p: int) -> None:
            lo, hi = cuts[p], cuts[p + 1]
            budget_block(k_lo, k_hi, chunks[p], kernels, hp, buffers, F[lo:hi], L[lo:hi])

        def learnt(p: int) -> None:
            lo, hi = cuts[p], cuts[p + 1]
            then(lo, hi, F[lo:hi], L[lo:hi])

        with one_blas_thread(), parallel_chunksize(1):
            over_kernel_pieces(learn, m, len(cuts) - 1, cut, CHUNKS_AHEAD, learnt if then is not None else None)
        self.n_seen += n
        self.int_bound = int_bounds[-1]
        return {"F": F, "loss": L}

    def sync_weights(self, w: np.ndarray) -> None:
        """The combiner's weights (every kernel's, in kernel-id order) before row ``n_seen``: at a block
        start they set the stochastic update's draw probabilities for the block,
        p_k = (1 − δ) w_k / max w + δ/m. Nothing to do for the deterministic update or inside a block."""
        block = self.n_seen // self.block_size
        if self.update != "S" or self.p_block == block:
            return
        if self.n_seen % self.block_size:
            raise ValueError(
                f"sync_weights at row {self.n_seen}, inside block {block} whose start it missed "
                f"(draw probabilities of block {self.p_block})"
            )
        w = np.asarray(w, dtype=np.float64)
        q = w / w.max()
        self.p_update = (1.0 - self.delta) * q[self.kernel_ids] + self.delta / len(w)
        self.p_block = block

    def _segments(self, X: np.ndarray, y: np.ndarray, code: int, g: int, bound: float) -> tuple[BudgetRows, float]:
        """A chunk of rows (global index of the first ``g``) cut into segments, each inside one global
        block and at most ``MAX_SEGMENT`` rows, with what the kernels share: squared norms, each
        segment's dots among its rows, the uniforms (RBP, BOGD) and whether every row seen so far is
        integral; and the integral bound after the chunk (``bound``: before it, see ``int_bound``)."""
        n, m = len(y), self.m
        bounds = [0]
        while bounds[-1] < n:
            first = g + bounds[-1]
            bounds.append(min(n, bounds[-1] + self.block_size - first % self.block_size, bounds[-1] + MAX_SEGMENT))
        XXt, SQ, xsq = np.empty((n, MAX_SEGMENT)), np.empty((n, MAX_SEGMENT)), row_sq(X)
        gaussian = bool((self.program.kinds == GAUSS).any())
        # int_bound after each segment (:func:`integral_bound` of the rows so far), from each row's
        # bound at once (a call per segment was a tenth of a pass over a9a)
        row_bound = row_bounds(X)
        seg_bound = np.maximum.reduceat(row_bound, bounds[:-1]) if n else row_bound
        after = np.maximum.accumulate(np.maximum(seg_bound, bound))
        integral = np.isfinite(after)
        nonzeros = nonzeros_of(X if integral.any() else X[:0, :0])
        cuts = np.array(bounds, dtype=np.int64)
        # their dots, and one squared distance per pair for all the gaussians
        segment_dots(X, cuts, integral, gaussian, xsq, XXt, SQ, *nonzeros)
        draws = (code in (RBP, BOGD)) + (self.update == "S")  # (the draw first, then the removal's)
        if draws:
            U = uniforms(self.seed, g, g + n, self.kernel_ids, self.block_size, draws)
        else:
            U = np.zeros((n, m))
        if self.update == "S":
            selected = (U if draws == 1 else U[:, :, 0]) < self.p_update[None, :]
            U = np.ascontiguousarray(U[:, :, 1]) if draws == 2 else np.zeros((n, m))
        else:
            selected = np.ones((n, m), dtype=np.bool_)
        rows = BudgetRows(y, X, xsq, XXt, SQ, U, g, cuts, integral, selected, *nonzeros)
        return rows, float(after[-1]) if n else bound

    def _kernels(self) -> BudgetKernels:
        return BudgetKernels(self.program.kinds, self.program.param, self.program.norm)

    def buffers(self) -> BudgetBuffers:
        """The per-kernel buffers and counters as the compiled loops take them (the arrays themselves)."""
        return BudgetBuffers(
            self.sv_X,
            self.sv_sq,
            self.sv_coef,
            self.sv_index,
            self.sv_kxx,
            self.sv_acc,
            self.sv_acc_lo,
            self.scale,
            self.n_used,
            self.head,
            self.forget_Q,
            self.forget_M,
            self.kernel_mistakes,
            self.sv_kinv,
        )

    rows = staticmethod(dense_rows)  # support vectors are kept dense: sparse rows are densified

    def learn(self, X: np.ndarray, y: np.ndarray, *, keep_scores: bool = False) -> dict:
        """Predict-then-update over rows of X: :meth:`kernel_step` then :func:`~omkl_dist.combiners.hedge_loss.combine`.

        Returns ``mistakes`` (bool per row), ``score`` (combined score; multi-class (n, K) class scores)
        and, with ``keep_scores``, ``F`` (per-kernel decision values before each update), as
        :meth:`LocalEngine.learn`.
        """
        B, g = self.block_size, self.n_seen
        if self.update == "S" and g % B + len(y) > B:  # a block at a time, each drawing with its start's weights
            cuts = [0, *range(B - g % B, len(y), B), len(y)]
            parts = [self.learn(X[a:b], y[a:b], keep_scores=keep_scores) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
            return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
        self.sync_weights(self.w)
        parts = []  # (score, mistakes) of each chunk of rows, combined while the kernels learn the next

        def combine_rows(lo: int, hi: int, F: np.ndarray, L: np.ndarray) -> None:
            parts.append(combine(y[lo:hi], F, L, self.logw, self.w, self.gamma, self.n_classes))

        step = self.kernel_step(X, y, self.n_seen, then=combine_rows)
        if parts:
            score, mistakes = (np.concatenate(part) for part in zip(*parts))
        else:
            score, mistakes = combine(y, step["F"], step["loss"], self.logw, self.w, self.gamma, self.n_classes)
        self.n_mistakes += int(mistakes.sum())
        out = {"mistakes": mistakes, "score": score}
        if keep_scores:
            out["F"] = step["F"]
        return out

    def kernel_scores(self, X: np.ndarray, chunk: int = 1024) -> np.ndarray:
        """Per-kernel decision values f_k(x) of the current model, (n, m); multi-class (n, m, K)."""
        X = dense_rows(X)
        K = self.n_classes
        out = np.empty((len(X), self.m * K))
        with one_blas_thread():
            for lo in range(0, len(X), chunk):
                Xs = X[lo : lo + chunk]
                exact = blas_dots_exact(max(integral_bound(Xs), self.int_bound), self.int_bound, Xs.shape[1])
                D, _ = self._dots_only(Xs, exact)
                part = np.empty((len(Xs), self.m * K))
                budget_scores(Xs, row_sq(Xs), D, self._kernels(), K, self.buffers(), part)
                out[lo : lo + len(Xs)] = part
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
        engine = cls(
            program,
            sv_X.shape[2],
            learner=scalars["learner"],
            budget=scalars["budget"],
            seed=scalars["seed"],
            block_size=scalars["block_size"],
            kernel_ids=arrays["kernel_ids"],
            eta=scalars["eta"],
            lam=scalars["lam"],
            gamma=scalars["gamma"],
            n_classes=scalars.get("n_classes", 1),
            update=scalars["update"],
            delta=scalars["delta"],
        )  # (models saved before multi-class: binary)
        for name in cls.KERNEL_ARRAYS:
            current = getattr(engine, name)
            value = np.array(arrays[name], dtype=current.dtype)
            if value.shape != current.shape:
                raise ValueError(f"state array {name!r} has shape {value.shape}, expected {current.shape}")
            setattr(engine, name, np.ascontiguousarray(value))
        engine.int_bound = float(np.asarray(arrays["int_bound"]).reshape(-1)[0])
        engine.n_seen, engine.n_mistakes = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        engine.p_block = int(scalars["p_block"])
        return engine

    def subset(self, positions) -> "BudgetEngine":
        """An independent engine holding copies of the given kernels' state (positions into this engine's
        kernels), e.g. one shard of a kernel-sharded run; its ``kernel_step`` gives exactly the columns
        the whole engine would. Combiner state (``w``, ``logw``) is copied but belongs to the coordinator."""
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        if len(pos) == 0 or len(np.unique(pos)) != len(pos) or pos.min() < 0 or pos.max() >= self.m:
            raise ValueError(f"positions must be distinct kernel positions in [0, {self.m}), got {pos.tolist()}")
        part = BudgetEngine(
            _program_from(self.program.kinds[pos], self.program.param[pos], self.program.norm[pos]),
            self.n_features,
            learner=self.learner,
            budget=self.budget,
            seed=self.seed,
            block_size=self.block_size,
            kernel_ids=self.kernel_ids[pos],
            eta=self.eta,
            lam=self.lam,
            gamma=self.gamma,
            n_classes=self.n_classes,
            update=self.update,
            delta=self.delta,
        )
        for name in self.KERNEL_ARRAYS:
            setattr(part, name, np.ascontiguousarray(getattr(self, name)[pos]))
        part.int_bound, part.n_seen, part.n_mistakes = self.int_bound, self.n_seen, self.n_mistakes
        part.p_block = self.p_block
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
            for name in (*(s for s in cls.SCALARS if s != "n_mistakes"), "n_features"):
                if getattr(p, name) != getattr(first, name):
                    raise ValueError(
                        f"cannot merge engines with different {name}: {getattr(first, name)!r} vs {getattr(p, name)!r}"
                    )
        ids = np.concatenate([p.kernel_ids for p in parts])
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"parts share kernel ids: {sorted(ids.tolist())}")
        order = np.argsort(ids, kind="stable")
        kinds = np.concatenate([p.program.kinds for p in parts])[order]
        param = np.concatenate([p.program.param for p in parts])[order]
        norm = np.concatenate([p.program.norm for p in parts])[order]
        out = cls(
            _program_from(kinds, param, norm),
            first.n_features,
            learner=first.learner,
            budget=first.budget,
            seed=first.seed,
            block_size=first.block_size,
            kernel_ids=ids[order],
            eta=first.eta,
            lam=first.lam,
            gamma=first.gamma,
            n_classes=first.n_classes,
            update=first.update,
            delta=first.delta,
        )
        out.p_block = first.p_block
        for name in cls.KERNEL_ARRAYS:
            setattr(out, name, np.ascontiguousarray(np.concatenate([getattr(p, name) for p in parts])[order]))
        if logw is not None:
            out.logw = np.array(logw, dtype=np.float64)
            if w is None:
                out.w = np.empty_like(out.logw)
                weights_from_log(out.logw, out.w)
        elif w is None:
            weights_from_log(out.logw, out.w)
        if w is not None:
            out.w = np.array(w, dtype=np.float64)
        if out.logw.shape != (out.m,) or out.w.shape != (out.m,):
            raise ValueError(f"logw and w must hold one value per kernel ({out.m})")
        out.int_bound = max(p.int_bound for p in parts)
        out.n_seen = first.n_seen
        out.n_mistakes = int(first.n_mistakes if n_mistakes is None else n_mistakes)
        return out
