"""Class probabilities from an online classifier's scores, calibrated on its progressive scores.

An online classifier predicts every row before it learns it (test-then-train), so the score of
each row the model learnt is an honest out-of-sample score: the scores it gave rows it had not
seen, with the labels that came after. :class:`Calibration` learns from those, and only those,
a temperature-scaled softmax (Platt scaling without an intercept; Guo et al. 2017's temperature
scaling)::

    p(c | x) = exp(a s_c(x)) / Σ_j exp(a s_j(x)),     a >= 0,

over the decision values ``s`` of the model (binary: the one score s, as the two class scores
(-s/2, s/2), so ``p(classes_[1] | x) = 1 / (1 + exp(-a s))``). One slope ``a`` and no intercept,
because a monotone map keeps the model's decision: the class of highest probability is always the
predicted class (on a tie, the one ``predict`` picks, which for a binary zero score is
``classes_[1]``: it gets the larger probability by one unit in the last place).

The slope maximises the likelihood of the progressive labels with Platt's smoothed targets (a row
of class c counts as (N_c + 1) / (N_c + 2) of class c and the rest spread over the other classes,
N_c the rows of class c so far), which keeps ``a`` finite when the scores separate the classes.
Learning is online and pure: :meth:`Calibration.update` takes one batch of (score, label) pairs
and returns the new record. A batch's slope minimises its own log-loss plus a quadratic summary of
the batches before (their log-loss's curvature in ``a``, accumulated; a Laplace approximation),
by safeguarded Newton steps, so a single batch (``fit``'s one pass) gets the exact maximum
likelihood, and a stream fed in chunks a recursive estimate of it. The record is a few numbers,
saved with the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

# Newton steps per batch, halvings per step, and the relative change of the slope that ends them
MAX_STEPS, MAX_HALVINGS, TOLERANCE = 50, 40, 1e-7


@dataclass(frozen=True)
class Calibration:
    """A temperature-scaled softmax over decision values, learnt online (module docstring).

    Parameters
    ----------
    slope : float
        ``a`` (the inverse temperature), >= 0; 0 (no row yet) gives uniform probabilities.
    curvature : float
        The log-loss curvature in ``a`` of the batches learnt so far (how firmly they fix it).
    class_counts : tuple of int
        Rows of each class learnt so far (the smoothed targets' N_c).
    """

    slope: float
    curvature: float
    class_counts: tuple[int, ...]

    @classmethod
    def empty(cls, n_classes: int) -> Self:
        """The record of a model that has learnt no row yet, for ``n_classes`` classes."""
        return cls(0.0, 0.0, (0,) * int(n_classes))

    @property
    def n_rows(self) -> int:
        """Rows learnt from."""
        return int(sum(self.class_counts))

    def update(self, scores: NDArray[np.float64], y: NDArray[np.intp]) -> Self:
        """The record after learning a batch: ``scores`` the progressive decision values, (n,) for
        two classes or (n, K), and ``y`` each row's class index (into the model's ``classes_``).
        Pure: ``self`` is unchanged."""
        S = class_scores(scores)
        y = np.asarray(y, dtype=np.intp)
        if len(y) == 0:
            return self
        counts = np.asarray(self.class_counts, dtype=np.int64) + np.bincount(y, minlength=S.shape[0])
        targets = smoothed_targets(y, counts)
        start = self.slope if self.curvature > 0 else initial_slope(S)
        slope, batch_curvature = fit_slope(S, targets, prior=self.slope, curvature=self.curvature, start=start)
        return type(self)(float(slope), float(self.curvature + batch_curvature), tuple(int(c) for c in counts))

    def probabilities(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Class probabilities, (n, K), of decision values ``scores`` ((n,) for two classes, or (n, K));
        each row's largest is the class ``predict`` gives (binary: ``classes_[1]`` iff the score >= 0;
        else the first highest score)."""
        scores = np.asarray(scores, dtype=np.float64)
        proba = softmax(self.slope * class_scores(scores)).T
        winner = (scores >= 0.0).astype(np.intp) if scores.ndim == 1 else np.argmax(scores, axis=1)
        rows = np.flatnonzero(np.argmax(proba, axis=1) != winner)  # equal after rounding: break the tie
        proba[rows, winner[rows]] = np.nextafter(proba[rows].max(axis=1), 2.0)
        return proba

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (floats round-trip exactly)."""
        return {"slope": self.slope, "curvature": self.curvature, "class_counts": list(self.class_counts)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        """The record of :meth:`to_dict`."""
        return cls(float(d["slope"]), float(d["curvature"]), tuple(int(c) for c in d["class_counts"]))


# The functions below take class scores as (K, n) columns: sums over the K classes are then sums of
# K contiguous rows, many times faster than numpy's reductions along a short last axis.


def class_scores(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Decision values as class scores, (K, n): an (n, K) array transposed, a binary (n,) as the
    rows (-s/2, s/2)."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.stack([-0.5 * scores, 0.5 * scores]) if scores.ndim == 1 else np.ascontiguousarray(scores.T)


def softmax(Z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Softmax over the classes of (K, n) scores, stable (the largest exponent is 0)."""
    E = np.exp(Z - Z.max(axis=0))
    out: NDArray[np.float64] = E / E.sum(axis=0)
    return out


def smoothed_targets(y: NDArray[np.intp], counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """Platt's targets, (K, n): a row of class c is (N_c + 1) / (N_c + 2) class c, the rest shared
    equally by the other classes."""
    K = len(counts)
    own = (counts[y] + 1.0) / (counts[y] + 2.0)
    T = np.repeat(((1.0 - own) / (K - 1))[None, :], K, axis=0)
    T[y, np.arange(len(y))] = own
    return T


def initial_slope(S: NDArray[np.float64]) -> float:
    """Where the first batch's Newton steps start: one over the scores' spread (any start converges;
    this one puts ``a s`` near 1)."""
    spread = float(np.sqrt(np.mean((S - S.mean(axis=0)) ** 2)))
    return 1.0 / spread if spread > 0 else 0.0


def softmax_loss(
    S: NDArray[np.float64], T: NDArray[np.float64], a: float
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """The cross-entropy of ``softmax(a S)`` against the targets ``T`` summed over the rows, with what
    its derivatives (:func:`softmax_slopes`) start from: ``E = exp(a S - top)`` (top: each row's
    largest ``a s``) and its class sums ``norm``."""
    Z = a * S
    top = Z.max(axis=0)
    E = np.subtract(Z, top)
    np.exp(E, out=E)
    norm = E.sum(axis=0)
    loss_top = np.sum(np.log(norm)) + np.sum(top)
    np.multiply(T, Z, out=Z)
    return float(loss_top - np.sum(Z)), E, norm


def softmax_slopes(
    S: NDArray[np.float64], E: NDArray[np.float64], norm: NDArray[np.float64], target_mean: float
) -> tuple[float, float]:
    """The first and second derivatives in ``a`` of :func:`softmax_loss` at the ``a`` of its ``E`` and
    ``norm`` (``E`` is overwritten): Σ (E_p[s] − E_T[s]) and Σ Var_p[s]; ``target_mean`` is
    ``np.sum(T * S)``, Σ E_T[s], the same for every ``a``."""
    PS = np.divide(E, norm, out=E)
    np.multiply(PS, S, out=PS)
    mean = PS.sum(axis=0)
    gradient = float(np.sum(mean) - target_mean)
    np.multiply(PS, S, out=PS)
    np.multiply(mean, mean, out=mean)
    curvature = float(np.sum(PS) - np.sum(mean))
    return gradient, max(curvature, 0.0)


def fit_slope(
    S: NDArray[np.float64], T: NDArray[np.float64], *, prior: float, curvature: float, start: float
) -> tuple[float, float]:
    """The ``a >= 0`` minimising ``Σ cross-entropy + curvature / 2 (a − prior)²`` (convex in ``a``),
    and the cross-entropy's curvature there: Newton steps from ``start``, each halved until the
    objective does not grow, until a step moves ``a`` (or would move it) by at most
    :data:`TOLERANCE` of itself.

    A trial step needs the objective only, the derivatives are taken where a step lands (the loss
    alone is half the passes over the (K, n) arrays). A step within the tolerance is not tried: at the
    optimum such a step is of rounding size, and its trials were halved until one did not raise the
    objective by an ulp (17 of a fit's 23 evaluations on NOGD's ijcnn1 pass; a stream's batches,
    which start at the slope before, often took only those)."""
    target_mean = float(np.sum(T * S))

    def objective(a: float) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
        loss, E, norm = softmax_loss(S, T, a)
        return loss + 0.5 * curvature * (a - prior) ** 2, E, norm

    def slopes(a: float, E: NDArray[np.float64], norm: NDArray[np.float64]) -> tuple[float, float]:
        gradient, hessian = softmax_slopes(S, E, norm, target_mean)
        return gradient + curvature * (a - prior), hessian + curvature

    a = start
    value, E, norm = objective(a)
    gradient, hessian = slopes(a, E, norm)
    for _ in range(MAX_STEPS):
        if hessian <= 0.0 or gradient == 0.0:  # flat: every slope fits these scores alike
            break
        step = gradient / hessian
        if abs(step) <= TOLERANCE * max(a, 1e-300):  # a is the minimum to the tolerance: a trial of this
            break  # size is rounding, halved up to 40 times (17 of 23 evaluations on NOGD's ijcnn1 pass)
        for _ in range(MAX_HALVINGS):
            trial = max(a - step, 0.0)
            trial_value, E, norm = objective(trial)
            if trial_value <= value:
                break
            step *= 0.5
        else:  # no step lowers the objective: a is its minimum, to rounding
            break
        moved = abs(trial - a)
        a, value = trial, trial_value
        gradient, hessian = slopes(a, E, norm)
        if moved <= TOLERANCE * max(a, 1e-300):
            break
    return a, hessian - curvature
