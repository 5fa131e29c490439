"""OKS-SVM and SOM-SVM: an online selector picks the kernel (the largest weight of q_T), then an SVM
with C tuned on the 10 % validation split learns on it (the OKS paper's "online+batch" columns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..oks import OKS
from ._common import SingleKernelSVM
from .tuned import BETA_GRID, SOM

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from .._batch import KernelSpecLike


class OKSSVM(SingleKernelSVM):
    """OKS selects, an SVM learns.

    Parameters: ``kernels``, ``feature_groups``, and OKS's ``loss``, ``lam``, ``delta``, ``eta``,
    ``n_epochs``, ``block_size``, ``random_state`` (OKS's draws and the validation split), ``verbose``
    (1: progress lines on standard error, at most one every 5 s).
    Attributes: ``selector_`` (the fitted OKS) and those of :class:`~._common.SingleKernelSVM`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> round(OKSSVM(kernels="linear;gaussian:0.25,1").fit(X, y).score(X, y), 2) >= 0.95
    True
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        loss: str = "mistake",
        lam: float | str = 1.0,
        delta: float | Sequence[float] = (0.5, 0.2),
        eta: float | None = None,
        n_epochs: int = 2,
        block_size: int = 256,
        random_state: int | None = 0,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.loss = loss
        self.lam = lam
        self.delta = delta
        self.eta = eta
        self.n_epochs = n_epochs
        self.block_size = block_size
        self.random_state = random_state
        self.verbose = verbose

    def _select(self, X: np.ndarray, y: NDArray[Any], train: np.ndarray, val: np.ndarray) -> int:
        self.selector_ = OKS(
            kernels=self.kernel_pool_,
            loss=self.loss,
            lam=self.lam,
            delta=self.delta,
            eta=self.eta,
            n_epochs=self.n_epochs,
            block_size=self.block_size,
            shuffle=False,  # the rows in their given order, as the paper's protocol (a random split) has them
            random_state=self.random_state,
        ).fit(X, y)
        return self.selector_.selected_kernel_


class SOMSVM(SingleKernelSVM):
    """SOM (the stochastic OMKC, β tuned on validation, two epochs) selects, an SVM learns.

    Parameters: ``kernels``, ``feature_groups``, ``betas``, ``n_epochs``, ``block_size``,
    ``random_state``, ``verbose`` (1: progress lines on standard error, at most one every 5 s).
    Attributes: ``selector_`` (the fitted SOM) and those of :class:`~._common.SingleKernelSVM`.
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        betas: Sequence[float] = BETA_GRID,
        n_epochs: int = 2,
        block_size: int = 256,
        random_state: int | None = 0,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.betas = betas
        self.n_epochs = n_epochs
        self.block_size = block_size
        self.random_state = random_state
        self.verbose = verbose

    def _select(self, X: np.ndarray, y: NDArray[Any], train: np.ndarray, val: np.ndarray) -> int:
        self.selector_ = SOM(
            kernels=self.kernel_pool_,
            betas=self.betas,
            n_epochs=self.n_epochs,
            block_size=self.block_size,
            random_state=self.random_state,
        ).fit(X, y)
        return self.selector_.selected_kernel_
