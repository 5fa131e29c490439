"""The Page-Hinkley detector against its naive reference, and on streams with and without drift."""

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
    ours = PageHinkley(delta, threshold, min_instances).alarms(x)
    assert ours.tolist() == page_hinkley_alarms(x, delta, threshold, min_instances)


@pytest.mark.parametrize("reference", [0.05, 0.2])
def test_with_a_reference_mean_matches_naive_reference(reference):
    rng = np.random.default_rng(3)
    x = np.r_[rng.random(2000) < 0.1, rng.random(2000) < 0.3].astype(float)
    ours = PageHinkley(0.005, 20.0, 30).alarms(x, reference=reference)
    assert ours.tolist() == page_hinkley_alarms(x, 0.005, 20.0, 30, reference=reference)


def test_a_window_worse_from_its_first_row_needs_the_reference():
    x = (np.random.default_rng(4).random(5000) < 0.4).astype(float)  # the model validated at 5 %
    unaided = PageHinkley().alarms(x)  # the running mean starts high: nothing rises (a late chance alarm at most)
    assert len(unaided) == 0 or unaided[0] > 1000
    alarms = PageHinkley().alarms(x, reference=0.05)
    assert len(alarms) >= 1 and alarms[0] < 200


def test_losses_not_only_mistakes_match_too():
    x = np.random.default_rng(9).exponential(size=3000) * np.r_[np.ones(1500), 2 * np.ones(1500)]
    assert PageHinkley(0.01, 30.0, 10).alarms(x).tolist() == page_hinkley_alarms(x, 0.01, 30.0, 10)


def test_signals_a_rise_soon_and_a_stable_stream_never():
    rng = np.random.default_rng(1)
    stable = (rng.random(100_000) < 0.05).astype(float)
    assert len(PageHinkley().alarms(stable)) == 0
    drift = np.r_[stable[:20_000], (rng.random(5_000) < 0.25)].astype(float)
    alarms = PageHinkley().alarms(drift)
    # a rise of 0.2 accumulates λ = 50 after about 50 / (0.2 - δ) ≈ 260 rows
    assert len(alarms) >= 1 and 20_000 < alarms[0] < 20_600
    falling = np.r_[(rng.random(5_000) < 0.3), (rng.random(5_000) < 0.05)].astype(float)
    assert len(PageHinkley().alarms(falling)) == 0  # only an increase of the mistakes is drift


@pytest.mark.parametrize("bad", [{"delta": -1}, {"threshold": 0}, {"min_instances": 0}, {"delta": float("nan")}])
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
