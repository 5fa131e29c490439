"""MuTron: a kernel Perceptron per kernel, the best on the 10 % validation split is kept (the OKS
paper's online cross-validation baseline, one epoch). Every kernel's Perceptron learns the
training part in one pass of OMKC (D, U) (every kernel's own Perceptron updates on its own
mistakes; the combination plays no part here), the kernel whose classifier is most accurate on the
validation rows is chosen, and its Perceptron then goes on over the validation rows too (so it has
seen every training row).
The paper adds a tuned step size to the Perceptron; a Perceptron's decisions do not depend on it
(it scales every coefficient alike), so there is none here."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from ..._validation import check_array, resolve_seed
from ...kernels import make_pool
from .._batch import AcceptsSparse
from ..baselines.perceptron import KernelPerceptron
from ..labels import class_codes
from ..omkc import OMKC
from ._common import WrapsModel, validation_split

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .._batch import KernelSpecLike


class MuTron(WrapsModel, AcceptsSparse, ClassifierMixin, BaseEstimator):
    """Choose the kernel by validating a Perceptron on each.

    Parameters: ``kernels``, ``feature_groups``, ``block_size``, ``random_state`` (the split).
    Attributes: ``validation_scores_`` (per kernel), ``selected_kernel_``, ``selected_kernel_name_``,
    ``model_`` (the chosen kernel's Perceptron), ``classes_``, ``fit_seconds_``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> MuTron(kernels="linear;gaussian:0.25,1").fit(X, y).selected_kernel_name_
    'gaussian(sigma=0.25)'
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        block_size: int = 256,
        random_state: int | None = 0,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.block_size = block_size
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        t0 = time.perf_counter()
        X, y = check_array(X, owner=type(self).__name__, estimator=self, reset=True), np.asarray(y)
        pool = make_pool(self.kernels)
        self.kernel_pool_ = pool.with_groups(self.feature_groups) if pool.has_views else pool
        train, val = validation_split(len(X), resolve_seed(type(self).__name__, self.random_state, default=0))
        classes = np.unique(y)
        # in the given order: the chosen kernel's Perceptron below repeats its updates
        every = OMKC(
            kernels=self.kernel_pool_,
            update="D",
            combination="U",
            block_size=self.block_size,
            n_epochs=1,
            shuffle=False,
        )
        every.fit(X[train], y[train])
        F = every.engine_.kernel_scores(X[val])  # (n, m) binary, (n, m, K) multi-class
        codes = class_codes(y[val], classes, multiclass=True)  # class indices
        if F.ndim == 2:
            right = np.where(F >= 0.0, 1, 0) == codes[:, None]
        else:
            right = np.argmax(F, axis=2) == codes[:, None]
        self.validation_scores_ = right.mean(axis=0)
        self.selected_kernel_ = int(np.argmax(self.validation_scores_))
        self.selected_kernel_name_ = self.kernel_pool_.names[self.selected_kernel_]
        # the chosen kernel's Perceptron, learnt again alone (the same updates), then on the validation rows
        self.model_ = KernelPerceptron(kernel=self.kernel_pool_[self.selected_kernel_], block_size=self.block_size)
        self.model_.partial_fit(X[train], y[train], classes=classes)
        self.model_.partial_fit(X[val], y[val])
        self.classes_ = self.model_.classes_
        self.n_features_in_ = X.shape[1]
        self.fit_seconds_ = time.perf_counter() - t0
        return self
