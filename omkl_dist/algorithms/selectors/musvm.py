"""MuSVM: an SVM per kernel, C tuned on the validation split; the kernel with the best validation
accuracy wins (the OKS paper's exhaustive baseline). The per-kernel fits are independent: with a
Dask ``client`` they run as parallel tasks, one per kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._common import C_GRID, SingleKernelSVM, kernel_validation_task

if TYPE_CHECKING:
    from distributed import Client
    from numpy.typing import NDArray

    from ...kernels.specs import KernelSpec
    from .._batch import KernelSpecLike


class MuSVM(SingleKernelSVM):
    """Choose the kernel by cross-validating an SVM on each.

    Parameters
    ----------
    kernels : str or list, default "omkc16"
    feature_groups : dict or None
        Columns of the named feature groups the kernels refer to.
    client : dask.distributed.Client or None
        Run the per-kernel SVMs as Dask tasks (None: in this process, one after the other).
    random_state : int, default 0
        Seed of the 10 % validation split.
    verbose : int >= 0, default 0
        1: progress lines on standard error (the kernel selected, each C tried, the final SVM), at
        most one every 5 s.

    Attributes
    ----------
    validation_scores_ : (m,) best validation accuracy per kernel; ``C_per_kernel_``; and those of
    :class:`~._common.SingleKernelSVM`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> MuSVM(kernels="linear;gaussian:0.25,1").fit(X, y).selected_kernel_name_
    'linear'
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        client: Client | None = None,
        random_state: int | None = 0,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.client = client
        self.random_state = random_state
        self.verbose = verbose

    def _select(self, X: np.ndarray, y: NDArray[Any], train: np.ndarray, val: np.ndarray) -> int:
        specs = list(self.kernel_pool_)
        if self.client is None:
            results = []
            for spec in specs:
                results.append(kernel_validation_task(spec, X, y, train, val))
                self._progress(f"kernel {len(results)}/{len(specs)} ({spec.name}) validated")
        else:
            # distributed's Client.scatter/gather carry no annotations (untyped third-party calls)
            data = self.client.scatter([X, y, train, val], broadcast=True)  # type: ignore[no-untyped-call]
            futures = [self.client.submit(kernel_validation_task, spec, *data, C_GRID, pure=False) for spec in specs]
            results = self.client.gather(futures)  # type: ignore[no-untyped-call]
        self.C_per_kernel_ = np.array([c for c, _ in results])
        self.validation_scores_ = np.array([acc for _, acc in results])
        return int(np.argmax(self.validation_scores_))

    def _tune(
        self, spec: KernelSpec, X: np.ndarray, y: NDArray[Any], train: np.ndarray, val: np.ndarray
    ) -> tuple[float, float]:
        k = self.selected_kernel_
        return float(self.C_per_kernel_[k]), float(self.validation_scores_[k])
