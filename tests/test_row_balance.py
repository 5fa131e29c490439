"""How a row-split round's rows are shared (omkl_dist.distributed.balance, partition.row_ranges): the
lead's share follows its wait, the other shards' ranges grow by the recurrence's relative cost (no
cluster: synthetic replies)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.distributed.balance import RowBalance
from omkl_dist.distributed.partition import row_ranges


def _sizes(ranges):
    return np.array([hi - lo for lo, hi in ranges])


def test_the_other_shards_ranges_grow_geometrically():
    sizes = _sizes(row_ranges(16384, 5, 0.1, 1.5))
    assert sizes[0] == pytest.approx(1638, abs=8) and sizes.sum() == 16384
    assert sizes[2:] / sizes[1:-1] == pytest.approx(np.full(3, 1.5), rel=0.02)
    assert np.all(np.abs(np.diff(_sizes(row_ranges(16384, 5, 0.1)))[1:]) <= 8)  # growth 1: even


def _round(balance, n, *, serial, score_per_row, late=0.0, early=True):
    """Replies to the round ``balance`` shares: the lead ran its recurrence (``serial`` CPU seconds)
    and was ready ``late`` seconds before the first other shard's scores arrived; every other shard
    scored at ``score_per_row``."""
    ranges = balance.ranges(n)
    lead_rows = ranges[0][1]
    lead = {
        "ready_at": 10.0,
        "score_seconds": lead_rows * score_per_row,
        "serial_cpu_seconds": serial,
        "early_start": early,
    }
    others = [
        {"arrived_at": 10.0 + late, "seconds": (hi - lo) * score_per_row, "cpu_seconds": (hi - lo) * score_per_row}
        for lo, hi in ranges[1:]
    ]
    balance.update(ranges, [lead, *others])
    return ranges


def test_the_chain_follows_the_recurrences_cost_relative_to_scoring():
    """A recurrence costing a fifth of a row's scoring: the others' ranges settle at 1.2 times the one
    before, the chain whose scores arrive as the lead's recurrence reaches them."""
    balance = RowBalance(4)
    for _ in range(40):
        ranges = _round(balance, 4096, serial=4096 * 2e-6, score_per_row=1e-5)
    assert balance.lag == pytest.approx(0.2, rel=1e-3)
    sizes = _sizes(ranges)[1:]
    assert sizes[1:] / sizes[:-1] == pytest.approx([1.2, 1.2], rel=0.03)


def test_a_recurrence_that_needs_every_score_first_keeps_even_ranges():
    balance = RowBalance(4)
    for _ in range(10):
        ranges = _round(balance, 4096, serial=4096 * 2e-6, score_per_row=1e-5, early=False)
    assert balance.lag == 0.0 and np.ptp(_sizes(ranges)[1:]) <= 8


def test_the_lead_takes_rows_while_it_waits_and_gives_them_while_it_is_waited_for():
    balance = RowBalance(3)
    _round(balance, 4096, serial=0.0, score_per_row=1e-5, late=0.005)
    grown = balance.lead_share
    assert grown > 1 / 3
    _round(balance, 4096, serial=0.0, score_per_row=1e-5, late=-0.02)
    assert balance.lead_share < grown
