"""``omkl_dist.scoring._fma.fma``: ``a·b + c`` rounded once, in scalar and vectorised compiled code --
the arithmetic FOGD's features and the feature learners' scores and steps are built from."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numba import njit

from omkl_dist.scoring._fma import fma, fma_arrays
from omkl_dist.scoring._wide import wide_vectors


def _exact(a, b, c):
    """``a·b + c`` computed exactly, rounded once to the nearest double (Python's conversion)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


@njit
def _fma_loop(a, b, c, out):
    wide_vectors()  # (a loop LLVM vectorises: each lane must round as the scalar does)
    for i in range(a.shape[0]):
        out[i] = fma(a[i], b[i], c[i])


@njit
def _one(a, b, c):
    return fma(a, b, c)


def test_fma_rounds_once_where_a_multiply_then_add_rounds_twice():
    a, b, c = 1.0 + 2.0**-30, 1.0 - 2.0**-30, -1.0  # a·b = 1 - 2^-60 exactly: a rounded product is 1
    assert a * b + c == 0.0
    assert _one(a, b, c) == -(2.0**-60) == _exact(a, b, c)


def test_fma_is_the_correctly_rounded_value_scalar_and_vectorised():
    rng = np.random.default_rng(0)
    n = 4_099  # (not a multiple of the vector width: the scalar tail is checked too)
    a = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)
    b = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)
    c = -a * b * (1 + rng.normal(size=n) * 1e-12)  # near-cancelling sums: where one rounding shows most
    want = np.array([_exact(x, y, z) for x, y, z in zip(a, b, c)])
    out = np.empty(n)
    _fma_loop(a, b, c, out)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(fma_arrays(a, b, c), want)
    assert (a * b + c != want).mean() > 0.5  # the unfused arithmetic differs on most of them
