"""Fit an online estimator over an ingested dataset on a Dask cluster (:meth:`DaskEngine.fit`).

The estimator is started on the dataset's shape and classes (:meth:`initialize`), the scaler is
fitted on a prefix of the stream by a worker (no feature data reaches the client), the engine runs
the job's rounds, and the estimator takes the final state (:meth:`set_engine_state`). With a
``checkpoint_dir`` the full model is saved every ``checkpoint_every`` rounds
(:class:`~.checkpoints.CheckpointStore`) and ``resume=True`` continues from the newest checkpoint
of the same job. The result equals the in-process run of the same estimator over the same stream
(``omkl run`` / ``partial_fit`` in :meth:`feed_rows` chunks), bit for bit, after any number of worker
failures and resumes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from scipy import sparse

from ..defaults import SCALE_ROWS
from ..persistence import load_model
from ..preprocessing import Scaler
from ..storage.ingest import dataset_info
from ..storage.location import text
from .checkpoints import CheckpointStore, job_description

# rows of the stream's head the scaler is fitted on


@dataclass
class ClusterFit:
    """What :meth:`DaskEngine.fit` returns.

    ``model``: the fitted estimator; ``scaler``: the scaling its inputs need (fitted on the stream's
    first :data:`SCALE_ROWS` rows); ``resumed_from``: rows already learnt at the start (a resume);
    ``seconds``: learning time; ``timing``: the engine's per-round accounting; ``failures``: worker
    failures recovered from; ``n_workers``, ``n_shards``; ``history``: (rows seen, mistakes) per
    coordinator call; ``checkpoint_dir``: where the checkpoints are (a path or URL location; None
    without).
    """

    model: object
    scaler: Scaler
    resumed_from: int
    seconds: float
    timing: dict
    failures: list = field(default_factory=list)
    n_workers: int = 0
    n_shards: int = 0
    history: list = field(default_factory=list)
    checkpoint_dir: object = None


def fit_on_cluster(
    engine,
    model,
    dataset,
    *,
    scaling: str = "none",
    permute: bool = True,
    seed: int = 0,
    limit: int | None = None,
    start: int = 0,
    warm_start: bool = False,
    scaler: Scaler | None = None,
    checkpoint_dir=None,
    resume: bool = False,
    overwrite: bool = False,
    keep_checkpoints: bool = True,
    on_progress=None,
) -> ClusterFit:
    """Learn ``model`` over ``dataset`` (an ingested dataset directory the workers can read).

    Parameters
    ----------
    engine : DaskEngine
    model : an online estimator (OMKC, OM2, SPA, the Perceptrons, the budget baselines), unfitted:
        its parameters (``block_size``, ``random_state``, ...) say what is learnt.
    scaling : {"none", "minmax", "standard"}
        Fitted on the first ``SCALE_ROWS`` rows of the stream, applied by every shard.
    permute, seed : the stream's order (a seeded permutation of its chunks and rows, as ``omkl run``).
    limit : learn from the first ``limit`` rows (from ``start``) only.
    start : the first row of the dataset to learn from (a window of a longer stream: ``omkl retrain``).
    warm_start : ``model`` is fitted already; continue from its exact state (its rows seen, weights,
        support vectors, random stream position) instead of starting afresh.
    scaler : a fitted scaler to apply (a warm start's, from the saved model); None: fit ``scaling``.
    checkpoint_dir : folder for ``job.json`` and the checkpoints (None: no checkpoints, no resume).
    resume : continue from the newest checkpoint in ``checkpoint_dir`` (its job must be this one).
    overwrite : replace an earlier job's checkpoint folder.
    keep_checkpoints : leave the checkpoints after a successful fit (False: delete them).
    on_progress : called with ``{"n_seen", "n_mistakes", "n_rows", "done"}`` before the first round
        and after every coordinator call.
    """
    meta = dataset_info(dataset)  # a clear DataError if it is not a dataset directory
    total = int(meta["n_rows"])
    if not 0 <= int(start) <= total:
        raise ValueError(f"start must be a row of the dataset, 0..{total}, got {start}")
    stop = total if limit is None else min(int(start) + int(limit), total)
    n_features = int(meta["n_features"])
    classes = sorted(internal for _, internal in meta["label_map"])
    if warm_start:
        check_continues(model, n_features, classes, dataset)
        offset = int(model.n_samples_seen_)
    else:
        model.initialize(n_features, classes, n_rows=stop - int(start), sparse=meta.get("layout") == "csr")
        offset = 0
    n_rows = offset + stop - int(start)  # the engine counts rows seen over the model's whole life
    job = job_description(model, dataset, seed=seed, scaling=scaling, permute=permute, limit=limit, n_rows=n_rows)
    if start or offset:  # (absent for a job from row 0 of a fresh model: job.json as before)
        job.update(start=int(start), offset=offset)
    store = CheckpointStore(checkpoint_dir) if checkpoint_dir is not None else None
    if resume and store is None:
        raise ValueError("resume=True needs the checkpoint_dir of the job to resume")
    resume_from = store.start(job, resume=resume, overwrite=overwrite) if store is not None else None
    if resume_from is not None:
        checkpoint = load_model(resume_from)
        scaler, resumed = checkpoint.scaler, checkpoint.estimator
        begin = {"checkpoint": text(resume_from), "history": checkpoint.job["history"]}
        n_start, mistakes_start = int(resumed.n_samples_seen_), int(resumed.mistakes_)
    else:
        if scaler is None:
            scaler = _fit_scaler(
                engine.client, dataset, scaling, permute, seed, int(start), None if limit is None else stop, n_features
            )
        arrays, scalars = model.engine_.state()
        begin = {"arrays": arrays, "scalars": scalars}
        n_start, mistakes_start = int(scalars["n_seen"]), int(scalars["n_mistakes"])
    shard_job = {
        "data": text(dataset),
        "shuffle": permute,
        "seed": seed,
        "limit": None if limit is None else stop,
        "start": int(start),
        "offset": offset,
        "kernel_pool": model.kernel_pool_.to_spec_string(),
        "scaler": scaler.to_dict(),
        "classes": classes,
    }

    def on_checkpoint(arrays, scalars, history):
        return store.write(model.set_engine_state(arrays, scalars), scaler, int(scalars["n_seen"]), history, job)

    def progress(p):
        if on_progress is not None:
            on_progress(
                {
                    "n_seen": int(p["n_seen"]),
                    "n_mistakes": int(p["n_mistakes"]),
                    "n_rows": n_rows,
                    "done": bool(p["done"]),
                }
            )

    progress({"n_seen": n_start, "n_mistakes": mistakes_start, "done": n_start >= n_rows})
    t0 = time.perf_counter()
    result = engine.run(
        shard_job,
        begin,
        n_rows,
        on_progress=progress,
        on_checkpoint=on_checkpoint if store is not None else None,
        keep_best_at=getattr(model, "validation_size_", None),
    )
    seconds = time.perf_counter() - t0
    model.set_engine_state(result["arrays"], result["scalars"])
    if store is not None and not keep_checkpoints:
        store.clear()
    return ClusterFit(
        model=model,
        scaler=scaler,
        resumed_from=n_start - offset,
        seconds=seconds,
        timing=result["timing"],
        failures=result["failures"],
        n_workers=engine.n_workers,
        n_shards=result["n_shards"],
        history=[tuple(h) for h in result["history"]],
        checkpoint_dir=store.dir if store is not None else None,
    )


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


def _fit_scaler(client, data, scaling, permute, seed, start, stop, n_features) -> Scaler:
    """Fit the scaler on a prefix of the stream, on a worker (no feature data to the client)."""
    if scaling == "none":
        return Scaler("none").fit(sparse.csr_matrix((1, n_features)))  # nothing sized by the width
    stats = client.submit(fit_scaler_task, text(data), scaling, permute, seed, stop, start, pure=False).result()
    return Scaler.from_dict(stats)


def fit_scaler_task(data, scaling, permute, seed, limit, start=0) -> dict:
    """Task: the scaler fitted on the stream's head, as a dict."""
    from ..storage import open_stream

    stream = open_stream(data, block_size=4096, shuffle=permute, seed=seed, start=start, stop=limit)
    scaler = Scaler(scaling)
    scaler.fit_prefix(stream, min(stream.n_rows, SCALE_ROWS))
    return scaler.to_dict()
