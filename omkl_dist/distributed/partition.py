"""Which shard owns which kernels."""

from __future__ import annotations

import numpy as np

from ..combiners.hedge import SD, SPA, SS, UNIFORM

# rules whose kernels keep few, kernel-specific support vectors: their pools are scanned kernel by
# kernel (no shared gaussian chains), and the narrow gaussians keep the most support vectors
_SPARSE_RULES = (SD, SS, SPA)


def partition_kernels(program, rule: int, n_shards: int) -> list[np.ndarray]:
    """Split the kernels into at most ``n_shards`` groups (any split gives the same model).

    Dense pools (deterministic updates) are scanned with all gaussians of a chain derived from one
    ``exp``, so shards get runs of consecutive kernels in evaluation order (dot kernels, then
    gaussians widest first) and compute few anchors. Sparse pools (stochastic updates, SPA) are
    scanned kernel by kernel, and the narrow gaussians hold most support vectors, so kernels are
    dealt out in turn to balance the work. Perceptron(u) updates every kernel on the *average*
    kernel's mistake, so its kernels cannot learn apart: it gets one shard. (The budget baselines,
    ``rule`` -1, keep equal-sized buffers per kernel: consecutive runs.)
    """
    if n_shards < 1:
        raise ValueError(f"n_shards must be >= 1, got {n_shards}")
    order = np.asarray(program.order, dtype=np.int64)
    groups = 1 if rule == UNIFORM else min(n_shards, len(order))
    if rule in _SPARSE_RULES:
        return [np.sort(order[i::groups]) for i in range(groups)]
    return [np.sort(part) for part in np.array_split(order, groups)]
