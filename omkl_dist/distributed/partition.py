"""How a round is shared among shards: by rows (:func:`row_ranges`) or by kernels
(:func:`partition_kernels`); which of the two is the engine's choice
(:func:`.rounds.splits_rows`)."""

from __future__ import annotations

import numpy as np

from ..engine.protocol import Rule


def row_ranges(n: int, n_shards: int, lead_share: float | None = None, growth: float = 1.0) -> list[tuple[int, int]]:
    """Contiguous ranges of a round's ``n`` rows, one per shard: about ``lead_share`` of them (default
    an equal share) for the first shard, the rest split among the others in a geometric chain, each
    range ``growth`` times the one before (1: evenly; :mod:`.balance` says why); boundaries at
    multiples of 8 and no range of a single row. Any split gives every row the same bits (the BLAS
    products of the pool scan are taken in calls of one shape, :mod:`omkl_dist.scoring._blas`).
    Short rounds go whole to the first shard."""
    if n_shards == 1 or n < 16 * n_shards:
        return [(0, n)] + [(n, n)] * (n_shards - 1)
    share = 1.0 / n_shards if lead_share is None else float(lead_share)
    lead = min(max(8, 8 * round(n * share / 8)), 8 * ((n - 8) // 8))  # leaves the others 8 rows or more
    sizes = np.float64(growth) ** np.arange(n_shards - 1)
    ends = (n - lead) * np.cumsum(sizes)[:-1] / sizes.sum()  # where each other range but the last ends
    bounds = [0, lead] + [min(lead + 8 * int(np.ceil(end / 8)), n) for end in ends] + [n]
    last = max(i for i, b in enumerate(bounds) if b < n)  # only the range ending at n can hold one row
    if n - bounds[last] == 1:  # the lone row joins the range before it (with the empty ones between)
        bounds = [n if b == bounds[last] else b for b in bounds]
    return [(bounds[i], bounds[i + 1]) for i in range(n_shards)]


def partition_kernels(program, rule: Rule | None, n_shards: int) -> list[np.ndarray]:
    """Split the kernels into at most ``n_shards`` groups (any split gives the same model).

    For the rules whose rounds are not split by rows (:func:`.rounds.splits_rows`): deterministic updates
    keep dense pools, scanned with all gaussians of a chain derived from one ``exp``, so shards get
    runs of consecutive kernels in evaluation order (dot kernels, then gaussians widest first) and
    compute few anchors. Perceptron(u) updates every kernel on the *average* kernel's mistake, so
    its kernels cannot learn apart: it gets one shard. (The budget baselines, ``rule`` None, keep
    equal-sized buffers per kernel: consecutive runs.)
    """
    if n_shards < 1:
        raise ValueError(f"n_shards must be >= 1, got {n_shards}")
    order = np.asarray(program.order, dtype=np.int64)
    groups = 1 if rule == Rule.UNIFORM else min(n_shards, len(order))
    return [np.sort(part) for part in np.array_split(order, groups)]
