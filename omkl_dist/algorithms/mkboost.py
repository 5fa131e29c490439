"""MKBoost: multiple kernel boosting (Xia & Hoi, TKDE 2013), Algorithms 1-4.

Each boosting trial t draws a weighted resample from the example distribution D_t, trains one SVM
per kernel on it (S1/S2: only the kernels the sampling probabilities S_t pick), measures each SVM's
error ε_t^j under D_t on the *whole* training set, and builds the trial's classifier h_t:

* D1 / S1 keep the kernel SVM with the smallest ε_t^j;
* D2 / S2 combine them, ``h_t(x) = sign(Σ_j α_t^j h_t^j(x))`` with ``α_t^j = ½ ln((1-ε_t^j)/ε_t^j)``.

Then ``α_t = ½ ln((1-ε_t)/ε_t)``, ``D_{t+1}(i) ∝ D_t(i)·exp(-α_t y_i h_t(x_i))`` and, for S1/S2,
``S_{t+1}(j) = S_t(j)·β^{ε_t^j}`` for the trained kernels, then ``S_{t+1} /= max S_{t+1}``. The
model is ``sign(Σ_t α_t h_t(x))``.

The resamples, errors and weights are drawn and updated here, in the calling process; the per-kernel
SVM fits are tasks (:mod:`omkl_dist.algorithms.mkboost_tasks`) run by a
:class:`~omkl_dist.algorithms.mkboost_runners.TaskRunner` (:mod:`omkl_dist.algorithms.mkboost_runners`:
serial, threads; :class:`omkl_dist.distributed.mkboost.DaskExecutor`: a Dask cluster).
"""

from __future__ import annotations

import sys
import time
import warnings
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from threadpoolctl import threadpool_limits

from .._validation import (
    Interval,
    Satisfies,
    StrOptions,
    check_array,
    check_sample_weight,
    encode_labels,
    resolve_seed,
    validate_params,
)
from ._batch import (
    KERNEL_SPEC,
    AcceptsSparse,
    BatchState,
    OneVsOneVote,
    check_kernel_overflow,
    compact_support,
    kernel_decisions,
    ovo_pairs,
    pair_problem,
)
from .mkboost_runners import as_runner
from .mkboost_tasks import KernelFit, KernelTask, SharedData, TrialSamples, fit_kernel_task, svm_scale, svm_sign

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from numpy.typing import ArrayLike

    from ..kernels import KernelPool
    from ._batch import KernelSpecLike
    from .mkboost_runners import TaskRunner

__all__ = ["MKBoost", "draw_resample", "boost_alpha", "VARIANTS", "RESAMPLE_RETRIES", "EPSILON_FLOOR", "SVM_MAX_ITER"]

VARIANTS = ("D1", "D2", "S1", "S2")
#: Extra draws from a trial's stream when a resample lacks a class, before one example is added.
RESAMPLE_RETRIES = 10
#: Errors are clipped to [EPSILON_FLOOR, 1 - EPSILON_FLOOR] before the log (α stays finite, ≈ 11.5).
EPSILON_FLOOR = 1e-10
#: Default bound on one SVM's solver iterations. Converging fits of the test suite and the paper's
#: datasets take thousands; an unnormalised polynomial kernel on raw features (breast cancer: row
#: norms ~ 10^3) takes libsvm's own 10^7, for minutes per fit, and its SVM is poor anyway.
SVM_MAX_ITER = 100_000


# ============================================================================ boosting pieces
def draw_resample(rng: np.random.Generator, D: np.ndarray, n: int, y: np.ndarray) -> tuple[np.ndarray, int, bool]:
    """n indices drawn with replacement from distribution D, containing both labels of y (±1).

    A resample that misses a class is drawn again from the same stream, up to
    :data:`RESAMPLE_RETRIES` more times; if every draw misses it, the heaviest example of each
    missing class (largest D, first on ties) is appended. Returns ``(sample, retries, forced)``.
    """
    for attempt in range(RESAMPLE_RETRIES + 1):
        sample = rng.choice(len(D), size=n, replace=True, p=D)
        drawn = y[sample]
        if (drawn > 0).any() and (drawn < 0).any():
            return sample, attempt, False
    missing = [label for label in (-1.0, 1.0) if not (drawn == label).any()]
    extra = [int(np.argmax(np.where(y == label, D, -1.0))) for label in missing]
    return np.concatenate([sample, np.asarray(extra, dtype=sample.dtype)]), RESAMPLE_RETRIES, True


def boost_alpha(error: float) -> float:
    """½ ln((1-ε)/ε) with ε clipped to [EPSILON_FLOOR, 1 - EPSILON_FLOOR]."""
    e = min(max(float(error), EPSILON_FLOOR), 1.0 - EPSILON_FLOOR)
    alpha: float = 0.5 * np.log((1.0 - e) / e)
    return alpha


# bytes one task holds per squared resample row: its Gram matrix on the distinct rows, the matrix over
# the resample handed to libsvm, and libsvm's own working set (measured on ijcnn1: two tasks on
# resamples of 14,169 rows peaked at 8.5 GB in all)
TASK_BYTES_PER_ROW2 = 3 * 8


def check_task_fits(name: str, resample: int, ratio: float) -> None:
    """Refuse a fit one of whose per-kernel SVMs cannot be held, before any runs: a task holds about
    three matrices of its resample (``ratio`` of a pair's rows) squared -- a 1,000,000-row window's
    resample of 200,000 rows, 960 GB."""
    import psutil

    need, available = TASK_BYTES_PER_ROW2 * resample * resample, psutil.virtual_memory().available
    if need > available // 2:
        fits = int(np.sqrt(available // 2 / TASK_BYTES_PER_ROW2))
        raise ValueError(
            f"{name}: each SVM trains on a resample of {resample:,} rows (ratio={ratio:g} of the training rows), "
            f"which needs {need / 2**30:,.1f} GiB, more than half of the {available / 2**30:,.1f} GiB available "
            f"(about {fits:,} resampled rows fit); use a smaller ratio (--ratio), fewer training rows, or learn "
            "online (omkl run), which keeps no Gram matrix"
        )


class _PairState:
    """One binary (one-vs-one) boosting problem: its rows, distributions and kept trials."""

    def __init__(self, rows: np.ndarray, y: np.ndarray, weights: np.ndarray, n_kernels: int, ratio: float) -> None:
        self.rows, self.y = rows, y
        self.D = weights / weights.sum()
        self.S = np.ones(n_kernels)
        self.n = max(2, int(round(ratio * len(rows))))
        self.trials: list[dict[str, Any]] = []
        self.stop: str | None = None
        self.retries = 0
        self.forced = 0


# ============================================================================ estimator
class MKBoost(AcceptsSparse, BatchState, OneVsOneVote, ClassifierMixin, BaseEstimator):  # binary score: Σ_t α_t h_t(x)
    """Multiple kernel boosting (MKBoost-D1, D2, S1, S2) with per-kernel SVMs on precomputed Gram blocks.

    Parameters
    ----------
    variant : {"D1", "D2", "S1", "S2"}
        D: all kernels every trial; S: kernels sampled with probabilities S_t. 1: keep the best
        kernel's SVM; 2: combine all trained kernels' SVMs with weights α_t^j.
    n_trials : int, default 100
        Boosting trials T (fewer if boosting stops early, see Notes).
    ratio : float in (0, 1], default 0.2
        Resample size n = max(2, round(ratio · N)) per trial (N: rows of the binary problem).
    beta : float in (0, 1], default 2**-5
        Sampling decay β of S1/S2 (β = 1 samples every kernel, as D1/D2).
    C : float > 0, default 50.0
        SVM penalty.
    kernels : str or KernelPool, default "mkboost17+norm"
        Kernel pool (14 gaussians σ = 2^-6..2^7, polynomial p = 1..3, normalised); any
        :func:`make_pool` spec. The paper's pool is ``"mkboost17"`` (unnormalised): on raw
        features its polynomial kernels grow with ‖x‖^(2p) and their SVMs barely converge (see
        Notes); normalised, every kernel value lies in [-1, 1].
    svm_max_iter : int >= 1 or None, default SVM_MAX_ITER (100,000)
        Bound on each SVM's solver iterations; None leaves libsvm's own (10^7). A fit that reaches
        it ends with a ConvergenceWarning naming the kernels.
    random_state : int >= 0 or None
        Seed; trial t of one-vs-one pair p draws everything from ``default_rng([seed, p, t])``
        (binary problems have one pair, p = 0), so results do not depend on execution order.
    executor : None, TaskRunner or concurrent.futures.Executor
        Where per-kernel fits run: None serially, :class:`ThreadRunner` on threads,
        ``DaskExecutor(client)`` on a Dask cluster. Not part of the model: pickles store None.
    verbose : int >= 0, default 0
        1: one line per boosting trial on standard error (trial, SVMs trained, seconds so far).

    Attributes
    ----------
    classes_ : ndarray
    pairs_ : list of (int, int)
        One-vs-one class-index pairs; pair (i, j) is positive for class j. Binary: [(0, 1)].
    kernel_names_ : tuple of str
    alphas_ : list of ndarray
        Per pair, α_t of every kept trial.
    trial_kernels_ : list of list of tuple
        Per pair and trial, the kernel indices in h_t (D1/S1: the chosen one; D2/S2: all trained).
    kernel_alphas_ : list of list of ndarray
        Per pair and trial, α_t^j of those kernels (1.0 for D1/S1).
    trial_errors_ : list of ndarray
        Per pair, ε_t of every kept trial.
    kernel_errors_ : list of ndarray
        Per pair, (trials, kernels) ε_t^j; NaN where a kernel was not sampled.
    kernel_counts_ : ndarray of int, shape (n_kernels,)
        Trials (all pairs) whose h_t uses each kernel: chosen (D1/S1) or combined (D2/S2).
    sampled_counts_ : ndarray of int, shape (n_kernels,)
        Trials (all pairs) in which each kernel's SVM was trained.
    n_trials_ : ndarray of int
        Kept trials per pair.
    stop_reasons_ : list of (str or None)
        Per pair, why boosting stopped before ``n_trials`` (None: it ran them all).
    n_resample_retries_, n_forced_examples_ : int
        Extra resample draws, and examples appended, to give resamples both classes.
    support_vectors_ : ndarray, (n_sv, n_features)
        Distinct training rows used by any kept SVM.
    dual_coef_ : scipy.sparse.csr_matrix, (n_svm, n_sv)
    intercept_, svm_kernel_, svm_weight_, svm_trial_, svm_scale_ : ndarray, (n_svm,)
        Kept SVMs' intercepts, kernel indices, weights α_t^j, trial ids (into trial_alpha_) and
        tie scales |b| + Σ|y α| (see :func:`svm_sign`).
    trial_alpha_, trial_pair_ : ndarray, (total trials,)
    task_seconds_ : dict
        Seconds spent inside tasks: ``gram``, ``fit``, ``evaluate`` (summed over tasks).
    n_features_in_ : int
    seed_ : int

    Notes
    -----
    * ε_t = 0 (h_t is perfect under D_t): as scikit-learn's AdaBoost, boosting stops after this
      trial; h_t is kept with α_t computed at ε = EPSILON_FLOOR (≈ 11.5), the finite stand-in for
      the formula's infinite weight.
    * ε_t >= 0.5: AdaBoost.M1 (Freund & Schapire): h_t is discarded and boosting stops; if this
      happens in the first trial there is no model and fit raises ValueError.
    * D2/S2 weights α_t^j follow the formula for any ε_t^j (negative when worse than chance: the
      vote is flipped), with ε_t^j clipped as above. sign(0) = +1 everywhere; an SVM decision
      value within TIE_TOLERANCE · (|b| + Σ|y α|) of 0 is a 0 (see :func:`svm_sign`).
    * Features are used as given: standardise them (``StandardScaler``) for the best accuracy. On
      raw breast-cancer features (``load_breast_cancer``, 30 % held out) the default pool scores
      0.92 in seconds, standardised 0.98; the paper's unnormalised pool on raw features ran for
      more than 5 minutes before ``svm_max_iter`` bounded its SVMs.
    * Kernels whose Gram values would overflow on X (raw features with high polynomial degrees or
      huge norms) are refused up front with a ValueError naming the kernel; every task checks its
      block again. A very narrow gaussian on raw features gives an identity-like but finite Gram
      matrix: its SVM memorises the resample and its decision values elsewhere are ties (+1), so
      it simply has a large ε_t^j.
    * A resample missing a class is redrawn from the trial's stream up to RESAMPLE_RETRIES times,
      then the heaviest example of the missing class is appended (see :func:`draw_resample`).
    * Draw order within a trial: resample (and redraws), then S1/S2's kernel uniforms u_j; kernel
      j is trained iff u_j < S_t(j), so the kernel with S_t = 1 is always trained.
    * Multi-class: one-vs-one (scikit-learn's ``OneVsOneClassifier`` vote and confidences). All
      pairs advance through trial t together, so one ``map`` call carries all their kernels.
    * During fit, BLAS is limited to one thread in this process: OpenBLAS results depend on its
      thread count, and one thread per task makes serial, threaded and Dask fits bit-identical.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 2))
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> model = MKBoost(variant="D1", n_trials=5, random_state=0).fit(X, y)
    >>> bool(model.score(X, y) > 0.8), len(model.alphas_[0]) <= 5
    (True, True)
    >>> model.predict(X[:3]).tolist() == [1 if a * b > 0 else -1 for a, b in X[:3]]
    True
    """

    _STATE_ARRAYS = (
        "support_vectors_",
        "intercept_",
        "svm_scale_",
        "svm_kernel_",
        "svm_weight_",
        "svm_trial_",
        "trial_alpha_",
        "trial_pair_",
        "kernel_counts_",
        "n_trials_",
    )
    _STATE_JSON = ("seed_", "stop_reasons_")

    def __init__(
        self,
        *,
        variant: str = "D1",
        n_trials: int = 100,
        ratio: float = 0.2,
        beta: float = 2**-5,
        C: float = 50.0,
        kernels: KernelSpecLike = "mkboost17+norm",
        svm_max_iter: int | None = SVM_MAX_ITER,
        random_state: int | None = None,
        executor: TaskRunner | Executor | None = None,
        verbose: int = 0,
    ) -> None:
        self.variant = variant
        self.n_trials = n_trials
        self.ratio = ratio
        self.beta = beta
        self.C = C
        self.kernels = kernels
        self.svm_max_iter = svm_max_iter
        self.random_state = random_state
        self.executor = executor
        self.verbose = verbose

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        # The executor is a handle on compute resources (threads, a Dask client), not model state.
        state = dict(super().__getstate__())  # a copy: object.__getstate__ returns __dict__ itself
        state["executor"] = None
        return state

    # ------------------------------------------------------------------ fitting
    # small parameters for the test suites (as the online estimators'); a narrower pool can leave a
    # first trial on random data no better than chance, which MKBoost refuses as AdaBoost.M1 does
    _unit_test_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {"n_trials": 5, "ratio": 0.5, "kernels": "gaussian:0.1,0.5,2;polynomial:2", "random_state": 0},
    )
    _parameter_constraints: dict[str, Any] = {
        "variant": [StrOptions(VARIANTS)],
        "n_trials": [Interval(Integral, 1, None, closed="left")],
        "ratio": [Interval(Real, 0, 1, closed="right")],
        "beta": [Interval(Real, 0, 1, closed="right")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "kernels": [KERNEL_SPEC],
        "svm_max_iter": [None, Interval(Integral, 1, None, closed="left")],
        "random_state": [None, Interval(Integral, 0, None, closed="left")],
        "executor": [Satisfies(as_runner, "a task runner")],  # as_runner's message says which
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    def _check_params(self) -> dict[str, Any]:
        """The parameters, validated and converted (``kernels`` as a pool, ``executor`` as a runner,
        ``random_state`` as a seed)."""
        p = validate_params(self)
        p["pool"], p["runner"] = p.pop("kernels"), p.pop("executor")
        p["seed"] = resolve_seed(type(self).__name__, p.pop("random_state"))
        return p

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Boost on (X, y); ``sample_weight`` (optional) is the initial distribution D_1 (normalised).

        Raises
        ------
        ValueError
            Invalid parameters, NaN/inf in X, fewer than two classes, bad sample weights, kernels
            whose Gram values overflow on X, or a first trial no better than chance.
        """
        p = self._check_params()
        name = type(self).__name__
        X = check_array(X, owner=name, spread_warning=True, estimator=self, reset=True)
        classes, codes = encode_labels(name, y, X.shape[0])
        weights = check_sample_weight(name, sample_weight, codes, classes)
        pool = p["pool"]
        check_kernel_overflow(name, pool, X)
        pairs = ovo_pairs(len(classes))
        states: list[_PairState] = []
        for pair in pairs:
            rows, y_pm = pair_problem(codes, pair)
            states.append(_PairState(rows, y_pm, weights[rows], len(pool), p["ratio"]))
        check_task_fits(name, max(s.n for s in states), p["ratio"])
        max_iter = -1 if p["svm_max_iter"] is None else p["svm_max_iter"]
        shared = SharedData(tuple(X[s.rows] for s in states), tuple(s.y for s in states), pool, p["C"], max_iter)
        runner = p["runner"]
        seconds = np.zeros(3)
        unconverged: dict[int, int] = {}  # kernel -> SVM fits that stopped at svm_max_iter
        started = time.perf_counter()
        handle = runner.share(shared)
        try:
            # libsvm's own warning would come once per fit (or be lost on a worker): one of ours follows
            with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=ConvergenceWarning, module="sklearn")
                for t in range(p["n_trials"]):
                    seconds += self._round(t, states, runner, handle, p, unconverged)
                    if p["verbose"]:
                        print(
                            f"{name}: trial {t + 1}/{p['n_trials']}, {time.perf_counter() - started:.1f} s",
                            file=sys.stderr,
                            flush=True,
                        )
                    if all(s.stop is not None for s in states):
                        break
        finally:
            runner.release(handle)
        if unconverged:
            kernels = ", ".join(f"{pool[k].name} ({n})" for k, n in sorted(unconverged.items()))
            raw = any(not pool[k].name.endswith("+norm") for k in unconverged)  # (advice not taken yet)
            warnings.warn(
                f"{name}: SVMs stopped at svm_max_iter={max_iter} before converging -- {kernels}; their "
                "decisions are approximate. Standardise the features, "
                + ("normalise the kernels ('+norm') " if raw else "")
                + "or raise svm_max_iter",
                ConvergenceWarning,
                stacklevel=2,
            )
        for pair, state in zip(pairs, states, strict=True):
            if not state.trials:
                raise ValueError(
                    f"{name}: on classes {classes[pair[0]]!r} vs {classes[pair[1]]!r} the first trial's "
                    f"classifier has weighted error >= 0.5 ({state.stop}); boosting cannot start -- "
                    "check the labels and features or use more kernels"
                )
        self._publish(X, classes, pairs, states, pool, p, seconds)
        return self

    def _round(
        self,
        t: int,
        states: list[_PairState],
        runner: TaskRunner,
        handle: Any,
        p: dict[str, Any],
        unconverged: dict[int, int],
    ) -> np.ndarray:
        """Trial t of every still-active pair: draw, fit all their kernels in one map, update;
        counts in ``unconverged`` the kernels' fits that stopped at ``svm_max_iter``."""
        n_kernels = len(p["pool"])
        stochastic = p["variant"][0] == "S"
        tasks: list[KernelTask] = []
        samples: list[np.ndarray | None] = [None] * len(states)
        for index, state in enumerate(states):
            if state.stop is not None:
                continue
            rng = np.random.default_rng([p["seed"], index, t])
            sample, retries, forced = draw_resample(rng, state.D, state.n, state.y)
            state.retries += retries
            state.forced += forced
            chosen = np.flatnonzero(rng.random(n_kernels) < state.S) if stochastic else np.arange(n_kernels)
            samples[index] = sample
            tasks += [KernelTask(index, int(j)) for j in chosen]
        fits = runner.map(fit_kernel_task, handle, TrialSamples(tuple(samples)), tasks)
        by_pair: dict[int, list[KernelFit]] = {}
        for fit in fits:
            by_pair.setdefault(fit.pair, []).append(fit)
            if not fit.converged:
                unconverged[fit.kernel] = unconverged.get(fit.kernel, 0) + 1
        for index, pair_fits in by_pair.items():
            self._boost(states[index], pair_fits, cast(np.ndarray, samples[index]), p)  # drawn: the pair has fits
        seconds: np.ndarray = np.sum([fit.seconds for fit in fits], axis=0) if fits else np.zeros(3)
        return seconds

    @staticmethod
    def _boost(state: _PairState, fits: list[KernelFit], sample: np.ndarray, p: dict[str, Any]) -> None:
        """Algorithms 1-4, lines after the kernel loop: errors, h_t, α_t, D_{t+1}, S_{t+1}."""
        D, y = state.D, state.y
        kernels = np.array([f.kernel for f in fits])
        errors = np.array([np.sum(D * (f.predictions != y)) for f in fits])
        if p["variant"] in ("D1", "S1"):
            best = int(np.argmin(errors))
            members, member_alphas = [best], np.ones(1)
            h = fits[best].predictions.astype(np.float64)
            error = errors[best]
        else:
            members = list(range(len(fits)))
            member_alphas = np.array([boost_alpha(e) for e in errors])
            score = np.zeros(len(y))
            for a, f in zip(member_alphas, fits, strict=True):
                score += a * f.predictions
            h = np.where(score >= 0.0, 1.0, -1.0)
            error = np.sum(D * (h != y))
        if p["variant"][0] == "S":
            state.S[kernels] *= p["beta"] ** errors
            state.S /= state.S.max()
        if error >= 0.5:
            state.stop = f"trial {len(state.trials) + 1}: weighted error {error:.4g} >= 0.5, trial discarded"
            return
        alpha = boost_alpha(error)
        row_errors = np.full(len(state.S), np.nan)
        row_errors[kernels] = errors
        state.trials.append(
            {
                "alpha": alpha,
                "error": float(error),
                "kernels": tuple(int(kernels[m]) for m in members),
                "kernel_alphas": member_alphas,
                "kernel_errors": row_errors,
                "sampled": kernels,
                "svms": [
                    (
                        int(fits[m].kernel),
                        state.rows[sample[fits[m].support]],
                        fits[m].dual_coef,
                        fits[m].intercept,
                        svm_scale(fits[m].dual_coef, fits[m].intercept),
                    )
                    for m in members
                ],
            }
        )
        if error == 0.0:
            state.stop = f"trial {len(state.trials)}: weighted error 0 (perfect on the training set)"
            return
        state.D = D * np.where(h == y, np.exp(-alpha), np.exp(alpha))
        state.D /= state.D.sum()

    def _publish(
        self,
        X: np.ndarray,
        classes: np.ndarray,
        pairs: list[tuple[int, int]],
        states: list[_PairState],
        pool: KernelPool,
        p: dict[str, Any],
        seconds: np.ndarray,
    ) -> None:
        n_kernels = len(pool)
        self.classes_ = classes
        self.pairs_ = pairs
        self.n_features_in_ = X.shape[1]
        self.seed_ = p["seed"]
        self.kernel_pool_ = pool
        self.kernel_names_ = pool.names
        self.alphas_ = [np.array([tr["alpha"] for tr in s.trials]) for s in states]
        self.trial_errors_ = [np.array([tr["error"] for tr in s.trials]) for s in states]
        self.trial_kernels_ = [[tr["kernels"] for tr in s.trials] for s in states]
        self.kernel_alphas_ = [[tr["kernel_alphas"] for tr in s.trials] for s in states]
        self.kernel_errors_ = [
            np.array([tr["kernel_errors"] for tr in s.trials]).reshape(-1, n_kernels) for s in states
        ]
        used = [k for s in states for tr in s.trials for k in tr["kernels"]]
        trained = np.concatenate([tr["sampled"] for s in states for tr in s.trials])
        self.kernel_counts_ = np.bincount(np.asarray(used, dtype=np.int64), minlength=n_kernels)
        self.sampled_counts_ = np.bincount(trained, minlength=n_kernels)
        self.n_trials_ = np.array([len(s.trials) for s in states])
        self.stop_reasons_ = [s.stop for s in states]
        self.n_resample_retries_ = int(sum(s.retries for s in states))
        self.n_forced_examples_ = int(sum(s.forced for s in states))
        trials = [(index, tr) for index, s in enumerate(states) for tr in s.trials]
        self.trial_alpha_ = np.array([tr["alpha"] for _, tr in trials])
        self.trial_pair_ = np.array([index for index, _ in trials], dtype=np.int64)
        svms = [(t, svm, a) for t, (_, tr) in enumerate(trials) for svm, a in zip(tr["svms"], tr["kernel_alphas"])]
        rows, self.dual_coef_ = compact_support([(svm[1], svm[2]) for _, svm, _ in svms], X.shape[0])
        self.support_vectors_ = X[rows].copy()
        self.intercept_ = np.array([svm[3] for _, svm, _ in svms])
        self.svm_scale_ = np.array([svm[4] for _, svm, _ in svms])
        self.svm_kernel_ = np.array([svm[0] for _, svm, _ in svms], dtype=np.int64)
        self.svm_weight_ = np.array([a for _, _, a in svms], dtype=np.float64)
        self.svm_trial_ = np.array([t for t, _, _ in svms], dtype=np.int64)
        self.task_seconds_ = dict(zip(("gram", "fit", "evaluate"), map(float, seconds), strict=True))

    # ------------------------------------------------------------------ prediction
    def _pair_scores(self, X: ArrayLike) -> np.ndarray:
        """Σ_t α_t h_t(x) per one-vs-one pair, shape (n, n_pairs)."""
        if not hasattr(self, "dual_coef_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        X = check_array(X, owner=type(self).__name__, n_features=self.n_features_in_, estimator=self)
        dec = kernel_decisions(
            self.kernel_pool_,
            X,
            self.support_vectors_,
            self.svm_kernel_,
            self.dual_coef_,
            self.intercept_,
            type(self).__name__,
        )
        h = svm_sign(dec, self.svm_scale_)
        n_trials, n_svm = len(self.trial_alpha_), len(self.svm_kernel_)
        vote = sparse.csr_matrix((self.svm_weight_, (self.svm_trial_, np.arange(n_svm))), shape=(n_trials, n_svm))
        h_trial = np.where(np.asarray(vote @ h.T).T >= 0.0, 1.0, -1.0)
        combine = sparse.csr_matrix(
            (self.trial_alpha_, (self.trial_pair_, np.arange(n_trials))), shape=(len(self.pairs_), n_trials)
        )
        scores: np.ndarray = np.asarray(combine @ h_trial.T).T
        return scores
