"""AlSVM: the kernel with the largest centred kernel–target alignment on the training rows, then
an SVM on it (Cortes, Mohri & Rostamizadeh 2010, the OKS paper's two-stage baseline).

The alignment of K with the target is ⟨K_c, T_c⟩_F / (‖K_c‖_F ‖T_c‖_F) with K_c = H K H,
H = I − 11ᵀ/n, T = Y Yᵀ and Y the ±1 labels (two classes) or the one-hot class indicators (more)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..labels import class_codes
from ._common import SingleKernelSVM, gram

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._batch import KernelSpecLike


def centred_alignment(K: np.ndarray, y: ArrayLike) -> float:
    """Centred alignment of the Gram matrix ``K`` with the labels ``y``."""
    classes = np.unique(y)
    if len(classes) == 2:  # one ±1 column
        Y = class_codes(y, classes, multiclass=False)[:, None]
    else:  # one indicator column per class
        Y = np.eye(len(classes))[class_codes(y, classes, multiclass=True).astype(np.intp)]
    Kc, target = _centred(K), _centred(Y @ Y.T)
    norm = np.linalg.norm(Kc) * np.linalg.norm(target)
    return float(np.sum(Kc * target) / norm) if norm > 0 else 0.0


def _centred(K: np.ndarray) -> np.ndarray:
    """H K H with H = I − 11ᵀ/n."""
    centred: np.ndarray = K - K.mean(axis=0, keepdims=True) - K.mean(axis=1, keepdims=True) + K.mean()
    return centred


class AlSVM(SingleKernelSVM):
    """Choose the kernel by centred alignment, then an SVM with C tuned on the validation split.

    Parameters: ``kernels``, ``feature_groups``, ``random_state`` (the split), ``verbose`` (1: progress
    lines on standard error, at most one every 5 s). Attributes:
    ``alignments_`` (per kernel) and those of :class:`~._common.SingleKernelSVM`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> model = AlSVM(kernels="linear;gaussian:0.25,1").fit(X, y)
    >>> model.selected_kernel_name_, model.alignments_.round(2).tolist()
    ('gaussian(sigma=1)', [0.69, 0.4, 0.83])
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16",
        feature_groups: dict[str, Any] | None = None,
        random_state: int | None = 0,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.random_state = random_state
        self.verbose = verbose

    def _select(self, X: np.ndarray, y: NDArray[Any], train: np.ndarray, val: np.ndarray) -> int:
        self.alignments_ = np.array([centred_alignment(gram(spec, X[train]), y[train]) for spec in self.kernel_pool_])
        return int(np.argmax(self.alignments_))
