"""numpy's ``default_rng([seed, block, kernel]).random(n)`` streams, generated in njit code.

Creating a numpy ``Generator`` per (block, kernel) costs ~100 µs of Python-level set-up, more than
drawing its thousand numbers; with 16 kernels that was a sizeable share of a block's time. This
module reimplements the exact chain -- ``SeedSequence`` entropy mixing (pool of four 32-bit words),
``generate_state(4, uint64)``, ``PCG64`` seeding (128-bit LCG, XSL-RR output) and
``next_double = (next_uint64 >> 11) · 2^-53`` -- so the numbers are bit-identical to numpy's (a
test checks this against numpy for many keys). Entropy words must each fit in 32 bits; callers fall
back to numpy otherwise.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M32 = np.uint64(0xFFFFFFFF)
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_MUL_HI, _MUL_LO = np.uint64(2549297995355413924), np.uint64(4865540595714422341)  # PCG's 128-bit multiplier
_DOUBLE = 1.0 / 9007199254740992.0


@njit(cache=True, inline="always")
def _hashmix(value, h):
    """SeedSequence's hashmix of ``value`` with the hash constant ``h``: ``(result, next h)``."""
    value = (value ^ h) & _M32
    h = (h * _MULT_A) & _M32
    value = (value * h) & _M32
    return value ^ (value >> np.uint64(16)), h


@njit(cache=True, inline="always")
def _mix(x, y):
    result = (_MIX_L * x - _MIX_R * y) & _M32
    return result ^ (result >> np.uint64(16))


@njit(cache=True, inline="always")
def _seed_state(entropy, pool, out):
    """``out[:4] = SeedSequence(entropy).generate_state(4, np.uint64)`` for 32-bit entropy words
    (``pool``: four words of scratch; every array uint64)."""
    h = _INIT_A
    for i in range(4):
        pool[i], h = _hashmix(entropy[i] if i < entropy.shape[0] else np.uint64(0), h)
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                v, h = _hashmix(pool[i_src], h)
                pool[i_dst] = _mix(pool[i_dst], v)
    for i_src in range(4, entropy.shape[0]):
        for i_dst in range(4):
            v, h = _hashmix(entropy[i_src], h)
            pool[i_dst] = _mix(pool[i_dst], v)
    h = _INIT_B
    for i in range(4):  # little-endian pairs of 32-bit words
        words = np.uint64(0)
        for half in range(2):
            v = (pool[(2 * i + half) % 4] ^ h) & _M32
            h = (h * _MULT_B) & _M32
            v = (v * h) & _M32
            words |= (v ^ (v >> np.uint64(16))) << np.uint64(32 * half)
        out[i] = words


@njit(cache=True, inline="always")
def _mulhi(a, b):
    """High 64 bits of the 128-bit product of two uint64."""
    a_lo, a_hi = a & _M32, a >> np.uint64(32)
    b_lo, b_hi = b & _M32, b >> np.uint64(32)
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    cross = (lo_lo >> np.uint64(32)) + (hi_lo & _M32) + lo_hi
    return a_hi * b_hi + (hi_lo >> np.uint64(32)) + (cross >> np.uint64(32))


@njit(cache=True, inline="always")
def _step(s_hi, s_lo, inc_hi, inc_lo):
    """state * multiplier + inc (mod 2^128)."""
    hi = _mulhi(s_lo, _MUL_LO) + s_lo * _MUL_HI + s_hi * _MUL_LO
    lo = s_lo * _MUL_LO
    new_lo = lo + inc_lo
    carry = np.uint64(1) if new_lo < lo else np.uint64(0)
    return hi + inc_hi + carry, new_lo


@njit(cache=True)
def streams(seed, block, kernels, out):
    """``out[:, j] = default_rng([seed, block, kernels[j]]).random(rows · draws)`` viewed as (rows,
    draws), for every j; ``out`` is (rows, len(kernels), draws) float64. Seeding and drawing in one
    compiled function, with one scratch array: each function and array type is a compile of its
    own on a first run (issue 39)."""
    rows, m, draws = out.shape
    words = np.empty(11, dtype=np.uint64)  # the entropy (3), the seeding pool (4), the state (4)
    entropy, pool, st = words[:3], words[3:7], words[7:]
    entropy[0], entropy[1] = np.uint64(seed), np.uint64(block)
    for j in range(m):
        entropy[2] = np.uint64(kernels[j])
        _seed_state(entropy, pool, st)
        seed_hi, seed_lo, inc_seed_hi, inc_seed_lo = st[0], st[1], st[2], st[3]
        # pcg_setseq_128_srandom_r: inc = (initseq << 1) | 1; state = 0; step; state += initstate; step
        inc_hi = (inc_seed_hi << np.uint64(1)) | (inc_seed_lo >> np.uint64(63))
        inc_lo = (inc_seed_lo << np.uint64(1)) | np.uint64(1)
        s_hi, s_lo = _step(np.uint64(0), np.uint64(0), inc_hi, inc_lo)
        lo = s_lo + seed_lo
        s_hi = s_hi + seed_hi + (np.uint64(1) if lo < s_lo else np.uint64(0))
        s_lo = lo
        s_hi, s_lo = _step(s_hi, s_lo, inc_hi, inc_lo)
        for t in range(rows):  # next_double = (next_uint64 >> 11) 2^-53, the draws in row order
            for d in range(draws):
                s_hi, s_lo = _step(s_hi, s_lo, inc_hi, inc_lo)
                x = s_hi ^ s_lo
                rot = s_hi >> np.uint64(58)
                r = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
                out[t, j, d] = np.float64(r >> np.uint64(11)) * _DOUBLE
