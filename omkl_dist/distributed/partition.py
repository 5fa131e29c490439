"""Which shard owns which kernels."""

from __future__ import annotations

import numpy as np

from ..combiners.hedge import UNIFORM


def partition_kernels(program, rule: int, n_shards: int) -> list[np.ndarray]:
    """Split the kernels into at most ``n_shards`` groups of consecutive kernels in evaluation
    order (dot kernels, then gaussians widest first), so a shard's gaussians mostly share their
    chain anchors (a shard computes the anchor of every chain it touches).

    Perceptron(u) updates every kernel on the *average* kernel's mistake, so its kernels cannot
    learn apart: it gets one shard.
    """
    if n_shards < 1:
        raise ValueError(f"n_shards must be >= 1, got {n_shards}")
    order = np.asarray(program.order, dtype=np.int64)
    groups = 1 if rule == UNIFORM else min(n_shards, len(order))
    return [np.sort(part) for part in np.array_split(order, groups)]
