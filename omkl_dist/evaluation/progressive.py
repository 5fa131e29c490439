"""Progressive (test-then-train) evaluation of an online classifier over a stream of blocks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .compile_clock import CompileClock
from .curve import MistakeCurve

if TYPE_CHECKING:
    from ..engine.local import Feed


@dataclass
class Trace:
    """What an online run did: its mistake curve, the model read along the stream, the totals.

    ``n_seen`` and ``mistake_rate`` are the mistake curve: the running mistake rate after
    ``n_seen`` rows, every :attr:`~.curve.MistakeCurve.step` rows and at the last row (at least
    every 1 % of the stream, whatever its blocks; :mod:`.curve`). ``sampled_at`` are the rows
    seen where the model's ``n_support`` (per kernel) and ``weights`` (shares) are read: the
    curve's points for the models that read themselves inside a block
    (:mod:`omkl_dist.engine.samples`), else each block's end. ``block_ends`` are the rows seen
    after each block, where the learning ``seconds`` and ``instances_per_second`` so far are
    read. ``seconds`` counts learning time only (predict + update); ``load_seconds`` the time
    spent waiting for the stream's blocks (reading, decompressing, scaling); ``compile_seconds``
    numba's compiling inside the learning calls (a first use's: kept out of ``seconds``). ``confusion[i][j]``
    counts the rows of class ``classes[i]`` predicted online as ``classes[j]`` (a mistaken row's prediction
    is the highest-scoring wrong class: a tie with the true class is a mistake, see
    :func:`online_predictions`), so its diagonal sums to the rows minus the mistakes.
    """

    n_seen: list = field(default_factory=list)
    mistake_rate: list = field(default_factory=list)
    block_ends: list = field(default_factory=list)
    sampled_at: list = field(default_factory=list)
    n_support: list = field(default_factory=list)  # per kernel, at each row of sampled_at
    weights: list = field(default_factory=list)  # kernel weight shares, at each row of sampled_at
    seconds: list = field(default_factory=list)
    instances_per_second: list = field(default_factory=list)
    mistakes: int = 0
    load_seconds: float = 0.0
    compile_seconds: float = 0.0
    kernel_names: list = field(default_factory=list)
    classes: list = field(default_factory=list)
    confusion: list = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        return self.seconds[-1] if self.seconds else 0.0

    @property
    def final_mistake_rate(self) -> float:
        return self.mistake_rate[-1] if self.mistake_rate else float("nan")

    def summary(self) -> dict:
        n = self.block_ends[-1] if self.block_ends else 0
        per_kernel = self.n_support[-1] if self.n_support else []
        return {
            "n": n,
            "mistakes": self.mistakes,
            "mistake_rate": self.final_mistake_rate,
            "n_support": {"total": int(sum(per_kernel)), "per_kernel": dict(zip(self.kernel_names, per_kernel))},
            "seconds": self.total_seconds,
            "load_seconds": self.load_seconds,
            "compile_seconds": self.compile_seconds,
            "instances_per_second": n / self.total_seconds if self.total_seconds > 0 else float("nan"),
            "class_counts": {str(c): int(sum(row)) for c, row in zip(self.classes, self.confusion)},
        }

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.summary()}


def _one_pair(stream) -> bool:
    return isinstance(stream, tuple) and len(stream) == 2 and isinstance(stream[0], np.ndarray)


def _blocks(stream):
    if _one_pair(stream):
        yield stream
    else:
        yield from stream


def online_predictions(model, y, outcome) -> np.ndarray:
    """The class each row was predicted online, in the model's ``classes_``, consistent with
    ``outcome["mistakes"]``: the true class on a correct row, else the highest-scoring wrong class
    (binary: the other class)."""
    classes = model.classes_
    score = outcome["score"]
    truth = np.searchsorted(classes, y)
    if score.ndim == 1:
        wrong = 1 - truth
    else:
        masked = score.copy()
        masked[np.arange(len(y)), truth] = -np.inf
        wrong = np.argmax(masked, axis=1)
    return classes[np.where(outcome["mistakes"], wrong, truth)]


def feed_calls(blocks, feed: Feed) -> Iterator[tuple]:
    """A job's stream of ``(X, y)`` blocks (the model's ``feed_rows()`` rows each, the first up to a
    multiple of them) joined into the ``partial_fit`` calls the model is fed: they end where its
    ``feed()`` says (:meth:`~omkl_dist.engine.local.Feed.ends_at` the rows it has seen, ``feed.start``
    before the first block) and at the stream's end, as a cluster run's calibration and trace assume.

    >>> from omkl_dist.engine.local import Feed
    >>> blocks = [(np.zeros((2, 1)), np.ones(2))] * 5
    >>> [len(y) for _, y in feed_calls(blocks, Feed(2, 4, 2))]
    [2, 2, 4, 2]
    """
    parts: list[tuple] = []
    seen = feed.start
    for X, y in blocks:
        parts.append((X, y))
        seen += len(y)
        if feed.ends_at(seen):
            yield _joined(parts)
            parts = []
    if parts:
        yield _joined(parts)


def _joined(parts: list[tuple]) -> tuple:
    if len(parts) == 1:
        return parts[0]
    Xs = [X for X, _ in parts]
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.concatenate(Xs)
    return X, np.concatenate([y for _, y in parts])


def progressive_score(
    model, stream, *, n_rows=None, classes=None, transform=None, progress=None, on_outcome=None
) -> Trace:
    """Run ``model`` test-then-train over ``stream`` and return a :class:`Trace`.

    Parameters
    ----------
    model : online classifier with ``progressive_partial_fit``
    stream : iterable of (X_block, y_block), or one (X, y) pair
    n_rows : int, optional
        The stream's length, which spaces the mistake curve's points evenly (:mod:`.curve`);
        default: the length of one (X, y) pair, or the stream's ``n_rows`` (a dataset's stream);
        for blocks of a stream of unknown length a point at every block's end.
    classes : every class, if the first block may lack some (default: the labels of the first block)
    transform : callable applied to each X block before learning (e.g. a fitted Scaler's transform)
    progress : callable ``progress(n_rows_in_block)``, e.g. a progress bar's ``update``
    on_outcome : callable ``on_outcome(outcome)`` with each block's online outcome (``mistakes`` per
        row, ``score``), e.g. to report progress

    Examples
    --------
    >>> import numpy as np
    >>> from omkl_dist.algorithms import KernelPerceptron
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> trace = progressive_score(KernelPerceptron(), (X, y))
    >>> trace.final_mistake_rate < 0.1
    True
    """
    trace = Trace()
    learn = load = 0.0
    n = 0
    if n_rows is None:
        n_rows = len(stream[1]) if _one_pair(stream) else getattr(stream, "n_rows", None)
    curve = MistakeCurve.over(n_rows) if n_rows is not None else None
    before = int(getattr(model, "n_samples_seen_", 0))  # rows the model had learnt before the run
    it = iter(_blocks(stream))
    with CompileClock() as clock:  # (a first run's compiling is not learning)
        while True:
            t0 = time.perf_counter()
            try:
                X, y = next(it)
            except StopIteration:
                load += time.perf_counter() - t0
                break
            if transform is not None:
                X = transform(X)
            t1 = time.perf_counter()
            load += t1 - t0
            # the model is read where the curve has its points (on models that can be read inside a block)
            sample_at = None if curve is None else before + curve.rows(n, len(y))
            compiled = clock.seconds
            outcome = model.progressive_partial_fit(X, y, classes=classes if n == 0 else None, sample_at=sample_at)
            learn += time.perf_counter() - t1 - (clock.seconds - compiled)
            flags = outcome["mistakes"]
            if curve is not None:
                rows, counts = curve.points(flags, n, trace.mistakes)
            else:  # the stream's length is unknown: a point at the block's end
                rows, counts = [n + len(y)], [trace.mistakes + int(flags.sum())]
            n += len(y)
            trace.mistakes += int(flags.sum())
            trace.n_seen.extend(int(r) for r in rows)
            trace.mistake_rate.extend(int(c) / int(r) for r, c in zip(rows, counts))
            if not trace.classes:
                trace.classes = model.classes_.tolist()
                confusion = np.zeros((len(model.classes_), len(model.classes_)), dtype=np.int64)
            predicted = np.searchsorted(model.classes_, online_predictions(model, y, outcome))
            np.add.at(confusion, (np.searchsorted(model.classes_, y), predicted), 1)
            trace.block_ends.append(n)
            if "samples" in outcome:
                rows, support, weights = outcome["samples"]
                trace.sampled_at.extend(int(r) - before for r in rows)
                trace.n_support.extend(support.tolist())
                trace.weights.extend(weights.tolist())
            else:
                trace.sampled_at.append(n)
                trace.n_support.append([int(v) for v in model.n_support_])
                trace.weights.append([float(v) for v in model.weights_])
            trace.seconds.append(learn)
            trace.instances_per_second.append(n / learn if learn > 0 else float("nan"))
            if progress is not None:
                progress(len(y))
            if on_outcome is not None:
                on_outcome(outcome)
    if n == 0:
        raise ValueError("the stream is empty: progressive_score needs at least one instance")
    trace.confusion = confusion.tolist()
    trace.load_seconds = load
    trace.compile_seconds = clock.seconds
    trace.kernel_names = list(getattr(model, "active_kernel_names_", model.kernel_pool_.names))
    return trace
