"""FOGD: Fourier Online Gradient Descent (Lu, Hoi, Wang, Zhao & Liu, "Large Scale Online Kernel
Learning", JMLR 17(47), 2016, Algorithm 1), one learner per gaussian kernel, combined by Hedge as the
authors' C++ toolbox (Online-Multiple-Kernel-Learning, ``kernel_fogd.h``) does."""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

from .._validation import Interval
from ..defaults import SEED
from ..engine.features import FourierEngine, gaussian_widths
from ..kernels import make_pool
from ..scoring.program import compile_program
from ._features import CONSTRAINTS, FeatureClassifier
from ._order import N_EPOCHS

if TYPE_CHECKING:
    from ..scoring.program import KernelProgram
    from ._batch import KernelSpecLike

FOGD_KERNELS = "gaussian:2^-6..2^6"  # the C++ toolbox's 13 widths


class FOGD(FeatureClassifier):
    """Multi-kernel Fourier Online Gradient Descent: random Fourier features per gaussian kernel,
    online gradient descent on the hinge loss over them, Hedge over the kernels.

    Kernel k of width σ_k draws ``n_components`` directions ``u_i ~ N(0, σ_k^{-2} I)`` once, from
    (``random_state``, kernel) (:mod:`omkl_dist.randomness.features`: a cluster shard and a resumed
    model regenerate them bit for bit); its features are
    ``z_k(x) = (cos u_1·x, …, cos u_D·x, sin u_1·x, …, sin u_D·x)``, its score ``f_k(x) = w_k · z_k(x)``
    and on ``y f_k(x) < 1`` the step ``w_k ← w_k + η y z_k(x)`` (Algorithm 1). The combination
    (:mod:`._features`): ``Σ_k θ_k f_k(x)``, ``w_k ← w_k γ`` when kernel k errs. Cost per row:
    O(m D s) for the features (s: the row's non-zero features; a compiled loop, not BLAS: the same
    bits for any block size and thread count) and O(m D) for the learning, whatever the stream's
    length; memory O(m D d).

    More than two classes: a weight vector per class and kernel, the multi-class hinge loss on
    the highest-scoring wrong class r, ``+η z`` on the true class and ``−η z`` on r.

    Defaults: the algorithm, its features and its update are the paper's; the numbers are the
    C++ toolbox's -- its 13 gaussian widths 2^-6..2^6 (FOGD has no features for the polynomial
    kernels of the 16-kernel pool), D = 100 directions per kernel (its ``-B``), η = 0.1, Hedge
    discounting by γ = 0.99 on mistakes, unscaled features (``z·z' ≈ D κ``). Where the C++ differs:
    it draws every kernel's directions from one clock seed (not reproducible) and combines the
    kernels' signs rather than their scores.

    Parameters
    ----------
    kernels : str or list, default "gaussian:2^-6..2^6"
        Gaussian kernels only (their widths set the directions' spread).
    n_components : int >= 1, default 100
        Random directions D per kernel (2 D features: a cosine and a sine each).
    eta : float > 0, default 0.1
        Step size of the gradient descent.
    gamma : float in (0, 1), default 0.99
        Hedge discount per unit of loss.
    hedge_loss : {"mistake", "hinge"}, default "mistake"
        What discounts a kernel's weight: 1 per mistake (the C++), or its hinge loss.
    block_size : int, default 256
        Rows per block (the result does not depend on it).
    n_epochs : int >= 1, default 5
        Passes of ``fit``, each in a new order when ``shuffle`` (``partial_fit`` and a job's
        stream: one), as in :class:`~omkl_dist.algorithms.OMKC`.
    shuffle : bool, default True
        ``fit`` learns the rows in a random order drawn with ``random_state``; ``partial_fit``
        learns a stream in its order.
    random_state : int or None, default 0
        Seed of the random directions and of ``fit``'s order; None draws one (kept in ``seed_``).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = FOGD(random_state=0).fit(MinMaxScaler().fit_transform(X), y)
    >>> bool(model.mistakes_ < 0.15 * model.n_samples_seen_), model.engine_.W.shape
    (True, (13, 200))
    >>> model.predict_proba(MinMaxScaler().fit_transform(X)[:2]).shape
    (2, 2)
    """

    _parameter_constraints = {**CONSTRAINTS, "n_components": [Interval(Integral, 1, None, closed="left")]}
    _unit_test_params = (
        {
            "kernels": "gaussian:0.5,2",
            "n_components": 20,
            "block_size": 16,
            "n_epochs": 1,
            "shuffle": False,
            "random_state": 0,
        },
        {
            "kernels": "gaussian:1",
            "n_components": 8,
            "hedge_loss": "hinge",
            "block_size": 16,
            "n_epochs": 1,
            "shuffle": False,
            "random_state": 0,
        },
    )

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = FOGD_KERNELS,
        n_components: int = 100,
        eta: float = 0.1,
        gamma: float = 0.99,
        hedge_loss: str = "mistake",
        block_size: int = 256,
        n_epochs: int = N_EPOCHS,
        shuffle: bool = True,
        random_state: int | None = SEED,
    ) -> None:
        self.kernels = kernels
        self.n_components = n_components
        self.eta = eta
        self.gamma = gamma
        self.hedge_loss = hedge_loss
        self.block_size = block_size
        self.n_epochs = n_epochs
        self.shuffle = shuffle
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        gaussian_widths(compile_program(make_pool(self.kernels)), "FOGD")  # refuses other kernels

    def _new_engine(self, program: KernelProgram, n_features: int) -> FourierEngine:
        return FourierEngine(program, n_features, n_components=int(self.n_components), **self._engine_params())
