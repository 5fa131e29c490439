"""FeatureEngine: kernel learners on explicit features, combined by Hedge -- multi-kernel FOGD
(random Fourier features) here, NOGD (Nyström features, :mod:`.nystrom`) -- run block by block,
shardable by kernel, in constant memory in the stream's length.

The two halves, as :class:`~.budget.BudgetEngine`'s (the cluster drives both through the same kind
of round): :meth:`FeatureEngine.kernel_step` runs this engine's kernels over rows and returns their
scores before each update ``F`` and the losses the combiner discounts by; the Hedge combiner
(:func:`~omkl_dist.combiners.hedge_loss.combine`) is replayed over them, prediction
``Σ_k θ_k f_k(x)`` with θ = w / Σ w, then ``w_k ← w_k γ^{loss_k}``.

FOGD (Lu et al. 2016, Algorithm 1) for gaussian kernel k of width σ_k: ``D`` directions
``u_i ~ N(0, σ_k^{-2} I)`` drawn once (:func:`omkl_dist.randomness.features.gaussian_projection`, from
(seed, kernel id)), features ``z_k(x) = (cos(u_1·x) … cos(u_D·x), sin(u_1·x) … sin(u_D·x))`` (the
authors' code's layout and scale: ``z_k(x)·z_k(x') ≈ D κ_k(x, x')``), and online gradient descent on
the hinge loss over them (:mod:`omkl_dist.learners.features`).

Exactness: the compiled loop makes the features of a few rows ahead of their updates (they do not
depend on the model), then learns the rows one by one: the projections ``u_i · x`` summed in feature
order by fused multiply-adds (a segment's non-zero features found once for every kernel, four per pass
over the directions: :func:`omkl_dist.learners.features.fourier_projection`), ``cos``/``sin`` by the vectorised
:func:`~omkl_dist.scoring._vtrig.cos_sin` (within 1 ulp of libm's, ~20x faster: libm's scalar calls
were the learner's whole cost; it is still half of a row's time, at the vector units' throughput). A BLAS
product of the segment instead (measured, issue 36) saves ~0.3 µs (cod-rna) and ~0.8 µs (ijcnn1)
of ~7 per row, costs 2.5 µs more on a9a's sparse rows, and its bits change with the block size and
with OpenBLAS's thread count (1 on a Dask worker, 2 here). So every row's features, scores and updates are the naive
one-row-at-a-time reference's (``tests/naive_features.py``) bit for bit on every machine, for any
block size and any chunking, and a shard owning some kernels computes exactly their columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..combiners.hedge_loss import combine, weights_from_log
from ..learners.features import fourier_rows, fourier_scores
from ..randomness.features import gaussian_projection
from ..scoring._blas import one_blas_thread
from ..scoring.program import GAUSS, KernelProgram
from ..scoring.rows import dense_rows
from ..scoring.support_vectors import writable
from .budget import _as_program as as_program  # (the budget engine's program helpers, same layer)
from .budget import _program_from as program_of

if TYPE_CHECKING:
    from ..kernels import KernelPool

__all__ = ["FeatureEngine", "FourierEngine", "SEGMENT"]

# Rows per call of the compiled loops (kernels on threads): their non-zeros, (SEGMENT, d) int32 + doubles, are
# held at once (4096 × 123: 6 MB for a9a). A call dispatches the kernels to the threads and waits for them: at 256
# rows that hand-over was ~10 % of FOGD's pass (measured, issue 36); a kernel's features live per few rows.
SEGMENT = 4096


class FeatureEngine:
    """Shared machinery of the explicit-feature engines: Hedge over per-kernel learners, the
    cluster's subset/merge and the saved state. Subclasses set ``ENGINE`` (the saved state's
    engine name), ``KERNEL_ARRAYS`` beyond the combiner's, ``SCALARS`` beyond the common ones, and
    implement :meth:`_segment` (learn a segment) and :meth:`_scores` (score rows)."""

    ENGINE: ClassVar[str] = ""
    COMMON_ARRAYS = ("kernel_ids", "w", "logw", "kernel_mistakes")
    COMMON_SCALARS = ("seed", "block_size", "eta", "gamma", "hedge_hinge", "n_classes", "n_features")
    KERNEL_ARRAYS: ClassVar[tuple[str, ...]] = ()
    SCALARS: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        program_or_pool: KernelProgram | KernelPool | str | list[Any],
        n_features: int,
        *,
        seed: int,
        block_size: int,
        kernel_ids: np.ndarray | None = None,
        eta: float = 0.1,
        gamma: float = 0.99,
        hedge_hinge: bool = False,
        n_classes: int = 1,
    ) -> None:
        self.program = as_program(program_or_pool)
        if self.program.direct:
            raise ValueError(
                f"{type(self).__name__}: kernels on feature groups and the additive chi-square kernel have "
                "no explicit features here; use a pool of kernels on every column"
            )
        self.seed, self.block_size = int(seed), int(block_size)
        self.eta, self.gamma, self.hedge_hinge = float(eta), float(gamma), bool(hedge_hinge)
        self.n_classes, self.n_features = int(n_classes), int(n_features)
        if self.n_classes < 1 or self.n_features < 1:
            raise ValueError(f"n_classes and n_features must be positive, got {n_classes!r}, {n_features!r}")
        m = self.program.m
        self.kernel_ids = np.arange(m, dtype=np.int64) if kernel_ids is None else np.asarray(kernel_ids, dtype=np.int64)
        if self.kernel_ids.shape != (m,):
            raise ValueError(f"kernel_ids must hold one id per kernel ({m}), got shape {self.kernel_ids.shape}")
        self.w = np.ones(m)
        self.logw = np.zeros(m)
        self.kernel_mistakes = np.zeros(m, dtype=np.int64)
        self.n_seen = 0
        self.n_mistakes = 0

    @property
    def m(self) -> int:
        return self.program.m

    rows = staticmethod(dense_rows)  # features come from dense rows: sparse X is densified

    def _params(self) -> dict[str, Any]:
        """The constructor's keyword arguments of this engine (beyond program and width)."""
        return {
            "seed": self.seed,
            "block_size": self.block_size,
            "eta": self.eta,
            "gamma": self.gamma,
            "hedge_hinge": self.hedge_hinge,
            "n_classes": self.n_classes,
            **{name: getattr(self, name) for name in self.SCALARS},
        }

    # ------------------------------------------------------------------ the two halves
    def kernel_step(self, X: np.ndarray, y: np.ndarray, g: int) -> dict[str, np.ndarray]:
        """Run this engine's kernel learners over rows X (first row = global instance ``g``, which
        must be :attr:`n_seen`): ``{"F": (n, m K) scores before each update, "loss": (n, m)}``."""
        if int(g) != self.n_seen:
            raise ValueError(
                f"kernel_step: rows start at global instance {g}, but this engine has seen "
                f"{self.n_seen}; pass the rows that continue its stream"
            )
        X = dense_rows(X)
        y = np.ascontiguousarray(y, dtype=np.float64)
        n = len(y)
        if X.ndim != 2 or X.shape != (n, self.n_features):
            raise ValueError(f"kernel_step: X must be ({n}, {self.n_features}), got {X.shape}")
        F, L = np.empty((n, self.m * self.n_classes)), np.empty((n, self.m))
        with one_blas_thread():  # segments alternate BLAS products and numba's parallel loop
            for lo in range(0, n, SEGMENT):
                hi = min(n, lo + SEGMENT)
                self._segment(X[lo:hi], y[lo:hi], F[lo:hi], L[lo:hi])
                self.n_seen += hi - lo
        return {"F": F, "loss": L}

    def _segment(self, X: np.ndarray, y: np.ndarray, F: np.ndarray, L: np.ndarray) -> None:
        raise NotImplementedError

    def _scores(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def learn(self, X: np.ndarray, y: np.ndarray, *, keep_scores: bool = False) -> dict[str, np.ndarray]:
        """Predict-then-update over rows: :meth:`kernel_step`, then the Hedge combiner. Returns
        ``mistakes``, ``score`` (multi-class (n, K)) and with ``keep_scores`` ``F``."""
        step = self.kernel_step(X, y, self.n_seen)
        score, mistakes = combine(y, step["F"], step["loss"], self.logw, self.w, self.gamma, self.n_classes)
        self.n_mistakes += int(mistakes.sum())
        out = {"mistakes": mistakes, "score": score}
        if keep_scores:
            out["F"] = step["F"]
        return out

    def kernel_scores(self, X: np.ndarray) -> np.ndarray:
        """Per-kernel scores of the current model, (n, m); multi-class (n, m, K)."""
        X = dense_rows(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have {self.n_features} columns, got shape {X.shape}")
        K = self.n_classes
        out = np.empty((len(X), self.m * K))
        with one_blas_thread():
            for lo in range(0, len(X), SEGMENT):
                out[lo : lo + SEGMENT] = self._scores(X[lo : lo + SEGMENT])
        return out if K == 1 else out.reshape(len(X), self.m, K)

    # ------------------------------------------------------------------ state, shards
    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The whole learning state as (numeric arrays, JSON-able scalars)."""
        arrays = {name: np.array(getattr(self, name), copy=True) for name in self.COMMON_ARRAYS + self.KERNEL_ARRAYS}
        scalars = {name: getattr(self, name) for name in self.COMMON_SCALARS + self.SCALARS}
        scalars.update(engine=self.ENGINE, n_seen=self.n_seen, n_mistakes=self.n_mistakes)
        return arrays, scalars

    def __setstate__(self, state):
        self.__dict__.update(writable(state))  # (unpickled from a read-only memory map: goes on learning)

    @classmethod
    def from_state(cls, program, arrays: dict, scalars: dict) -> FeatureEngine:
        """The engine that continues exactly where :meth:`state` was taken."""
        params = {name: scalars[name] for name in cls.COMMON_SCALARS + cls.SCALARS if name != "n_features"}
        engine = cls(
            as_program(program), int(scalars["n_features"]), kernel_ids=np.asarray(arrays["kernel_ids"]), **params
        )
        engine._take(arrays)
        engine.n_seen, engine.n_mistakes = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        return engine

    def _take(self, arrays: dict) -> None:
        for name in self.COMMON_ARRAYS + self.KERNEL_ARRAYS:
            current = getattr(self, name)
            value = np.array(arrays[name], dtype=current.dtype)
            if value.shape != current.shape:
                raise ValueError(f"state array {name!r} has shape {value.shape}, expected {current.shape}")
            setattr(self, name, np.ascontiguousarray(value))

    def subset(self, positions) -> FeatureEngine:
        """An independent engine with copies of the given kernels' state (positions into this
        engine's kernels): a shard; its :meth:`kernel_step` gives exactly those kernels' columns."""
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        if len(pos) == 0 or len(np.unique(pos)) != len(pos) or pos.min() < 0 or pos.max() >= self.m:
            raise ValueError(f"positions must be distinct kernel positions in [0, {self.m}), got {pos.tolist()}")
        p = self.program
        part = type(self)(
            program_of(p.kinds[pos], p.param[pos], p.norm[pos]),
            self.n_features,
            kernel_ids=self.kernel_ids[pos],
            **self._params(),
        )
        part._take({name: getattr(self, name)[pos] for name in self.COMMON_ARRAYS + self.KERNEL_ARRAYS})
        part.n_seen, part.n_mistakes = self.n_seen, self.n_mistakes
        return part

    @classmethod
    def merge(cls, parts, *, logw=None, w=None, n_mistakes=None) -> FeatureEngine:
        """Join shard engines (disjoint kernel ids, same stream position) into one, kernels sorted
        by id; ``logw``/``w``/``n_mistakes``: the coordinator's combiner state (kernel-id order)."""
        parts = list(parts)
        if not parts:
            raise ValueError("merge needs at least one part")
        first = parts[0]
        for p in parts[1:]:
            if p._params() != first._params() or (p.n_seen, p.n_features) != (first.n_seen, first.n_features):
                raise ValueError("cannot merge engines with different parameters or stream positions")
        ids = np.concatenate([p.kernel_ids for p in parts])
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"parts share kernel ids: {sorted(ids.tolist())}")
        order = np.argsort(ids, kind="stable")
        kinds, param, norm = (
            np.concatenate([getattr(p.program, a) for p in parts])[order] for a in ("kinds", "param", "norm")
        )
        out = cls(program_of(kinds, param, norm), first.n_features, kernel_ids=ids[order], **first._params())
        out._take(
            {
                name: np.concatenate([getattr(p, name) for p in parts])[order]
                for name in cls.COMMON_ARRAYS + cls.KERNEL_ARRAYS
            }
        )
        if logw is not None:
            out.logw = np.array(logw, dtype=np.float64)
        if w is not None:
            out.w = np.array(w, dtype=np.float64)
        else:
            weights_from_log(out.logw, out.w)
        out.n_seen = first.n_seen
        out.n_mistakes = int(first.n_mistakes if n_mistakes is None else n_mistakes)
        return out


def gaussian_widths(program: KernelProgram, owner: str) -> np.ndarray:
    """σ of every kernel of a program of gaussians (its parameter is ``1/(2σ²)``); refuses others."""
    if not (program.kinds == GAUSS).all():
        raise ValueError(
            f"{owner}: random Fourier features approximate shift-invariant kernels; this pool has kernels "
            "other than gaussians: use gaussian kernels only (e.g. 'gaussian:2^-6..2^6', the authors' "
            "13 widths), or NOGD for polynomial kernels"
        )
    widths: np.ndarray = np.sqrt(0.5 / program.param)
    return widths


class FourierEngine(FeatureEngine):
    """Multi-kernel FOGD: ``n_components`` random Fourier directions per gaussian kernel (2 ×
    ``n_components`` features), online gradient descent on the hinge loss per kernel, Hedge.

    Attributes beyond the combiner's: ``W`` (m, K · 2D) weights (class c of kernel k at
    ``W[k, c 2D : (c + 1) 2D]``); ``projection`` (m, d, D) the directions as columns, regenerated
    from (seed, kernel id), never saved.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3)); y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    >>> e = FourierEngine("gaussian:0.5,1,2", 3, n_components=50, seed=0, block_size=64)
    >>> out = e.learn(X, y)
    >>> e.W.shape, bool(out["mistakes"][200:].mean() < 0.35)
    ((3, 100), True)
    """

    ENGINE = "fourier"
    KERNEL_ARRAYS = ("W",)
    SCALARS = ("n_components",)

    def __init__(self, program_or_pool, n_features: int, *, n_components: int = 100, **kwargs: Any) -> None:
        super().__init__(program_or_pool, n_features, **kwargs)
        self.n_components = int(n_components)
        if self.n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components!r}")
        widths = gaussian_widths(self.program, "FOGD")
        self.W = np.zeros((self.m, self.n_classes * 2 * self.n_components))
        # (m, d, D) C-contiguous: the compiled loop runs over a row's features, then directions (np.stack of
        # the transposes keeps their strides: layout "A", or "F" for one kernel, each compiled apart)
        self.projection = np.ascontiguousarray(
            np.stack(
                [
                    gaussian_projection(self.seed, int(k), self.n_components, self.n_features, float(s)).T
                    for k, s in zip(self.kernel_ids, widths)
                ]
            )
        )

    def n_support(self) -> np.ndarray:
        """Support vectors per kernel: none (a kernel's model is its weight vector)."""
        return np.zeros(self.m, dtype=np.int64)

    def _segment(self, X, y, F, L) -> None:
        fourier_rows(
            X, self.projection, y, self.W, self.eta, self.hedge_hinge, self.n_classes, F, L, self.kernel_mistakes
        )

    def _scores(self, X) -> np.ndarray:
        out = np.empty((len(X), self.m * self.n_classes))
        fourier_scores(X, self.projection, self.W, self.n_classes, out)
        return out
