"""The Page-Hinkley detector against its naive reference, and on streams with and without drift:
no alarm on ten stationary 100,000-row windows of a real learner's mistakes, an abrupt drift caught
within the delay benchmarks/drift_defaults.py measured (issue 41, item 6)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.evaluation.drift import PageHinkley

from naive_drift import page_hinkley_alarms


@pytest.mark.parametrize("seed", range(6))
def test_matches_naive_reference(seed):
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.0, 0.5, size=4)
    x = np.concatenate([rng.random(1500) < r for r in rates]).astype(float)
    delta, threshold, min_instances = rng.choice([0.0, 0.005, 0.02]), rng.choice([5.0, 20.0, 50.0]), 30
    ours = PageHinkley(delta, threshold, min_instances).alarms(x, scale=1.0)  # raw units
    assert ours.tolist() == page_hinkley_alarms(x, delta, threshold, min_instances)


@pytest.mark.parametrize("reference", [0.05, 0.2])
def test_with_a_reference_mean_matches_naive_reference(reference):
    rng = np.random.default_rng(3)
    x = np.r_[rng.random(2000) < 0.1, rng.random(2000) < 0.3].astype(float)
    ours = PageHinkley(0.005, 20.0, 30).alarms(x, reference=reference, scale=1.0)
    assert ours.tolist() == page_hinkley_alarms(x, 0.005, 20.0, 30, reference=reference)


def test_a_window_worse_from_its_first_row_needs_the_reference():
    x = (np.random.default_rng(4).random(5000) < 0.4).astype(float)  # the model validated at 5 %
    unaided = PageHinkley().alarms(x)  # the running mean starts high: nothing rises (a late chance alarm at most)
    assert len(unaided) == 0 or unaided[0] > 1000
    alarms = PageHinkley().alarms(x, reference=0.05)
    assert len(alarms) >= 1 and alarms[0] < 200


def test_losses_not_only_mistakes_match_too():
    x = np.random.default_rng(9).exponential(size=3000) * np.r_[np.ones(1500), 2 * np.ones(1500)]
    assert PageHinkley(0.01, 30.0, 10).alarms(x, scale=1.0).tolist() == page_hinkley_alarms(x, 0.01, 30.0, 10)
    # in units of the values' standard deviation by default
    sd = x.std()
    want = page_hinkley_alarms(x, 0.01 * sd, 30.0 * sd, 10)
    assert PageHinkley(0.01, 30.0, 10).alarms(x).tolist() == want


def test_signals_a_rise_soon_and_a_stable_stream_never():
    rng = np.random.default_rng(1)
    stable = (rng.random(100_000) < 0.05).astype(float)
    assert len(PageHinkley().alarms(stable)) == 0
    drift = np.r_[stable[:20_000], (rng.random(5_000) < 0.25)].astype(float)
    alarms = PageHinkley().alarms(drift)
    # σ ≈ 0.28 (the window's mean 0.083): a rise of 0.2 accumulates λ = 100 σ after about
    # 100 σ / (0.2 − 0.05 σ) ≈ 150 rows, and the running mean lags a little
    assert len(alarms) >= 1 and 20_000 < alarms[0] < 20_600
    falling = np.r_[(rng.random(5_000) < 0.3), (rng.random(5_000) < 0.05)].astype(float)
    assert len(PageHinkley().alarms(falling)) == 0  # only an increase of the mistakes is drift


@pytest.mark.parametrize(
    "bad", [{"delta": -1}, {"threshold": 0}, {"min_instances": 0}, {"delta": float("nan")}, {"confidence": -1}]
)
def test_bad_parameters_are_named(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        PageHinkley(**bad).alarms(np.zeros(10))


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="finite"):
        PageHinkley().alarms([0.0, np.nan])


def test_docstring_examples_run():
    import doctest

    from omkl_dist.evaluation import drift
    from omkl_dist.storage import model_store

    for module in (drift, model_store):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_the_reference_is_raised_by_its_standard_error_and_the_scale_follows_it():
    test = PageHinkley(delta=0.05, threshold=100.0, confidence=3.0)
    x = np.zeros(1000)
    raw = test.calibrate(x, reference=0.1, reference_rows=10_000)
    sd = np.sqrt(0.1 * 0.9)
    assert raw == pytest.approx(
        {"scale": sd, "reference": 0.1 + 3 * sd / 100, "delta": 0.05 * sd, "threshold": 100 * sd}
    )
    # a champion without a held-out mistake is watched at the rate 1 / (rows + 1), not with σ = 0
    assert test.calibrate(x, reference=0.0, reference_rows=999)["scale"] == pytest.approx(np.sqrt(1e-3 * (1 - 1e-3)))
    with pytest.raises(ValueError, match="reference_rows"):
        test.calibrate(x, reference_rows=100)


@pytest.fixture(scope="module")
def champion():
    """A real learner on a generated stream (omkl data synth's generator): RBP on 4,000 rows, its
    reference mistake rate measured on the next 20,000 (as retrain's gate holds out). A budget of
    20 support vectors keeps a million predictions to seconds (it errs on about 30 % of the rows)."""
    from omkl_dist.algorithms import RBP
    from omkl_dist.storage.synth import iter_blocks

    model = RBP(kernels="gaussian:1", budget=20)
    for X, y in iter_blocks(rows=4_000, features=4, seed=5):
        model.partial_fit(X, y, classes=[-1, 1])
    X, y = next(iter_blocks(rows=20_000, features=4, seed=5, first_row=4_000))
    return model, float((model.predict(X) != y).mean())


def _window_mistakes(model, first_row, relabel=None):
    from omkl_dist.storage.synth import iter_blocks

    X, y = (np.concatenate(parts) for parts in zip(*iter_blocks(rows=100_000, features=4, seed=5, first_row=first_row)))
    if relabel is not None:
        y = relabel(X, y)
    return (model.predict(X) != y).astype(float)


def test_no_alarm_on_stationary_windows_of_a_real_learner(champion):
    """Three 100,000-row windows of the learner's own mistakes (ten: below, at its rate)."""
    model, reference = champion
    assert 0.05 < reference < 0.4
    for w in range(3):
        mistakes = _window_mistakes(model, 24_000 + w * 100_000)
        assert len(PageHinkley().alarms(mistakes, reference, 20_000)) == 0, (w, mistakes.mean(), reference)


def test_an_abrupt_change_is_signalled_within_500_rows(champion):
    model, reference = champion

    def swapped(X, y):  # the feed swaps the labels from row 50,000 on
        return np.where(np.arange(len(y)) >= 50_000, -y, y)

    alarms = PageHinkley().alarms(_window_mistakes(model, 1_024_000, swapped), reference, 20_000)
    assert len(alarms) >= 1 and 50_000 <= alarms[0] < 50_500, alarms[:3]


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.3])
def test_no_alarm_on_ten_stationary_windows_and_a_doubling_caught(rate):
    """Mistakes as coin flips at a rate from 1 % to 30 % (a model that does not learn on
    stationary data errs independently on each row): ten 100,000-row windows, the reference
    estimated from 20,000 rows as retrain's gate holds out."""
    rng = np.random.default_rng(7)
    reference = float((rng.random(20_000) < rate).mean())
    for _ in range(10):
        assert len(PageHinkley().alarms(rng.random(100_000) < rate, reference, 20_000)) == 0
    doubled = np.r_[rng.random(50_000) < rate, rng.random(50_000) < min(2 * rate, 0.9)]
    alarms = PageHinkley().alarms(doubled, reference, 20_000)
    assert len(alarms) >= 1 and 50_000 <= alarms[0] < 55_000, alarms[:3]
