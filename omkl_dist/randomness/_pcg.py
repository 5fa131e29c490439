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
def _hashmix(value, hash_const):
    value = (value ^ hash_const[0]) & _M32
    hash_const[0] = (hash_const[0] * _MULT_A) & _M32
    value = (value * hash_const[0]) & _M32
    return value ^ (value >> np.uint64(16))


@njit(cache=True, inline="always")
def _mix(x, y):
    result = (_MIX_L * x - _MIX_R * y) & _M32
    return result ^ (result >> np.uint64(16))


@njit(cache=True)
def _seed_state(entropy):
    """``SeedSequence(entropy).generate_state(4, np.uint64)`` for 32-bit entropy words."""
    pool = np.zeros(4, dtype=np.uint64)
    hash_const = np.array([_INIT_A], dtype=np.uint64)
    for i in range(4):
        pool[i] = _hashmix(entropy[i] if i < entropy.shape[0] else np.uint64(0), hash_const)
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = _mix(pool[i_dst], _hashmix(pool[i_src], hash_const))
    for i_src in range(4, entropy.shape[0]):
        for i_dst in range(4):
            pool[i_dst] = _mix(pool[i_dst], _hashmix(entropy[i_src], hash_const))
    words = np.empty(8, dtype=np.uint64)
    h = _INIT_B
    for i in range(8):
        v = (pool[i % 4] ^ h) & _M32
        h = (h * _MULT_B) & _M32
        v = (v * h) & _M32
        words[i] = v ^ (v >> np.uint64(16))
    out = np.empty(4, dtype=np.uint64)
    for i in range(4):  # little-endian pairs of 32-bit words
        out[i] = words[2 * i] | (words[2 * i + 1] << np.uint64(32))
    return out


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
def _fill(entropy, out):
    """``out[:] = default_rng(entropy).random(out.size)`` (out 1-D float64)."""
    st = _seed_state(entropy)
    seed_hi, seed_lo, inc_seed_hi, inc_seed_lo = st[0], st[1], st[2], st[3]
    # pcg_setseq_128_srandom_r: inc = (initseq << 1) | 1; state = 0; step; state += initstate; step
    inc_hi = (inc_seed_hi << np.uint64(1)) | (inc_seed_lo >> np.uint64(63))
    inc_lo = (inc_seed_lo << np.uint64(1)) | np.uint64(1)
    s_hi, s_lo = _step(np.uint64(0), np.uint64(0), inc_hi, inc_lo)
    lo = s_lo + seed_lo
    s_hi = s_hi + seed_hi + (np.uint64(1) if lo < s_lo else np.uint64(0))
    s_lo = lo
    s_hi, s_lo = _step(s_hi, s_lo, inc_hi, inc_lo)
    for i in range(out.shape[0]):
        s_hi, s_lo = _step(s_hi, s_lo, inc_hi, inc_lo)
        x = s_hi ^ s_lo
        rot = s_hi >> np.uint64(58)
        r = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
        out[i] = np.float64(r >> np.uint64(11)) * _DOUBLE


@njit(cache=True)
def streams(seed, block, kernels, n, out):
    """``out[:, j] = default_rng([seed, block, kernels[j]]).random(n)`` viewed as (n // draws, draws)
    rows, for every j; ``out`` is (rows, len(kernels), draws) float64."""
    rows, m, draws = out.shape
    entropy = np.empty(3, dtype=np.uint64)
    entropy[0], entropy[1] = np.uint64(seed), np.uint64(block)
    buf = np.empty(n)
    for j in range(m):
        entropy[2] = np.uint64(kernels[j])
        _fill(entropy, buf)
        for t in range(rows):
            for d in range(draws):
                out[t, j, d] = buf[t * draws + d]
