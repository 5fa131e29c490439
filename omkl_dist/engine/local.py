"""LocalEngine: run a Perceptron+Hedge-family model over a stream in blocks, in-process.

The stream is cut into rounds at global instance indices (a round is a block, or whole blocks for
SPA: :func:`segmenting`), so results do not depend on how the caller chunks its ``partial_fit``
calls (scores to rounding; bit for bit when the calls end at round ends): random numbers and
block-sync snapshots are tied to global blocks. Long rounds are processed in segments of at most
``MAX_SEGMENT`` rows (memory), with the same result.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..combiners.codes import OM2, SD, SPA, SS, STOCHASTIC
from ..randomness import uniforms
from ..scoring._blas import fixed_shape_dots
from ..scoring._pairs import overwrite_exact_columns
from ..scoring.gram import block_gram
from ..scoring.program import ACHI2, LINEAR, POLY, DotGaussPlan, check_width, dot_gauss_plan, kernel_scales
from ..scoring.rows import as_csr, as_rows, dense_rows, integral_bound, is_sparse, sparse_dots, sqnorms
from ..scoring.scan import pool_scores
from ..scoring.support_vectors import SupportVectors, blas_dots_exact, pool_rows, row_keys, writable
from ._multiclass import om2_block, omkc_mc_block
from ._recurrence import OMKCLazySegment, SPASegment, omkc_block
from .hyper import RuleHyper, hyper_class, omkc_params, saved_scalars
from .records import HedgeState, SPAParams
from .samples import om2_factors, pool_samples, samples_inside

if TYPE_CHECKING:
    from ..scoring.program import KernelProgram

# the in-block kernel matrix SPASegment does not read when it computes columns itself (lazy_gram)
_NO_GRAM = np.empty((0, 0, 0))
# the self kernel values the Perceptron recurrences do not read (PA-I's do)
_NO_KXX = np.empty((0, 0))
# an empty dot/gaussian program: tells SPASegment that G is complete (no lazy columns to fill)
_NO_FAST = (
    DotGaussPlan(
        np.empty(0, np.int64),
        np.empty(0, np.int64),
        np.empty(0, np.int64),
        np.empty(0),
        np.empty(0, np.bool_),
        np.empty(0, np.bool_),
        np.empty(0, np.bool_),
        np.empty(0, np.bool_),
    ),
    np.empty((0, 0)),
    np.empty(0, np.bool_),
)


def _lazy_row_keys(Xs):
    """A function returning the rows' keys (:func:`row_keys`), computed on the first call."""
    return functools.cache(functools.partial(row_keys, Xs))


def diag_values(program, xsq, X, scales=None) -> np.ndarray:
    """κ_k(x, x) per kernel and row, (m, n): (x·x)^p for dot kernels, Σx for additive chi2, 1 for
    the distance kernels (each on its own columns in a direct program); a normalised kernel's is 1
    (0 for a row whose raw value is 0). ``scales``: the rows' :func:`kernel_scales` if already
    computed (a normalised program's)."""
    out = np.ones((program.m, len(xsq)))
    if scales is None and program.norm.any():
        scales = kernel_scales(program, X, xsq)
    for k in range(program.m):
        if program.kinds[k] not in (LINEAR, POLY, ACHI2):
            continue
        if program.norm[k]:
            out[k] = scales[:, k] > 0
            continue
        lo, hi = (program.vptr[k], program.vptr[k + 1]) if program.direct else (0, 0)
        Xk = X[:, program.vcols[lo:hi]] if hi > lo else X
        if program.kinds[k] == ACHI2:
            out[k] = Xk.sum(axis=1)
            continue
        sq = xsq if hi == lo else np.einsum("ij,ij->i", Xk, Xk)
        out[k] = sq ** (1 if program.kinds[k] == LINEAR else int(program.param[k]))
    return out


# Rows processed together: bounds the in-block kernel matrix (m × S × S doubles) whatever the
# block size; blocks (randomness, block-sync snapshots) stay tied to global instance indices, so
# segmenting never changes a result (decisions; scores to rounding).
MAX_SEGMENT = 1024
# SPA on dot/gaussian kernels needs no in-block kernel matrix (see LocalEngine.lazy_gram): longer
# segments, so a distributed round (one segment) carries more rows per message
LAZY_MAX_SEGMENT = 16384
# SPA's rounds grow with the stream: one starting at instance g spans g // (ROUND_GROWTH · B) blocks
# (at least one). A new support vector's terms on the rest of its round are computed serially in
# the recurrence, about S / 2g of the pool scan's work for rounds of S rows: 1/16 at most (fewer
# rounds mean fewer messages on a cluster; longer ones would slow SPA on short, SV-heavy streams).
ROUND_GROWTH = 8


def spa_lazy_gram(rule: int, program) -> bool:
    """SPA on dot/gaussian kernels computes a new support vector's kernel values against the rest
    of its segment itself (:class:`SPASegment`), so a segment needs only its scores against the pool
    beforehand: no in-block kernel matrix, and the scores can be computed anywhere (by row)."""
    return rule == SPA and program.fast is not None


def omkc_lazy_gram(rule: int, program, n_classes: int, hyper) -> bool:
    """Binary OMKC with stochastic updates ((S,D), (S,S)) on dot/gaussian kernels: a new support
    vector's kernel values against the rest of its block are computed in the recurrence
    (:class:`._recurrence.OMKCLazySegment`) instead of the block's whole kernel matrix beforehand.
    Sampled updates keep few rows of a block, so that is a fraction of the work; on a cluster it is
    work only the lead shard can do (the rows kept depend on the weights), so it caps the speedup."""
    return rule in (SD, SS) and n_classes == 1 and program.fast is not None and not hyper.pa  # (PA-I keeps most rows)


@dataclass(frozen=True)
class Rounds:
    """Where an engine's segments end: at the end of a round, a function of the global instance
    index alone (so in-process, on a cluster and after a resume alike). A round is one block
    (``growth`` 0), or whole blocks, more as the stream goes on, never across a multiple of
    ``window`` rows (so a run fed ``window`` rows at a time has the segments of one call).
    Segments are at most ``longest`` rows."""

    block: int
    window: int
    longest: int
    growth: int = 0

    def length(self, g: int, remaining: int) -> int:
        """Rows of the segment starting at global instance ``g``, at most ``remaining``."""
        blocks = max(1, g // (self.growth * self.block)) if self.growth else 1
        end = min((g // self.block + blocks) * self.block, (g // self.window + 1) * self.window)
        return min(remaining, end - g, self.longest)


def segmenting(rule: int, program, block_size: int) -> Rounds:
    """The :class:`Rounds` of an engine. A round is one block, except for SPA on dot/gaussian
    kernels (:func:`spa_lazy_gram`): its recurrence follows the blocks itself (random streams,
    block-sync snapshots), so its rounds grow to as many whole blocks as fit in
    ``LAZY_MAX_SEGMENT`` rows -- small blocks then cost few messages on a cluster."""
    if not spa_lazy_gram(rule, program):
        return Rounds(block_size, block_size, MAX_SEGMENT)
    if block_size >= LAZY_MAX_SEGMENT:  # a block per round, in segments
        return Rounds(block_size, block_size, LAZY_MAX_SEGMENT)
    return Rounds(block_size, block_size * (LAZY_MAX_SEGMENT // block_size), LAZY_MAX_SEGMENT, ROUND_GROWTH)


@dataclass(frozen=True)
class Feed:
    """Where a job's ``partial_fit`` calls end, and so where its trace reads the model and its
    calibration learns a batch (:mod:`omkl_dist.distributed.calibration`): at the multiples of
    ``block`` rows of the model's life for the job's first ``early`` rows (from ``start``, the rows the
    model had seen when the job began: a retrain's window too), then at the multiples of ``window``,
    and at the stream's end. A function of the rows seen and the job's start alone, so the in-process
    run, a cluster run and a resumed job agree. Most models: ``Feed(w, w)``, a call per window ``w``
    (their rounds')."""

    block: int
    window: int
    early: int = 0
    start: int = 0

    def ends_at(self, seen: int) -> bool:
        """Whether a call ends when the model has seen ``seen`` rows (short of the stream's end)."""
        return seen % (self.block if seen - self.start <= self.early else self.window) == 0

    def from_row(self, start: int) -> Feed:
        """This feed for a job that starts when the model has seen ``start`` rows."""
        return replace(self, start=int(start))


# The models whose kernels learn apart (the budget and feature learners: kernel-split on a cluster) are fed
# calls of about this many rows (whole blocks): a call costs ~1 ms beyond its rows (the threads' hand-over,
# the calibration's batch, the trace's read of the model), and a block of 256 rows per call made FOGD,
# NOGD, BPAS and RBP 1.4-1.7x slower over ijcnn1 than 4,096 (measured, session 57). For a job's first
# EARLY_ROWS rows, a call per block: its trace reads the model there (the weights
# move most early on), and a short stream's trace keeps its points (early calls of 8,192 rows against
# 4,096: FOGD 1.02x, NOGD 1.10x the time over ijcnn1; 16,384: 1.06x, 1.14x).
KERNEL_SPLIT_FEED, EARLY_ROWS = 4096, 8192


def kernel_split_feed(block_size: int) -> Feed:
    """The :class:`Feed` of a kernel-split model with blocks of ``block_size`` rows: a block per call for
    the first :data:`EARLY_ROWS` rows, then :data:`KERNEL_SPLIT_FEED` rows of whole blocks."""
    window = block_size * max(1, KERNEL_SPLIT_FEED // block_size)
    return Feed(block_size, window, window * max(1, EARLY_ROWS // window))


class _Sampler:
    """:meth:`LocalEngine.learn`'s samples of the model at rows ``sample_at`` of its life, segment by segment."""

    def __init__(self, engine, sample_at):
        self.at = np.asarray(sample_at, dtype=np.int64)
        self.scalars = {"rule": engine.rule, **saved_scalars(engine.hyper)}
        self.n_support = engine.n_support()
        self.parts: list = []

    def start(self, engine) -> dict:
        """The model at a segment's start (copies: the recurrence changes the engine's arrays)."""
        return {"w": engine.w.copy(), "logw": engine.logw.copy(), "n_support": self.n_support}

    def segment(self, engine, start, F, coef, ys) -> None:
        """Read the model at the sampled rows of the segment that starts at ``engine.n_seen``."""
        g = engine.n_seen
        rows = self.at[(self.at > g) & (self.at <= g + len(ys))]
        if len(rows):
            self.parts.append((rows, *pool_samples(self.scalars, start, F, coef, ys, rows - g - 1)))
        self.n_support = self.n_support + np.count_nonzero(coef, axis=0)  # (binary: a column per kernel)

    def result(self) -> tuple:
        m = len(self.n_support)
        if not self.parts:
            return np.empty(0, dtype=np.int64), np.empty((0, m), dtype=np.int64), np.empty((0, m))
        return tuple(np.concatenate(column) for column in zip(*self.parts))


class LocalEngine:
    """In-process block engine holding one model's full learning state.

    Parameters
    ----------
    program : KernelProgram
    n_features : int
    rule : int
        Combination/update rule code from :mod:`omkl_dist.combiners.codes`.
    hyper : OMKCHyper, SPAHyper or OM2Hyper, optional
        The rule's hyper-parameters (:func:`~.hyper.hyper_class` of ``rule``; default: its defaults).
    n_classes : int
        1 for binary models (labels ±1, one coefficient per kernel), else K (labels 0..K-1, one
        coefficient per kernel and class; OM-2 always, the OMKC family for K > 2).
    seed : int
    block_size : int
    block_sync : bool
        Stochastic-update sampling uses the weights of the block start (the distributed mode).
    sparse : bool
        Keep the rows as CSR (wide sparse data, :mod:`omkl_dist.scoring.rows`); dot-product and
        gaussian kernels only. :meth:`learn` and :meth:`kernel_scores` take rows dense or sparse
        and convert them (:meth:`rows`); the segment-level methods take rows already converted (a
        shard converts what it reads once).
    """

    def __init__(
        self,
        program: KernelProgram,
        n_features: int,
        *,
        rule: int,
        seed: int,
        block_size: int,
        block_sync: bool,
        hyper: RuleHyper | None = None,
        n_classes: int = 1,
        sparse: bool = False,
    ) -> None:
        if sparse and program.fast is None:
            raise ValueError(
                "sparse rows need a pool of dot-product and gaussian kernels (linear, polynomial, "
                "gaussian) on all columns; densify X for the others"
            )
        check_width(program, n_features)
        self.program = program
        self.rule = int(rule)
        family = hyper_class(self.rule)
        if hyper is not None and type(hyper) is not family:
            raise TypeError(f"rule {self.rule} takes {family.__name__} hyper-parameters, got {type(hyper).__name__}")
        self.hyper = family() if hyper is None else hyper
        self.n_classes = int(n_classes)
        self.seed, self.block_size, self.block_sync = int(seed), int(block_size), bool(block_sync)
        m = program.m
        self.kernel_ids = np.arange(m)
        self.support_vectors = SupportVectors(n_features, m, n_classes=self.n_classes, sparse=sparse)
        self.w = np.ones(m)
        self.wsync = np.ones(m)
        self.logw = np.zeros(m)  # SPA keeps log-weights (hinge losses can be huge); w = exp(logw - max)
        self.kernel_mistakes = np.zeros(m, dtype=np.int64)
        self.sqnorm = np.zeros(m)  # OM-2: ‖θ_j‖² per kernel
        self.n_seen = 0
        self.n_mistakes = 0

    def learn(self, X: np.ndarray, y: np.ndarray, *, keep_scores: bool = False, sample_at=None) -> dict:
        """Predict-then-update over rows of X in order; returns per-instance outcomes.

        ``mistakes`` (bool per row) and ``score`` always; ``F`` (per-kernel decision values before
        each update) when ``keep_scores``. Multi-class models (:attr:`multiclass`): ``score`` is
        (n, K), the combined class scores, and ``F`` (n, m, K). ``sample_at``: rows of the model's
        life (rows seen) after which to read the model, where :attr:`samples_inside`: then
        ``samples`` is ``(rows, n_support, weights)`` there (:func:`.samples.pool_samples`).
        """
        X = self.rows(X)
        n, m, K = len(y), self.program.m, self.n_classes
        mc = self.multiclass
        out = {"mistakes": np.empty(n, dtype=bool), "score": np.empty((n, K) if mc else n)}
        if keep_scores:
            out["F"] = np.empty((n, m, K) if mc else (n, m))
        sampler = _Sampler(self, sample_at) if sample_at is not None and self.samples_inside else None
        pos = 0
        while pos < n:
            end = pos + self.segment_length(self.n_seen, n - pos)
            Xs, ys = X[pos:end], y[pos:end]
            xsq = sqnorms(Xs)
            start = sampler.start(self) if sampler is not None else None
            F, score, mistakes, coef = self.run_segment(Xs, xsq, ys)
            if sampler is not None:
                sampler.segment(self, start, F, coef, ys)
            self.append_rows(Xs, xsq, coef)
            out["mistakes"][pos:end] = mistakes
            out["score"][pos:end] = score
            if keep_scores:
                out["F"][pos:end] = F.reshape(out["F"][pos:end].shape)
            self.n_seen += len(ys)
            self.n_mistakes += int(mistakes.sum())
            pos = end
        if sampler is not None:
            out["samples"] = sampler.result()
        return out

    @property
    def samples_inside(self) -> bool:
        """Whether :meth:`learn` reads the model inside its segments (:func:`.samples.samples_inside`)."""
        return samples_inside({"rule": self.rule, "n_classes": self.n_classes})

    @property
    def n_features(self) -> int:
        """Columns of a row (the width the program is bound to)."""
        return self.support_vectors.n_features

    @property
    def sparse(self) -> bool:
        """Whether the model keeps its rows as CSR (:mod:`omkl_dist.scoring.rows`)."""
        return self.support_vectors.sparse

    def rows(self, X):
        """``X`` as this engine keeps rows: CSR for a :attr:`sparse` engine, else a dense array."""
        return as_csr(X) if self.sparse else dense_rows(X)

    @property
    def multiclass(self) -> bool:
        """Whether the model keeps a coefficient per kernel and class (labels 0..K-1)."""
        return self.n_classes > 1

    def om2_factors(self) -> np.ndarray:
        """OM-2's kernel factors α_j of the current model (0 before the first update)."""
        return om2_factors(self.sqnorm, self.hyper.q)

    def n_support(self) -> np.ndarray:
        """Support vectors per kernel."""
        return self.support_vectors.n_support()

    def segment_length(self, g: int, remaining: int) -> int:
        """Rows processed together from global instance g (:meth:`Rounds.length` of
        :func:`segmenting`). The distributed engine exchanges support vectors at the same points."""
        return segmenting(self.rule, self.program, self.block_size).length(g, remaining)

    def run_segment(self, Xs, xsq, ys, act=None):
        """Kernel values and recurrence for one segment starting at global instance ``n_seen``;
        returns ``(F, score, mistakes, coef)`` and leaves the pool unchanged (see
        :meth:`append_rows`). ``act``: the kernels to learn (default all; a shard its own)."""
        act = np.arange(self.program.m) if act is None else np.asarray(act, dtype=np.int64)
        active = None if len(act) == self.program.m else np.isin(np.arange(self.program.m), act)
        F_old, G, lazy = self._segment_kernels(Xs, xsq, active)
        return self._recurrence(ys, F_old, G, lazy, Xs, xsq, self.n_seen, act, active)

    def append_rows(self, Xs, xsq, coef) -> None:
        """Keep the segment's rows that some kernel gave a coefficient."""
        kept = np.flatnonzero(np.any(coef != 0.0, axis=1))
        self.support_vectors.append(Xs[kept], xsq[kept], coef[kept])

    @property
    def lazy_gram(self) -> bool:
        """:func:`spa_lazy_gram` for this engine."""
        return spa_lazy_gram(self.rule, self.program)

    @property
    def feeds_scores(self) -> bool:
        """Whether the recurrence computes its in-segment kernel values itself (SPA's
        :attr:`lazy_gram`, OMKC's sampled updates: :func:`omkc_lazy_gram`), so that it can be fed the
        rows' scores against the pool in parts (:meth:`scored_segment`)."""
        return self.lazy_gram or omkc_lazy_gram(self.rule, self.program, self.n_classes, self.hyper)

    # --- a segment computed in parts (the row-split rounds of omkl_dist.distributed.rounds) ----
    def score_rows(self, Xs, xsq, lo, hi):
        """Every kernel's decision values on rows ``lo:hi`` of a segment against the pool as it
        is (no update): a shard's part of a round. Which dot products are taken in fixed order
        is decided on the whole segment, so the rows get the bits they get in :meth:`run_segment`
        (BLAS products are taken in calls of one shape, :mod:`omkl_dist.scoring._blas`)."""
        return self._pool_scores(Xs, xsq, None, _lazy_row_keys(Xs), slice(lo, hi))[0]

    def scored_segment(self, Xs, xsq, ys, U=None) -> SPASegment | OMKCLazySegment:
        """The recurrence (:attr:`feeds_scores`) over a segment starting at ``n_seen``, to be fed
        the rows' scores against the pool (:meth:`score_rows`, possibly computed in parts elsewhere)
        in row order: :meth:`run_segment`'s result, bit for bit, however they are fed. ``U``: the
        segment's :meth:`segment_uniforms` if drawn beforehand."""
        if self.rule == SPA:
            return self._spa_segment(ys, _NO_GRAM, True, Xs, xsq, self.n_seen, np.arange(self.program.m), None, U)
        U = self.segment_uniforms(self.n_seen, len(ys)) if U is None else U
        return self._omkc_lazy_segment(ys, Xs, xsq, self.n_seen, U)

    def segment_uniforms(self, g, n):
        """The uniforms of :meth:`scored_segment`'s ``n`` rows from global instance ``g`` (every
        kernel): SPA draws two per row and kernel, OMKC's sampled updates one."""
        return self._uniforms(g, n, np.arange(self.program.m), None, 2 if self.rule == SPA else 1)

    def learn_scored(self, Xs, xsq, ys, F_old):
        """The recurrence of a segment starting at ``n_seen`` whose scores against the pool were
        computed beforehand (:meth:`score_rows`, possibly in parts on other shards), for rules that
        need the segment's own kernel matrix (the OMKC family; SPA: :meth:`scored_segment`):
        :meth:`run_segment`'s ``(F, score, mistakes, coef)``, bit for bit."""
        G, lazy = self._block_kernels(Xs, xsq, None, _lazy_row_keys(Xs), self._exact_blas(Xs))
        return self._recurrence(ys, F_old, G, lazy, Xs, xsq, self.n_seen, np.arange(self.program.m), None)

    def _exact_blas(self, Xs) -> bool:
        """Whether BLAS computes the segment's dot products (with the pool too) exactly: integers.
        Sparse rows count as exact: their dot products are summed in one fixed order anyway."""
        if self.sparse:
            return True
        bound = integral_bound(Xs)
        return blas_dots_exact(bound, max(bound, self.support_vectors.int_bound), Xs.shape[1])

    def _pool_scores(self, Xs, xsq, active, block_keys, rows=slice(None)):
        """Scores of the segment's ``rows`` against the pool. Dot products of duplicated vectors
        are taken in fixed order unless the data are integers (BLAS exact), see scoring/support_vectors.py;
        returns ``(F, exact_blas)``."""
        exact_blas = self._exact_blas(Xs)
        F_old = pool_scores(
            Xs[rows],
            xsq[rows],
            self.support_vectors,
            self.program,
            blas_exact=exact_blas,
            active=active,
            extra_exact=None if exact_blas else lambda: self.support_vectors.rows_matching(block_keys()),
        )
        return F_old, exact_blas

    def _segment_kernels(self, Xs, xsq, active=None):
        """Scores of the segment's rows against the pool, and the segment's own kernel values
        (complete, or none when SPA computes them itself: :attr:`lazy_gram`)."""
        block_keys = _lazy_row_keys(Xs)  # SPA's direct scan never needs them
        F_old, exact_blas = self._pool_scores(Xs, xsq, active, block_keys)
        return (F_old, *self._block_kernels(Xs, xsq, active, block_keys, exact_blas))

    def _block_kernels(self, Xs, xsq, active, block_keys, exact_blas):
        """The segment's own kernel values ``(G, lazy)``: none when the recurrence computes them
        itself (SPA, :attr:`lazy_gram`; OMKC's sampled updates, :func:`omkc_lazy_gram`)."""
        if self.lazy_gram or (active is None and omkc_lazy_gram(self.rule, self.program, self.n_classes, self.hyper)):
            return _NO_GRAM, True  # computed column by column by the recurrence (no block-wide Gram)
        if self.sparse:
            XXt = sparse_dots(Xs, Xs)
        else:
            XXt = Xs @ Xs.T if exact_blas else self._block_dots(Xs, block_keys())
        G = block_gram(
            as_rows(Xs),
            xsq,
            XXt,
            self.program,
            active,
            out=self._work_buffer(self.program.m, len(xsq)),
            scale=self._scales(Xs, xsq),
        )
        return G, False

    def _recurrence(self, ys, F_old, G, lazy, Xs, xsq, g, act, active):
        """Run the learner/combiner recurrence over a segment starting at global instance g."""
        if self.rule == OM2:
            return om2_block(
                ys,
                F_old,
                G,
                diag_values(self.program, xsq, Xs),
                self.sqnorm,
                self.hyper.q,
                self.hyper.bounded_norm,
                act,
                self.n_classes,
            )
        if self.rule == SPA:
            segment = self._spa_segment(ys, G, lazy, Xs, xsq, g, act, active)
            segment.feed(F_old)
            return segment.result()
        n, m = len(ys), self.program.m
        U = self._uniforms(g, n, act, active, 1) if self.rule in STOCHASTIC else np.empty((n, m))
        params = omkc_params(self.rule, g, self.block_size, self.block_sync, self.hyper)
        if lazy:  # (omkc_lazy_gram: every kernel, binary, Perceptron components)
            segment = self._omkc_lazy_segment(ys, Xs, xsq, g, U)
            segment.feed(F_old)
            return segment.result()
        kxx = diag_values(self.program, xsq, Xs) if params.pa else _NO_KXX  # PA-I's step reads κ(x, x)
        if self.multiclass:
            return omkc_mc_block(ys, F_old, G, kxx, U, self._hedge_state(), params, act, self.n_classes)
        return omkc_block(ys, F_old, G, kxx, U, self._hedge_state(), params, act)

    def _omkc_lazy_segment(self, ys, Xs, xsq, g, U) -> OMKCLazySegment:
        fast = (dot_gauss_plan(self.program, None), self._scales(Xs, xsq), self.program.norm)
        params = omkc_params(self.rule, g, self.block_size, self.block_sync, self.hyper)
        return OMKCLazySegment(ys, as_rows(Xs), xsq, fast, U, self._hedge_state(), params)

    def _hedge_state(self) -> HedgeState:
        return HedgeState(self.logw, self.w, self.wsync, self.kernel_mistakes)

    def _scales(self, Xs, xsq):
        """The rows' normalisation factors (n, m) if some kernel is normalised, else an empty array."""
        return kernel_scales(self.program, Xs, xsq) if self.program.norm.any() else np.empty((0, 0))

    def _spa_segment(self, ys, G, lazy, Xs, xsq, g, act, active, U=None) -> SPASegment:
        scales = self._scales(Xs, xsq)  # (read by the in-block columns and κ(x, x): computed once)
        fast = (dot_gauss_plan(self.program, active), scales, self.program.norm) if lazy else _NO_FAST
        U = self._uniforms(g, len(ys), act, active, 2) if U is None else U
        h = self.hyper
        params = SPAParams(
            g, self.block_size, self.block_sync, np.log(h.gamma), h.delta, h.alpha, h.beta, h.eta, h.hedge_mistake
        )
        return SPASegment(
            ys,
            G,
            as_rows(Xs),
            xsq,
            diag_values(self.program, xsq, Xs, scales if self.program.norm.any() else None),
            fast,
            U,
            self._hedge_state(),
            params,
            act,
            self.n_classes,
        )

    def _uniforms(self, g, n, act, active, draws):
        """The segment's uniforms; a shard draws only its kernels' streams (1.0 never selects the others)."""
        if active is None:
            return uniforms(self.seed, g, g + n, self.kernel_ids, self.block_size, draws)
        U = np.ones((n, self.program.m) + ((draws,) if draws > 1 else ()))
        U[:, act] = uniforms(self.seed, g, g + n, self.kernel_ids[act], self.block_size, draws)
        return U

    def _work_buffer(self, m: int, n: int) -> np.ndarray:
        """A C-contiguous (m, n, n) scratch for the segment's kernel matrix, reused across segments
        (a fresh array each time would make the first write to every page a page fault)."""
        buf = getattr(self, "_buffer", None)
        if buf is None or buf.size < m * n * n:
            buf = self._buffer = np.empty(m * n * n)
        return buf[: m * n * n].reshape(m, n, n)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_buffer", None)  # scratch space, not model state
        return state

    def __setstate__(self, state):
        self.__dict__.update(writable(state))

    def _block_dots(self, Xs, keys) -> np.ndarray:
        """Gram of the block; columns of rows that repeat (in the block or the pool) in fixed order."""
        XXt = fixed_shape_dots(Xs, Xs)  # the same bits in-process and on a shard with other BLAS threads
        seen: dict[int, int] = {}
        for key in keys:
            seen[key] = seen.get(key, 0) + 1
        dup = np.array([seen[k] > 1 or self.support_vectors.has_key(k) for k in keys], dtype=bool)
        if dup.any():
            overwrite_exact_columns(Xs, Xs, np.flatnonzero(dup), 0, XXt)
        return XXt

    def kernel_scores(self, X: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Per-kernel decision values f_k(x) of the current model, (n, m); multi-class (n, m, K)."""
        X = self.rows(X)
        parts = []
        for lo in range(0, X.shape[0], chunk):
            Xs = X[lo : lo + chunk]
            exact_blas = self.sparse or blas_dots_exact(integral_bound(Xs), self.support_vectors.int_bound, Xs.shape[1])
            parts.append(
                pool_scores(
                    Xs,
                    sqnorms(Xs),
                    self.support_vectors,
                    self.program,
                    extra_exact=None if exact_blas else self.support_vectors.rows_matching(row_keys(Xs)),
                    blas_exact=exact_blas,
                )
            )
        F = np.concatenate(parts) if parts else np.empty((0, self.program.m * self.n_classes))
        return F.reshape(len(F), self.program.m, self.n_classes) if self.multiclass else F

    ARRAYS = ("w", "wsync", "logw", "kernel_mistakes", "kernel_ids", "sqnorm")

    def state(self) -> tuple[dict, dict]:
        """Full learning state as (numeric arrays, JSON-able scalars)."""
        arrays = {name: getattr(self, name).copy() for name in self.ARRAYS}
        arrays.update(self.support_vectors.state())
        scalars = {
            "rule": self.rule,
            "seed": self.seed,
            "block_size": self.block_size,
            "block_sync": self.block_sync,
            "n_seen": self.n_seen,
            "n_mistakes": self.n_mistakes,
            **saved_scalars(self.hyper),
            "n_classes": self.n_classes,
        }
        return arrays, scalars

    @classmethod
    def from_state(cls, program, arrays: dict, scalars: dict) -> "LocalEngine":
        """Rebuild an engine that continues exactly where :meth:`state` was taken."""
        rows = pool_rows(arrays)
        engine = cls(
            program,
            rows.shape[1],
            rule=scalars["rule"],
            seed=scalars["seed"],
            block_size=scalars["block_size"],
            block_sync=scalars["block_sync"],
            sparse=is_sparse(rows),
            hyper=hyper_class(int(scalars["rule"])).from_scalars(scalars),
            n_classes=scalars.get("n_classes", 1),
        )
        if arrays["pool_alpha"].shape[1] != program.m * engine.n_classes:
            raise ValueError(
                f"state has {arrays['pool_alpha'].shape[1]} coefficient columns, the program "
                f"{program.m} kernels of {engine.n_classes} class column(s)"
            )
        engine.support_vectors = SupportVectors.from_state(arrays, engine.n_classes)
        for name in cls.ARRAYS:
            if name != "sqnorm" or name in arrays:  # models saved before OM-2 have no ‖θ_j‖² (zeros)
                setattr(engine, name, np.array(arrays[name], dtype=getattr(engine, name).dtype))
        engine.n_seen, engine.n_mistakes = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        return engine

    def keep_kernels(self, columns, program) -> None:
        """Restrict the model to the given kernel columns (e.g. Perceptron(*) after validation)."""
        columns = np.asarray(columns, dtype=np.int64)
        self.support_vectors.keep_columns(columns)
        self.program = program
        self.kernel_ids = self.kernel_ids[columns]
        self.w = self.w[columns].copy()
        self.wsync = self.wsync[columns].copy()
        self.logw = self.logw[columns].copy()
        self.kernel_mistakes = self.kernel_mistakes[columns].copy()
        self.sqnorm = self.sqnorm[columns].copy()
