"""How a row-split round's rows are shared among the shards (:class:`RowBalance`), from round to
round, so that each shard's scores reach the lead about when its recurrence needs them.

The lead scores the round's first rows, then runs the recurrence over every row in order; with the
adapter's early start it begins on its own rows while the others still score theirs, and takes
each other shard's rows as their scores arrive. It needs shard i's scores once it has run the
recurrence over the rows before them, so shard i can score more rows than shard i - 1 by what
that recurrence costs: with ``lag`` the recurrence's cost per row over a shard's scoring cost per
row, shard i's range is ``1 + lag`` times shard i - 1's (a geometric chain). The lead then never
waits and its recurrence over the last shard's rows is all that follows the others' scoring;
with equal ranges (what a recurrence that needs every score first is given) the others finish
together and the recurrence over all their rows follows. On two shards the two coincide.
Which rows a shard scores never changes a score's bits (:func:`.partition.row_ranges`).
"""

from __future__ import annotations

from .partition import row_ranges

# how far one round's timing moves the first shard's share of the rows
BALANCE_GAIN, BALANCE_STEP = 0.3, 0.05
# the weight of the earlier rounds in the recurrence's relative cost (one round's CPU times jitter)
LAG_MEMORY = 0.7


class RowBalance:
    """The lead's share of a round's rows and the other shards' chain (see the module docstring),
    learnt from the rounds' timings (:meth:`update`)."""

    def __init__(self, n_shards: int):
        self.n_shards = int(n_shards)
        self.lead_share = 1.0 / self.n_shards
        self.lag = 0.0  # the recurrence's CPU time per row over the other shards' scoring's

    def ranges(self, n: int) -> list[tuple[int, int]]:
        """Each shard's rows of a round of ``n``."""
        return row_ranges(n, self.n_shards, self.lead_share, 1.0 + self.lag)

    def update(self, ranges, outs) -> None:
        """Learn from a round split as ``ranges`` whose shards replied ``outs`` (the lead's
        ``ready_at``, ``score_seconds``, ``serial_cpu_seconds`` and ``early_start``; each other's
        ``arrived_at``, ``seconds`` and ``cpu_seconds``): move rows between the lead and the others
        so that the first scores it waits for arrive when it is ready for them, and, if its
        recurrence started early, re-estimate the chain's ``lag``."""
        (lo, hi), n = ranges[0], ranges[-1][1]
        others = [(b - a, out) for (a, b), out in zip(ranges[1:], outs[1:]) if b > a]
        rows = sum(size for size, _ in others)
        if hi - lo < 8 or rows < 8:
            return
        lead = outs[0]
        if lead.get("early_start"):
            scoring = sum(out["cpu_seconds"] for _, out in others) / rows
            if scoring > 0:
                lag = lead["serial_cpu_seconds"] / n / scoring
                self.lag = LAG_MEMORY * self.lag + (1.0 - LAG_MEMORY) * lag
        # > 0: the lead waited for the first other shard's scores; < 0: they waited for it
        late = others[0][1]["arrived_at"] - lead["ready_at"]
        lead_cost = lead["score_seconds"] / (hi - lo)  # seconds per row
        other_cost = sum(out["seconds"] for _, out in others) / rows / len(others)
        moved = late / (lead_cost + other_cost)  # rows to move to the lead to even it out
        # a damped, bounded step: round times jitter by several ms on a busy machine
        step = min(max(BALANCE_GAIN * moved / n, -BALANCE_STEP), BALANCE_STEP)
        self.lead_share = min(max(self.lead_share + step, 0.0), 1.0)
