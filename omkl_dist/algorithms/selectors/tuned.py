"""OM-1 and SOM of the OKS paper's comparison: OMKC (Jin, Hoi & Yang 2010; Hoi et al. 2013) with its
discount β tuned over [0.1 : 0.04 : 0.9] on the 10 % validation split, then learnt on every
training row. OM-1 is the deterministic OMKC (D,D), one epoch; SOM the stochastic one (S,S),
two epochs (the paper runs "OKS, SOM and OM-2 with two epochs", "MuTron and OM-1 with one").
The kernel they return is the one with the largest weight."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from ..._validation import check_array, resolve_seed
from ...kernels import make_pool
from .._batch import AcceptsSparse
from ..omkc import OMKC
from ._common import WrapsModel, validation_split

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .._batch import KernelSpecLike

BETA_GRID = tuple(round(0.1 + 0.04 * i, 2) for i in range(21))


class TunedOMKC(WrapsModel, AcceptsSparse, ClassifierMixin, BaseEstimator):
    """OMKC with β chosen on a validation split; ``update``/``combination`` name the variant.

    Parameters
    ----------
    kernels, feature_groups : the kernel pool and the columns of its named feature groups
    update, combination : OMKC's variant, "D" or "S" each
    n_epochs : passes over the training rows
    betas : the grid of β (default 0.1, 0.14, ..., 0.9)
    block_size, random_state : OMKC's random streams; the seed also draws the validation split

    Attributes
    ----------
    beta_, validation_scores_ (per β), model_ (the OMKC learnt on every row), kernel_weights_,
    selected_kernel_, selected_kernel_name_, classes_, fit_seconds_
    """

    selected_kernel_: int

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        update: str = "D",
        combination: str = "D",
        n_epochs: int = 1,
        betas: Sequence[float] = BETA_GRID,
        block_size: int = 256,
        random_state: int | None = 0,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.update = update
        self.combination = combination
        self.n_epochs = n_epochs
        self.betas = betas
        self.block_size = block_size
        self.random_state = random_state

    def _omkc(self, beta: float) -> OMKC:
        pool = make_pool(self.kernels)
        pool = pool.with_groups(self.feature_groups) if pool.has_views else pool
        return OMKC(
            kernels=pool,
            update=self.update,
            combination=self.combination,
            beta=beta,
            block_size=self.block_size,
            random_state=self.random_state,
        )

    def _learn(self, beta: float, X: np.ndarray, y: np.ndarray) -> OMKC:
        model = self._omkc(beta)
        classes = np.unique(y)
        for _ in range(self.n_epochs):
            model.partial_fit(X, y, classes=classes)
        return model

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        t0 = time.perf_counter()
        X, y = check_array(X, owner=type(self).__name__, spread_warning=True, estimator=self, reset=True), np.asarray(y)
        train, val = validation_split(len(X), resolve_seed(type(self).__name__, self.random_state, default=0))
        scores = [self._learn(beta, X[train], y[train]).score(X[val], y[val]) for beta in self.betas]
        self.validation_scores_ = dict(zip(self.betas, scores, strict=True))
        self.beta_ = self.betas[int(np.argmax(scores))]
        self.model_ = self._learn(self.beta_, X, y)
        self.classes_ = self.model_.classes_
        self.n_features_in_ = X.shape[1]
        self.kernel_pool_ = self.model_.kernel_pool_
        self.kernel_weights_ = self.model_.weights_
        self.selected_kernel_ = int(np.argmax(self.kernel_weights_))
        self.selected_kernel_name_ = self.kernel_pool_.names[self.selected_kernel_]
        self.fit_seconds_ = time.perf_counter() - t0
        return self


class OM1(TunedOMKC):
    """OM-1: OMKC (D,D), one epoch, β tuned on validation.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> OM1(kernels="linear;gaussian:0.5,2").fit(X, y).beta_ > 0
    True
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        n_epochs: int = 1,
        betas: Sequence[float] = BETA_GRID,
        block_size: int = 256,
        random_state: int | None = 0,
    ) -> None:
        super().__init__(
            kernels=kernels,
            feature_groups=feature_groups,
            update="D",
            combination="D",
            n_epochs=n_epochs,
            betas=betas,
            block_size=block_size,
            random_state=random_state,
        )


class SOM(TunedOMKC):
    """SOM: the stochastic OMKC (S,S), two epochs, β tuned on validation.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> model = SOM(kernels="linear;gaussian:0.5,2").fit(X, y)
    >>> model.selected_kernel_name_ in ("linear", "gaussian(sigma=0.5)", "gaussian(sigma=2)")
    True
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        n_epochs: int = 2,
        betas: Sequence[float] = BETA_GRID,
        block_size: int = 256,
        random_state: int | None = 0,
    ) -> None:
        super().__init__(
            kernels=kernels,
            feature_groups=feature_groups,
            update="S",
            combination="S",
            n_epochs=n_epochs,
            betas=betas,
            block_size=block_size,
            random_state=random_state,
        )
