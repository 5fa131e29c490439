"""OKS: Online Kernel Selection (Yang, Mahdavi, Jin, Yi & Hoi, AAAI 2012), Algorithms 1 and 2.

One kernel is drawn per instance from p = (1 − δ) q + δ/m; only it is evaluated, updated (step
λ/p_i) and discounted (weight × exp(−η ℓ / p_i)). The output is the weight vector q_T: the kernel
with the largest weight is the *selected* kernel (the paper's deterministic choice), and a kernel
drawn from q_T is the *sampled* one (Corollary 2's stochastic choice). The paper's protocol, which
the defaults follow (except the classifier's ``n_epochs``, 5 by measurement; OKS-SVM and SOM-SVM,
which ``omkl reproduce oks`` runs, keep 2): two epochs with δ = 0.5 then 0.2, η = sqrt(2 (1 − δ) ln m / (m T)) for T
instances per epoch, λ chosen on a 10 % validation split over 2^-10 .. 2^10 (Algorithm 1; for
Algorithm 2 λ only scales every predictor, so it cannot change a decision and is not tuned).

The compiled loops are in :mod:`omkl_dist.learners.oks`, the engine in :mod:`omkl_dist.engine.oks`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any, Self, cast

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import column_or_1d

from .._validation import Interval, Satisfies, StrOptions, check_array, resolve_seed, validate_params
from ..defaults import SEED
from ..engine.oks import OKSEngine, default_eta
from ..evaluation.calibration import Calibration
from ..kernels import make_pool
from ..scoring.program import compile_program
from ._batch import KERNEL_SPEC, UNIT_TEST_KERNELS, AcceptsSparse
from ._order import N_EPOCHS, SHUFFLE, fit_orders
from .base import POSITIVE_INT, RANDOM_STATE, OnlineKernelClassifier

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..kernels import KernelPool
    from ._batch import KernelSpecLike

CLASSIFIER_LOSSES = ("mistake", "hinge", "logistic")
PREDICTIONS = ("selected", "sampled")
LAMBDA_GRID = tuple(2.0**e for e in range(-10, 11))
VALIDATION_FRACTION = 0.1


UNIT = Interval(Real, 0, 1, closed="right")
POSITIVE = Interval(Real, 0, None, closed="neither")


def _deltas(delta: object) -> list[float] | None:
    """δ, or δ per epoch, as a list of floats in (0, 1]; None when it is not one (δ = 1 samples
    uniformly: with the default η = 0 the weights then never move)."""
    deltas = [delta] if isinstance(delta, Real) else delta
    if isinstance(deltas, str) or not isinstance(deltas, Sequence) or not deltas:
        return None
    values = [UNIT.convert(d) for d in deltas]
    return None if None in values else values


def _lam(lam: object) -> float | str | None:
    """λ: a positive finite number, or "validation"."""
    return lam if isinstance(lam, str) and lam == "validation" else POSITIVE.convert(lam)


class _OKSMixin:
    """What the OKS classifier and regressor share: parameters, epochs, λ on validation, output."""

    # parameters (both estimators' ``__init__`` store them) and learned state, for the type checker
    kernels: KernelSpecLike
    feature_groups: dict[str, Any] | None
    lam: float | str
    delta: float | Sequence[float]
    eta: float | None
    n_epochs: int
    prediction: str
    block_size: int
    shuffle: bool
    random_state: int | None
    kernel_pool_: KernelPool
    seed_: int
    engine_: Any  # an OKSEngine (Any as on OnlineKernelClassifier, which OKS also derives from)
    selected_kernel_: int
    sampled_kernel_: int

    if TYPE_CHECKING:  # scikit-learn's BaseEstimator provides it at run time

        def get_params(self, deep: bool = True) -> dict[str, Any]: ...

    _parameter_constraints: dict[str, Any] = {
        "kernels": [KERNEL_SPEC],
        "lam": [
            Satisfies(_lam, "a positive number or 'validation' (the paper's choice over 2^-10..2^10 on a 10% split)")
        ],
        "delta": [
            Satisfies(
                _deltas,
                "a float in (0, 1] or a list of them (one per epoch, the last repeated; the paper's is [0.5, 0.2])",
            )
        ],
        "eta": [None, Interval(Real, 0, None, closed="left")],  # None: Theorem 3's sqrt(2(1-δ) ln m / (m T))
        "n_epochs": [POSITIVE_INT],
        "prediction": [StrOptions(PREDICTIONS)],
        "block_size": [POSITIVE_INT],
        "shuffle": SHUFFLE,
        "random_state": RANDOM_STATE,
    }

    def _pool(self) -> KernelPool:
        pool = make_pool(self.kernels)
        return pool.with_groups(self.feature_groups) if pool.has_views else pool

    def _kernel_spec(self) -> KernelPool:
        return self._pool()

    def _check_params(self) -> None:
        validate_params(self)
        self._pool()  # an unknown feature group fails here

    def _epoch_settings(self, epoch: int, horizon: int) -> tuple[float, float]:
        deltas = cast("list[float]", _deltas(self.delta))  # a valid δ (checked by _check_params)
        delta = deltas[min(epoch, len(deltas) - 1)]
        eta = default_eta(len(self.kernel_pool_), delta, horizon) if self.eta is None else float(self.eta)
        return delta, eta

    def _oks_engine(
        self, n_features: int, n_rows: int, *, n_classes: int, algorithm: str, loss: str, lam: float
    ) -> OKSEngine:
        self.kernel_pool_.check_width(n_features, owner=type(self).__name__)
        self.horizon_ = int(n_rows)
        self.lam_ = float(lam)
        delta, eta = self._epoch_settings(0, n_rows)
        return OKSEngine(
            compile_program(self.kernel_pool_),
            n_features,
            n_classes=n_classes,
            algorithm=algorithm,
            loss=loss,
            lam=lam,
            seed=self.seed_,
            block_size=self.block_size,
            delta=delta,
            eta=eta,
        )

    def _epochs(self, X: NDArray[np.float64], y_coded: NDArray[np.float64]) -> None:
        """Run ``n_epochs`` passes from a fresh engine, each in the next of ``fit``'s row orders;
        the first pass's settings are the engine's."""
        mistakes: list[int] = []
        losses: list[float] = []
        orders = fit_orders(len(X), shuffle=self.shuffle, seed=self.seed_)
        for epoch in range(self.n_epochs):
            self.engine_.delta, self.engine_.eta = self._epoch_settings(epoch, len(X))
            order = next(orders)
            rows, labels = (X, y_coded) if order is None else (X[order], y_coded[order])
            outcome = self._learn_pass(rows, labels, first=epoch == 0)
            mistakes.append(int(outcome["mistakes"].sum()))
            losses.append(float(outcome["loss"].mean()))
        self.epoch_mistakes_, self.epoch_losses_ = mistakes, losses
        self.n_epochs_ = self.n_epochs

    def _learn_pass(self, X: NDArray[np.float64], y_coded: NDArray[np.float64], *, first: bool) -> dict[str, Any]:
        """One of ``fit``'s passes; ``first``: the one over rows the model has not learnt yet."""
        outcome: dict[str, Any] = self.engine_.learn(X, y_coded)
        return outcome

    def _copy_with(self, lam: float) -> Self:
        """This estimator's parameters with another λ (a validation candidate)."""
        return type(self)(**{**self.get_params(), "lam": lam})

    def _validation_lam(
        self,
        X: NDArray[np.float64],
        y: NDArray[Any],
        fit_one: Callable[[float, NDArray[np.float64], NDArray[Any]], Any],
        score: Callable[[Any, NDArray[np.float64], NDArray[Any]], float],
    ) -> float:
        """The paper's λ: train on 90 % for every λ of the grid, keep the best on the other 10 %
        (the first best: the smallest λ among ties)."""
        rng = np.random.default_rng([resolve_seed(type(self).__name__, self.random_state, default=0), 7])
        order = rng.permutation(len(X))
        n_val = max(1, int(round(VALIDATION_FRACTION * len(X))))
        val, train = order[:n_val], order[n_val:]
        results: list[float] = []
        for lam in LAMBDA_GRID:
            try:
                results.append(score(fit_one(lam, X[train], y[train]), X[val], y[val]))
            except OverflowError:  # this λ diverges: never the choice
                results.append(-np.inf)
        self.validation_scores_ = dict(zip(LAMBDA_GRID, results, strict=True))
        return LAMBDA_GRID[int(np.argmax(results))]

    def _publish(self) -> None:
        e = self.engine_
        q: NDArray[np.float64] = e.q
        self.kernel_weights_ = q
        self.weights_ = q
        self.selected_kernel_ = int(np.argmax(q))
        self.sampled_kernel_ = int(np.random.default_rng([self.seed_, e.n_seen, 1]).choice(len(q), p=q))
        self.n_support_ = e.n_support()
        self.kernel_updates_ = e.kernel_updates.copy()
        self.kernel_mistakes_ = e.kernel_mistakes.copy()
        self.mistakes_ = int(e.n_mistakes)
        self.n_samples_seen_ = int(e.n_seen)
        self.active_kernel_names_ = list(self.kernel_pool_.names)
        self.selected_kernel_name_ = self.kernel_pool_.names[self.selected_kernel_]

    def predicting_kernel(self) -> int:
        """The kernel whose predictor answers ``predict``: the selected or the sampled one."""
        return self.selected_kernel_ if self.prediction == "selected" else self.sampled_kernel_


class OKS(_OKSMixin, OnlineKernelClassifier):
    """Online kernel selection for classification.

    Parameters
    ----------
    kernels : str or list, default "omkc16+norm"
        The papers' 16 kernels, normalised (the choice of ``omkl study defaults``, docs/defaults.md;
        ``"omkc16"`` is the papers' unnormalised pool).
        The m candidate kernels (see ``omkl_dist.kernels``); kernels may see feature groups
        (``"linear,poly:2,chi2,gaussian:1 @ fourier; ..."``).
    feature_groups : dict or None
        Columns of each named feature group the kernels refer to (a multi-view dataset's meta
        records them).
    loss : {"mistake", "hinge", "logistic"}, default "mistake"
        "mistake" is Algorithm 2 (classification: the indicator of a mistake drives the weights
        and the Perceptron-like update); "hinge" and "logistic" are Algorithm 1 with that loss
        (multi-class: the multi-class hinge loss against the best other class, or the softmax
        cross-entropy).
    lam : float or "validation", default 1.0
        The predictors' step λ; "validation" takes the paper's choice over 2^-10..2^10 on a 10 %
        split (Algorithm 1 only: Algorithm 2's decisions do not depend on λ).
    delta : float or list of float, default (0.5, 0.2)
        Smoothing δ of the sampling, per epoch (the last value repeats).
    eta : float or None
        The weights' step; None: sqrt(2 (1 − δ) ln m / (m T)), T the rows of an epoch.
    horizon : int or None
        T of the default η for a stream (``partial_fit``); None: the rows of the first call (or
        ``initialize``'s ``n_rows``). ``omkl run`` and the cluster set it to the stream's length.
    n_epochs : int >= 1, default 5
        Passes of ``fit``, each in a new order when ``shuffle`` (``partial_fit`` and a job's
        stream are always one pass with the first δ). The paper makes 2; 5 is the online
        classifiers' default, chosen by measurement (:class:`~omkl_dist.algorithms.OMKC`;
        BENCHMARKS.md "Defaults of fit"): two passes leave OKS at 0.89 cross-validated on iris
        for some seed, five at 0.92 or more.
    prediction : {"selected", "sampled"}, default "selected"
        Which kernel's predictor ``predict`` uses: the largest weight of q_T (deterministic,
        the paper's choice), or one drawn from q_T once per model state (Corollary 2).
    block_size, random_state : the random streams of the draws (same seed and block size, same
        model); ``random_state`` (default 0) also seeds ``fit``'s row order.
    shuffle : bool, default True
        Each epoch of ``fit`` learns the rows in a new random order; ``partial_fit`` learns a
        stream in its given order.

    Attributes
    ----------
    kernel_weights_ (q_T), selected_kernel_, selected_kernel_name_, sampled_kernel_, n_support_,
    kernel_updates_, kernel_mistakes_ (per kernel, when drawn), mistakes_ (online: the drawn
    kernel erred), epoch_mistakes_, lam_, validation_scores_ (with lam="validation"),
    calibration_ (``predict_proba``'s, learnt from the drawn kernel's progressive scores of the
    first epoch and of ``partial_fit``; docs/probabilities.md).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = MinMaxScaler().fit_transform(X)
    >>> model = OKS(kernels="linear;gaussian:2^-4..2^2", random_state=0).fit(X, y)
    >>> model.selected_kernel_name_, round(model.score(X, y), 2)
    ('gaussian(sigma=0.25)', 0.99)
    """

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16+norm",
        feature_groups: dict[str, Any] | None = None,
        loss: str = "mistake",
        lam: float | str = 1.0,
        delta: float | Sequence[float] = (0.5, 0.2),
        eta: float | None = None,
        horizon: int | None = None,
        n_epochs: int = N_EPOCHS,
        prediction: str = "selected",
        block_size: int = 256,
        shuffle: bool = True,
        random_state: int | None = SEED,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.loss = loss
        self.horizon = horizon
        self.lam = lam
        self.delta = delta
        self.eta = eta
        self.n_epochs = n_epochs
        self.prediction = prediction
        self.block_size = block_size
        self.shuffle = shuffle
        self.random_state = random_state

    _unit_test_params = (  # one epoch: fit is then one online pass, as partial_fit
        {"kernels": UNIT_TEST_KERNELS, "n_epochs": 1, "block_size": 16, "shuffle": False, "random_state": 0},
        {
            "kernels": "linear;gaussian:1 @ 0:2; laplacian:1 @ 2:4",
            "loss": "hinge",
            "n_epochs": 1,
            "block_size": 16,
            "shuffle": False,
            "random_state": 0,
        },
    )

    _parameter_constraints: dict[str, Any] = {
        **_OKSMixin._parameter_constraints,
        "loss": [StrOptions(CLASSIFIER_LOSSES, note="squared loss: OKSRegressor")],
        "horizon": [None, POSITIVE_INT],
    }

    def _takes_sparse_rows(self) -> bool:
        return False  # OKS's engine keeps dense support vectors: sparse X is densified

    @property
    def _algorithm(self) -> str:
        return "classification" if self.loss == "mistake" else "general"

    def feed_rows(self) -> int:
        """Any split of a stream into calls gives the same model; whole blocks are the cheapest."""
        validate_params(self, ["block_size"])
        return self.block_size

    def _start(self, n_features: int, n_rows: int, *, passes: int = 1, lam: float | str | None = None) -> None:
        # (``passes``: fit's epochs, each of which the step η is set for: :meth:`_epochs`)
        lam = self.lam if lam is None else lam
        if self.horizon is not None:
            n_rows = validate_params(self, ["horizon"])["horizon"]
        if lam == "validation":
            raise ValueError(
                "OKS: lam='validation' picks λ on a split of the whole training set, which fit has and "
                "partial_fit (a stream) does not; give lam a number to learn from a stream"
            )
        self.kernel_pool_ = self._pool()
        self.seed_ = resolve_seed("OKS", self.random_state)
        self.engine_ = self._oks_engine(
            n_features,
            n_rows,
            n_classes=self._class_columns(),
            algorithm=self._algorithm,
            loss=self.loss,
            lam=float(lam),
        )
        self.calibration_ = Calibration.empty(len(self.classes_))

    def _learn_pass(self, X: NDArray[np.float64], y_coded: NDArray[np.float64], *, first: bool) -> dict[str, Any]:
        # only the first pass scores rows the model has not learnt: it alone calibrates
        return self._learn(X, y_coded, False, calibrate=first)

    @classmethod
    def _engine_from(cls, kernel_pool: KernelPool, arrays: dict[str, NDArray[Any]], scalars: dict[str, Any]) -> Any:
        return OKSEngine.from_state(compile_program(kernel_pool), arrays, scalars)

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Learn in ``n_epochs`` passes (δ per epoch); with lam="validation" λ comes first."""
        self._reset()
        self._check_params()
        X = self._check_X(X, first=True, spread_warning=True)
        lam = self.lam
        if lam == "validation":
            lam = 1.0  # Algorithm 2: λ scales every predictor alike, no decision depends on it
            if self._algorithm == "general":
                lam = self._validation_lam(
                    X,
                    np.asarray(y),
                    lambda value, Xt, yt: self._copy_with(value).fit(Xt, yt),
                    lambda model, Xv, yv: model.score(Xv, yv),
                )
        y_coded = self._encode_labels(y, None, first=True, n_rows=len(X))
        self._start(X.shape[1], len(X), lam=lam)
        self._epochs(X, y_coded)
        self._publish()
        return self

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """The predicting kernel's scores: (n,) for two classes (positive: ``classes_[1]``), else
        (n, K)."""
        self._check_fitted()
        X = self._check_X(X, first=False)
        scores: NDArray[np.float64] = self.engine_.kernel_scores(X, [self.predicting_kernel()])[:, 0]
        return scores


class OKSRegressor(_OKSMixin, AcceptsSparse, RegressorMixin, BaseEstimator):
    """Online kernel selection for regression: Algorithm 1 with the squared loss ½ (f(x) − y)².

    Parameters are OKS's (``kernels``, ``feature_groups``, ``lam`` — "validation" picks it by the
    validation mean squared error —, ``delta``, ``eta``, ``n_epochs``, ``prediction``,
    ``block_size``, ``shuffle``, ``random_state``), except ``lam``'s default: 0.05, chosen by a
    sweep on three standard regression sets (docs/algorithms/oks.md, "The regressor's λ";
    ``benchmarks/oks_regressor_defaults.py``). With the normalised kernels of the default pool
    (κ(x, x) = 1) a step moves the drawn kernel's f(x_t) a share λ/p of the way to y_t, whatever
    the targets' scale, where p >= δ/m is the kernel's sampling probability: beyond a share of 2 the
    step overshoots, so λ = 1 (OKS's default) makes the rarely drawn kernels' predictors diverge (R²
    of −8 on held-out folds of friedman1), while λ = 0.05 keeps λ/p below 2 for up to 16 kernels at
    δ = 0.5 and averages over the rows.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = OKSRegressor(kernels="linear;gaussian:2^-2..2^2", lam=0.05).fit(X, y)
    >>> model.selected_kernel_name_, model.score(X, y) > 0.3
    ('gaussian(sigma=0.25)', True)
    """

    _unit_test_params = ({"kernels": UNIT_TEST_KERNELS, "block_size": 16, "shuffle": False, "random_state": 0},)

    def __init__(
        self,
        *,
        kernels: KernelSpecLike = "omkc16+norm",
        feature_groups: dict[str, Any] | None = None,
        lam: float | str = 0.05,
        delta: float | Sequence[float] = (0.5, 0.2),
        eta: float | None = None,
        n_epochs: int = 2,
        prediction: str = "selected",
        block_size: int = 256,
        shuffle: bool = True,
        random_state: int | None = SEED,
    ) -> None:
        self.kernels = kernels
        self.feature_groups = feature_groups
        self.lam = lam
        self.delta = delta
        self.eta = eta
        self.n_epochs = n_epochs
        self.prediction = prediction
        self.block_size = block_size
        self.shuffle = shuffle
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike | None) -> Self:
        """Learn in ``n_epochs`` passes; with lam="validation" λ minimises the validation MSE."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)
        self._check_params()
        X = check_array(X, owner=type(self).__name__, spread_warning=True, estimator=self, reset=True)
        if y is None:
            raise ValueError("OKSRegressor requires y to be passed, but the target y is None")
        target: NDArray[np.float64] = column_or_1d(y, warn=True).astype(np.float64)
        if target.shape != (len(X),) or not np.isfinite(target).all():
            raise ValueError(
                f"OKSRegressor: y must be {len(X)} finite numbers (one per row of X), got shape "
                f"{target.shape}" + ("" if target.shape != (len(X),) else " with NaN or inf")
            )
        self.seed_ = resolve_seed(type(self).__name__, self.random_state)
        lam = self.lam
        if lam == "validation":
            lam = self._validation_lam(
                X,
                target,
                lambda value, Xt, yt: self._copy_with(value).fit(Xt, yt),
                lambda model, Xv, yv: -np.mean((model.predict(Xv) - yv) ** 2),
            )
        self.n_features_in_ = X.shape[1]
        self.kernel_pool_ = self._pool()
        self.engine_ = self._oks_engine(
            X.shape[1], len(X), n_classes=1, algorithm="general", loss="squared", lam=cast(float, lam)
        )  # a number: "validation" was resolved above
        self._epochs(X, target)
        self._publish()
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """The predicting kernel's f(x)."""
        if not hasattr(self, "engine_"):
            raise NotFittedError("this OKSRegressor is not fitted yet; call fit first")
        X = check_array(X, owner=type(self).__name__, n_features=self.n_features_in_, estimator=self)
        values: NDArray[np.float64] = self.engine_.kernel_scores(X, [self.predicting_kernel()])[:, 0]
        return values
