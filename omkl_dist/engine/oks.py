"""OKSEngine: Online Kernel Selection over a stream, in blocks, in-process.

Each block runs two compiled passes (:mod:`omkl_dist.learners.oks`): a parallel one that draws
every row's kernel under the block's first weights and scores it against that kernel's support
vectors from before the block, then the sequential recurrence, which redraws each row under the
weights it has reached, reuses the speculative score when the draw agrees and computes it when it
does not, and adds the block's own support vectors. The model is the naive one-row-at-a-time run's
bit for bit, for any block size; the block size only fixes which random stream a row's draw comes
from (``U[t]``, the (t mod B)-th uniform of the stream seeded by (seed, t // B, 0), see
:mod:`omkl_dist.core.randomness`), so the same seed and block size give the same model.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.pool import writable
from ..core.randomness import uniforms
from ..learners import oks as _oks

ALGORITHMS = {"classification": _oks.MISTAKE, "general": _oks.GENERAL}


def default_eta(n_kernels: int, delta: float, horizon: int) -> float:
    """Theorem 3's step for the weights, η = sqrt(2 (1 − δ) ln m / (m T))."""
    if n_kernels < 2 or horizon < 1:
        return 0.0
    return math.sqrt(2.0 * (1.0 - delta) * math.log(n_kernels) / (n_kernels * horizon))


def compile_views(pool, n_features: int):
    """Kernel kinds, parameters and each kernel's columns (flattened, with offsets) for the loops."""
    kinds, param, cols, ptr = [], [], [], [0]
    for spec in pool:
        kinds.append(_oks.KIND_CODES[spec.kind])
        param.append({"polynomial": lambda s: float(s.p), "gaussian": lambda s: 1.0 / (2.0 * s.sigma ** 2),
                      "laplacian": lambda s: 1.0 / s.sigma, "chi2": lambda s: s.gamma}.get(spec.kind,
                                                                                           lambda s: 0.0)(spec))
        view = range(n_features) if spec.columns is None else spec.columns
        if spec.columns is not None and spec.columns[-1] >= n_features:
            raise ValueError(f"kernel {spec.name} sees column {spec.columns[-1]}, but the data has {n_features}")
        cols.extend(view)
        ptr.append(len(cols))
    return (np.array(kinds, dtype=np.int64), np.array(param), np.array(cols, dtype=np.int64),
            np.array(ptr, dtype=np.int64))


class OKSEngine:
    """The OKS model and its learning loop.

    Parameters
    ----------
    pool : KernelPool with every feature group resolved
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

    COMBINER_ARRAYS = ("logw",)
    ENGINE = "oks"

    def __init__(self, pool, n_features, *, n_classes, algorithm, loss, lam, seed, block_size, delta=0.5,
                 eta=0.0):
        self.pool = pool
        self.n_features = int(n_features)
        self.K = int(n_classes)
        self.algorithm, self.loss, self.lam = algorithm, loss, float(lam)
        self.seed, self.block_size = int(seed), int(block_size)
        self.delta, self.eta = float(delta), float(eta)
        self.kinds, self.param, self.cols, self.col_ptr = compile_views(pool, self.n_features)
        m = len(pool)
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
            self.P = np.concatenate([self.P[:self.n_rows], np.empty((cap - self.n_rows, self.n_features))])
            self.coef = np.concatenate([self.coef[:self.n_rows], np.empty((cap - self.n_rows, self.K))])
        need_k = int(self.nk.max(initial=0)) + rows
        if need_k > self.kidx.shape[1]:
            cap = max(need_k, 2 * self.kidx.shape[1], 1024)
            grown = np.zeros((len(self.nk), cap), dtype=np.int64)
            grown[:, :self.kidx.shape[1]] = self.kidx
            self.kidx = grown

    def learn(self, X: np.ndarray, y: np.ndarray, *, keep_scores: bool = False) -> dict:
        """Run OKS over the rows in order. Returns per row ``mistakes`` (the drawn kernel erred),
        ``score`` (its scores, (n,) or (n, K)), ``kernel`` (the index drawn) and ``loss``."""
        n = len(X)
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        picked = np.empty(n, dtype=np.int64)
        wrong = np.empty(n, dtype=np.bool_)
        losses = np.empty(n)
        scores = np.empty((n, self.K))
        algo = ALGORITHMS[self.algorithm]
        loss = _oks.LOSS_CODES.get(self.loss, _oks.HINGE)  # Algorithm 2 ("mistake") has no loss function
        g, lo = self.n_seen, 0
        while lo < n:
            hi = min(n, lo + self.block_size - (g + lo) % self.block_size)  # to the end of the stream block
            U = uniforms(self.seed, g + lo, g + hi, [0], self.block_size)[:, 0]
            self._reserve(hi - lo)
            guess = np.empty(hi - lo, dtype=np.int64)
            pre = np.empty((hi - lo, self.K))
            Xb = X[lo:hi]
            _oks.speculate(Xb, U, self.logw, self.delta, self.kinds, self.param, self.cols, self.col_ptr, self.P,
                           self.coef, self.kidx, self.nk, guess, pre)
            self.n_rows = _oks.oks_block(
                Xb, y[lo:hi], U, guess, pre, self.logw, self.delta, self.eta, self.lam, algo, loss, self.kinds,
                self.param, self.cols, self.col_ptr, self.P, self.coef, self.kidx, self.nk, self.n_rows,
                picked[lo:hi], wrong[lo:hi], losses[lo:hi], scores[lo:hi], self.kernel_mistakes,
                self.kernel_updates)
            if not (np.isfinite(self.logw).any() and np.isfinite(scores[lo:hi]).all()):
                raise OverflowError(f"OKS diverged: a score or every weight stopped being finite by row {self.n_seen + hi} "
                                    f"(λ = {self.lam:g}); lower the step lam (or scale the targets)")
            lo = hi
        self.n_seen += n
        self.n_mistakes += int(wrong.sum())
        return {"mistakes": wrong, "score": scores[:, 0] if self.K == 1 else scores, "kernel": picked,
                "loss": losses}

    # --- prediction ------------------------------------------------------------------------
    def kernel_scores(self, X: np.ndarray, kernels=None) -> np.ndarray:
        """Scores of the given kernels (default all): (n, len(kernels)) for one coefficient
        column, else (n, len(kernels), K)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        kernels = range(len(self.nk)) if kernels is None else kernels
        out = np.empty((len(X), len(kernels), self.K))
        part = np.empty((len(X), self.K))
        for j, k in enumerate(kernels):
            _oks.kernel_block_scores(X, int(k), self.kinds, self.param, self.cols, self.col_ptr, self.P,
                                     self.coef, self.kidx, self.nk, part)
            out[:, j] = part
        return out[:, :, 0] if self.K == 1 else out

    def __setstate__(self, state):
        self.__dict__.update(writable(state))  # unpickled arrays may be read-only (joblib memory-maps them)

    # --- state -----------------------------------------------------------------------------
    def state(self) -> tuple[dict, dict]:
        """Numeric arrays and JSON-able scalars; a support vector's kernel is kept as ``owner``
        (the per-kernel lists are rebuilt from it: rows are stored in the order they came)."""
        owner = np.empty(self.n_rows, dtype=np.int64)
        for k in range(len(self.nk)):
            owner[self.kidx[k, :self.nk[k]]] = k
        arrays = {"sv": self.P[:self.n_rows].copy(), "coef": self.coef[:self.n_rows].copy(), "owner": owner,
                  "logw": self.logw.copy(), "kernel_mistakes": self.kernel_mistakes.copy(),
                  "kernel_updates": self.kernel_updates.copy(), "kernel_ids": self.kernel_ids.copy()}
        scalars = {"engine": self.ENGINE, "n_features": self.n_features, "n_classes": self.K,
                   "algorithm": self.algorithm, "loss": self.loss, "lam": self.lam, "seed": self.seed,
                   "block_size": self.block_size, "delta": self.delta, "eta": self.eta, "n_seen": self.n_seen,
                   "n_mistakes": self.n_mistakes}
        return arrays, scalars

    @classmethod
    def from_state(cls, pool, arrays: dict, scalars: dict) -> OKSEngine:
        e = cls(pool, scalars["n_features"], n_classes=scalars["n_classes"], algorithm=scalars["algorithm"],
                loss=scalars["loss"], lam=scalars["lam"], seed=scalars["seed"], block_size=scalars["block_size"],
                delta=scalars["delta"], eta=scalars["eta"])
        m = len(pool)
        owner = np.asarray(arrays["owner"], dtype=np.int64)
        sv, coef = np.asarray(arrays["sv"], dtype=np.float64), np.asarray(arrays["coef"], dtype=np.float64)
        if sv.shape != (len(owner), e.n_features) or coef.shape != (len(owner), e.K) or (
                len(owner) and (owner.min() < 0 or owner.max() >= m)) or np.shape(arrays["logw"]) != (m,):
            raise ValueError(f"the OKS state's arrays do not fit together (sv {sv.shape}, coef {coef.shape}, "
                             f"{len(owner)} owners, {m} kernels)")
        e.n_rows = len(owner)
        e.P, e.coef = sv.copy(), coef.copy()
        e.nk = np.bincount(owner, minlength=m).astype(np.int64)
        e.kidx = np.zeros((m, max(int(e.nk.max(initial=0)), 1)), dtype=np.int64)
        for k in range(m):
            rows = np.flatnonzero(owner == k)
            e.kidx[k, :len(rows)] = rows
        e.logw = np.asarray(arrays["logw"], dtype=np.float64).copy()
        e.kernel_mistakes = np.asarray(arrays["kernel_mistakes"], dtype=np.int64).copy()
        e.kernel_updates = np.asarray(arrays["kernel_updates"], dtype=np.int64).copy()
        e.n_seen, e.n_mistakes = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        return e
