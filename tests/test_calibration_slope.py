"""The calibration's Newton steps (omkl_dist/evaluation/calibration.py: ``fit_slope``) take the
derivatives only where a step lands and compute the terms in place: the slope and the curvature are
those of the steps that evaluated every term at every trial, bit for bit (the reference below is that
loop, written as numpy reads the formulas), on several classes, a prior, and flat scores; a step
within the tolerance is not tried (``every_step``: the loop that tried it, halving it at the optimum)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.evaluation.calibration import (
    MAX_HALVINGS,
    MAX_STEPS,
    TOLERANCE,
    class_scores,
    fit_slope,
    initial_slope,
    smoothed_targets,
    softmax_loss,
    softmax_slopes,
)


def _reference_terms(S, T, a):
    Z = a * S
    top = Z.max(axis=0)
    E = np.exp(Z - top)
    norm = E.sum(axis=0)
    PS = E / norm * S
    mean = PS.sum(axis=0)
    loss = float(np.sum(np.log(norm)) + np.sum(top) - np.sum(T * Z))
    gradient = float(np.sum(mean) - np.sum(T * S))
    curvature = float(np.sum(PS * S) - np.sum(mean * mean))
    return loss, gradient, max(curvature, 0.0)


def _reference_slope(S, T, *, prior, curvature, start, every_step=False):
    def terms(a):
        loss, gradient, hessian = _reference_terms(S, T, a)
        return loss + 0.5 * curvature * (a - prior) ** 2, gradient + curvature * (a - prior), hessian + curvature

    a = start
    value, gradient, hessian = terms(a)
    halvings = 0
    for _ in range(MAX_STEPS):
        if hessian <= 0.0 or gradient == 0.0:
            break
        step = gradient / hessian
        if abs(step) <= TOLERANCE * max(a, 1e-300) and not every_step:
            break
        for _ in range(MAX_HALVINGS):
            trial = max(a - step, 0.0)
            trial_terms = terms(trial)
            if trial_terms[0] <= value:
                break
            step *= 0.5
            halvings += 1
        else:
            break
        moved = abs(trial - a)
        a, (value, gradient, hessian) = trial, trial_terms
        if moved <= TOLERANCE * max(a, 1e-300):
            break
    return (a, hessian - curvature), halvings


@pytest.mark.parametrize(
    ("n_classes", "n", "scale", "prior", "curvature"),
    [(2, 20000, 1.0, 0.0, 0.0), (2, 3001, 50.0, 0.3, 40.0), (4, 5003, 3.0, 0.0, 0.0), (3, 777, 1.0, 1.2, 5.0)],
)
def test_the_slope_is_the_every_term_steps_bit_for_bit(n_classes, n, scale, prior, curvature):
    rng = np.random.default_rng(n)
    y = rng.integers(0, n_classes, n)
    if n_classes == 2:
        scores = scale * ((2 * y - 1) * 0.4 + rng.normal(size=n))
    else:
        scores = scale * (rng.normal(size=(n, n_classes)) + 0.8 * np.eye(n_classes)[y])
    S = class_scores(scores)
    T = smoothed_targets(y, np.bincount(y, minlength=n_classes).astype(np.int64))
    start = initial_slope(S) if curvature == 0.0 else prior
    expected, _ = _reference_slope(S, T, prior=prior, curvature=curvature, start=start)
    assert fit_slope(S, T, prior=prior, curvature=curvature, start=start) == expected


def test_no_rounding_sized_trials_at_the_optimum_and_flat_scores(monkeypatch):
    """At the optimum a Newton step is of rounding size: the loop that tried it halved it until the
    trial did not raise the objective by an ulp (up to 40 evaluations). It is not tried now: the slope
    is within the tolerance of that loop's, from far fewer evaluations. Scores that fix no slope (all
    zero) stop at the start as before."""
    from omkl_dist.evaluation import calibration

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 59535)
    scores = (2 * y - 1) * 0.7 + 2.0 * rng.normal(size=59535)
    S, T = class_scores(scores), smoothed_targets(y, np.bincount(y).astype(np.int64))
    evaluations = []
    loss = calibration.softmax_loss
    monkeypatch.setattr(calibration, "softmax_loss", lambda *args: evaluations.append(1) or loss(*args))
    halved, fewer = [], []
    for start in (initial_slope(S), 0.05, 3.0):
        (tried, _), halvings = _reference_slope(S, T, prior=0.0, curvature=0.0, start=start, every_step=True)
        halved.append(halvings)
        evaluations.clear()
        a, _ = fit_slope(S, T, prior=0.0, curvature=0.0, start=start)
        assert abs(a - tried) <= TOLERANCE * tried
        fewer.append(len(evaluations))
    assert max(halved) > 0, halved  # (the case occurs in these data)
    assert max(fewer) <= 8, fewer
    flat = class_scores(np.zeros(50))
    T = smoothed_targets(y[:50], np.bincount(y[:50]).astype(np.int64))
    assert fit_slope(flat, T, prior=0.0, curvature=0.0, start=0.0) == (0.0, 0.0)


def test_the_loss_and_its_slopes_are_the_formulas_bit_for_bit():
    """softmax_loss and softmax_slopes (the loss alone for a trial, the derivatives where a step
    lands) give the formulas' values as numpy evaluates them, at any slope, zero included."""
    rng = np.random.default_rng(7)
    for K, n in ((2, 4099), (5, 1001)):
        y = rng.integers(0, K, n)
        S = class_scores(rng.normal(size=n) * 3.0 if K == 2 else rng.normal(size=(n, K)) * 3.0)
        T = smoothed_targets(y, np.bincount(y, minlength=K).astype(np.int64))
        for a in (0.0, 0.37, 2.5, 40.0):
            loss, E, norm = softmax_loss(S, T, a)
            assert (loss, *softmax_slopes(S, E, norm, float(np.sum(T * S)))) == _reference_terms(S, T, a)
