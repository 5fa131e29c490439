"""Forgetron: the self-tuned Forgetron (Dekel, Shalev-Shwartz & Singer 2005) per kernel, combined by Hedge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...defaults import SEED
from .._order import N_EPOCHS
from ._budget import BudgetBaseline

if TYPE_CHECKING:
    from .._batch import KernelSpecLike


class Forgetron(BudgetBaseline):
    """Budget multiple-kernel classification with a self-tuned Forgetron per kernel.

    On a mistake each kernel's Forgetron adds ``y κ_k(x, ·)``; when that exceeds the budget it shrinks
    every weight by the self-tuned φ_t (the largest φ ∈ (0, 1] with
    ``Ψ(φσ_r, φμ_t) + Q_t <= 15/32 M_t``, Ψ(λ, μ) = λ² + 2λ − 2λμ, r the oldest support vector,
    σ_r its weight, μ_t = y_r f'(x_r), M_t the kernel's mistakes; see
    :mod:`omkl_dist.learners.forgetron`) and removes the oldest support vector. Deterministic with
    ``update="D"`` (the seed is not used; with ``update="S"`` M_t counts the mistakes of the rows the
    kernel was drawn for, the rows it learns from). Combination as :class:`RBP`: Hedge discounted by
    each kernel's mistakes.

    More than two classes: the multi-class Perceptron step of :class:`RBP` and our generalisation of
    the shrinking rule to it, ``μ_t = f'(x_r, y_r) − f'(x_r, r_r)`` (r_r the class the support vector was
    added against) and Ψ(λ, μ) = 2λ² + 2λ − 2λμ (see :mod:`omkl_dist.learners.forgetron`).

    Parameters
    ----------
    kernels : str or list, default "omkc16+norm"
        The papers' 16 kernels, normalised (the choice of ``omkl study defaults``, docs/defaults.md;
        ``"omkc16"`` is the papers' unnormalised pool).
    budget : int >= 1, default 100
        Support vectors per kernel.
    gamma : float in (0, 1), default 0.99
        Hedge discount per mistake.
    update : {"D", "S"}, default "D"
        "S": the stochastic update, the C++ toolbox's "_sd" form (:mod:`omkl_dist.engine.budget`).
    delta : float in (0, 1], default 0.01
        Its smoothing δ: a kernel learns from a row with probability (1 − δ) w_k / max w + δ/m.
    block_size : int, default 256
        Block size of the engine (the deterministic update's result does not depend on it; the
        stochastic update's draws are per (random_state, block_size)).
    n_epochs : int >= 1, default 5
        Passes of ``fit``, each in a new order when ``shuffle`` (``partial_fit`` and a job's
        stream: one), as in :class:`~omkl_dist.algorithms.OMKC`.
    shuffle : bool, default True
        ``fit`` learns the rows in a random order drawn with ``random_state`` (a training set's
        order means nothing, and one sorted by class would teach one class after the other);
        ``partial_fit`` learns a stream in its given order.
    random_state : int or None, default 0
        Seed of ``fit``'s row order and of the stochastic update's draws; None draws one (kept in
        ``seed_``).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = Forgetron(budget=30).fit(MinMaxScaler().fit_transform(X), y)
    >>> bool(model.mistakes_ < 0.2 * model.n_samples_seen_), int(model.n_support_.max())  # (over 5 passes)
    (True, 30)
    """

    _learner = "forgetron"

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
