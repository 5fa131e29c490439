"""A first run's compiling is not learning: :class:`CompileClock` times numba's compiles (nested
ones once, none for a function compiled already) and :func:`progressive_score` keeps them out of
the learning seconds and speed it reports."""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from omkl_dist.algorithms import KernelPerceptron
from omkl_dist.evaluation.compile_clock import CompileClock
from omkl_dist.evaluation.progressive import progressive_score


def _fresh_functions():
    """Two functions numba has not compiled (defined anew, not cached): the outer calls the inner."""

    @njit
    def inner(x):
        return np.sqrt(x) + 1.0

    @njit
    def outer(x):
        return inner(x) * 2.0

    return outer


def test_a_compile_is_timed_once_with_the_functions_it_compiles_on_the_way():
    outer = _fresh_functions()
    began = []
    with CompileClock(on_first=lambda: began.append(True)) as clock:
        t0 = time.perf_counter()
        outer(4.0)
        wall = time.perf_counter() - t0
        first = clock.seconds
        outer(9.0)  # compiled: no event, no time
    outer(16.0)
    assert began == [True] and 0.0 < first <= wall and clock.seconds == first  # (a compiled function: no event)


class _CompilesOnItsFirstBlock(KernelPerceptron):
    """A perceptron whose first block also compiles a function of its own (a first use)."""

    def progressive_partial_fit(self, X, y, **kwargs):
        if not getattr(self, "compiled_", False):
            _fresh_functions()(1.0)
            self.compiled_ = True
        return super().progressive_partial_fit(X, y, **kwargs)


def test_a_runs_compiling_is_kept_out_of_its_learning_time():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = _CompilesOnItsFirstBlock()
    t0 = time.perf_counter()
    trace = progressive_score(model, ((X[i : i + 200], y[i : i + 200]) for i in range(0, 600, 200)), n_rows=600)
    wall = time.perf_counter() - t0
    assert trace.compile_seconds > 0.0  # its function's compile (and the perceptron's own, on a cold cache)
    assert trace.total_seconds <= wall - trace.compile_seconds  # (by construction: none of it counted twice)
    assert trace.summary()["compile_seconds"] == trace.compile_seconds
