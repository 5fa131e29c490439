"""The budget learners' fast paths give the bits of the slow ones: :func:`exact_dot` (Sum2 with a
correct-rounding check) the correctly rounded sums of Shewchuk's partials (:func:`msum_add`)
(:func:`own_dots` on integer rows, zero terms skipped: tests/test_budget_dots.py)."""

import numpy as np

from omkl_dist.learners._budget import MSUM_SIZE, cancelled_sum, exact_dot, msum_add, msum_value


def _partials(coef, K, c, V, n):
    parts, k = np.empty(MSUM_SIZE), 0
    for j in range(n):
        k = msum_add(parts, k, coef[j * K + c] * V[j])
    return msum_value(parts, k)


def _cases(rng, count, n):
    """Sums that cancel: to ~1e-6 of their terms, exactly (duplicated support vectors with opposite
    coefficients), to a rounding boundary (powers of two), and to a subnormal residue."""
    for i in range(count):
        coef = rng.normal(size=n) * 10.0 ** rng.integers(-12, 0)
        V = 1e4 + rng.normal(size=n)
        coef[-1] = -(coef[:-1] @ V[:-1]) / V[-1] * (1 + 1e-6 * rng.normal())
        kind = i % 5
        if kind == 1:
            h = n // 2
            coef[h : 2 * h], V[h : 2 * h] = -coef[:h], V[:h]
        elif kind == 2:
            coef = np.round(coef * 1e12)
            V = 2.0 ** rng.integers(-60, 60, size=n)
        elif kind == 3:
            coef[0], V[0], coef[1], V[1] = 1e300, 1e-300, -1e300, 1e-300
            coef[2], V[2] = 2.0**-1070, 1.0
        yield coef, V


def test_exact_dot_gives_the_partials_bits():
    rng = np.random.default_rng(5)
    parts = np.empty(MSUM_SIZE)
    for coef, V in _cases(rng, 400, 37):
        for K, c in ((1, 0), (2, 1)):
            C = np.zeros(len(coef) * K)
            C[c::K] = coef
            got, want = exact_dot(C, K, c, V, len(V), parts), _partials(C, K, c, V, len(V))
            assert np.float64(got).view(np.int64) == np.float64(want).view(np.int64), (got, want)


def test_cancelled_sum_of_signed_zeros_gives_the_partials_bits():
    """Every term ±0 (a narrow gaussian's underflowed values): the sign pass gives the partials' zero,
    −0.0 exactly when every term is −0.0."""
    rng = np.random.default_rng(7)
    parts = np.empty(MSUM_SIZE)
    for n in range(6):
        for _ in range(20):
            coef = rng.choice([-2.0, -0.0, 0.0, 3.0], size=n)
            V = rng.choice([0.0, 0.0, 1.0], size=n) * (coef == 0) + 0.0 * (coef != 0)
            got, want = cancelled_sum(coef, 1, 0, V, n, parts, 0.0), _partials(coef, 1, 0, V, n)
            assert np.float64(got).view(np.int64) == np.float64(want).view(np.int64), (coef, V, got, want)
    assert np.signbit(cancelled_sum(np.array([-1.0, -2.0]), 1, 0, np.zeros(2), 2, parts, 0.0))
