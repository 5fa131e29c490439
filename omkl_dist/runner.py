"""Run a :class:`~omkl_dist.job.Job`: :class:`LocalRunner` in this process; its cluster twin is
:class:`omkl_dist.distributed.runner.DaskRunner`. Both take ``fit(job, dataset)`` and return a
:class:`RunResult`, and the model is the same bit for bit (as stumpy's ``stump``/``stumped``: the
same call on another executor).

>>> from omkl_dist.job import DataWindow, Job
>>> job = Job.build("omkc", {}, data=DataWindow("codrna", stop=2000))
>>> result = LocalRunner().fit(job, "codrna")  # doctest: +SKIP
>>> result.as_model().predict(X)  # raw rows, the user's labels  # doctest: +SKIP
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .evaluation import feed_calls, progressive_score
from .job import Job
from .model import Model
from .preprocessing import ColumnEncoder, Scaler
from .race import race
from .storage.job_data import JobData, load_job_data, open_job_rows, scaling_advice


@dataclass(frozen=True)
class Accounting:
    """What a run cost and what it saw: rows learnt (``rows``, from ``resumed_from`` on a resume),
    ``mistakes`` among them, learning ``seconds`` and speed, ``load_seconds`` (reading and scaling
    outside the learning loop), ``race_seconds`` (an automatic setting's race); on a cluster also
    the ``workers``, kernel ``shards``, worker ``failures`` recovered from, the engine's per-round
    ``timing``; ``compile_seconds``, numba's compiling kept out of ``seconds``: the job's kernels
    on the workers before the first round, or in this process while it learnt (0: nothing compiled)."""

    rows: int
    mistakes: int
    seconds: float
    load_seconds: float = 0.0
    race_seconds: float = 0.0  # choosing an automatic setting (omkl_dist.race)
    resumed_from: int = 0
    workers: int | None = None
    shards: int | None = None
    failures: tuple = ()
    timing: dict | None = None
    compile_seconds: float = 0.0

    @property
    def instances_per_second(self) -> float:
        learnt = self.rows - self.resumed_from
        return learnt / self.seconds if self.seconds > 0 else float("nan")


@dataclass(frozen=True)
class RunResult:
    """What a runner returns: the ``job`` as it ran (its label map and the settings for its rows
    filled in), the fitted ``model``, the ``scaler`` its inputs need, the ``accounting``, the
    ``trace`` (the mistake curve -- ``n_seen`` and ``mistake_rate`` at the same evenly spaced rows
    of the run whoever ran it, :mod:`omkl_dist.evaluation.curve` --, ``kernel_names``, ``summary``;
    an in-process run's :class:`~omkl_dist.evaluation.progressive.Trace` in full), the dataset's
    ``name`` and its ``feature_names`` (when its columns have names), the ``columns`` encoder that
    made its features from a table's raw columns (when it was imputed or encoded), and a hint about
    unscaled features or rows grouped by label (``advice``, a line each)."""

    job: Job
    model: object
    scaler: Scaler
    accounting: Accounting
    trace: dict
    name: str = ""
    feature_names: tuple | None = None
    columns: ColumnEncoder | None = None
    advice: tuple[str, ...] = ()
    label_name: str | None = None

    def as_model(self) -> Model:
        """The one model artifact: the fitted model with its column encoder, scaler, label map,
        feature names and job (what ``save_model`` writes and ``omkl predict`` uses)."""
        names = None if self.feature_names is None else list(self.feature_names)
        return Model(
            self.model,
            scaler=self.scaler,
            columns=self.columns,
            label_map=self.job.label_map,
            feature_names=names,
            job=self.job.to_dict(),
            label_name=self.label_name,
        )


class LocalRunner:
    """Run a job in this process, test-then-train (:func:`~omkl_dist.evaluation.progressive_score`).

    Parameters
    ----------
    labels : dict, optional
        How a data file's columns are read (``label_column``, ``positive_class``, ``features``,
        ``categorical``, ``impute``, ``zero_based``; see :func:`omkl_dist.storage.read_dataset`).
    on_progress : callable, optional
        Called with ``{"n_seen", "n_mistakes", "n_rows", "done"}`` (rows of this run) before the
        first block and after every block, as :class:`~omkl_dist.distributed.runner.DaskRunner`
        calls it.
    reading : callable, optional
        Called as a large data file is parsed into memory (64 MiB or more, read block by block),
        with the bytes of the stored file read so far and its size
        (:func:`~omkl_dist.storage.read_dataset`'s ``progress``).
    """

    def __init__(self, *, labels: dict | None = None, on_progress=None, reading=None):
        self.labels = labels
        self.on_progress = on_progress
        self.reading = reading

    def fit(self, job: Job, dataset, *, start_from=None) -> RunResult:
        """Learn ``job`` over ``dataset`` (a registry name, a data file or an ingested dataset).

        ``start_from``: ``(model, scaler)`` of a fitted model to continue from its exact state
        (``omkl retrain``); None: a fresh model of the job's parameters.
        """
        job, model, data, race_seconds = self.open_job(job, dataset, start_from=start_from)
        seen = int(getattr(model, "n_samples_seen_", 0))
        counts = {"n_seen": 0, "n_mistakes": 0, "n_rows": data.n_rows, "done": data.n_rows == 0}

        def on_outcome(outcome):
            counts["n_seen"] += len(outcome["mistakes"])
            counts["n_mistakes"] += int(outcome["mistakes"].sum())
            counts["done"] = counts["n_seen"] >= data.n_rows
            if self.on_progress is not None:
                self.on_progress(dict(counts))

        if self.on_progress is not None:
            self.on_progress(dict(counts))
        trace = progressive_score(
            model,
            feed_calls(data.blocks, model.feed().from_row(seen)),
            n_rows=data.n_rows,
            classes=data.classes if not seen else None,
            on_outcome=on_outcome,
        )
        summary = trace.summary()
        return RunResult(
            job=job,
            model=model,
            scaler=data.scaler,
            accounting=Accounting(
                rows=summary["n"],
                mistakes=summary["mistakes"],
                seconds=summary["seconds"],
                load_seconds=data.load_seconds + trace.load_seconds,
                race_seconds=race_seconds,
                compile_seconds=trace.compile_seconds,
            ),
            trace=trace.to_dict(),
            name=data.name,
            feature_names=None if data.feature_names is None else tuple(data.feature_names),
            label_name=data.label_name,
            columns=data.columns,
            advice=_notes(
                # (raw features an automatic setting chose were measured the best of its candidates)
                None if job.settings.origin == "auto" else scaling_advice(data.spans, data.scaler.method),
                data.mixing_advice,
            ),
        )

    def open_job(self, job: Job, dataset, *, start_from=None) -> tuple[Job, object, JobData, float]:
        """What :meth:`fit` learns from, before it learns: ``(job, model, data, race_seconds)`` --
        the job settled for the data (an automatic setting raced), the model to learn (a fresh one
        of the job's parameters, or ``start_from``'s), the data's scaled blocks
        (:func:`~omkl_dist.storage.job_data.load_job_data`) and the race's seconds."""
        model, scaler = start_from if start_from is not None else (None, None)
        # fed whole rounds at a time: the model a cluster run of the same job gives, bit for bit
        feed = (model or job.estimator(n_rows=1)).feed_rows()
        seen = int(getattr(model, "n_samples_seen_", 0))
        # the rows opened (a file parsed) once: an automatic setting's race reads their head
        rows = open_job_rows(
            dataset,
            feed_rows=feed,
            seed=job.seed,
            permute=job.data.permute,
            start=job.data.start,
            stop=job.data.stop,
            labels=self.labels,
            reading=self.reading,
        )
        t0 = time.perf_counter()
        job = race(refuse_auto_continuation(job, start_from), rows)
        race_seconds = time.perf_counter() - t0 if job.settings.race else 0.0
        data = load_job_data(
            rows, feed_rows=feed, settings=job.settings, scaler=scaler, first=feed - seen % feed if seen else None
        )
        job = job.settled(data.settings).with_data(sparse=data.sparse, label_map=data.label_map, columns=data.columns)
        if model is None:
            model = job.estimator(n_rows=data.n_rows, feature_groups=data.feature_groups)
        return job, model, data, race_seconds


def refuse_auto_continuation(job: Job, start_from) -> Job:
    """``job``, unless it asks for an automatic setting while continuing a fitted model, which
    keeps the scaler and kernels it was fitted with (its own job's settings)."""
    if start_from is not None and job.settings.is_auto:
        raise ValueError(
            "a fitted model continues with its own scaling and kernels: give its job (or a fixed --scaling), "
            "not an automatic setting"
        )
    return job


def _notes(*advice: str | None) -> tuple[str, ...]:
    return tuple(line for line in advice if line)
