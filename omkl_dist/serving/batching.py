"""Predictions micro-batched: the rows of every request waiting are scored in one call.

A model call costs a fixed part (checks, the scaler, the pool's setup: milliseconds for a
single row) and a small part per row (a 1,000-row batch costs a few times one row). So the
requests that arrive while a batch is being scored (in a worker thread: the event loop keeps
accepting) wait for the next one, and go together: one client gets a batch of its one row, many
clients share the fixed cost. A request is answered by the snapshot its rows were checked
against (a batch holds requests of one snapshot: an alias that moves to a model of other features
fails no request).

An online estimator's labels follow from its decision values (``predict`` is the sign, or the
arg-max over classes), so one scan gives both; another estimator is asked for both.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from starlette.concurrency import run_in_threadpool

from omkl_dist.algorithms.base import OnlineKernelClassifier


def answer(snapshot: Any, X: Any) -> dict[str, Any]:
    """The response to rows ``X``: the snapshot's version, the classes, labels and decision values."""
    model = snapshot.model
    scores, labels = _scores_and_labels(model, X)
    return {
        "version": snapshot.version,
        "classes": model.classes_.tolist(),
        "labels": labels.tolist(),
        "decision_values": scores.tolist(),
    }


def _scores_and_labels(model: Any, X: Any) -> tuple[np.ndarray, np.ndarray]:
    scores = model.decision_function(X)
    if not isinstance(model.estimator, OnlineKernelClassifier):
        return scores, model.predict(X)
    classes = model.classes_
    index = np.argmax(scores, axis=1) if scores.ndim == 2 else (scores >= 0.0).astype(np.intp)
    return scores, classes[index]  # (OnlineKernelClassifier.predict, in the user's labels)


class PredictionBatcher:
    """Score the float rows of concurrent requests together (see the module's docstring).

    Parameters
    ----------
    max_rows : int
        Rows scored in one call at most (a request bigger than that goes alone).
    """

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._waiting: list[tuple[Any, np.ndarray, asyncio.Future[dict[str, Any]]]] = []
        self._draining = False
        self.calls = 0

    async def predict(self, snapshot: Any, X: np.ndarray) -> dict[str, Any]:
        """The answer of ``snapshot`` to one request's rows, scored with the requests waiting beside it."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append((snapshot, X, future))
        if not self._draining:
            self._draining = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                snapshot, batch, rows = self._waiting[0][0], [], 0
                while self._waiting and self._waiting[0][0] is snapshot:
                    if batch and rows + len(self._waiting[0][1]) > self.max_rows:
                        break
                    _, X, future = self._waiting.pop(0)
                    batch.append((X, future))
                    rows += len(X)
                await self._score(snapshot, batch)
        finally:
            self._draining = False

    async def _score(self, snapshot: Any, batch: list[tuple[np.ndarray, asyncio.Future[dict[str, Any]]]]) -> None:
        X = batch[0][0] if len(batch) == 1 else np.concatenate([x for x, _ in batch])
        try:
            whole = await run_in_threadpool(answer, snapshot, X)
            self.calls += 1
        except Exception as exc:  # (every request of the batch gets it: the app answers 500)
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        start = 0
        for x, future in batch:
            stop = start + len(x)
            part = {**whole, "labels": whole["labels"][start:stop]}
            part["decision_values"] = whole["decision_values"][start:stop]
            start = stop
            if not future.done():  # (a client that went away cancelled its future)
                future.set_result(part)
