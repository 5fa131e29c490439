"""The baseline batch MKL has to beat: one gaussian (RBF) SVM with C and the width tuned by a grid.

A user without MKL would grid-search an RBF ``SVC`` over C and γ by cross-validation on the training
rows; :class:`TunedSVC` is that, on the same machinery as the MKL estimators (the widths are a kernel
pool, γ = 1/(2σ²); the same folds, one-vs-one pairs, prediction and saved state), so a report can
put what one tuned kernel gets beside them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np

from ..._validation import StrOptions
from .._batch import KERNEL_SPEC
from ._base import (
    C_CONSTRAINT,
    NORMALIZATIONS,
    POSITIVE,
    SEED_CONSTRAINT,
    VERBOSE_CONSTRAINT,
    BatchMKL,
    Solution,
    solve_svm,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .._batch import KernelSpecLike

__all__ = ["TunedSVC", "SVC_KERNELS", "SVC_C_GRID"]

# γ = 2^-15, 2^-13, ..., 2^3 (LIBSVM's guide's grid), as widths σ = 2^7 ... 2^-2
SVC_KERNELS = "gaussian:" + ",".join(str(2.0**e) for e in range(-2, 8))
# C = 2^-5, 2^-3, ..., 2^15 (LIBSVM's guide's grid)
SVC_C_GRID = tuple(2.0**e for e in range(-5, 16, 2))


class TunedSVC(BatchMKL):
    """One kernel SVM, its kernel (a gaussian width) and C chosen by stratified 3-fold
    cross-validation on the training rows -- the single-kernel baseline of the batch MKL estimators.

    Every (C, kernel) of the grid is scored on the folds (``random_state`` draws them); the most
    accurate (the first in C-major, pool order on ties) is trained on all training rows. Multi-class:
    one-vs-one, each pair tuned on its own rows.

    Parameters
    ----------
    C : float > 0 or "auto", default "auto"
        A given C (only the kernel is chosen), or "auto": 2^-5, 2^-3, ..., 2^15.
    kernels : str or KernelPool, default gaussian σ = 2^-2 ... 2^7 (γ = 2^3 ... 2^-15)
        The candidate kernels; one is chosen per pair.
    kernel_normalization : {"trace", "diagonal", "none"}, default "diagonal"
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL` (no effect on gaussians).
    svm_tol : float > 0, default 1e-3
    random_state : int >= 0 or None, default 0
        Seeds the cross-validation folds.
    verbose : int >= 0, default 0
        1: progress lines on standard error (each cross-validation fold, the settings chosen, the
        final fit of each one-vs-one pair), at most one every 5 s.

    Attributes
    ----------
    selected_kernels_ : list of str
        The kernel of each pair's SVM.
    C_ : ndarray, (n_pairs,)
    cv_scores_ : ndarray, (n_pairs, n_C · n_kernels)
        Cross-validated accuracy of every (C, kernel), C-major.
    weights_, pair_weights_ (one-hot), kernel_scales_, kernel_counts_, classes_, pairs_, kernel_names_,
    support_vectors_, dual_coef_, intercept_, n_features_in_
        As :class:`~omkl_dist.algorithms.mkl.SimpleMKL`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(90, 2)); y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, 1, -1)
    >>> model = TunedSVC().fit(X, y)
    >>> model.selected_kernels_[0].startswith("gaussian"), bool(model.score(X, y) > 0.9)
    (True, True)
    """

    _STATE_JSON = (*BatchMKL._STATE_JSON, "selected_kernels_")
    _C_GRID: ClassVar[tuple[float, ...]] = SVC_C_GRID
    _unit_test_params: ClassVar[tuple[dict[str, Any], ...]] = ({"kernels": "gaussian:0.5,2", "C": 1.0},)

    _parameter_constraints: dict[str, Any] = {
        "C": C_CONSTRAINT,
        "kernels": [KERNEL_SPEC],
        "kernel_normalization": [StrOptions(NORMALIZATIONS)],
        "svm_tol": [POSITIVE],
        "random_state": SEED_CONSTRAINT,
        "verbose": VERBOSE_CONSTRAINT,
    }

    def __init__(
        self,
        *,
        C: float | str = "auto",
        kernels: KernelSpecLike = SVC_KERNELS,
        kernel_normalization: str = "diagonal",
        svm_tol: float = 1e-3,
        random_state: int | None = 0,
        verbose: int = 0,
    ) -> None:
        self.C = C
        self.kernels = kernels
        self.kernel_normalization = kernel_normalization
        self.svm_tol = svm_tol
        self.random_state = random_state
        self.verbose = verbose

    def _candidates(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        return [{**c, "kernel": m} for c in super()._candidates(p) for m in range(len(p["pool"]))]

    def _solve(self, grams: np.ndarray, y: np.ndarray, p: dict[str, Any]) -> Solution:
        weights = np.zeros(len(grams))
        weights[p["kernel"]] = 1.0
        sol = solve_svm(grams, weights, y, p["C"], p["svm_tol"])
        return Solution(weights, sol, 1, 0.0, "single kernel", [sol.objective])

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Choose C and the kernel per one-vs-one pair, then train each pair's SVM on all its rows."""
        super().fit(X, y)
        names = self.kernel_names_
        self.selected_kernels_ = [names[int(np.argmax(w))] for w in self.pair_weights_]
        return self
