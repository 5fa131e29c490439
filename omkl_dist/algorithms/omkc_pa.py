"""OMKC with passive-aggressive component learners: OMKC's Hedge framework (Hoi, Jin, Zhao, Yang,
Algorithms 1-4) with a kernel PA-I learner per kernel (Crammer et al. 2006) in place of the Perceptron --
the "kernel-ddpa" (``update="D"``) and "kernel-sdpa" (``update="S"``) learners of the authors' C++
toolbox (Lu, Wu, Hoi, "Online-Multiple-Kernel-Learning").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..defaults import SEED
from ..engine.hyper import OMKCHyper
from ._order import N_EPOCHS
from .omkc import OMKC
from .spa import POSITIVE

if TYPE_CHECKING:
    from ._batch import KernelSpecLike


class OMKCPA(OMKC):
    """Online multiple kernel classification with PA-I learners and Hedge weights.

    OMKC (:class:`~omkl_dist.algorithms.OMKC`) whose kernels each learn by the passive-aggressive
    PA-I rule: a kernel selected for update (every kernel for ``update="D"``, those drawn with
    p = (1 − δ) q + δ/m for ``update="S"``) with hinge loss ℓ = [1 − y f_k(x)]_+ > 0 adds
    ``τ y κ_k(x, ·)``, τ = min(C, ℓ / κ_k(x, x)). Hedge is OMKC's: a selected kernel that errs
    (y f_k(x) <= 0) has its weight multiplied by beta. The OMKC paper names PA as a better component
    learner (its conclusion) but does not give the algorithm; the C++ toolbox's ``kernel_DDpa`` and
    ``kernel_sdpa`` are (D, D) and (S, D) of this class, with three differences (docs/algorithms/omkc.md):
    τ = min(C, ℓ) without the division by κ(x, x) (the same for gaussian and normalised kernels),
    p = (1 − δ) q + δ where OMKC has δ/m, and a kernel's weight discounted on ``y f < 0`` in the
    stochastic form (``<= 0`` in the deterministic one); we follow the papers.

    More than two classes: the multi-class PA-I step (Crammer et al. 2006, max-loss) per kernel,
    ℓ = [1 − f_k(x, y) + f_k(x, r)]_+ with r the rival class, τ = min(C, ℓ / 2κ_k(x, x)), +τ on y and
    −τ on r; a kernel errs when f_k(x, y) <= f_k(x, r); the vote as OMKC's.

    Parameters
    ----------
    update, combination, kernels, beta, delta, block_size, n_epochs, block_sync, shuffle, random_state
        As :class:`~omkl_dist.algorithms.OMKC`.
    C : float > 0, default 0.1
        PA-I's aggressiveness (the budget-OMKC paper's learning rate of its PA-type learners, 0.1).

    Attributes
    ----------
    As :class:`~omkl_dist.algorithms.OMKC`.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = MinMaxScaler().fit_transform(X)
    >>> model = OMKCPA(update="S", random_state=0).fit(X, y)
    >>> bool(model.mistakes_ < 0.1 * model.n_samples_seen_)  # (over 5 passes)
    True
    """

    def __init__(
        self,
        *,
        update: str = "D",
        combination: str = "D",
        kernels: KernelSpecLike = "omkc16+norm",
        beta: float = 0.8,
        delta: float = 0.01,
        C: float = 0.1,
        block_size: int = 256,
        n_epochs: int = N_EPOCHS,
        block_sync: bool = False,
        shuffle: bool = True,
        random_state: int | None = SEED,
    ) -> None:
        super().__init__(
            update=update,
            combination=combination,
            kernels=kernels,
            beta=beta,
            delta=delta,
            block_size=block_size,
            n_epochs=n_epochs,
            block_sync=block_sync,
            shuffle=shuffle,
            random_state=random_state,
        )
        self.C = C

    _parameter_constraints = {**OMKC._parameter_constraints, "C": [POSITIVE]}

    def _engine_params(self) -> dict[str, Any]:
        hyper = OMKCHyper(beta=self.beta, delta=self.delta, pa=True, pa_c=self.C)
        return {"hyper": hyper, "block_sync": bool(self.block_sync)}
