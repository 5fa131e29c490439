"""A cluster job's probability calibration, learnt by the coordinator from the rounds' progressive scores.

In-process, an online classifier's calibration (:mod:`omkl_dist.evaluation.calibration`) learns one
batch per ``partial_fit`` call, and :class:`~omkl_dist.runner.LocalRunner` feeds the model calls
that end where its ``feed()`` says (:class:`~omkl_dist.engine.local.Feed`, a function of the rows of
the model's life), and at the stream's end. A cluster round, or the piece of one the coordinator
takes, never crosses such an end, so the coordinator gathers each round's per-row outcome
(the combined scores, the per-kernel ones where the estimator's calibration reads them, the labels)
until a call ends, then makes the estimator's very update
(:meth:`~omkl_dist.algorithms.base.OnlineKernelClassifier.calibration_batch`): the same numbers in
the same batches, so the cluster model's ``calibration_`` is the in-process one bit for bit.

Between a call's rounds the gathered rows are part of the job's state: a checkpoint keeps them
(:meth:`RoundCalibration.state`, JSON whose floats round-trip exactly) and a resumed or recovered
job continues from them (:meth:`RoundCalibration.with_state`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.local import Feed
from ..evaluation.calibration import Calibration


class RoundCalibration:
    """The calibration of a job learnt round by round (module docstring).

    Parameters
    ----------
    estimator : online classifier
        One of the job's kind and classes (its :meth:`calibration_batch` maps a batch's outcome to
        what the calibration learns); its own state is never read or changed.
    feed : Feed
        Where the in-process run's calls end (the estimator's ``feed()``): a batch ends there.
    end : int
        Rows of the model's life when the job ends: the last batch ends there.
    state : dict, optional
        :meth:`state` of where the job starts (default: the estimator's ``calibration_``, nothing gathered).
    """

    def __init__(self, estimator, *, feed: Feed, end: int, state: dict | None = None):
        self.estimator, self.feed, self.end = estimator, feed, int(end)
        self.kernel_scores = bool(estimator.calibrates_on_kernel_scores())
        if state is None:
            state = {"record": estimator.calibration_.to_dict(), "pending": {}}
        self.record = Calibration.from_dict(state["record"])
        # the outcome arrays of the rows since the last batch ended, in row order, per name
        self.pending: dict[str, list[np.ndarray]] = {
            name: [np.asarray(part["values"], dtype=np.float64).reshape(part["shape"])]
            for name, part in state["pending"].items()
        }

    def with_state(self, state: dict) -> RoundCalibration:
        """The same job's calibration from another :meth:`state` (a checkpoint's)."""
        return type(self)(self.estimator, feed=self.feed, end=self.end, state=state)

    def add(self, g: int, outcome: dict[str, np.ndarray], y: np.ndarray, weights: np.ndarray) -> None:
        """Take the round of rows ``g .. g + len(y)`` of the model's life: its online ``outcome``
        (``score``, and ``F`` the per-kernel scores), the labels ``y`` as the engine took them, and
        the kernel ``weights`` after the round; a batch that ends here is learnt."""
        arrays = {"score": outcome["score"], "y": y, **({"F": outcome["F"]} if self.kernel_scores else {})}
        for name, value in arrays.items():
            self.pending.setdefault(name, []).append(np.asarray(value, dtype=np.float64))
        stop = int(g) + len(y)
        if not self.feed.ends_at(stop) and stop != self.end:
            return
        batch = {name: np.concatenate(parts) for name, parts in self.pending.items()}
        self.pending = {}
        self.record = self.record.update(*self.estimator.calibration_batch(batch, batch["y"], weights))

    def state(self) -> dict[str, Any]:
        """JSON-able: the record and the rows gathered since the last batch ended."""
        pending = {}
        for name, parts in self.pending.items():
            value = np.concatenate(parts)
            pending[name] = {"shape": list(value.shape), "values": value.ravel().tolist()}
        return {"record": self.record.to_dict(), "pending": pending}
