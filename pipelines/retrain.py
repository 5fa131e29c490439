"""``omkl retrain``: learn a model further on one new window of data, gate it, publish it.

1. The window (rows of an ingested dataset, named explicitly) is split into a training head and a
   held-out tail. Its content hash, the champion it starts from, the parameters and the code
   version form the retrain *key*: a rerun with the same key returns the version already made.
2. The champion's mistakes on the window (predicting each row before its label is used, as when it
   serves) feed a Page-Hinkley drift test; ``when="drift"`` stops here unless drift was signalled.
3. The challenger: an online model (OMKC family, OM-2, SPA, OKS, the budget baselines) continues
   from the champion's exact state over the head -- in this process or on a Dask cluster, the same
   model bit for bit; a batch model (MKBoost, SimpleMKL, Lp-MKL) is refitted on the head.
4. The gate: champion and challenger predict the tail; the challenger is promoted if its mistake
   rate is at most the champion's plus ``gate``. A first version (no champion) is promoted.
5. The challenger is saved into the store's staging area (outside the lock), then published under
   the lock (:class:`~omkl_dist.storage.model_store.ModelStore`); the report and its plots follow.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import signal
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import numpy as np

from omkl_dist.defaults import BLOCK_SIZE, FIXED_SCALING, SEED, resolve_settings
from omkl_dist.evaluation.drift import PageHinkley
from omkl_dist.job import JOB_FIELDS, DataWindow, Job
from omkl_dist.model import Model
from omkl_dist.persistence import load_model, save_model
from omkl_dist.preprocessing import ColumnEncoder, Scaler
from omkl_dist.runner import LocalRunner
from omkl_dist.storage import column_names, resolve_dataset
from omkl_dist.storage.errors import DataError, UnknownLabelError
from omkl_dist.storage.ingest import dataset_info
from omkl_dist.storage.job_data import is_ingested
from omkl_dist.storage.location import location, text
from omkl_dist.storage.model_store import CHAMPION, REPORTS, WINDOWS, ModelStore, signal_arrived, signals_held
from omkl_dist.storage.models import read_meta
from omkl_dist.storage.outputs import REPORT, Terminated, check_output

from .data_source import origin
from .datasource import ingested_source, refuse_unlabelled
from .progress import CountProgress, ProgressBar
from .run_report import build_report
from .window import Window, open_window

PACKAGES = ("numpy", "scipy", "numba", "scikit-learn", "dask", "distributed", "zarr", "pyarrow")
WHEN = ("always", "drift")
ENCODING = ("categorical", "impute")  # the reading options that make features of raw columns


def code_version() -> dict:
    """This omkl-dist: the package version and a hash of its sources (an edit changes the key)."""
    from omkl_dist._numba_cache import sources_digest

    return {"omkl-dist": metadata.version("omkl-dist"), "sources": sources_digest()}


def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _kind(algo: str) -> str:
    from omkl_dist.algorithms.registry import ALGORITHMS, BATCH_ALGORITHMS

    if algo in ALGORITHMS:
        return "online"
    if algo in BATCH_ALGORITHMS:
        return "batch"
    raise ValueError(
        f"unknown --algo {algo!r}; choose an online one ({', '.join(sorted(ALGORITHMS))}) or a batch "
        f"one ({', '.join(sorted(BATCH_ALGORITHMS))})"
    )


def _algo_of(meta: dict) -> str:
    from omkl_dist.algorithms.registry import ALGORITHMS, BATCH_ALGORITHMS

    by_class = {cls.__name__: name for name, cls in [*ALGORITHMS.items(), *BATCH_ALGORITHMS.items()]}
    return by_class[meta["algorithm"]]


# ------------------------------------------------------------------------------------------------ the job
def retrain(
    store_root,
    name: str,
    data,
    *,
    rows=None,
    partition=None,
    algo=None,
    params=None,
    block_size=BLOCK_SIZE,
    seed=SEED,
    scaling="none",
    holdout=0.2,
    gate=0.0,
    when="always",
    scheduler=None,
    report_dir=None,
    plots=True,
    lock_timeout=30.0,
    drift=None,
    show_progress=False,
    labels=None,
    settings=None,
    emit=None,
) -> dict:
    """Run one retrain; returns the JSON-able summary (``status``: promoted, kept, skipped or exists).
    ``data`` is an ingested dataset, or a file ingested (with ``labels``: ``label_column``,
    ``positive_class``, ``features``, ``zero_based``, a LIBSVM file's ``n_features`` (a later window
    narrower than the champion gets the champion's), and a first version's ``categorical`` and ``impute``; a later
    version reads the file with the champion's fitted column encoder, saved with every version)
    into ``STORE/NAME/windows/<digest>`` first. ``settings``
    (:func:`omkl_dist.defaults.resolve_settings`): a first version's scaling and kernel
    normalisation (later versions keep the champion's). ``emit(summary)`` is called with the
    summary before it is returned -- for a published version inside the publish's critical section,
    so the command's status line is printed even when SIGINT or SIGTERM arrives at that moment."""
    t0 = time.perf_counter()
    if when not in WHEN:
        raise ValueError(f"--when must be one of {', '.join(WHEN)}, got {when!r}")
    if not (np.isfinite(gate) and gate >= 0):
        raise ValueError(f"--gate must be a tolerance >= 0 (a share of the held-out rows), got {gate}")
    detector = (drift or PageHinkley()).check()
    if report_dir is not None:  # a folder that may not receive the report is refused before the work
        check_output(report_dir, REPORT, overwrite=True, option="--report-dir")
    store = ModelStore(store_root, name, lock_timeout=lock_timeout)
    store.check_inputs([("dataset", data)])
    refuse_unlabelled(data, labels)
    store.prepare()  # (a data file is ingested into the store's windows/)
    champion = _load_champion(store)
    labels, encoder = _window_encoding(champion, _champion_columns(champion, labels or {}, data))
    with CountProgress(f"ingesting {origin(data) or location(data).name}", show=show_progress) as bar:
        data = _window_source(data, labels, store.dir / WINDOWS, encoder, champion, bar)
    notes = [] if not plots or plots_available() else [PLOTS_SKIPPED]
    plots = plots and not notes
    window = open_window(data, rows=rows, partition=partition, holdout=holdout)
    if settings is not None and champion is None and algo is not None:
        settings = settings.for_sparse_rows() if window.meta.get("layout") == "csr" else settings
        # a batch fit races nothing: an automatic setting is the fixed scaling there
        scaling = FIXED_SCALING if settings.is_auto and _kind(algo) != "online" else settings.scaling
    setting = _setting(champion, algo, params or {}, block_size, seed, scaling, settings, window)
    _check_window(window, champion)
    key, window_key = _keys(champion, window, setting, holdout)
    summary = {
        "model": name,
        "store": str(store.root),
        "window": window.describe(),
        "key": key,
        "window_key": window_key,
        "parent": champion["version"] if champion else None,
    }
    found = _done_before(store, champion, key, window_key)
    if found is not None:  # the same run was done: return its version, train nothing
        return _emitted(
            {
                **summary,
                "status": "exists",
                "version": found,
                "champion": store.aliases().get(CHAMPION),
                "seconds": time.perf_counter() - t0,
            },
            emit,
            notes,
        )
    watch = _watch(champion, window, detector)
    if when == "drift" and champion is not None and not watch["alarms"]:
        summary.update(
            status="skipped",
            reason="no drift signalled on the window",
            drift=watch["drift"],
            champion=champion["version"],
            seconds=time.perf_counter() - t0,
        )
        _write_report(store, summary, watch, None, report_dir, plots, f"skipped-{window.sha256()[:12]}")
        return _emitted(summary, emit, notes)
    fit = _train(champion, window, setting, scheduler, show_progress)
    challenger_mistakes = _mistakes(fit["model"], fit["scaler"], window, window.split, window.stop)
    decision = _gate(watch, challenger_mistakes, gate)
    lineage = {
        **summary,
        "packages": package_versions(),
        "code": code_version(),
        "algo": setting["algo"],
        "params": setting["params"],
        "seed": setting["seed"],
        "block_size": setting["block_size"],
        # an online model's scaling as its job decided it on the data (the defaults' 0/1 rule)
        "scaling": fit["job"].settings.scaling if "job" in fit else setting["scaling"],
        "holdout": holdout,
        "label_map": window.label_map,
        "gate": decision,
        "drift": watch["drift"],
        "metrics": {"holdout_mistake_rate": decision["challenger"], "train": fit["metrics"]},
        "where": fit["where"],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    staged = store.staging_dir()
    try:
        save_model(
            Model(
                fit["model"],
                scaler=fit["scaler"],
                columns=window.columns,
                label_map=window.label_map,
                # a window of unnamed columns (a file without a header) continues a champion by position: its names kept
                feature_names=window.meta.get("feature_names") or _champions(champion, "feature_names"),
                job=fit["job"].to_dict() if "job" in fit else None,
                label_name=window.meta.get("label_column") or _champions(champion, "label_name"),
            ),
            staged / "model",
            lineage=lineage,
            option="the model store's staging folder",
        )
        # from here to the status line, one critical section: a signal before the version is
        # renamed into place publishes nothing; after that, the run completes and says so
        with signals_held(deliver=False):
            published = store.publish(
                staged / "model",
                reason=decision["decision"],
                promote=decision["promote"],
                expect_champion=summary["parent"],
                key=key,
            )
            summary = _published_summary(summary, published, decision, watch, fit, t0)
            if not published["existing"]:
                _report_after_publish(summary, store, watch, {**fit, "holdout": challenger_mistakes}, report_dir, plots)
            if signal_arrived() is not None:
                summary.setdefault("notes", []).append(
                    f"{signal.Signals(signal_arrived()).name} arrived after the version was published: "
                    "the run was completed"
                )
            return _emitted(summary, emit, notes)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _published_summary(summary: dict, published: dict, decision: dict, watch: dict, fit: dict, t0: float) -> dict:
    """The run's summary once its version is in the store."""
    status = "exists" if published["existing"] else ("promoted" if published["promoted"] else "kept")
    if decision["promote"] and not published["promoted"] and not published["existing"]:
        decision = {
            **decision,
            "decision": f"not promoted: the champion changed to version {published['champion']} "
            "while this one trained (it stays a non-champion version)",
        }
    return {
        **summary,
        "status": status,
        "version": published["version"],
        "champion": published["champion"],
        "gate": decision,
        "drift": watch["drift"],
        "train": fit["metrics"],
        "where": fit["where"],
        "seconds": time.perf_counter() - t0,
    }


def _report_after_publish(summary: dict, store: ModelStore, watch: dict, fit: dict, report_dir, plots: bool) -> None:
    """Write the run's report into ``summary``; the version is published already, so a report that
    cannot be written (a full disk, an interrupt) is a note on the status line, never a failure."""
    try:
        summary["report"] = _write_report(store, summary, watch, fit, report_dir, plots, f"v{summary['version']}")
    except (Exception, KeyboardInterrupt, Terminated) as exc:  # noqa: BLE001 - nothing may undo a publish
        what = "interrupted" if isinstance(exc, (KeyboardInterrupt, Terminated)) else str(exc)
        summary.setdefault("notes", []).append(f"the report was not written ({what}); the version is published")


PLOTS_SKIPPED = "plots skipped: matplotlib is not installed (pip install 'omkl-dist[plots]'); report.json written"


def plots_available() -> bool:
    """Whether the report's plots can be drawn here (matplotlib is an optional dependency)."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:
        return False
    return True


def _emitted(summary: dict, emit, notes: list) -> dict:
    """``summary`` with the run's ``notes``, given to ``emit`` first (the command's status line)."""
    if notes or summary.get("notes"):
        summary["notes"] = [*notes, *summary.get("notes", [])]
    if emit is not None:
        emit(summary)
    return summary


def _load_champion(store: ModelStore):
    if CHAMPION not in store.aliases():
        return None
    version = store.resolve(CHAMPION)
    path = store.path(version)
    model = load_model(path)  # every array's hash checked: an edited version is refused here
    meta = read_meta(path)
    lineage = meta["provenance"].get("lineage")
    if lineage is None:
        raise DataError(
            "the champion has no lineage (it was not published by omkl retrain or omkl models import)",
            path=path,
            fix="promote a version made by omkl retrain",
        )
    return {
        "version": version,
        "path": path,
        "model": model.estimator,
        "scaler": model.scaler,
        "columns": model.columns,
        "raw_names": model.raw_names,
        "feature_names": model.feature_names,
        "label_name": model.label_name,
        "job": model.job,
        "lineage": lineage,
        "meta_sha256": meta["meta_sha256"],
    }


def _champions(champion, key: str):
    """The champion's ``key`` (None without a champion)."""
    return None if champion is None else champion[key]


def _champion_columns(champion, labels: dict, data) -> dict:
    """A later window file's columns read as the champion reads them, unless told otherwise: its
    features by the champion's names (a day's file with ids or other columns beside them, as omkl
    predict reads it: they were taken for features, and text ids refused) and its labels from the
    champion's label column. (A champion that learnt from unnamed columns, or a file without names,
    reads them as before, by position; an ingested dataset took its reading at ingest.)"""
    if champion is None or champion["raw_names"] is None or is_ingested(location(data)):
        return labels
    path = Path(data) if Path(data).is_dir() else resolve_dataset(data)
    if column_names(path) is None:
        return labels
    named = {}
    if labels.get("features") is None:
        named["features"] = champion["raw_names"]  # (its column encoder's raw columns, when it has one)
    if labels.get("label_column") is None and champion["label_name"] is not None:
        named["label_column"] = champion["label_name"]
    return {**labels, **named}


def _window_encoding(champion, labels: dict) -> tuple[dict, ColumnEncoder | None]:
    """How a window file's raw columns become features: a first version's ``categorical`` and
    ``impute`` (an encoder fitted on its window), a later one's the champion's fitted encoder --
    its features must be the champion's, so the options, when given, must be the champion's."""
    given = {k: labels[k] for k in ENCODING if labels.get(k) is not None}
    if champion is None:
        return labels, None
    encoder = champion["columns"]
    own = {} if encoder is None else {k: getattr(encoder, k) for k in ENCODING if getattr(encoder, k) is not None}
    if given and given != own:
        told = ", ".join(f"--{k} {v}" for k, v in given.items())
        kept = ", ".join(f"--{k} {v}" for k, v in own.items()) or "no --categorical/--impute (numeric columns)"
        raise ValueError(
            f"{told} differs from how the champion (version {champion['version']}) reads its columns ({kept}): "
            "a later window is read with the champion's own fitted encoder; drop the options, or publish under "
            "another model name to start afresh"
        )
    return {k: v for k, v in labels.items() if k not in ENCODING}, encoder


def _setting(champion, algo, params: dict, block_size, seed, scaling, settings, window: Window) -> dict:
    """What is trained: the champion's own job over the window (an online model continues with
    it), or ``algo`` and ``params`` on a first run or a batch refit. An online setting carries its
    :class:`~omkl_dist.job.Job` (``"job"``): the champion's, with the window's rows."""
    if champion is None:
        if algo is None:
            raise ValueError(
                "the store has no champion for this model yet: give --algo (and its --param) for the first version"
            )
        kind = _kind(algo)
        setting = {
            "algo": algo,
            "kind": kind,
            "params": dict(params),
            "block_size": block_size,
            "seed": seed,
            "scaling": scaling,
        }
        if kind == "online":
            job = Job.build(
                algo,
                params,
                data=_window_rows(window),
                seed=seed,
                block_size=block_size,
                settings=settings if settings is not None else resolve_settings(scaling=scaling, kernels_given=True),
            )
            setting.update(params=dict(job.params), job=job)
        return setting
    lineage = champion["lineage"]
    own = lineage["algo"]
    if algo is not None and algo != own:
        raise ValueError(
            f"the champion is a {own} model; --algo {algo} cannot continue it (give no --algo, or "
            "publish under another model name)"
        )
    kind = _kind(own)
    if kind == "online" and params and any(lineage["params"].get(k) != v for k, v in params.items()):
        raise ValueError(
            f"an online model continues with its own parameters {lineage['params']}; --param "
            f"{params} differs (publish under another model name to start afresh)"
        )
    merged = {**lineage["params"], **params} if kind == "batch" else lineage["params"]
    setting = {
        "algo": own,
        "kind": kind,
        "params": merged,
        "block_size": lineage["block_size"],
        "seed": lineage["seed"],
        "scaling": lineage["scaling"],
    }
    if kind == "online":
        job = Job.from_dict(champion["job"], path=champion["path"], fix="promote a version made by omkl retrain")
        setting["job"] = replace(job, data=_window_rows(window))
    return setting


def _window_source(data, labels: dict, under, encoder, champion, progress=None):
    """The window's ingested dataset (:func:`~.datasource.ingested_source`). A later version's window
    file is read with the champion's classes, coded as its own: a day of one class (no fraud) was
    refused as "only one class present", a new class named only as a coding mismatch. A LIBSVM file
    is as wide as its largest index, which a day's rows may not reach (a9a's first 3,000 rows never
    use its 123rd feature): one narrower than the champion is ingested again with the champion's
    width, its rows padded with zero features as a LIBSVM row leaves them out."""
    if champion is None or is_ingested(location(data)):
        return ingested_source(data, labels=labels, under=under, columns=encoder, progress=progress)
    label_map = champion["lineage"]["label_map"]
    coding = {"classes": [original for original, _ in label_map]}
    if len(label_map) == 2:
        coding["positive_class"] = next(original for original, internal in label_map if internal == 1)
    try:
        source = ingested_source(data, labels=labels, under=under, columns=encoder, coding=coding, progress=progress)
    except UnknownLabelError as exc:
        raise DataError(
            f"the window's label {exc.label!r} is not one of the champion's (version {champion['version']}) classes "
            f"{exc.classes}: nothing was published",
            path=exc.path,
            row=exc.row,
            fix="a model learns the classes of its first version: leave those rows out of the window, or start a "
            "new model name for the new set of classes",
        ) from None
    meta, want = dataset_info(source), int(champion["model"].n_features_in_)
    if meta.get("format") != "libsvm" or int(meta["n_features"]) >= want:
        return source
    return ingested_source(
        data, labels={**labels, "n_features": want}, under=under, columns=encoder, coding=coding, progress=progress
    )


def _window_rows(window: Window) -> DataWindow:
    """The rows a retrain learns from: the window's head, in stored order."""
    return DataWindow(text(window.data), start=window.start, stop=window.split, permute=False)


def _check_window(window: Window, champion) -> None:
    """A window the champion can take: its features, and labels coded as the champion's."""
    if champion is None:
        return
    if window.meta.get("columns") != (None if champion["columns"] is None else champion["columns"].to_dict()):
        raise DataError(
            f"the window's columns were not made by the champion's (version {champion['version']}) column "
            "encoder: nothing was published",
            path=window.data,
            fix="give the window's data file itself (retrain reads it with the champion's encoder)",
        )
    lineage = champion["lineage"]
    want = int(champion["model"].n_features_in_)
    if int(window.meta["n_features"]) != want:
        libsvm = window.meta.get("format") == "libsvm"  # (a narrower LIBSVM window was padded: this one is wider)
        raise DataError(
            f"the window has {window.meta['n_features']} features, the champion (version "
            f"{champion['version']}) {want}: nothing was published",
            path=window.data,
            fix=f"a LIBSVM file is as wide as its largest index, and the champion learnt {want} features (its "
            "first window's, or --n-features): an index beyond them is a feature it never saw; start a new model "
            "whose first retrain names the full width (--n-features N)"
            if libsvm
            else "give a window of the same table (the same columns, in order)",
        )
    known = {json.dumps(original): internal for original, internal in lineage["label_map"]}
    for original, internal in window.label_map:
        if known.get(json.dumps(original)) != internal:
            raise DataError(
                f"the window's label {original!r} (coded {internal}) is not one of the champion's labels "
                f"{[o for o, _ in lineage['label_map']]} with the same coding: nothing was published",
                path=window.data,
                fix="ingest the window with the champion's classes (omkl data ingest --classes ...), or "
                "start a new model name for a new label set",
            )


def _keys(champion, window: Window, setting: dict, holdout: float) -> tuple[str, str]:
    """``(key, window_key)``: the retrain's identity -- the parent and the window key -- and the
    window key alone: the data, the settings and the code."""
    body = {
        "data": window.sha256(),
        "algo": setting["algo"],
        "params": setting["params"],
        "seed": setting["seed"],
        "block_size": setting["block_size"],
        "scaling": setting["scaling"],
        "holdout": holdout,
        "code": code_version(),
    }
    window_key = _digest(body)
    parent = None if champion is None else [champion["version"], champion["meta_sha256"]]
    return _digest({"parent": parent, "window": window_key}), window_key


def _digest(body) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _done_before(store: ModelStore, champion, key: str, window_key: str):
    """The version this very retrain made already: one from the same parent (it was kept, or the
    champion was changed since by hand), or the champion itself when it was made from this window
    (a rerun after its promotion must not train it on its own window again)."""
    found = store.find(key)
    if found is None and champion is not None and champion["lineage"].get("window_key") == window_key:
        found = champion["version"]
    return found


def import_model(store_root, name: str, model_dir, *, promote: bool = True, lock_timeout: float = 30.0) -> dict:
    """Publish a model saved by ``omkl run --model-out``, ``omkl submit --out`` or ``omkl fit
    --model-out`` as a new version of ``name`` (its lineage read from its own metadata), and make it
    the champion if ``promote``. An online model continues its job in a retrain, so it must record
    it; a batch model is refitted with its parameters. Importing the same saved model again returns
    the version it became."""
    store = ModelStore(store_root, name, lock_timeout=lock_timeout)
    store.check_inputs([("saved model", model_dir)])
    saved, meta = load_model(model_dir), read_meta(model_dir)  # every hash checked
    model, scaler, algo = saved.estimator, saved.scaler, _algo_of(meta)
    batch = _kind(algo) == "batch"
    if saved.job is None and not batch:
        raise DataError(
            "the saved model does not record its job (it was not saved by omkl run --model-out or omkl submit)",
            path=model_dir,
            fix="save it with its job (omkl run --model-out / omkl submit, or Model(..., job=Job.to_dict()))",
        )
    if batch and saved.label_map is None:
        raise DataError(
            "the saved model does not record its label map, which a retrain's windows are coded by",
            path=model_dir,
            fix="save it with its labels (omkl fit --model-out, or Model(..., label_map=...))",
        )
    job = (
        None
        if saved.job is None
        else Job.from_dict(saved.job, path=model_dir, fix="save it again (omkl run --model-out / omkl submit)")
    )
    key = _digest(["import", meta["meta_sha256"]])
    found = store.find(key)
    if found is not None:
        return {"model": name, "status": "exists", "version": found, "champion": store.aliases().get(CHAMPION)}
    params = {k: v for k, v in meta["params"].items() if k not in JOB_FIELDS}
    champion = store.aliases().get(CHAMPION)
    lineage = {
        "model": name,
        "key": key,
        "parent": None,
        "imported_from": str(model_dir),
        "window": {  # (a batch fit's rows are not recorded: omkl fit's split of its data)
            "source": None if job is None else job.data.location,
            "rows": None if job is None else [0, int(getattr(model, "n_samples_seen_", 0))],
            "sha256": None,
        },
        "packages": package_versions(),
        "code": code_version(),
        "algo": algo,
        "params": params,
        "seed": params.get("random_state", SEED) if job is None else job.seed,
        "block_size": BLOCK_SIZE if job is None else job.block_size,
        "scaling": scaler.method,
        "label_map": [list(pair) for pair in (saved.label_map if job is None else job.label_map)],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "gate": {
            "metric": "holdout mistake rate",
            "champion": None,
            "challenger": None,
            "promote": promote,
            "decision": "imported" + (" and promoted" if promote else ""),
        },
    }
    staged = store.staging_dir()
    try:
        save_model(
            saved,
            staged / "model",
            lineage=lineage,
            option="the model store's staging folder",
        )
        published = store.publish(
            staged / "model", reason=lineage["gate"]["decision"], promote=promote, expect_champion=champion, key=key
        )
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return {"model": name, "status": "exists" if published["existing"] else "imported", **published}


# ------------------------------------------------------------------------------------------------ steps
def _mistakes(model, scaler, window: Window, lo: int, hi: int) -> np.ndarray:
    """0/1 per row of ``lo:hi``: whether ``model`` (not learning) predicts it wrong."""
    out = []
    for X, y in window.blocks(lo, hi, 16_384, scaler):
        out.append(model.predict(X) != y)
    return np.concatenate(out).astype(np.float64) if out else np.empty(0)


def _watch(champion, window: Window, detector) -> dict:
    """The champion's mistakes over the window and the drift test on them."""
    if champion is None:
        return {
            "mistakes": None,
            "alarms": [],
            "drift": {
                **detector.to_dict(),
                "alarms": [],
                "checked_rows": 0,
                "note": "no champion yet: nothing to watch",
            },
        }
    mistakes = _mistakes(champion["model"], champion["scaler"], window, window.start, window.stop)
    # against the rate the champion showed on its own gate's held-out rows, when it has one
    lineage = champion["lineage"]
    reference = (lineage.get("gate") or {}).get("challenger")
    held = (lineage.get("window") or {}).get("holdout_rows") if reference is not None else None
    reference_rows = held[1] - held[0] if held else None
    alarms = [window.start + int(i) for i in detector.alarms(mistakes, reference, reference_rows)]
    return {
        "mistakes": mistakes,
        "alarms": alarms,
        "drift": {
            **detector.to_dict(),
            "alarms": alarms,
            "checked_rows": len(mistakes),
            "reference": reference,
            "reference_rows": reference_rows,
            "calibrated": detector.calibrate(mistakes, reference, reference_rows),
            "champion_mistake_rate": float(mistakes.mean()),
        },
    }


def _gate(watch, challenger_mistakes: np.ndarray, tolerance: float) -> dict:
    challenger = float(challenger_mistakes.mean())
    if watch["mistakes"] is None:
        return {
            "metric": "holdout mistake rate",
            "champion": None,
            "challenger": challenger,
            "tolerance": tolerance,
            "promote": True,
            "decision": "first version: published and promoted",
        }
    held = len(challenger_mistakes)
    champion = float(watch["mistakes"][-held:].mean())  # the same tail rows
    promote = challenger <= champion + tolerance
    verdict = "promoted" if promote else "kept the champion"
    return {
        "metric": "holdout mistake rate",
        "champion": champion,
        "challenger": challenger,
        "tolerance": tolerance,
        "promote": promote,
        "decision": f"{verdict}: challenger {100 * challenger:.2f} % vs champion {100 * champion:.2f} % "
        f"+ tolerance {100 * tolerance:.2f} pt on {held} held-out rows",
    }


def _train(champion, window: Window, setting: dict, scheduler, show_progress) -> dict:
    if setting["kind"] == "batch":
        return _refit_batch(window, setting, scheduler)
    return _continue(champion, window, setting, scheduler, show_progress)


def _continue(champion, window: Window, setting: dict, scheduler, show_progress) -> dict:
    """The champion learnt further over the window's head (or a first model learnt on it), in
    this process or on the cluster: the same job, the same model bit for bit."""
    start_from = None if champion is None else (champion["model"], champion["scaler"])
    with ProgressBar(f"{setting['algo']} retrain", show=show_progress) as bar:
        if scheduler:
            from omkl_dist.cluster.local import connect
            from omkl_dist.distributed.runner import DaskRunner

            with connect(scheduler) as client:
                result = DaskRunner(client, on_progress=bar).fit(setting["job"], window.data, start_from=start_from)
            where = f"dask {scheduler} ({result.accounting.workers} workers)"
        else:
            result = LocalRunner(on_progress=bar).fit(setting["job"], window.data, start_from=start_from)
            where = "in-process"
    return {
        "job": result.job,
        "model": result.model,
        "scaler": result.scaler,
        "trace": result.trace,
        "metrics": _online_metrics(build_report(result, window.data)),
        "where": where,
        "algo": setting["algo"],
    }


def _online_metrics(summary: dict) -> dict:
    keep = ("n", "mistakes", "mistake_rate", "seconds", "instances_per_second", "n_support")
    return {k: summary[k] for k in keep if k in summary}


def _refit_batch(window: Window, setting: dict, scheduler) -> dict:
    """A batch model fitted on the window's head; MKBoost's per-kernel SVMs as tasks on the cluster
    when there is one (SimpleMKL and Lp-MKL run in this process)."""
    from omkl_dist.algorithms.registry import BATCH_ALGORITHMS

    from .executors import default_threads, executor_for

    X, y = window.read(window.start, window.split)
    scaler = Scaler(setting["scaling"]).fit(X)
    cls = BATCH_ALGORITHMS[setting["algo"]]
    params = dict(setting["params"])
    if "random_state" in cls().get_params():
        params.setdefault("random_state", setting["seed"])
    model = cls(**params)
    tasks = "executor" in cls().get_params()  # (MKBoost's per-kernel SVMs: the same model wherever they run)
    on_cluster = bool(scheduler) and tasks
    threads = default_threads(len(y), model.get_params()["ratio"]) if tasks else 1
    t0 = time.perf_counter()
    with executor_for(scheduler if on_cluster else None, threads) as executor:
        if executor is not None:
            model.set_params(executor=executor)
        model.fit(scaler.transform(X), y)
    if executor is not None:
        model.set_params(executor=None)  # a pool or a cluster's handle, not part of the model
    seconds = time.perf_counter() - t0
    where = (
        f"dask {scheduler} (per-kernel SVMs)"
        if on_cluster
        else "in-process"
        + (f" ({setting['algo']} has no cluster part)" if scheduler else "")
        + (f", {threads} threads" if executor is not None else "")
    )
    return {
        "model": model,
        "scaler": scaler,
        "trace": None,
        "where": where,
        "algo": setting["algo"],
        "metrics": {"n": int(len(y)), "seconds": seconds, "instances_per_second": len(y) / seconds},
    }


def _write_report(store: ModelStore, summary: dict, watch: dict, fit, report_dir, plots: bool, folder: str) -> str:
    from .report import retrain_report, write_report

    target = report_dir if report_dir is not None else store.dir / REPORTS / folder
    document = retrain_report(summary, watch, fit, store)
    return str(write_report(document, target, plots=plots, option="--report-dir"))
