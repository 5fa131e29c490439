"""OM-2: Online Multi-class Multi-kernel learning (Jie, Orabona, Fornoni, Caputo, Zhao), Algorithm 1.

A p-norm online learner over the group norm ‖θ‖_{2,p} of F kernels: one multi-class predictor
per kernel, weighted by α_j = (1/q)(‖θ_j‖/‖θ‖_{2,q})^{q−2}; it updates on every round with a
positive multi-class hinge loss, not only on mistakes (see :func:`~omkl_dist.engine._multiclass.om2_block`).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import Interval, StrOptions
from ..defaults import SEED
from ..engine.hyper import OM2Hyper
from ..engine.protocol import Rule
from ..engine.samples import factor_shares
from ..kernels import make_pool
from ._batch import KERNEL_SPEC, UNIT_TEST_KERNELS
from ._order import N_EPOCHS, SHUFFLE
from .base import POSITIVE_INT, RANDOM_STATE, OnlineKernelClassifier

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ._batch import KernelSpecLike

NORMS = ("exact", "bound")


def default_p(n_kernels: int) -> float:
    """Corollary 1's p = 2 ln F / (2 ln F − 1) (q = 2 ln F: a bound logarithmic in F), or p = 2
    (q = 2, the unweighted sum of the kernels) when F < e makes that q smaller than 2."""
    q = 2.0 * math.log(n_kernels) if n_kernels > 1 else 0.0
    return q / (q - 1.0) if q > 2.0 else 2.0


class OM2(OnlineKernelClassifier):
    """Online multi-class multiple kernel learning with a (2, p) group norm.

    Parameters
    ----------
    kernels : str or list, default "omkc16+norm"
        The papers' 16 kernels, normalised (the choice of ``omkl study defaults``, docs/defaults.md;
        ``"omkc16"`` is the papers' unnormalised pool).
        A named pool, a pool spec string or a list of kernel specs (see ``omkl_dist.kernels``).
    p : float in (1, 2] or None, default None
        The group norm's p (q = p / (p − 1)). Small p favours few kernels (the paper's best on
        Caltech-101 was 1.01); ``None`` takes Corollary 1's p = 2 ln F / (2 ln F − 1) for F kernels.
    norm : {"exact", "bound"}, default "exact"
        ‖z_t‖²_{2,q} in the step η_t = min(1, 1 − 2 m_t / ‖z_t‖²_{2,q}): "exact" is Algorithm 1's
        norm, (Σ_j (2 κ_j(x_t, x_t))^{q/2})^{2/q}; "bound" is its value for normalised kernels,
        2 F^{2/q} (κ(x, x) = 1: gaussians). The default follows the paper's algorithm; with
        unnormalised kernels (polynomials on raw data) the exact norm keeps steps small where
        κ(x, x) is large, and a step that comes out negative is clipped to 0 (no update).
    n_epochs : int >= 1, default 5
        Passes of ``fit`` over the data (the paper cycles through the training set), each in a
        new order when ``shuffle``; ``fit`` stops early after an epoch without an update.
        ``partial_fit`` and a job's stream are always one pass. Five as for every online
        classifier (:class:`~omkl_dist.algorithms.OMKC`; BENCHMARKS.md "Defaults of fit").
    block_size : int, default 256
        Instances per block of the block-exact engine; OM-2 is deterministic, so the model's
        decisions do not depend on it.
    shuffle : bool, default True
        ``fit`` learns the rows in a random order (a new one per epoch); ``partial_fit``, a
        stream, always in the given order.
    random_state : int or None, default 0
        Seed of ``fit``'s row order (OM-2 itself draws no random numbers); None draws a seed
        (kept in ``seed_``).

    Attributes
    ----------
    classes_, kernel_weights_ (α_j), weights_ (α normalised to sum 1; uniform before the first
    update), n_support_ (per kernel: the same rows for every kernel), mistakes_ (online mistakes over
    all passes), epoch_mistakes_ (per epoch of ``fit``), n_epochs_ (epochs run), n_samples_seen_,
    calibration_ (``predict_proba``'s, learnt from the progressive scores of ``fit``'s first epoch
    and of ``partial_fit``: the later epochs score rows already learnt; docs/probabilities.md).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> model = OM2(kernels="gaussian:0.25,0.5,1,2", n_epochs=3).fit(X, y)
    >>> bool(model.epoch_mistakes_[-1] < 0.1 * len(y)), bool((model.predict(X) == y).mean() > 0.9)
    (True, True)
    """

    _always_multiclass = True

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16+norm",
        p: float | None = None,
        norm: str = "exact",
        n_epochs: int = N_EPOCHS,
        block_size: int = 256,
        shuffle: bool = True,
        random_state: int | None = SEED,
    ) -> None:
        self.kernels = kernels
        self.p = p
        self.norm = norm
        self.n_epochs = n_epochs
        self.block_size = block_size
        self.shuffle = shuffle
        self.random_state = random_state

    _unit_test_params = ({"kernels": UNIT_TEST_KERNELS, "block_size": 16, "n_epochs": 1, "shuffle": False},)

    # p None: Corollary 1's choice (default_p)
    _parameter_constraints = {
        "kernels": [KERNEL_SPEC],
        "p": [None, Interval(Real, 1, 2, closed="right")],
        "norm": [StrOptions(NORMS)],
        "n_epochs": [POSITIVE_INT],
        "block_size": [POSITIVE_INT],
        "shuffle": SHUFFLE,
        "random_state": RANDOM_STATE,
    }

    def _rule(self) -> int:
        return Rule.OM2

    def _engine_params(self) -> dict[str, Any]:
        p = default_p(len(make_pool(self._kernel_spec()))) if self.p is None else float(self.p)
        return {"hyper": OM2Hyper(q=p / (p - 1.0), bounded_norm=self.norm == "bound"), "block_sync": False}

    def _updates(self) -> int:
        """OM-2 keeps a row on every update: an epoch that kept none leaves the model final."""
        return int(self.engine_.support_vectors.n)

    def _publish(self) -> None:
        super()._publish()
        alpha = self.engine_.om2_factors()
        self.kernel_weights_ = alpha
        self.weights_ = factor_shares(alpha)

    def _combine(self, F: NDArray[np.float64]) -> NDArray[np.float64]:
        scores: NDArray[np.float64] = np.einsum("nmk,m->nk", F, self.kernel_weights_)
        return scores
