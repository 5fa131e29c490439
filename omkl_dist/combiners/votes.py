"""A classifier's vote: ``sgn f`` (binary) or its predicted class, and the rival class of the multi-class rules.

Shared by the combiners and the multi-class learners. ``sgn(0) = 0``: a kernel classifier with no
opinion abstains from the vote. Multi-class ties: a classifier's prediction is its highest-scoring
class when that is unique, else it abstains (the multi-class ``sgn(0) = 0``); the *rival* of the
true class y is the highest-scoring other class (the first on ties), and an instance is a mistake
when ``score(y) <= score(rival)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def sgn(v):
    return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)


@njit(cache=True, nogil=True, inline="always")
def rival(scores, y):
    """The highest-scoring class other than ``y`` (the first on ties)."""
    best = np.int64(-1)  # not the literal -1: a caller typed with it compiles a second specialisation
    for c in range(scores.shape[0]):
        if c != y and (best < 0 or scores[c] > scores[best]):
            best = c
    return best


@njit(cache=True, nogil=True, inline="always")
def vote_of(scores):
    """The class a classifier predicts: its unique highest score, or -1 (abstains) on a tie."""
    top = 0
    for c in range(1, scores.shape[0]):
        if scores[c] > scores[top]:
            top = c
    for c in range(scores.shape[0]):
        if c != top and scores[c] == scores[top]:
            return -1
    return top
