"""Random numbers that survive distribution and restarts (docs/design.md).

Every stochastic decision of instance t for kernel k uses ``U[t, k]``, the (t mod B)-th draw of the
uniform stream seeded by ``(seed, t // B, k)``. A shard owning kernel k, a resumed job or the
naive reference can regenerate exactly the numbers it needs from (seed, block, kernel) alone.
"""

from __future__ import annotations

import numpy as np

from ._pcg import streams

_WORD = 2**32  # numpy turns larger entropy values into several words: those keys take numpy's path


def block_uniforms(seed: int, block: int, kernels, block_size: int, draws: int = 1) -> np.ndarray:
    """Uniforms of shape (block_size, len(kernels)) for one block, or (.., draws) if draws > 1.

    With several draws per instance (SPA: kernel selection and support-vector sampling), row t
    of kernel k's stream holds instance t's draws in order.
    """
    kernels = np.asarray(list(kernels), dtype=np.int64)
    out = np.empty((block_size, len(kernels), draws))
    if max(int(seed), int(block), int(kernels.max(initial=0))) < _WORD and kernels.min(initial=0) >= 0:
        streams(int(seed), int(block), kernels, out)  # the same numbers, without numpy's set-up
    else:
        for j, k in enumerate(kernels):
            out[:, j] = np.random.default_rng([int(seed), int(block), int(k)]).random((block_size, draws))
    return out[:, :, 0] if draws == 1 else out


def uniforms(seed: int, start: int, stop: int, kernels, block_size: int, draws: int = 1) -> np.ndarray:
    """Uniforms for global instances [start, stop): rows of the blocks they fall in."""
    kernels = list(kernels)
    if stop <= start:
        return np.empty((0, len(kernels)) + ((draws,) if draws > 1 else ()))
    first, last = start // block_size, (stop - 1) // block_size
    parts = [block_uniforms(seed, b, kernels, block_size, draws) for b in range(first, last + 1)]
    full = np.concatenate(parts) if len(parts) > 1 else parts[0]
    offset = first * block_size
    return full[start - offset : stop - offset]
