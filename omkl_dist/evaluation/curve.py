"""Where a run's mistake curve has its points: evenly spaced over the stream, whatever its blocks.

A block (an in-process feed, a cluster round) can hold 16,384 rows, so a point per block would
leave a short stream with two; the curve instead has a point every :attr:`MistakeCurve.step` rows
of the run (at least every 1 % of it) and at its last row, read off the per-row mistake flags the
engines return for each block. The points depend on the run's length only, never on where its
blocks end, so :func:`~omkl_dist.evaluation.progressive_score` (in this process) and the cluster's
coordinator record the same curve for the same job, and a resumed job continues it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: points of a run's mistake curve (a point every 0.5 % of the stream, and its last row)
CURVE_POINTS = 200


@dataclass(frozen=True)
class MistakeCurve:
    """The points of the mistake curve of a run over rows ``first + 1 .. last`` of a model's life.

    ``first`` is the rows the model had seen before the run (a retrain continues a fitted model),
    ``last`` the rows it will have seen at the end; the points are every ``step`` rows of the run
    and its last row.
    """

    first: int
    last: int
    step: int

    @classmethod
    def over(cls, n_rows: int, *, first: int = 0) -> MistakeCurve:
        """The curve of a run of ``n_rows`` rows after ``first`` rows: :data:`CURVE_POINTS` points."""
        return cls(int(first), int(first) + int(n_rows), max(1, -(-int(n_rows) // CURVE_POINTS)))

    def rows(self, seen: int, n: int) -> np.ndarray:
        """The curve's points among the ``n`` rows after ``seen`` (counted as ``first`` and ``last``
        are): the rows seen at each, where a trace also reads the model."""
        end = seen + n
        rows = np.arange(self.first + ((seen - self.first) // self.step + 1) * self.step, end + 1, self.step)
        if end == self.last and end > seen and (len(rows) == 0 or rows[-1] != end):
            rows = np.append(rows, end)
        return rows

    def points(self, flags, seen: int, mistakes: int) -> tuple[np.ndarray, np.ndarray]:
        """The curve's points inside one block: ``(rows seen, mistakes so far)`` at each point.

        Parameters
        ----------
        flags : array of bool or 0/1, one per row of the block
            Whether each row was a mistake (test-then-train), as the engines return them.
        seen, mistakes : int
            Rows seen and mistakes made before the block, counted as ``first`` and ``last`` are.
        """
        rows = self.rows(seen, len(flags))
        counts = mistakes + np.cumsum(flags, dtype=np.int64)[rows - seen - 1]
        return rows, counts
