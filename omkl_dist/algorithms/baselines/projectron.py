"""Projectron and Projectron++ (Orabona, Keshet & Caputo, JMLR 2009) per kernel, combined by Hedge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...defaults import SEED
from .._order import N_EPOCHS
from ._budget import CONSTRAINTS, ETA, BudgetBaseline

if TYPE_CHECKING:
    from .._batch import KernelSpecLike


class Projectron(BudgetBaseline):
    """Budget multiple-kernel classification with a Projectron per kernel (Orabona, Keshet & Caputo,
    "Bounded Kernel-Based Online Learning", JMLR 10, 2009; ICML 2008).

    On a mistake ``y f_k(x) <= 0`` each kernel's Projectron projects κ_k(x, ·) on the span of its
    support vectors (coefficients ``d = K_S⁻¹ k``); if the projection error ``‖δ‖ = √(κ(x, x) − k·d)``
    is at most ``eta`` it adds the projection ``y Σ_j d_j κ_k(x_j, ·)`` (no new support vector),
    otherwise ``y κ_k(x, ·)`` as a new support vector. ``budget`` caps the support set (the paper's is
    bounded by η alone): a full buffer always projects, as the authors' C++ toolbox does. The
    combination as :class:`RBP`: prediction ``sign(Σ θ_k f_k(x))``, ``w_k ← w_k γ^{z_k}`` on each
    kernel's mistakes. See :mod:`omkl_dist.learners.projectron` for the rule and where the C++
    toolbox differs (it has no η, and assumes κ(x, x) = 1; we follow the paper).

    More than two classes: the update ψ = φ(x, y) − φ(x, r) on the highest-scoring other class r,
    projected as ``+d`` on class y and ``−d`` on class r when ``‖δ‖ <= eta`` (our generalisation).

    Parameters
    ----------
    kernels : str or list, default "omkc16+norm"
        The papers' 16 kernels, normalised (as the other budget baselines; ``"omkc16"`` is the
        papers' unnormalised pool).
    budget : int >= 1, default 100
        Support vectors per kernel at most.
    gamma : float in (0, 1), default 0.99
        Hedge discount per mistake.
    update : {"D", "S"}, default "D"
        "S": the stochastic update, as the other budget baselines' "_sd" forms
        (:mod:`omkl_dist.engine.budget`).
    delta : float in (0, 1], default 0.01
        Its smoothing δ: a kernel learns from a row with probability (1 − δ) w_k / max w + δ/m.
    eta : float > 0, default 0.1
        The paper's η: the largest projection error ‖δ‖ for which a mistake is projected instead of
        adding a support vector (sparser models with larger η). 0.1 is the value of the first
        author's DOGMA library's default (which bounds ‖δ‖² with it); a quick check (5-fold
        cross-validation on standardised breast cancer, digits, iris and wine, η = 0.01, 0.1, 0.3,
        0.6) found no value best everywhere, each within 2.2 points of the best.
    block_size, n_epochs, shuffle, random_state
        As in :class:`BPAS`.

    Attributes
    ----------
    classes_, weights_ (θ), n_support_ (per kernel), mistakes_, kernel_mistakes_, n_samples_seen_,
    seed_, calibration_: as :class:`RBP`.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = Projectron(budget=30).fit(MinMaxScaler().fit_transform(X), y)
    >>> bool(model.mistakes_ < 0.25 * model.n_samples_seen_), int(model.n_support_.max()) <= 30
    (True, True)
    """

    _learner = "projectron"
    _parameter_constraints = {**CONSTRAINTS, "eta": ETA}

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16+norm",
        budget: int = 100,
        gamma: float = 0.99,
        update: str = "D",
        delta: float = 0.01,
        eta: float = 0.1,
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
        self.eta = eta
        self.block_size = block_size
        self.n_epochs = n_epochs
        self.shuffle = shuffle
        self.random_state = random_state


class ProjectronPP(Projectron):
    """Budget multiple-kernel classification with a Projectron++ per kernel (Orabona, Keshet & Caputo,
    JMLR 2009).

    :class:`Projectron`'s update on mistakes, and on margin errors ``0 < y f_k(x) < 1`` (hinge loss ℓ)
    the projected update ``τ y Σ_j d_j κ_k(x_j, ·)`` with
    ``τ = min(ℓ/‖P k‖², 1, 2(ℓ − ‖δ‖/η)/‖P k‖²)`` when ``ℓ − ‖δ‖/η > 0`` (never a new support vector;
    ``‖P k‖² = k·d``). The C++ toolbox takes ``τ = min(ℓ/‖P k‖², 1)`` and skips the update when the
    paper's β_t < 0, with ``U = ¼ √((B + 1)/ln(B + 1))`` in place of 1/η; we follow the paper
    (:mod:`omkl_dist.learners.projectron`). Hedge as :class:`Projectron` (on mistakes).

    More than two classes: as :class:`Projectron`, the margin error on the rival r with
    ``‖Pψ‖² = 2 k·d``.

    Parameters are :class:`Projectron`'s.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = ProjectronPP(budget=30).fit(MinMaxScaler().fit_transform(X), y)
    >>> bool(model.mistakes_ < 0.2 * model.n_samples_seen_), int(model.n_support_.max()) <= 30
    (True, True)
    """

    _learner = "projectron++"
