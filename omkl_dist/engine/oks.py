"""OKSEngine: Online Kernel Selection over a stream, in blocks, in-process.

Each block runs two compiled passes (:mod:`omkl_dist.learners.oks`): a parallel one that draws
every row's kernel under the block's first weights and scores it against that kernel's support
vectors from before the block, then the sequential recurrence, which redraws each row under the
weights it has reached, reuses the speculative score when the draw agrees and computes it when it
does not, and adds the block's own support vectors. The model is the naive one-row-at-a-time run's
bit for bit, for any block size; the block size only fixes which random stream a row's draw comes
from (``U[t]``, the (t mod B)-th uniform of the stream seeded by (seed, t // B, 0), see
:mod:`omkl_dist.randomness`), so the same seed and block size give the same model.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..learners import oks as _oks
from ..learners.records import Expansions, KernelViews, OKSParams, OKSRows, OKSTrace
from ..randomness import uniforms
from ..scoring.program import check_width
from ..scoring.rows import dense_rows
from ..scoring.support_vectors import writable

if TYPE_CHECKING:
    from ..scoring.program import KernelProgram

ALGORITHMS = {"classification": _oks.MISTAKE, "general": _oks.GENERAL}


def default_eta(n_kernels: int, delta: float, horizon: int) -> float:
    """Theorem 3's step for the weights, η = sqrt(2 (1 − δ) ln m / (m T))."""
    if n_kernels < 2 or horizon < 1:
        return 0.0
    return math.sqrt(2.0 * (1.0 - delta) * math.log(n_kernels) / (n_kernels * horizon))


def kernel_columns(program) -> tuple[np.ndarray, np.ndarray]:
    """Each kernel's columns for the loops (``cols[ptr[k]:ptr[k+1]]``; an empty range: every
    column): a direct program's own, else every column for every kernel."""
    if program.direct:
        return program.vcols, program.vptr
    return np.empty(0, dtype=np.int64), np.zeros(program.m + 1, dtype=np.int64)


def _outputs(n: int, K: int) -> dict:
    """What the recurrence records per row."""
    return {
        "kernel": np.empty(n, dtype=np.int64),
        "mistakes": np.empty(n, dtype=np.bool_),
        "loss": np.empty(n),
        "scores": np.empty((n, K)),
        "support": np.empty(n, dtype=np.bool_),
    }


class OKSEngine:
    """The OKS model and its learning loop.

    Parameters
    ----------
    program : the compiled kernels (:func:`~omkl_dist.scoring.program.compile_program` of a pool with
        every feature group resolved)
    n_features : columns of a row
    n_classes : coefficient columns per support vector (1: binary ±1 labels or regression; K:
        labels are class indices)
    algorithm : "classification" (Algorithm 2) or "general" (Algorithm 1 with ``loss``)
    loss : "hinge", "logistic" or "squared" (Algorithm 1 only)
    lam : step size λ of the predictors
    seed, block_size : the random streams of the draws
    delta, eta : the smoothing δ and the weights' step η of the rounds to come (the estimator
        sets them per epoch)
    """

    ENGINE = "oks"

    def __init__(
        self,
        program: KernelProgram,
        n_features: int,
        *,
        n_classes: int,
        algorithm: str,
        loss: str,
        lam: float,
        seed: int,
        block_size: int,
        delta: float = 0.5,
        eta: float = 0.0,
    ) -> None:
        self.program = program
        self.n_features = int(n_features)
        self.K = int(n_classes)
        self.algorithm, self.loss, self.lam = algorithm, loss, float(lam)
        self.seed, self.block_size = int(seed), int(block_size)
        self.delta, self.eta = float(delta), float(eta)
        self.kinds, self.param, self.norm = program.kinds, program.param, program.norm
        check_width(program, self.n_features)
        self.cols, self.col_ptr = kernel_columns(program)
        m = program.m
        self.logw = np.zeros(m)
        self.P = np.empty((0, self.n_features))
        self.coef = np.empty((0, self.K))
        self.kidx = np.empty((m, 0), dtype=np.int64)
        self.nk = np.zeros(m, dtype=np.int64)
        self.n_rows = 0
        self.n_seen = 0
        self.n_mistakes = 0
        self.kernel_mistakes = np.zeros(m, dtype=np.int64)
        self.kernel_updates = np.zeros(m, dtype=np.int64)
        self.kernel_ids = np.arange(m, dtype=np.int64)

    # --- weights ---------------------------------------------------------------------------
    @property
    def q(self) -> np.ndarray:
        """The normalised kernel weights q (computed from the log-weights)."""
        w = np.exp(self.logw - self.logw.max())
        return w / w.sum()

    @property
    def w(self) -> np.ndarray:
        return self.q

    def n_support(self) -> np.ndarray:
        return self.nk.copy()

    # --- learning --------------------------------------------------------------------------
    def _reserve(self, rows: int) -> None:
        """Room for ``rows`` more support vectors in the store and in every kernel's list."""
        need = self.n_rows + rows
        if need > len(self.P):
            cap = max(need, 2 * len(self.P), 1024)
            self.P = np.concatenate([self.P[: self.n_rows], np.empty((cap - self.n_rows, self.n_features))])
            self.coef = np.concatenate([self.coef[: self.n_rows], np.empty((cap - self.n_rows, self.K))])
        need_k = int(self.nk.max(initial=0)) + rows
        if need_k > self.kidx.shape[1]:
            cap = max(need_k, 2 * self.kidx.shape[1], 1024)
            grown = np.zeros((len(self.nk), cap), dtype=np.int64)
            grown[:, : self.kidx.shape[1]] = self.kidx
            self.kidx = grown

    rows = staticmethod(dense_rows)  # support vectors are kept dense: sparse rows are densified

    def learn(self, X: np.ndarray, y: np.ndarray, *, keep_scores: bool = False) -> dict:
        """Run OKS over the rows in order. Returns per row ``mistakes`` (the drawn kernel erred),
        ``score`` (its scores, (n,) or (n, K)), ``kernel`` (the index drawn) and ``loss``."""
        n = len(X)
        X = dense_rows(X)
        y = np.ascontiguousarray(y, dtype=np.float64)
        out = _outputs(n, self.K)
        lo = 0
        while lo < n:
            g = self.n_seen + lo
            hi = min(n, lo + self.block_size - g % self.block_size)  # to the end of the stream block
            guess_pre = self.score_rows(X[lo:hi], None, 0, hi - lo, start=g)
            self._recurrence(X[lo:hi], y[lo:hi], guess_pre, g, {k: v[lo:hi] for k, v in out.items()})
            lo = hi
        self.n_seen += n
        self.n_mistakes += int(out["mistakes"].sum())
        scores = out.pop("scores")
        del out["support"]
        return {**out, "score": scores[:, 0] if self.K == 1 else scores}

    def _uniforms(self, g: int, n: int) -> np.ndarray:
        """The draws of rows g .. g+n-1 (within one stream block)."""
        return uniforms(self.seed, g, g + n, [0], self.block_size)[:, 0]

    def score_rows(self, X, xsq, lo, hi, *, start=None) -> np.ndarray:
        """The speculative pass over rows ``lo:hi`` of a round starting at ``start`` (default
        ``n_seen``): column 0 the kernel each row draws under the current weights, the others
        that kernel's scores against its support vectors (a shard's part of a row-split round)."""
        g = (self.n_seen if start is None else start) + lo
        Xr = dense_rows(X[lo:hi])
        guess, pre = np.empty(hi - lo, dtype=np.int64), np.empty((hi - lo, self.K))
        _oks.speculate(Xr, self._uniforms(g, hi - lo), self.logw, self.delta, self._views(), self._store(), guess, pre)
        return np.column_stack([guess.astype(np.float64), pre])

    def _recurrence(self, Xb, yb, guess_pre, g, out) -> None:
        """The sequential pass over one block from global row g, given the speculative pass."""
        self._reserve(len(Xb))
        first_row = self.n_rows
        rows = OKSRows(
            dense_rows(Xb),
            np.ascontiguousarray(yb, dtype=np.float64),
            self._uniforms(g, len(Xb)),
            guess_pre[:, 0].astype(np.int64),
            np.ascontiguousarray(guess_pre[:, 1:]),
        )
        params = OKSParams(
            self.delta, self.eta, self.lam, ALGORITHMS[self.algorithm], _oks.LOSS_CODES.get(self.loss, _oks.HINGE)
        )  # Algorithm 2 ("mistake") has no loss function
        trace = OKSTrace(
            out["kernel"],
            out["mistakes"],
            out["loss"],
            out["scores"],
            out["support"],
            self.kernel_mistakes,
            self.kernel_updates,
        )
        self.n_rows = _oks.oks_block(rows, self.logw, params, self._views(), self._store(), self.n_rows, trace)
        if not (np.isfinite(self.logw).any() and np.isfinite(out["scores"]).all()):
            raise OverflowError(
                f"OKS diverged: a score or every weight stopped being finite by row {g + len(Xb)} "
                f"(λ = {self.lam:g}); lower the step lam (or scale the targets)"
            )
        self._added = first_row  # the block's support vectors are the store's rows from here on

    # --- prediction ------------------------------------------------------------------------
    def kernel_scores(self, X: np.ndarray, kernels=None) -> np.ndarray:
        """Scores of the given kernels (default all): (n, len(kernels)) for one coefficient
        column, else (n, len(kernels), K)."""
        X = dense_rows(X)
        kernels = range(len(self.nk)) if kernels is None else kernels
        out = np.empty((len(X), len(kernels), self.K))
        part = np.empty((len(X), self.K))
        for j, k in enumerate(kernels):
            _oks.kernel_block_scores(X, int(k), self._views(), self._store(), part)
            out[:, j] = part
        return out[:, :, 0] if self.K == 1 else out

    def _views(self) -> KernelViews:
        return KernelViews(self.kinds, self.param, self.norm, self.cols, self.col_ptr)

    def _store(self) -> Expansions:
        """The support-vector store as it is now (``_reserve`` may reallocate it)."""
        return Expansions(self.P, self.coef, self.kidx, self.nk)

    def __setstate__(self, state):
        self.__dict__.update(writable(state))  # unpickled arrays may be read-only (joblib memory-maps them)

    # --- state -----------------------------------------------------------------------------
    def state(self) -> tuple[dict, dict]:
        """Numeric arrays and JSON-able scalars; a support vector's kernel is kept as ``owner``
        (the per-kernel lists are rebuilt from it: rows are stored in the order they came)."""
        owner = np.empty(self.n_rows, dtype=np.int64)
        for k in range(len(self.nk)):
            owner[self.kidx[k, : self.nk[k]]] = k
        arrays = {
            "sv": self.P[: self.n_rows].copy(),
            "coef": self.coef[: self.n_rows].copy(),
            "owner": owner,
            "w": self.q,
            "logw": self.logw.copy(),
            "kernel_mistakes": self.kernel_mistakes.copy(),
            "kernel_updates": self.kernel_updates.copy(),
            "kernel_ids": self.kernel_ids.copy(),
        }
        scalars = {
            "engine": self.ENGINE,
            "n_features": self.n_features,
            "n_classes": self.K,
            "algorithm": self.algorithm,
            "loss": self.loss,
            "lam": self.lam,
            "seed": self.seed,
            "block_size": self.block_size,
            "delta": self.delta,
            "eta": self.eta,
            "n_seen": self.n_seen,
            "n_mistakes": self.n_mistakes,
        }
        return arrays, scalars

    @classmethod
    def from_state(cls, program, arrays: dict, scalars: dict) -> OKSEngine:
        e = cls(
            program,
            scalars["n_features"],
            n_classes=scalars["n_classes"],
            algorithm=scalars["algorithm"],
            loss=scalars["loss"],
            lam=scalars["lam"],
            seed=scalars["seed"],
            block_size=scalars["block_size"],
            delta=scalars["delta"],
            eta=scalars["eta"],
        )
        m = program.m
        owner = np.asarray(arrays["owner"], dtype=np.int64)
        sv, coef = np.asarray(arrays["sv"], dtype=np.float64), np.asarray(arrays["coef"], dtype=np.float64)
        if (
            sv.shape != (len(owner), e.n_features)
            or coef.shape != (len(owner), e.K)
            or (len(owner) and (owner.min() < 0 or owner.max() >= m))
            or np.shape(arrays["logw"]) != (m,)
        ):
            raise ValueError(
                f"the OKS state's arrays do not fit together (sv {sv.shape}, coef {coef.shape}, "
                f"{len(owner)} owners, {m} kernels)"
            )
        e.n_rows = len(owner)
        e.P, e.coef = sv.copy(), coef.copy()
        e.nk = np.bincount(owner, minlength=m).astype(np.int64)
        e.kidx = np.zeros((m, max(int(e.nk.max(initial=0)), 1)), dtype=np.int64)
        for k in range(m):
            rows = np.flatnonzero(owner == k)
            e.kidx[k, : len(rows)] = rows
        e.logw = np.asarray(arrays["logw"], dtype=np.float64).copy()
        e.kernel_mistakes = np.asarray(arrays["kernel_mistakes"], dtype=np.int64).copy()
        e.kernel_updates = np.asarray(arrays["kernel_updates"], dtype=np.int64).copy()
        e.n_seen, e.n_mistakes = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        return e

    # --- a round scored elsewhere (the row-split rounds of omkl_dist.distributed) ------------
    @property
    def n_classes(self) -> int:
        return self.K

    def learn_scored(self, X, xsq, y, guess_pre):
        """The recurrence of a round starting at ``n_seen`` over rows whose speculative pass ran
        beforehand (:meth:`score_rows`, in parts on the shards): ``(scores, score, mistakes, coef)``
        with ``coef`` (n, 1 + K), column 0 the new support vector's kernel + 1 (0: none)."""
        n = len(y)
        out = _outputs(n, self.K)
        self._recurrence(X, y, guess_pre, self.n_seen, out)
        coef = np.zeros((n, 1 + self.K))
        rows = np.flatnonzero(out["support"])  # in order: the store's rows from _added on
        coef[rows, 0] = out["kernel"][rows] + 1
        coef[rows, 1:] = self.coef[self._added : self.n_rows]
        scores = out["scores"]
        return scores, scores[:, 0] if self.K == 1 else scores, out["mistakes"], coef

    def append_support(self, X, kernels, coef) -> None:
        """Add support vectors in order: rows ``X``, each one's kernel and coefficients (another
        process's new ones, e.g. a round learnt on another shard)."""
        self._reserve(len(X))
        for x, k, c in zip(X, kernels, coef, strict=True):
            self.P[self.n_rows] = x
            self.coef[self.n_rows] = c
            self.kidx[k, self.nk[k]] = self.n_rows
            self.nk[k] += 1
            self.n_rows += 1
