"""What the kernel selectors of the OKS paper's comparison share: the 10 % validation split, an SVM on
one precomputed kernel with C tuned on that split, and the single-kernel classifier they return.

The paper (Yang et al. 2012) tunes C (and λ, β) "in a range (e.g. 2^[-10:10] for C, λ and
[0.1:0.04:0.9] for β) on a validation data set, which is a 10 % random sample from the training
data"; the SVM is LibSVM, here scikit-learn's ``SVC(kernel="precomputed")`` (LibSVM inside).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.svm import SVC

from ..._validation import check_array, check_feature_names, feature_names, resolve_seed
from ...kernels import KernelPool, make_pool
from .._batch import AcceptsSparse
from .._progress import Progress

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ...kernels.specs import KernelSpec
    from .._batch import KernelSpecLike

C_GRID = tuple(2.0**e for e in range(-10, 11))
VALIDATION_FRACTION = 0.1


def validation_split(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, validation rows): a seeded 10 % sample for validation (at least one row)."""
    order = np.random.default_rng([int(seed), 10]).permutation(n_rows)
    n_val = max(1, int(round(VALIDATION_FRACTION * n_rows)))
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def gram(spec: KernelSpec, A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """κ(A, B) of one kernel (on its view), (nA, nB)."""
    K: np.ndarray = KernelPool((spec,)).evaluate(A, B)[0]
    return K


def tune_svm(
    K_train: np.ndarray,
    y_train: np.ndarray,
    K_val: np.ndarray,
    y_val: np.ndarray,
    c_grid: Sequence[float] = C_GRID,
    progress: Callable[[str], None] | None = None,
) -> tuple[float, float]:
    """(best C, its validation accuracy) of ``SVC(kernel="precomputed")`` over ``c_grid``; the
    first best (smallest C) on ties; ``progress`` (a :class:`~.._progress.Progress`) told each C."""
    best_c, best_acc = c_grid[0], -1.0
    for i, C in enumerate(c_grid):
        acc = float(np.mean(SVC(kernel="precomputed", C=C).fit(K_train, y_train).predict(K_val) == y_val))
        if acc > best_acc:
            best_c, best_acc = C, acc
        if progress is not None:
            progress(f"C {i + 1}/{len(c_grid)} ({C:g}) on {len(y_train):,} rows: validation accuracy {acc:.4f}")
    return best_c, best_acc


def kernel_validation_task(
    spec: KernelSpec,
    X: np.ndarray,
    y: np.ndarray,
    train: np.ndarray,
    val: np.ndarray,
    c_grid: Sequence[float] = C_GRID,
    progress: Callable[[str], None] | None = None,
) -> tuple[float, float]:
    """One kernel's (best C, validation accuracy): a pure function, run in-process or as a Dask task."""
    K = gram(spec, X[train])
    K_val = gram(spec, X[val], X[train])
    return tune_svm(K, y[train], K_val, y[val], c_grid, progress)


class WrapsModel:
    """``predict``/``decision_function`` of a selector whose classifier is the fitted ``model_``."""

    model_: Any  # the wrapped fitted classifier (an OMKC, a KernelPerceptron, ...)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        self._check_fitted()
        scores: NDArray[np.float64] = self.model_.decision_function(self._unnamed(X))
        return scores

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        self._check_fitted()
        labels: NDArray[Any] = self.model_.predict(self._unnamed(X))
        return labels

    def _unnamed(self, X: ArrayLike) -> ArrayLike:
        """X's names checked against the selector's (``model_`` was fitted on the checked array):
        then its values alone."""
        check_feature_names(X, self, reset=False)
        return X.to_numpy() if feature_names(X) is not None else X  # type: ignore[union-attr]

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")


class SingleKernelSVM(AcceptsSparse, ClassifierMixin, BaseEstimator):
    """Base of the selectors that end in an SVM on one kernel: subclasses pick the kernel
    (``_select(X, y, train, val) -> kernel index``); then C is tuned on the validation split and
    the SVM trained on the whole training set.

    Fitted attributes: ``kernel_pool_``, ``selected_kernel_``, ``selected_kernel_name_``, ``C_``,
    ``validation_accuracy_`` (of the tuned C), ``selection_seconds_``, ``svm_seconds_`` (C tuning and
    the final SVM), ``classes_``, ``svm_`` (the SVC), ``train_X_``.
    """

    # parameters every subclass's ``__init__`` stores, and learned state (declared for the type checker)
    kernels: KernelSpecLike
    feature_groups: dict[str, Any] | None
    random_state: int | None
    verbose: int
    kernel_pool_: KernelPool
    classes_: NDArray[Any]
    selected_kernel_: int
    n_features_in_: int
    train_X_: np.ndarray
    svm_: Any  # a fitted sklearn.svm.SVC (scikit-learn is untyped)

    def _pool(self) -> KernelPool:
        pool = make_pool(self.kernels)
        return pool.with_groups(self.feature_groups) if pool.has_views else pool

    def _select(self, X: np.ndarray, y: NDArray[Any], train: np.ndarray, val: np.ndarray) -> int:
        raise NotImplementedError

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X = check_array(X, owner=type(self).__name__, spread_warning=True, estimator=self, reset=True)
        y = np.asarray(y)
        if y.shape != (len(X),):
            raise ValueError(f"{type(self).__name__}: y must have one label per row of X ({len(X)}), got {y.shape}")
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__}: y has {len(self.classes_)} class; a classifier needs two")
        self.kernel_pool_ = self._pool()
        self.n_features_in_ = X.shape[1]
        train, val = validation_split(len(X), resolve_seed(type(self).__name__, self.random_state, default=0))
        self._progress = Progress(type(self).__name__, self.verbose)  # (this fit's only: deleted below)
        try:
            t0 = time.perf_counter()
            self.selected_kernel_ = int(self._select(X, y, train, val))
            t1 = time.perf_counter()
            spec = self.kernel_pool_[self.selected_kernel_]
            self.selected_kernel_name_ = spec.name
            self._progress(f"selected {spec.name}")
            self.C_, self.validation_accuracy_ = self._tune(spec, X, y, train, val)
            self.train_X_ = X  # a precomputed-kernel SVC takes κ(new rows, every training row)
            self._progress(f"C = {self.C_:g}; training the SVM on all {len(X):,} rows")
            self.svm_ = SVC(kernel="precomputed", C=self.C_).fit(gram(spec, X), y)
        finally:
            del self._progress
        self.selection_seconds_, self.svm_seconds_ = t1 - t0, time.perf_counter() - t1
        return self

    def _tune(
        self, spec: KernelSpec, X: np.ndarray, y: NDArray[Any], train: np.ndarray, val: np.ndarray
    ) -> tuple[float, float]:
        return kernel_validation_task(spec, X, y, train, val, progress=self._progress)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        self._check_fitted()
        X = check_array(X, owner=type(self).__name__, n_features=self.n_features_in_, estimator=self)
        scores: NDArray[np.float64] = self.svm_.decision_function(
            gram(self.kernel_pool_[self.selected_kernel_], X, self.train_X_)
        )
        return scores

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        self._check_fitted()
        X = check_array(X, owner=type(self).__name__, n_features=self.n_features_in_, estimator=self)
        labels: NDArray[Any] = self.svm_.predict(gram(self.kernel_pool_[self.selected_kernel_], X, self.train_X_))
        return labels

    def _check_fitted(self) -> None:
        if not hasattr(self, "svm_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
