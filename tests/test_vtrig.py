"""The vectorised cos/sin of FOGD's features (``omkl_dist/scoring/_vtrig.py``) against libm's (numpy
calls glibc's ``cos``/``sin`` for float64): within 1 ulp everywhere, libm's own bits beyond the
reduction's range and for NaN/inf, and each value independent of its place in the vector (the SIMD
body and the scalar tail compute the same bits)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from omkl_dist.scoring._vtrig import REDUCED_BELOW, cos_sin
from omkl_dist.scoring._wide import wide_vectors


def _cos_sin(p):
    p = np.ascontiguousarray(p, dtype=np.float64)
    c, s = np.empty_like(p), np.empty_like(p)
    cos_sin(p, c, s)
    return c, s


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.maximum(np.abs(want), np.finfo(np.float64).tiny))


def _libm(p):
    with np.errstate(invalid="ignore"):  # (cos ±inf is NaN)
        return np.cos(p), np.sin(p)


def _check(p):
    c, s = _cos_sin(p)
    for got, want in zip((c, s), _libm(p)):
        finite = np.isfinite(want)
        assert (_ulps(got[finite], want[finite]) <= 1.0).all()
        assert np.isnan(got[~finite]).all()
    return c, s


def test_cos_sin_within_one_ulp_of_libm_on_a_grid():
    k = np.arange(-2000, 2000)
    p = np.concatenate(
        [
            np.linspace(-10.0, 10.0, 100_001),
            np.geomspace(1e-300, 1.0, 2_001),
            -np.geomspace(1e-300, 1.0, 2_001),
            (k[:, None] * np.pi / 2 + np.array([-1e-9, 0.0, 1e-9, np.pi / 4])).ravel(),  # near the quadrant edges
            np.random.default_rng(0).normal(size=50_000) * 3e5,  # FOGD's narrowest gaussian on raw rows
            np.linspace(REDUCED_BELOW * 0.999, REDUCED_BELOW * 1.001, 1_001),  # both sides of the range
            [0.0, -0.0, 1e10, -1e300, np.inf, -np.inf, np.nan],
        ]
    )
    c, s = _check(p)
    beyond = ~(np.abs(p) < REDUCED_BELOW)
    cos_libm, sin_libm = _libm(p[beyond])
    np.testing.assert_array_equal(c[beyond], cos_libm)  # libm's own, there
    np.testing.assert_array_equal(s[beyond], sin_libm)
    np.testing.assert_array_equal(np.signbit(_cos_sin(np.array([0.0, -0.0]))[1]), [False, True])  # sin(±0) = ±0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e7, 1e7, allow_nan=False), min_size=1, max_size=40), st.integers(0, 11))
def test_cos_sin_bits_do_not_depend_on_position(values, pad):
    p = np.array(values)
    c, s = _check(p)
    cp, sp = _cos_sin(np.concatenate([np.full(pad, 2.5), p]))
    np.testing.assert_array_equal(cp[pad:], c)
    np.testing.assert_array_equal(sp[pad:], s)
    singles = [_cos_sin(np.array([v])) for v in p]
    np.testing.assert_array_equal(np.array([o[0][0] for o in singles]), c)
    np.testing.assert_array_equal(np.array([o[1][0] for o in singles]), s)


@njit(cache=False)
def _cos_sin_wide(p, c, s):
    wide_vectors()
    cos_sin(p, c, s)


def test_cos_sin_in_512_bit_vectors_gives_the_same_bits():
    # FOGD's loop lets LLVM use 512-bit vectors (scoring/_wide.py); the naive reference calls cos_sin
    # compiled for 256: the vector width must change no bit (lengths around 8 and 4: bodies and tails)
    rng = np.random.default_rng(7)
    for n in (1, 3, 4, 7, 8, 9, 100, 803):
        p = rng.normal(size=n) * 10.0 ** rng.integers(-3, 7, size=n)
        c, s = np.empty(n), np.empty(n)
        _cos_sin_wide(p, c, s)
        for got, want in zip((c, s), _cos_sin(p)):
            assert got.tobytes() == want.tobytes(), n
