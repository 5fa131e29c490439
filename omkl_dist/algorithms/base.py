"""Shared base of the online kernel classifiers: scikit-learn contract, input checks, label coding.

``__init__`` only stores parameters; everything is validated in ``fit``/``partial_fit``. Learned
state ends in ``_``.

Labels: two classes are a binary problem: inside, ``classes_[0]`` is -1 and ``classes_[1]`` is +1,
one coefficient per kernel; a zero combined score predicts the positive class but counts as a
mistake online (as the Perceptron's ``y f(x) <= 0`` rule does). K > 2 classes (and every problem of
an estimator whose ``_always_multiclass`` is set, e.g. OM-2) take the multi-class model: labels are
indices into ``classes_``, a coefficient per kernel and class, ``decision_function`` gives (n, K)
class scores and ``predict`` the highest-scoring class (the first on ties); ties with the true
class count as mistakes online (:mod:`omkl_dist.engine._multiclass`).

Probabilities: ``predict_proba`` maps ``decision_function`` through a temperature-scaled softmax
learnt from the progressive scores of the rows learnt (``calibration_``, on a cluster too,
:mod:`omkl_dist.evaluation.calibration`, docs/probabilities.md); its most probable class is the
predicted one.
"""

from __future__ import annotations

from collections.abc import Iterator
from numbers import Integral
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.metaestimators import available_if

from .._validation import (
    Interval,
    check_array,
    check_nonnegative,
    check_param,
    check_y,
    resolve_seed,
    validate_params,
)
from ..engine.local import Feed, LocalEngine, segmenting
from ..engine.protocol import engine_class
from ..evaluation.calibration import Calibration
from ..kernels import make_pool
from ..scoring.program import compile_program
from ..scoring.rows import is_sparse
from ._batch import KERNEL_SPEC, UNIT_TEST_KERNELS, AcceptsSparse, model_from_header, state_header
from ._order import SHUFFLE, fit_orders
from .labels import class_codes

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..kernels import KernelPool
    from ..scoring.program import KernelProgram
    from ._batch import KernelSpecLike, Rows

POSITIVE_INT = Interval(Integral, 1, None, closed="left")
CHI2 = ("chi2", "achi2")  # the kernel families undefined on negative features
RANDOM_STATE = [None, Interval(Integral, 0, None, closed="left")]


class OnlineKernelClassifier(AcceptsSparse, ClassifierMixin, BaseEstimator):
    """Base class: subclasses define ``_rule()``, ``_kernel_spec()`` and ``_parameter_constraints``
    (what each ``__init__`` parameter may be, see :func:`~omkl_dist._validation.validate_params`).
    Fitted on a DataFrame, an estimator keeps its column names as ``feature_names_in_`` and refuses
    other names or another order later (:func:`~omkl_dist._validation.check_feature_names`)."""

    # whether the estimator uses the multi-class model for two classes too
    _always_multiclass = False

    # parameters every subclass's ``__init__`` stores, and the learned state (declared for the type checker)
    kernels: KernelSpecLike
    block_size: int
    n_epochs: int
    shuffle: bool
    random_state: int | None
    engine_: Any  # LocalEngine, OKSEngine or BudgetEngine: n_support() etc. are beyond the Engine protocol
    kernel_pool_: KernelPool
    classes_: NDArray[Any]
    n_features_in_: int
    seed_: int
    sparse_rows_: bool
    calibration_: Calibration

    _parameter_constraints: dict[str, Any] = {
        "kernels": [KERNEL_SPEC],
        "block_size": [POSITIVE_INT],
        "n_epochs": [POSITIVE_INT],
        "shuffle": SHUFFLE,
        "random_state": RANDOM_STATE,
    }

    # small parameters for the test suites (the conformance checks, the cluster-equals-local test): one
    # dict per variant worth checking, the plain one first; subclasses with other parameters override it.
    # ``shuffle=False, n_epochs=1``: their fit is the one pass in order the parity tests compare with
    # a stream (tests/test_fit_order.py checks the shuffled, several-pass fit against partial_fit calls)
    _unit_test_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {"kernels": UNIT_TEST_KERNELS, "block_size": 16, "n_epochs": 1, "shuffle": False, "random_state": 0},
    )

    # --- hooks -------------------------------------------------------------------------------
    def _kernel_spec(self) -> KernelSpecLike:
        return self.kernels

    def _check_params(self) -> None:
        """The declared constraints; estimators with rules between parameters add them after."""
        validate_params(self)

    def _rule(self) -> int:
        raise NotImplementedError

    def _engine_params(self) -> dict[str, Any]:
        """:class:`~omkl_dist.engine.local.LocalEngine`'s settings beyond the rule: ``block_sync``
        and the rule's ``hyper``-parameter record (default: the rule's defaults)."""
        return {"block_sync": False}

    def feed_rows(self) -> int:
        """Rows per block of a job's stream (valid before fitting): ``partial_fit`` calls that end
        at multiples of it leave the model of a single call -- and of a cluster run -- bit for bit,
        since they end at the end of a round (:func:`~omkl_dist.engine.local.segmenting`); a job's
        calls join blocks as :meth:`feed` says."""
        validate_params(self, ["block_size"])
        return segmenting(self._rule(), compile_program(make_pool(self._kernel_spec())), self.block_size).window

    def feed(self) -> Feed:
        """Where a job's calls of :meth:`partial_fit` end (valid before fitting): the stream comes in
        blocks of :meth:`feed_rows` rows, joined into calls that end where this
        :class:`~omkl_dist.engine.local.Feed` says (here: every block)."""
        rows = self.feed_rows()
        return Feed(rows, rows)

    # --- learning ----------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Learn from (X, y) from scratch in ``n_epochs`` online passes over the rows, each in a new
        random order seeded by ``random_state`` (``shuffle=False``: in the given order; see
        :mod:`omkl_dist.algorithms._order`): the model ``n_epochs`` :meth:`partial_fit` calls on
        those orders give."""
        self._reset()
        self._check_params()
        X = self._check_X(X, first=True, spread_warning=True)
        y_coded = self._encode_labels(y, None, first=True, n_rows=X.shape[0])
        self._start(X.shape[1], X.shape[0], passes=self.n_epochs)
        self._fit_passes(X, y_coded, fit_orders(X.shape[0], shuffle=self.shuffle, seed=self.seed_))
        self._publish()
        return self

    def _fit_passes(self, X: Rows, y_coded: NDArray[np.float64], orders: Iterator[NDArray[np.intp] | None]) -> None:
        """``fit``'s ``n_epochs`` passes over the rows, each in the next of ``orders``; fewer when a
        pass leaves :meth:`_updates` where it was (the next ones would repeat it)."""
        epoch_mistakes: list[int] = []
        for epoch in range(self.n_epochs):
            order = next(orders)
            before = self._updates()
            rows, labels = (X, y_coded) if order is None else (X[order], y_coded[order])
            # only the first pass scores rows the model has not learnt: it alone calibrates
            outcome = self._learn(rows, labels, False, calibrate=epoch == 0)
            epoch_mistakes.append(int(outcome["mistakes"].sum()))
            if before is not None and self._updates() == before:
                break
        self.epoch_mistakes_ = epoch_mistakes
        self.n_epochs_ = len(epoch_mistakes)

    def _updates(self) -> int | None:
        """A count that grows with every update of the model, for estimators whose pass without an
        update proves the model final (OM-2); None (the default): ``fit`` makes every pass."""
        return None

    def partial_fit(self, X: ArrayLike, y: ArrayLike, classes: ArrayLike | None = None) -> Self:
        """Continue the online pass with rows of (X, y) in order (a stream's order is part of its
        data: ``partial_fit`` never shuffles)."""
        self.progressive_partial_fit(X, y, classes=classes)
        return self

    def progressive_partial_fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        classes: ArrayLike | None = None,
        *,
        keep_scores: bool = False,
        sample_at: ArrayLike | None = None,
    ) -> dict[str, NDArray[Any]]:
        """Predict each row, then learn from it; return the online outcome per row.

        Returns a dict with ``mistakes`` (bool per row), ``score`` (combined score) and, when
        ``keep_scores``, ``F`` (per-kernel decision values before the update). ``sample_at``: rows
        seen (:attr:`n_samples_seen_`) after which to read the model: ``samples`` is then
        ``(rows, n_support, weight shares)`` there, for the models whose engine reads itself
        inside a block (binary shared-pool Hedge rules: :mod:`omkl_dist.engine.samples`); the
        others give no ``samples``.
        """
        first = not hasattr(self, "engine_")
        if first:
            self._check_params()
        X = self._check_X(X, first=first)
        y_pm = self._encode_labels(y, classes, first=first, n_rows=X.shape[0])
        if first:
            self._start(X.shape[1], X.shape[0])
        outcome = self._learn(X, y_pm, keep_scores, sample_at=sample_at)
        self._publish()
        return outcome

    def initialize(
        self, n_features: int, classes: ArrayLike, n_rows: int | None = None, *, sparse: bool = False
    ) -> Self:
        """Start a fresh, untrained model for rows of ``n_features`` features and the given classes,
        without data: what a job that learns elsewhere (a Dask cluster, see
        :class:`omkl_dist.distributed.DaskRunner`) starts from. ``n_rows``: the length of the stream
        it will learn from (settings given as shares of the data, e.g. Perceptron(*)'s
        ``validation_fraction``, refer to it). ``sparse``: the rows will come as ``scipy.sparse``
        (kept sparse where the estimator can, see :attr:`sparse_rows_`). Returns the estimator."""
        self._reset()
        self._check_params()
        check_param(type(self).__name__, "n_features", n_features, [POSITIVE_INT])
        self.n_features_in_ = int(n_features)
        self.sparse_rows_ = bool(sparse) and self._takes_sparse_rows()
        self._set_classes(np.unique(np.asarray(classes)))
        self._start(int(n_features), int(n_rows) if n_rows is not None else 0)
        self._publish()
        return self

    def set_engine_state(
        self, arrays: dict[str, NDArray[Any]], scalars: dict[str, Any], *, calibration: Calibration | None = None
    ) -> Self:
        """Continue from an engine state (``engine_.state()`` of this model or of a run of it
        elsewhere, e.g. a cluster's): the learned attributes follow it. ``calibration``: the
        probability calibration learnt from the progressive scores of the state's rows (a
        cluster's coordinator learns it, :mod:`omkl_dist.distributed.calibration`); None: it
        starts over (:attr:`calibration_` learns from the scores of rows learnt here). Returns the
        estimator."""
        self._check_fitted()
        self.engine_ = self._engine_from(self.kernel_pool_, arrays, scalars)
        self.calibration_ = Calibration.empty(len(self.classes_)) if calibration is None else calibration
        self._publish()
        return self

    @classmethod
    def _engine_from(cls, kernel_pool: KernelPool, arrays: dict[str, NDArray[Any]], scalars: dict[str, Any]) -> Any:
        """The engine of a state: its program holds the kernels still in the model (``kernel_ids``)."""
        active = make_pool([kernel_pool[int(i)] for i in arrays["kernel_ids"]])
        return engine_class(scalars).from_state(compile_program(active), arrays, scalars)

    def _reset(self) -> None:
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)

    def _start(self, n_features: int, n_rows: int, *, passes: int = 1) -> None:
        """A fresh model for ``passes`` passes over ``n_rows`` rows of ``n_features`` features."""
        self.kernel_pool_ = make_pool(self._kernel_spec())
        self.kernel_pool_.check_width(n_features, owner=type(self).__name__)
        self.seed_ = resolve_seed(type(self).__name__, self.random_state)
        self.engine_ = self._new_engine(compile_program(self.kernel_pool_), n_features)
        self.calibration_ = Calibration.empty(len(self.classes_))

    def _new_engine(self, program: KernelProgram, n_features: int) -> Any:
        """A fresh engine for this estimator's parameters (estimators on another engine override it)."""
        return LocalEngine(
            program,
            n_features,
            rule=self._rule(),
            seed=self.seed_,
            block_size=self.block_size,
            n_classes=self._class_columns(),
            sparse=self.sparse_rows_,
            **self._engine_params(),
        )

    def _takes_sparse_rows(self) -> bool:
        """Whether ``scipy.sparse`` X is learnt from as sparse rows (:mod:`omkl_dist.scoring.rows`):
        the shared-pool engine with dot-product and gaussian kernels on all columns. Other
        estimators (and kernels) densify it."""
        return compile_program(make_pool(self._kernel_spec())).fast is not None

    def _class_columns(self) -> int:
        """Coefficient columns per kernel: 1 for the binary model, K for the multi-class one."""
        K = len(self.classes_)
        return K if (K > 2 or self._always_multiclass) else 1

    def _learn(
        self,
        X: Rows,
        y_coded: NDArray[np.float64],
        keep_scores: bool,
        *,
        calibrate: bool = True,
        sample_at: ArrayLike | None = None,
    ) -> dict[str, NDArray[Any]]:
        """Learn the rows in order (:meth:`_learn_rows`); ``calibrate``: they are rows the model
        has not learnt before, so their progressive decision values also teach
        :attr:`calibration_` (``fit``'s later passes over the same rows do not)."""
        kernel_scores = calibrate and self.calibrates_on_kernel_scores()
        outcome = self._learn_rows(X, y_coded, keep_scores or kernel_scores, sample_at=sample_at)
        if calibrate:
            self.calibration_ = self.calibration_.update(*self.calibration_batch(outcome, y_coded, self.engine_.w))
            if not keep_scores:
                outcome.pop("F", None)
        return outcome

    def _learn_rows(
        self, X: Rows, y_coded: NDArray[np.float64], keep_scores: bool, sample_at: ArrayLike | None = None
    ) -> dict[str, NDArray[Any]]:
        """The engine's test-then-train pass over the rows (estimators that learn in stages override
        it); ``sample_at``: see :meth:`progressive_partial_fit`."""
        e = self.engine_
        sampled = sample_at is not None and isinstance(e, LocalEngine) and e.samples_inside
        outcome: dict[str, NDArray[Any]] = (
            e.learn(X, y_coded, keep_scores=keep_scores, sample_at=sample_at)
            if sampled
            else e.learn(X, y_coded, keep_scores=keep_scores)
        )
        return outcome

    def calibration_batch(
        self, outcome: dict[str, NDArray[Any]], y_coded: NDArray[np.float64], weights: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """What :attr:`calibration_` learns from a batch of rows the model has just learnt, as
        :meth:`Calibration.update` takes it: each row's decision value (as :meth:`decision_function`
        gives them) from the model before it learnt the row, and its class index.

        ``outcome``: the engine's online outcome of the batch (``score``; ``F`` when
        :meth:`calibrates_on_kernel_scores`), ``y_coded`` the labels as the engine took them (±1,
        or class indices), ``weights`` the engine's kernel weights after the batch. Public so that
        a job learnt elsewhere (a cluster's coordinator, which assembles these per round) learns
        the very calibration an in-process run does."""
        y_index = (y_coded > 0) if self._class_columns() == 1 else y_coded
        return self._progressive_decisions(outcome, weights), np.asarray(y_index, dtype=np.intp)

    def _progressive_decisions(
        self, outcome: dict[str, NDArray[Any]], weights: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The decision values of a batch's rows (:meth:`calibration_batch`): by default the
        combined score each row was predicted with."""
        return self._decision_values(outcome["score"])

    def calibrates_on_kernel_scores(self) -> bool:
        """Whether :meth:`calibration_batch` reads the per-kernel scores ``F`` of an outcome."""
        return False

    def _publish(self) -> None:
        e = self.engine_
        self.weights_ = e.w / e.w.sum()
        self.n_support_ = e.n_support()
        self.mistakes_ = int(e.n_mistakes)
        self.n_samples_seen_ = int(e.n_seen)
        self.sparse_rows_ = bool(getattr(e, "sparse", False))
        self.kernel_mistakes_ = e.kernel_mistakes.copy()
        names = self.kernel_pool_.names
        self.active_kernel_names_ = [names[i] for i in e.kernel_ids]

    # --- persistence (no pickle: numeric arrays + JSON, see storage.models) ------------------
    def to_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The fitted model as ``(arrays, meta)``: numeric arrays and JSON-able metadata."""
        self._check_fitted()
        arrays, scalars = self.engine_.state()
        params: dict[str, Any] = self.get_params()
        for key in ("kernels", "kernel"):
            if key in params:
                params[key] = make_pool(params[key]).to_spec_string()
        meta = {
            **state_header(self, params),
            "engine": scalars,
            "extra": self._extra_state(),
            "calibration": self.calibration_.to_dict(),
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, NDArray[Any]], meta: dict[str, Any]) -> Self:
        """Rebuild a fitted model from :meth:`to_state` output; it continues learning exactly."""
        model = model_from_header(cls, meta)
        model.seed_ = int(meta["engine"]["seed"])
        model.engine_ = cls._engine_from(model.kernel_pool_, arrays, meta["engine"])
        if model.engine_.n_features != model.n_features_in_:  # the rows the model would score X against
            raise ValueError(
                f"{cls.__name__}: the state's support vectors have {model.engine_.n_features} columns, its "
                f"header n_features_in={model.n_features_in_}: the state is damaged; save the model again"
            )
        model._restore_extra(meta.get("extra", {}))
        model.calibration_ = Calibration.from_dict(meta["calibration"])
        model._publish()
        return model

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _restore_extra(self, extra: dict[str, Any]) -> None:
        pass

    # --- prediction --------------------------------------------------------------------------
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Combined score, (n,): positive means ``classes_[1]``; for K > 2 classes the combined
        class scores, (n, K)."""
        self._check_fitted()
        X = self._check_X(X, first=False)
        return self._decision_values(self._combine(self.engine_.kernel_scores(X)))

    def _decision_values(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Combined scores as :meth:`decision_function` gives them: a multi-class model's two class
        scores as one, positive for ``classes_[1]``."""
        if scores.ndim == 2 and len(self.classes_) == 2:  # a multi-class model of two classes
            return scores[:, 1] - scores[:, 0]
        return scores

    def _combine(self, F: NDArray[np.float64]) -> NDArray[np.float64]:
        """Combined scores from per-kernel ones: (n, m) -> (n,), multi-class (n, m, K) -> (n, K)."""
        raise NotImplementedError

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        scores = self.decision_function(X)
        labels: NDArray[Any]
        if scores.ndim == 2:
            labels = self.classes_[np.argmax(scores, axis=1)]
        else:
            labels = np.where(scores >= 0.0, self.classes_[1], self.classes_[0])
        return labels

    def _has_calibration(self) -> bool:
        """Whether :meth:`predict_proba` is available: always before fitting (it then raises
        NotFittedError, as scikit-learn expects), else once :attr:`calibration_` learnt from a row."""
        if hasattr(self, "engine_") and self.calibration_.n_rows == 0:
            raise AttributeError(
                f"this {type(self).__name__} has no calibrated probabilities: they are learnt from the "
                "progressive scores of the rows it learns, and it has learnt none with their scores (its "
                "engine state was set without a calibration, set_engine_state); learn more rows with "
                "partial_fit, or fit it, or wrap it in sklearn.calibration.CalibratedClassifierCV"
            )
        return True

    @available_if(_has_calibration)  # type: ignore[untyped-decorator]  # (scikit-learn's decorator is untyped)
    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities, (n, K) in ``classes_`` order, calibrated on the model's progressive
        scores (:mod:`omkl_dist.evaluation.calibration`): a temperature-scaled softmax of
        :meth:`decision_function` (binary: a sigmoid ``1 / (1 + exp(-a f(x)))`` for ``classes_[1]``)
        whose one slope ``a >= 0`` maximises the likelihood of the labels of the rows the model
        learnt here, each scored before it was learnt. The most probable class is always
        :meth:`predict`'s."""
        scores = self.decision_function(X)  # (raises NotFittedError first)
        probabilities: NDArray[np.float64] = self.calibration_.probabilities(scores)
        return probabilities

    @available_if(_has_calibration)  # type: ignore[untyped-decorator]
    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """The logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):  # a probability of 0 (a saturated sigmoid) has log -inf
            log: NDArray[np.float64] = np.log(self.predict_proba(X))
        return log

    # --- validation --------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "engine_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit or partial_fit first")

    def _check_X(self, X: ArrayLike, *, first: bool, spread_warning: bool = False) -> Rows:
        """X checked; ``scipy.sparse`` X stays sparse (CSR) for a model that keeps sparse rows
        (decided on the first call: :attr:`sparse_rows_`), else it is densified. ``spread_warning``:
        ``fit``'s (:func:`~omkl_dist._validation.check_array`)."""
        name = type(self).__name__
        keep_csr = is_sparse(X) and (self._takes_sparse_rows() if first else self.sparse_rows_)
        X = check_array(
            X,
            owner=name,
            n_features=None if first else self.n_features_in_,
            sparse="csr" if keep_csr else "densify",
            spread_warning=spread_warning,
            estimator=self,
            reset=first,
        )
        if first:
            self.n_features_in_ = X.shape[1]
            self.sparse_rows_ = is_sparse(X)
        # the chi-square kernels' sign check, X's minimum (a pass over X) for such a pool only; a later
        # call's pool is the fitted one (parsing the spec again cost ~0.3 ms of every partial_fit call)
        chi2 = [s for s in (make_pool(self._kernel_spec()) if first else self.kernel_pool_) if s.family in CHI2]
        if chi2 and not is_sparse(X) and X.min() < 0.0:
            for spec in chi2:
                check_nonnegative(X, spec.name, owner=name, columns=spec.columns)
        return X

    def _set_classes(self, found: NDArray[Any]) -> None:
        if len(found) < 2:
            raise ValueError(
                f"{type(self).__name__}: y has {len(found)} class {found.tolist()}; a classifier needs at "
                "least two (pass classes=[...] listing every class for a first batch with fewer)"
            )
        self.classes_ = found

    def _check_same_classes(self, given: NDArray[Any]) -> None:
        """A later call's ``classes`` must list the first call's (scikit-learn's partial_fit rule): the
        model's coefficients are laid out per class and cannot grow one."""
        if given.shape != self.classes_.shape or not np.array_equal(given, self.classes_):
            raise ValueError(
                f"{type(self).__name__}: classes differs from the previous call: got {given.tolist()}, the model "
                f"learns {self.classes_.tolist()}; pass the same classes (or none) after the first call, or fit "
                "a new model to learn others"
            )

    def _encode_labels(
        self, y: ArrayLike, classes: ArrayLike | None, *, first: bool, n_rows: int
    ) -> NDArray[np.float64]:
        name = type(self).__name__
        y = check_y(name, y, n_rows, first=first)
        if first:
            self._set_classes(np.unique(y) if classes is None else np.unique(np.asarray(classes)))
        elif classes is not None:
            self._check_same_classes(np.unique(np.asarray(classes)))
        known = np.isin(y, self.classes_) if classes is not None or not first else None  # (else classes_ = unique(y))
        if known is not None and not known.all():
            bad = y[~known][0]
            bad = bad.item() if isinstance(bad, np.generic) else bad
            raise ValueError(
                f"{name}: label {bad!r} is not one of the classes {self.classes_.tolist()} "
                "seen in the first partial_fit call"
            )
        return class_codes(y, self.classes_, multiclass=self._class_columns() > 1)
