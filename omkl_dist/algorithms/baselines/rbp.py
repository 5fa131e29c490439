"""RBP: the Random Budget Perceptron (Cavallanti et al. 2007) per kernel, combined by Hedge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...defaults import SEED
from .._order import N_EPOCHS
from ._budget import BudgetBaseline

if TYPE_CHECKING:
    from .._batch import KernelSpecLike


class RBP(BudgetBaseline):
    """Budget multiple-kernel classification with a Random Budget Perceptron per kernel.

    Each kernel's Perceptron keeps at most ``budget`` support vectors: on a mistake ``y f_k(x) <= 0``
    with a full buffer it removes a uniformly random support vector (slot ``int(u·budget)`` for this
    instance's uniform u of the kernel's (seed, block, kernel) stream), then adds ``y κ_k(x, ·)``.
    The combination (not specified in the Budget-OMKL paper): every kernel learns from every
    instance; prediction ``sign(Σ θ_k f_k(x))`` with θ = w / Σ w and ``w_k ← w_k γ^{z_k}``,
    ``z_k = [y f_k(x) <= 0]`` (like OMKC(D,D)).

    More than two classes: each kernel is a multi-class Perceptron (Crammer & Singer 2003): a mistake
    is ``f_k(x, y) <= f_k(x, r)`` with r the highest-scoring other class, and it adds +1 on y and −1 on r;
    the prediction is the class with the highest ``Σ θ_k f_k(x, c)``.

    Parameters
    ----------
    kernels : str or list, default "omkc16+norm"
        The papers' 16 kernels, normalised (the choice of ``omkl study defaults``, docs/defaults.md;
        ``"omkc16"`` is the papers' unnormalised pool).
        A named pool, a pool spec string or a list of kernel specs.
    budget : int >= 1, default 100
        Support vectors per kernel (the paper: 16 · budget ≈ SPA's support vectors).
    gamma : float in (0, 1), default 0.99
        Hedge discount per mistake.
    update : {"D", "S"}, default "D"
        "S": the stochastic update, the C++ toolbox's "_sd" form (:mod:`omkl_dist.engine.budget`).
    delta : float in (0, 1], default 0.01
        Its smoothing δ: a kernel learns from a row with probability (1 − δ) w_k / max w + δ/m.
    block_size : int, default 256
        Instances per block of the block-exact engine and of the random streams: a result is
        reproducible for a given (random_state, block_size).
    n_epochs : int >= 1, default 5
        Passes of ``fit``, each in a new order when ``shuffle`` (``partial_fit`` and a job's
        stream: one), as in :class:`~omkl_dist.algorithms.OMKC`.
    shuffle : bool, default True
        ``fit`` learns the rows in a random order drawn with ``random_state`` (a training set's
        order means nothing, and one sorted by class would teach one class after the other);
        ``partial_fit`` learns a stream in its given order.
    random_state : int or None, default 0
        Seed of the per-(seed, block, kernel) uniform streams and of ``fit``'s row order;
        None draws one (kept in ``seed_``).

    Attributes
    ----------
    classes_, weights_ (θ), n_support_ (per kernel), mistakes_ (online mistakes of the combined
    prediction), kernel_mistakes_, n_samples_seen_, seed_, calibration_ (``predict_proba``'s,
    learnt from the progressive scores; docs/probabilities.md).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = RBP(budget=30, random_state=0).fit(MinMaxScaler().fit_transform(X), y)
    >>> bool(model.mistakes_ < 0.2 * model.n_samples_seen_), int(model.n_support_.max())  # (over 5 passes)
    (True, 30)
    """

    _learner = "rbp"

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16+norm",
        budget: int = 100,
        gamma: float = 0.99,
        update: str = "D",
        delta: float = 0.01,
        block_size: int = 256,
        n_epochs: int = N_EPOCHS,
        shuffle: bool = True,
        random_state: int | None = SEED,
    ) -> None:
        self.kernels = kernels
        self.budget = budget
        self.gamma = gamma
        self.update = update
        self.delta = delta
        self.block_size = block_size
        self.n_epochs = n_epochs
        self.shuffle = shuffle
        self.random_state = random_state
