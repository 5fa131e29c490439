"""NystromEngine: multi-kernel NOGD (Lu et al. 2016, Algorithm 2) on the explicit-feature engine's
machinery (:class:`~.features.FeatureEngine`: Hedge, shards, saved state, the cluster's rounds).

Per kernel (:mod:`omkl_dist.learners.nystrom`): a kernel predictor on a budget of B rows, switched
once, at its first positive loss with a full budget, to online gradient descent on its
``n_components`` Nyström features. Any kernel of a pool works (the Nyström map needs kernel values
only), so the default is the C++ toolbox's 16 kernels.

Exactness: each row's kernel values with a kernel's budget are computed in the compiled loop, row by
row, in feature order (:func:`~omkl_dist.learners.nystrom.chunk_values`), so a row added to the budget
inside a segment is seen by the next row exactly as one-row-at-a-time processing sees it, for any
block size and chunking. A segment's loop stops a kernel at its switch row; the engine decomposes
that kernel's Gram matrix (:func:`~omkl_dist.learners.nystrom.nystrom_start`, at most once per
kernel over the stream) and resumes it from that row. A shard owning some kernels does the same
for them, on the same bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..learners._budget import row_sq
from ..learners.nystrom import budget_gram, nystrom_rows, nystrom_scores, nystrom_start, shared_budgets
from .budget import _check_fits_in_memory as check_fits_in_memory  # (the budget engine's, same layer)
from .features import FeatureEngine

__all__ = ["NystromEngine"]


class NystromEngine(FeatureEngine):
    """Multi-kernel NOGD: per kernel a budget of ``budget`` rows, then ``n_components`` Nyström
    features and online gradient descent on the hinge loss; Hedge over the kernels.

    Attributes beyond the combiner's: ``sv_X`` (m, B, d) the budgets' rows (``sv_T`` the same
    transposed, rebuilt, never saved), ``sv_sq`` their squared norms, ``alpha`` (m, B K) their
    coefficients (class c of slot j at ``j K + c``), ``n_used`` rows per budget, ``switched``
    whether the kernel is on its Nyström features, ``MT`` (m, B, P) its map transposed and ``W``
    (m, K P) its weights (class c at ``W[k, c P : (c + 1) P]``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3)); y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    >>> e = NystromEngine("gaussian:0.5,1,2", 3, budget=30, n_components=10, seed=0, block_size=64)
    >>> out = e.learn(X, y)
    >>> e.switched.tolist(), e.W.shape, bool(out["mistakes"][200:].mean() < 0.35)
    ([True, True, True], (3, 10), True)
    """

    ENGINE = "nystrom"
    KERNEL_ARRAYS = ("sv_X", "sv_sq", "alpha", "n_used", "switched", "MT", "W")
    SCALARS = ("budget", "n_components")

    def __init__(
        self, program_or_pool, n_features: int, *, budget: int = 100, n_components: int = 20, **kwargs: Any
    ) -> None:
        super().__init__(program_or_pool, n_features, **kwargs)
        self.budget, self.n_components = int(budget), int(n_components)
        if not 1 <= self.n_components <= self.budget:
            raise ValueError(
                f"NOGD needs 1 <= n_components <= budget (a budget of B rows has B eigenpairs), got "
                f"n_components={n_components!r}, budget={budget!r}"
            )
        m, B, d, K, P = self.m, self.budget, self.n_features, self.n_classes, self.n_components
        check_fits_in_memory(m, 2 * B, d, K)  # the budget and its transpose
        self.sv_X = np.zeros((m, B, d))
        self.sv_T = np.zeros((m, d, B))
        self.sv_sq = np.zeros((m, B))
        self.alpha = np.zeros((m, B * K))
        self.n_used = np.zeros(m, dtype=np.int64)
        self.switched = np.zeros(m, dtype=np.bool_)
        self.MT = np.zeros((m, B, P))
        self.W = np.zeros((m, K * P))
        self._shared_of: tuple | None = None  # (the switched mask it was made for, shared_budgets)
        self._lane_costs: np.ndarray | None = None  # (see _costs)

    def _take(self, arrays: dict) -> None:
        super()._take(arrays)
        self.sv_T = np.ascontiguousarray(self.sv_X.transpose(0, 2, 1))
        self._shared_of = None

    def n_support(self) -> np.ndarray:
        """Rows in each kernel's budget."""
        return self.n_used.copy()

    def _kernels(self) -> tuple:
        return self.program.kinds, self.program.param, self.program.norm

    def _budget(self) -> tuple:
        return self.sv_X, self.sv_T, self.sv_sq, self.alpha, self.n_used, self.switched

    def _shared(self) -> tuple:
        """:func:`~omkl_dist.learners.nystrom.shared_budgets` of the switched kernels, made again only
        when a kernel switched (a switched kernel's budget and map are fixed)."""
        made = getattr(self, "_shared_of", None)  # (an engine pickled before it existed has none)
        if made is None or not np.array_equal(made[0], self.switched):
            shared = shared_budgets(self.sv_X, self.sv_sq, self.n_used, self.switched, self.MT)
            self._shared_of = (self.switched.copy(), shared)
        return self._shared_of[1]

    def _costs(self) -> np.ndarray:
        """The kernels' estimated times per row, which cut the threads' lanes (a hint, not state:
        an engine unpickled from before it existed starts from equal ones)."""
        if getattr(self, "_lane_costs", None) is None or len(self._lane_costs) != self.m:
            self._lane_costs = np.ones(self.m)
        return self._lane_costs

    def _segment(self, X, y, F, L) -> None:
        xsq, m = row_sq(X), self.m
        start, pending, stop = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.bool_), np.empty(m, dtype=np.int64)
        while True:
            nystrom_rows(
                X,
                xsq,
                y,
                start,
                pending,
                self._kernels(),
                self._budget(),
                self._shared(),
                self.W,
                self.eta,
                self.hedge_hinge,
                self.n_classes,
                F,
                L,
                self.kernel_mistakes,
                stop,
                self._costs(),
            )
            pending = stop < len(y)
            if not pending.any():
                return
            for k in np.flatnonzero(pending):
                self._switch(int(k))
            start = np.where(pending, stop, len(y))

    def _switch(self, k: int) -> None:
        """Kernel k (its budget full) to its Nyström features: the one eigendecomposition per kernel."""
        p = self.program
        G = budget_gram(p.kinds[k], p.param[k], p.norm[k], self.sv_X[k], self.sv_T[k], self.sv_sq[k])
        MT, W = nystrom_start(G, self.alpha[k].reshape(self.budget, self.n_classes), self.n_components)
        self.MT[k], self.W[k] = MT, W.reshape(-1)
        self.switched[k] = True

    def _scores(self, X) -> np.ndarray:
        out = np.empty((len(X), self.m * self.n_classes))
        nystrom_scores(X, row_sq(X), self._kernels(), self._budget(), self._shared(), self.W, self.n_classes, out)
        return out
