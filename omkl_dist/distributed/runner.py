"""Run a :class:`~omkl_dist.job.Job` on a Dask cluster: the twin of
:class:`omkl_dist.runner.LocalRunner`, with the same ``fit(job, dataset)`` and the same
:class:`~omkl_dist.runner.RunResult`, and the same model bit for bit.

The job's estimator is started on the dataset's shape and classes (:meth:`initialize`), the
scaler is fitted on a prefix of the stream by a worker (no feature data reaches the client),
:class:`~.sharded_rounds.ShardedRounds` runs the job's rounds, and the estimator takes the final state
(:meth:`set_engine_state`). With a ``checkpoint_dir`` the full model is saved every
``job.engine.checkpoint_every`` rounds beside ``job.json`` (:class:`~.checkpoints.CheckpointStore`)
and ``resume=True`` continues from the newest checkpoint of the same job, after any number of
worker failures and resumes.
"""

from __future__ import annotations

import time
from dataclasses import astuple, replace

import numpy as np
from scipy import sparse
from sklearn.base import clone

from ..cluster.profiler import warn_if_workers_profile
from ..defaults import resolve_settings
from ..evaluation.calibration import Calibration
from ..job import EngineOptions, Job
from ..persistence import load_model
from ..preprocessing import ColumnEncoder, Scaler, fit_head
from ..race import race_task
from ..runner import Accounting, RunResult, refuse_auto_continuation
from ..storage.job_data import stream_mixing_advice
from ..storage.location import location, text
from ..storage.stream import open_stream
from ..storage.views import feature_groups
from .calibration import RoundCalibration
from .checkpoints import CheckpointStore
from .sharded_rounds import ShardedRounds
from .warm import WorkerWarmup


class DaskRunner:
    """Run jobs on the cluster behind ``client``.

    Parameters
    ----------
    client : distributed.Client
    checkpoint_dir : path or URL, optional
        Folder for ``job.json`` and the checkpoints (None: no checkpoints, no resume).
    resume : bool
        Continue from the newest checkpoint in ``checkpoint_dir`` (its job must be this one).
    overwrite : bool
        Replace an earlier job's checkpoint folder.
    keep_checkpoints : bool
        Leave the checkpoints after a successful fit (False: delete them).
    on_progress : callable, optional
        Called with ``{"n_seen", "n_mistakes", "n_rows", "done"}`` before the first round and after
        every coordinator call.
    rounds_per_call, call_timeout, worker_timeout
        See :class:`~.sharded_rounds.ShardedRounds`.

    Examples
    --------
    >>> from omkl_dist.job import DataWindow, Job
    >>> job = Job.build("spa", {"eta": 0.2}, data=DataWindow("data/codrna"))
    >>> result = DaskRunner(client, checkpoint_dir="ckpt").fit(job, "data/codrna")  # doctest: +SKIP
    >>> result.accounting.workers, result.model.mistakes_  # doctest: +SKIP
    """

    def __init__(
        self,
        client,
        *,
        checkpoint_dir=None,
        resume: bool = False,
        overwrite: bool = False,
        keep_checkpoints: bool = True,
        on_progress=None,
        rounds_per_call: int = 16,
        call_timeout: float = 600.0,
        worker_timeout: float = 120.0,
    ):
        if resume and checkpoint_dir is None:
            raise ValueError("resume=True needs the checkpoint_dir of the job to resume")
        self.client = client
        self.checkpoint_dir = checkpoint_dir
        self.resume, self.overwrite, self.keep_checkpoints = resume, overwrite, keep_checkpoints
        self.on_progress = on_progress
        self.timeouts = {
            "rounds_per_call": rounds_per_call,
            "call_timeout": call_timeout,
            "worker_timeout": worker_timeout,
        }

    def fit(self, job: Job, dataset, *, start_from=None) -> RunResult:
        """Learn ``job`` over ``dataset`` (an ingested dataset directory the workers can read).

        ``start_from``: ``(model, scaler)`` of a fitted model to continue from its exact state (its
        rows seen, weights, support vectors, random stream position; ``omkl retrain``); None: a
        fresh model of the job's parameters, and a scaler fitted on the window's head.
        """
        # a clear DataError if it is not a dataset directory, or one without labels (refused by the stream)
        meta = open_stream(dataset).meta
        warn_if_workers_profile(self.client)
        store = CheckpointStore(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        t0 = time.perf_counter()
        job = self._decided(refuse_auto_continuation(job, start_from), dataset, store, meta.get("layout") == "csr")
        race_seconds = time.perf_counter() - t0 if job.settings.race else 0.0
        total, n_features = int(meta["n_rows"]), int(meta["n_features"])
        start = job.data.start
        if not 0 <= start <= total:
            raise ValueError(f"start must be a row of the dataset, 0..{total}, got {start}")
        stop = start + job.data.rows(total)
        mixing = stream_mixing_advice(open_stream(dataset, shuffle=job.data.permute, start=start, stop=stop))
        classes = sorted(internal for _, internal in meta["label_map"])
        columns = None if "columns" not in meta else ColumnEncoder.from_dict(meta["columns"])
        model, scaler = start_from if start_from is not None else (None, None)
        # a resume has its recorded settings (_decided) and its checkpoint's scaler; else the settings are
        # decided with the scaler on the head (the defaults' 0/1 rule), before job.json records them
        resuming = self.resume and store is not None and store.recorded_job() is not None
        if scaler is None and not resuming:
            job, scaler = _fit_scaler(self.client, dataset, job, stop, n_features)
        job = job.with_data(sparse=meta.get("layout") == "csr", label_map=meta["label_map"], columns=columns)
        if model is not None:
            check_continues(model, n_features, classes, dataset)
            offset, mistakes_before = int(model.n_samples_seen_), int(model.mistakes_)
        else:
            model = job.estimator(n_rows=stop - start, feature_groups=feature_groups(meta))
            model.initialize(n_features, classes, n_rows=stop - start, sparse=meta.get("layout") == "csr")
            offset, mistakes_before = 0, 0
        n_rows = offset + stop - start  # the engine counts rows seen over the model's whole life
        # numba compiles on the workers while the scaler is fitted, not in the first round's time
        warming = WorkerWarmup(self.client, model, n_features, classes, sparse=meta.get("layout") == "csr")
        # the calibration continues the model's, learnt by the coordinator in the in-process run's batches
        calibration = RoundCalibration(
            clone(model).initialize(n_features, model.classes_, n_rows=stop - start),
            feed=model.feed().from_row(offset),
            end=n_rows,
            state={"record": model.calibration_.to_dict(), "pending": {}},
        )
        resume_from = store.start(job, resume=self.resume, overwrite=self.overwrite) if store is not None else None
        if resume_from is not None:
            checkpoint = load_model(resume_from)
            scaler, resumed = checkpoint.scaler, checkpoint.estimator
            begin = {
                "checkpoint": text(resume_from),
                "history": checkpoint.job["history"],
                "samples": checkpoint.job["samples"],
                "calibration": {
                    "record": resumed.calibration_.to_dict(),
                    "pending": checkpoint.job["calibration_rows"],
                },
            }
            n_start, mistakes_start = int(resumed.n_samples_seen_), int(resumed.mistakes_)
        else:
            if scaler is None:  # (a resume's job recorded, but no checkpoint yet)
                _, scaler = _fit_scaler(self.client, dataset, job, stop, n_features)
            arrays, scalars = model.engine_.state()
            begin = {"arrays": arrays, "scalars": scalars, "calibration": calibration.state()}
            n_start, mistakes_start = int(scalars["n_seen"]), int(scalars["n_mistakes"])
        shard_job = {
            "data": text(dataset),
            "shuffle": job.data.permute,
            "seed": job.seed,
            "limit": None if job.data.stop is None else stop,
            "start": start,
            "offset": offset,
            # where an in-process run's calls end: the trace reads the model there
            "feed": list(astuple(model.feed().from_row(offset))),
            "kernel_pool": model.kernel_pool_.to_spec_string(),
            "scaler": scaler.to_dict(),
            "classes": classes,
        }

        def on_checkpoint(state):
            calibrated = state["calibration"]
            now = model.set_engine_state(
                state["arrays"], state["scalars"], calibration=Calibration.from_dict(calibrated["record"])
            )
            return store.write(
                now,
                scaler,
                int(state["scalars"]["n_seen"]),
                job,
                history=state["history"],
                samples=state["samples"],
                calibration_rows=calibrated["pending"],
            )

        def progress(p):
            if self.on_progress is not None:
                self.on_progress(
                    {
                        "n_seen": int(p["n_seen"]),
                        "n_mistakes": int(p["n_mistakes"]),
                        "n_rows": n_rows,
                        "done": bool(p["done"]),
                    }
                )

        warmed = warming.wait()
        progress({"n_seen": n_start, "n_mistakes": mistakes_start, "done": n_start >= n_rows})
        engine = ShardedRounds(
            self.client,
            n_shards=job.engine.shards,
            checkpoint_every=job.engine.checkpoint_every,
            max_retries=job.engine.max_retries,
            **self.timeouts,
        )
        t0 = time.perf_counter()
        result = engine.run(
            shard_job,
            begin,
            n_rows,
            on_progress=progress,
            on_checkpoint=on_checkpoint if store is not None else None,
            select_kernel_at=getattr(model, "validation_size_", None),  # Perceptron(*)'s validation prefix
            calibration=calibration,
        )
        seconds = time.perf_counter() - t0
        # (the stream's end ends a batch: nothing is left gathered)
        model.set_engine_state(
            result["arrays"], result["scalars"], calibration=Calibration.from_dict(result["calibration"]["record"])
        )
        if store is not None and not self.keep_checkpoints:
            store.clear()
        accounting = Accounting(
            rows=int(model.n_samples_seen_) - offset,
            mistakes=int(model.mistakes_) - mistakes_before,
            seconds=seconds,
            race_seconds=race_seconds,
            resumed_from=n_start - offset,
            workers=engine.n_workers,
            shards=result["n_shards"],
            failures=tuple(result["failures"]),
            timing=result["timing"],
            compile_seconds=warmed.seconds if warmed.compiles else 0.0,
        )
        return RunResult(
            job=job,
            model=model,
            scaler=scaler,
            accounting=accounting,
            trace=_trace(model, accounting, result, offset, mistakes_before),
            name=location(dataset).name,
            feature_names=None if meta.get("feature_names") is None else tuple(meta["feature_names"]),
            label_name=meta.get("label_column"),
            columns=columns,
            advice=(mixing,) if mixing else (),
        )

    def _decided(self, job: Job, dataset, store, sparse: bool) -> Job:
        """``job`` with its settings decided as far as a resume recorded them (never raced or
        checked again), else an automatic setting raced on a worker (:func:`omkl_dist.race.race_task`);
        the defaults' 0/1 rule is decided with the scaler (:func:`fit_head_task`)."""
        recorded = store.recorded_job() if store is not None and self.resume else None
        request = job.settings.for_sparse_rows() if sparse and job.settings.is_auto else job.settings
        if recorded is not None and recorded.settings.settles(request):
            return job.settled(recorded.settings)
        if not job.settings.is_auto:
            return job
        document = self.client.submit(race_task, job.to_dict(), text(dataset), pure=False).result()
        return Job.from_dict(document)


def fit_on_cluster(
    client,
    estimator,
    dataset,
    *,
    scaling: str = "none",
    permute: bool = True,
    seed: int | None = None,
    limit: int | None = None,
    start: int = 0,
    warm_start: bool = False,
    scaler=None,
    checkpoint_every: int = 0,
    n_shards: int | None = None,
    max_retries: int = 3,
    **runner_options,
) -> RunResult:
    """Learn ``estimator`` over the ingested ``dataset`` on the cluster behind ``client``: its
    :class:`~omkl_dist.job.Job` (:meth:`Job.from_estimator`) run by a :class:`DaskRunner`; the
    result's model is the in-process model bit for bit.

    Parameters
    ----------
    client : distributed.Client
    estimator : an online estimator
        Its parameters (``block_size``, ``random_state``, ...) say what is learnt; the result's
        ``model`` is a fitted copy (``estimator`` itself with ``warm_start``).
    dataset : path or URL of an ingested dataset the workers can read.
    scaling : {"none", "minmax", "standard"}
        Fitted on the stream's first ``SCALE_ROWS`` rows, applied by every shard.
    permute, seed : the stream's order (``seed``: default the estimator's ``random_state``).
    limit : learn from the first ``limit`` rows (from ``start``) only.
    start : the first row of the dataset to learn from (a window of a longer stream).
    warm_start : ``estimator`` is fitted already; continue from its exact state.
    scaler : a fitted scaler to apply (a warm start's, from the saved model); None: fit ``scaling``.
    checkpoint_every, n_shards, max_retries : the job's :class:`~omkl_dist.job.EngineOptions`.
    **runner_options : ``checkpoint_dir``, ``resume``, ``overwrite``, ``keep_checkpoints``,
        ``on_progress`` and the timeouts of :class:`DaskRunner`.

    Returns
    -------
    RunResult

    Examples
    --------
    >>> from omkl_dist import OMKC
    >>> from omkl_dist.distributed import fit_on_cluster
    >>> result = fit_on_cluster(client, OMKC(random_state=0), "data/codrna", scaling="minmax",  # doctest: +SKIP
    ...                         checkpoint_every=20, checkpoint_dir="ckpt")
    >>> result.as_model().predict(X_raw), result.accounting.workers  # doctest: +SKIP
    """
    job = Job.from_estimator(
        estimator,
        dataset,
        settings=resolve_settings(scaling=scaling, kernels_given=True),
        start=int(start),
        stop=None if limit is None else int(start) + int(limit),
        permute=permute,
    )
    job = replace(
        job,
        seed=job.seed if seed is None else int(seed),
        engine=EngineOptions(int(checkpoint_every), n_shards, int(max_retries)),
    )
    runner = DaskRunner(client, **runner_options)
    if warm_start or scaler is not None:
        return runner.fit(job, dataset, start_from=(estimator if warm_start else None, scaler))
    return runner.fit(job, dataset)


def _trace(model, accounting: Accounting, result: dict, offset: int, mistakes_before: int) -> dict:
    """The run as the coordinator recorded it: its mistake curve (``history``: the model's rows seen
    and mistakes at the curve's points, this run's from ``offset`` rows and ``mistakes_before``
    on), the in-process trace's ``n_seen`` and ``mistake_rate`` value for value, and the model
    read at those points (``samples``, for the models the engine reads inside a round; the others'
    where an in-process run's ``partial_fit`` calls end), the in-process trace's ``sampled_at``,
    ``n_support`` and ``weights`` value for value."""
    history, samples = result["history"], result["samples"]
    rows = accounting.rows
    learnt = int(model.n_samples_seen_) - offset
    summary = {
        "n": rows,
        "mistakes": accounting.mistakes,
        "mistake_rate": accounting.mistakes / max(rows, 1),
        "n_support": {
            "total": int(model.n_support_.sum()),
            "per_kernel": dict(zip(model.active_kernel_names_, model.n_support_.tolist())),
        },
        "seconds": accounting.seconds,
        "instances_per_second": accounting.instances_per_second if accounting.seconds > 0 else None,
    }
    return {
        "n_seen": [seen - offset for seen, _ in history],
        "mistake_rate": [(mistakes - mistakes_before) / (seen - offset) for seen, mistakes in history],
        "kernel_names": list(model.active_kernel_names_),
        "summary": summary,
        **(
            {
                "sampled_at": [seen - offset for seen, _, _ in samples],
                "n_support": [list(support) for _, support, _ in samples],
                "weights": [list(weights) for _, _, weights in samples],
            }
            if samples
            else {}
        ),
        **round_speeds(result["timing"]["per_round"], learnt),
    }


def round_speeds(per_round: list, learnt: int) -> dict:
    """The in-process trace's speed series from the coordinator's rounds (:func:`~.coordinator.round_record`,
    this attempt's): ``block_ends`` (the rows learnt after each round, of the ``learnt`` rows of this
    run), ``seconds`` (the rounds' wall time so far) and ``instances_per_second`` (so far), and
    ``timed_from``: the rows learnt before the first timed round (a resume's or a recovery's
    checkpoint; 0 when every round is timed).

    >>> round_speeds([{"rows": 100, "wall": 0.5}, {"rows": 100, "wall": 1.5}], 300)
    {'timed_from': 100, 'block_ends': [200, 300], 'seconds': [0.5, 2.0], 'instances_per_second': [200.0, 100.0]}
    """
    if not per_round:
        return {}
    rows = np.cumsum([r["rows"] for r in per_round])
    seconds = np.cumsum([r["wall"] for r in per_round])
    start = int(learnt - rows[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        speed = np.where(seconds > 0, rows / seconds, np.nan)
    return {
        "timed_from": start,
        "block_ends": (start + rows).tolist(),
        "seconds": seconds.tolist(),
        "instances_per_second": speed.tolist(),
    }


def check_continues(model, n_features: int, classes, dataset) -> None:
    """A fitted ``model`` can continue on the dataset: same feature count and classes."""
    from ..storage.errors import DataError

    if not hasattr(model, "engine_"):
        raise ValueError("warm_start=True needs a fitted model (fit it, or load a saved one)")
    if int(model.n_features_in_) != n_features:
        raise DataError(
            f"the dataset has {n_features} features, the model was trained on {model.n_features_in_}",
            path=dataset,
            fix="give data with the model's features (the same columns, in order)",
        )
    known = [c.item() if hasattr(c, "item") else c for c in model.classes_]
    if not set(classes) <= set(known):
        raise DataError(
            f"the dataset's classes {sorted(classes)} are not among the model's {known}",
            path=dataset,
            fix="a model keeps its classes: train a new one for new classes",
        )


def _fit_scaler(client, data, job: Job, stop: int, n_features: int) -> tuple[Job, Scaler]:
    """The job's settings decided on the window's head (the defaults' 0/1 rule) and the scaler
    they fit there, on a worker (no feature data to the client; :func:`fit_head_task`)."""
    if job.settings.scaling == "none":  # (nothing to decide: the 0/1 rule leaves such settings as they are)
        return job, Scaler("none").fit(sparse.csr_matrix((1, n_features)))  # nothing sized by the width
    limit = None if job.data.stop is None else stop
    found = client.submit(fit_head_task, job.to_dict(), text(data), limit, pure=False).result()
    return Job.from_dict(found["job"]), Scaler.from_dict(found["scaler"])


def fit_head_task(job_document: dict, data, limit) -> dict:
    """Task: the job's settings decided on the stream's first ``scale_rows`` rows and the scaler
    they fit there (:func:`omkl_dist.preprocessing.fit_head`): the decided job's document and the
    scaler as a dict."""
    job = Job.from_dict(job_document)
    window = job.data
    stream = open_stream(data, block_size=4096, shuffle=window.permute, seed=job.seed, start=window.start, stop=limit)
    settings, scaler = fit_head(job.settings, stream, min(stream.n_rows, job.settings.scale_rows), sparse=stream.sparse)
    return {"job": job.settled(settings).to_dict(), "scaler": scaler.to_dict()}
