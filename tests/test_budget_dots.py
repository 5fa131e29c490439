"""The budget engine's dot products: the learning path (each kernel sums its own buffer's inside the
parallel loop, :func:`own_dots`; a segment's rows among themselves, :func:`row_dots`) and the scoring
path (:func:`fixed_dots`) give the same bits, so a model's scores are its next decision values exactly."""

from __future__ import annotations

import numpy as np

from omkl_dist.engine.budget import BudgetEngine
from omkl_dist.learners._budget import fixed_dots, own_dots, row_dots


def test_own_and_row_dots_equal_fixed_dots_bit_for_bit():
    rng = np.random.default_rng(3)
    X, B = rng.normal(size=(37, 11)) * 1e3, rng.normal(size=(20, 11))
    ref = np.empty((37, 1, 15))
    fixed_dots(X, np.ascontiguousarray(B[:15].T)[None], np.array([15]), ref)
    np.testing.assert_array_equal(own_dots(X, B, 15), ref)
    gram = np.empty((37, 1, 37))
    fixed_dots(X, np.ascontiguousarray(X.T)[None], np.array([37]), gram)
    np.testing.assert_array_equal(row_dots(X), gram[:, 0])


def test_kernel_scores_are_the_next_decision_values_bit_for_bit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)) * [300.0, 1.0, 0.1, 2.0, 1.0]  # raw-cod-rna-like ranges: cancelling distances
    y = np.where(X[:, 1] * X[:, 3] > 0, 1.0, -1.0)
    for learner in ("rbp", "forgetron", "bogd", "bpas"):
        e = BudgetEngine("gaussian:0.5,4,64;poly:2", 5, learner=learner, budget=7, seed=2, block_size=50, lam=0.01)
        e.learn(X[:250], y[:250])
        for t in range(250, 300):  # each row scored by the model as it is just before learning it
            np.testing.assert_array_equal(
                e.kernel_scores(X[t : t + 1])[0], e.learn(X[t : t + 1], y[t : t + 1], keep_scores=True)["F"][0]
            )
