"""A first run's compiling is not learning: :class:`CompileClock` adds up numba's compile events
(nested ones once, none for a function compiled already) and :func:`progressive_score` keeps them
out of the learning seconds it reports. The clock is a stand-in that moves only when a test moves
it, so every count below is exact."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core.event import trigger_event

from omkl_dist.algorithms import KernelPerceptron
from omkl_dist.evaluation.compile_clock import CompileClock
from omkl_dist.evaluation.progressive import progressive_score


@pytest.fixture
def now(monkeypatch):
    """A stand-in clock: ``now[0]`` seconds, moved by the test alone."""
    reading = [100.0]
    monkeypatch.setattr("time.perf_counter", lambda: reading[0])
    return reading


def _compile(now, seconds, inner=0.0):
    """A compile event of ``seconds``, with a nested compile of ``inner`` of them (a callee)."""
    with trigger_event("numba:compile"):
        now[0] += seconds - inner
        if inner:
            with trigger_event("numba:compile"):
                now[0] += inner


def test_compiles_add_up_once_with_the_functions_they_compile_on_the_way(now):
    began = []
    with CompileClock(on_first=lambda: began.append(True)) as clock:
        _compile(now, 3.0, inner=1.0)
        now[0] += 10.0  # running, not compiling
        _compile(now, 2.0)
    _compile(now, 7.0)  # after the clock stopped
    assert clock.seconds == 5.0 and began == [True]


def test_a_function_compiled_already_raises_no_compile():
    @njit
    def twice(x):
        return 2.0 * x

    twice(1.0)
    with CompileClock() as clock:
        twice(2.0)
    assert clock.seconds == 0.0


class _CompilesOnItsFirstBlock(KernelPerceptron):
    """A perceptron whose blocks take 1 s each to learn, the first one 5 s of compiling besides."""

    def __init__(self, now=None):
        super().__init__()
        self.now = now

    def progressive_partial_fit(self, X, y, **kwargs):
        if not getattr(self, "compiled_", False):
            _compile(self.now, 5.0)
            self.compiled_ = True
        self.now[0] += 1.0
        return super().progressive_partial_fit(X, y, **kwargs)


def test_a_runs_compiling_is_kept_out_of_its_learning_time(now):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = _CompilesOnItsFirstBlock(now)
    model.partial_fit(X[:2], np.array([1, -1]))  # (numba's own first-use compiles, if any, before the clock)
    model.compiled_ = False
    trace = progressive_score(model, ((X[i : i + 200], y[i : i + 200]) for i in range(0, 600, 200)), n_rows=600)
    assert trace.compile_seconds == 5.0 and trace.seconds == [1.0, 2.0, 3.0]
    assert trace.summary()["compile_seconds"] == 5.0
