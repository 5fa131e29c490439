"""The learning core of ``omkl serve --learn``: one writer thread, a write-ahead log, immutable snapshots.

:class:`LearningService` owns one *model line* of a model store: it starts from a published version,
learns the rows it is sent (test then train: each request is answered with the predictions made
before its rows were learnt), and publishes new versions with their lineage. Nothing acknowledged is
lost and nothing is learnt twice:

1. ``learn(X, y)`` validates the rows and labels in the caller's thread (a bad request raises
   ``ValueError`` before anything is logged) and queues them.
2. The one writer thread takes every request waiting (a *group*), logs their rows as one record of
   the write-ahead log (:mod:`.wal`) with the boundaries of the learning calls it will make, and
   ``fsync``\\ s it once for the whole group (group commit).
3. It learns the rows with the estimator's ``progressive_partial_fit``, one call per logged block
   (at most ``max_block`` rows), makes a new :class:`Snapshot` (a copy of the model, which the
   writer never touches again) and only then acknowledges the requests.
4. A publisher thread saves the newest snapshot as a store version every ``publish_rows`` rows or
   ``publish_seconds`` seconds (the store's lock and atomic publish; lineage: the parent version,
   the log's rows and their digest, the line), then deletes the log segments that version holds.

``open`` recovers: the newest version this line published (or ``ref`` on the first start) plus the
log's records after it, learnt again with the logged blocks -- the model of a service that never
stopped, bit for bit (tests/test_serving_learning.py kills a service with SIGKILL to prove it).

Predictions read :meth:`LearningService.snapshot`: an immutable model, replaced whole after each
group, so a request never sees a half-learnt one (copying the model costs far less than learning a
group: see ``stats()["copy_seconds"]``).

The line's identity is ``line.json`` in the log's folder (default ``STORE/NAME/wal/``): the store,
the model name, a random line id and the version the line started from. A version published by the
line records that id in ``lineage.serving.line``, which is how a restart finds where it stands.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omkl_dist._validation import check_array
from omkl_dist.algorithms.labels import recode
from omkl_dist.model import Model
from omkl_dist.persistence import load_model, save_model
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.labels import canonical
from omkl_dist.storage.model_store import CHAMPION, ModelStore

from .wal import Record, WriteAheadLog

LINE_FILE = "line.json"
LINE_KIND = "omkl-serving-line"
WAL_FOLDER = "wal"
MAX_GROUP_ROWS = 65_536
# the parent's lineage fields a version learnt online keeps (what `omkl retrain` reads of a champion)
_INHERITED = ("algo", "params", "seed", "block_size", "scaling", "label_map", "holdout")


@dataclass(frozen=True)
class Snapshot:
    """What predictions read: ``model`` is never changed once a snapshot holds it; ``version`` is the
    store version the state derives from and ``rows_learnt`` the rows learnt on top of it."""

    model: Model
    version: int
    rows_learnt: int


@dataclass(frozen=True)
class LearnAck:
    """The answer to a learn request: each row's ``predictions`` (user labels) and ``scores``
    (decision values, (n,) binary or (n, K)) from the model *before* it learnt the row, the log
    sequence number of the first row (``first_row``), and the ``version`` learnt on top of."""

    predictions: NDArray[Any]
    scores: NDArray[np.float64]
    first_row: int
    version: int


@dataclass
class _Request:
    rows: NDArray[np.float64]
    labels: NDArray[np.int32]
    done: threading.Event = field(default_factory=threading.Event)
    ack: LearnAck | None = None
    error: BaseException | None = None


@dataclass(frozen=True)
class _State:
    """The current snapshot and the line's rows it holds (``end_row``: the next row's number)."""

    snapshot: Snapshot
    end_row: int


class LearningService:
    """The one learner of a model line; build it with :meth:`open`.

    Examples
    --------
    >>> service = LearningService.open(ModelStore("store", "churn"), ref="champion")  # doctest: +SKIP
    >>> ack = service.learn([[0.1, 2.0]], ["stay"])  # doctest: +SKIP
    >>> service.snapshot().model.predict([[0.3, 1.0]])  # doctest: +SKIP
    >>> service.close()  # doctest: +SKIP
    """

    def __init__(
        self,
        store: ModelStore,
        wal: WriteAheadLog,
        line: dict[str, Any],
        model: Model,
        *,
        version: int,
        end_row: int,
        publish_rows: int | None,
        publish_seconds: float | None,
        max_block: int,
        alias: str | None,
        keep_published: int | None,
        line_versions: list[int],
    ) -> None:
        self.store, self.line, self.alias, self.keep_published = store, line, alias, keep_published
        self._line_versions = line_versions  # the versions this line published, oldest first
        self.publish_rows, self.publish_seconds, self.max_block = publish_rows, publish_seconds, max_block
        self._wal, self._model = wal, model
        self._classes = model.estimator.classes_  # the estimator's own labels, in Model.classes_ order
        self._lock = threading.Lock()  # guards the state, the queue and the counters below
        self._queue: list[_Request] = []
        self._wake_writer = threading.Condition(self._lock)
        self._wake_publisher = threading.Condition(threading.Lock())
        self._publishing = threading.Lock()  # one publish at a time
        self._published_version, self._published_end = version, end_row
        self._digests: list[tuple[int, bytes]] = []  # (end row, record digest) of rows not yet published
        self._state = _State(Snapshot(self._copy(), version, 0), end_row)
        self._closing = self._stopped = False
        self._failed: BaseException | None = None
        self._publish_due = False
        self._last_publish = time.monotonic()
        self.counters: dict[str, Any] = {
            "rows": 0,
            "mistakes": 0,
            "replayed_rows": 0,
            "requests": 0,
            "groups": 0,
            "group_rows_max": 0,
            "group_requests_max": 0,
            "learn_seconds": 0.0,
            "copy_seconds": 0.0,
            "published": 0,
            "publish_error": None,
            "deleted_versions": 0,
            "gc_error": None,
        }
        self._writer = threading.Thread(target=self._write_loop, name="omkl-learning-writer", daemon=True)
        self._publisher = threading.Thread(target=self._publish_loop, name="omkl-learning-publisher", daemon=True)

    # --- opening -------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        store: ModelStore,
        *,
        ref: str | int = "champion",
        wal_dir: str | os.PathLike[str] | None = None,
        publish_rows: int | None = 10_000,
        publish_seconds: float | None = 60.0,
        max_block: int | None = None,
        alias: str | None = None,
        keep_published: int | None = None,
        segment_bytes: int | None = None,
    ) -> LearningService:
        """Recover the line and start learning.

        The model is the newest version this line published (``ref`` on its first start: an alias
        or a version number) plus the write-ahead log's rows after it, learnt again with the
        logged blocks. ``wal_dir`` (default ``STORE/NAME/wal``) is locked: a second service on it
        gets :class:`~.wal.LogBusy`. ``publish_rows``/``publish_seconds``: publish a version once
        that many rows are new, or that many seconds after the last publish (None: never by
        itself; :meth:`publish` and :meth:`close` still do). ``max_block``: rows per learning call
        (default: the estimator's ``feed_rows()``, a round). ``alias``: point this alias at every
        version published (e.g. for another server's ``--follow``); never the champion, which only
        a gate (``omkl retrain``) or ``omkl models promote`` moves. ``keep_published``: after each
        publish, delete this line's versions but its newest ``keep_published`` (never one an alias
        points at, never a version of another line or the one the line started from); None keeps
        every version.
        """
        _check_count("publish_rows", publish_rows)
        _check_count("max_block", max_block)
        _check_count("keep_published", keep_published)
        if alias is not None:
            store.check_alias(alias)
            if alias == CHAMPION:
                raise ValueError(
                    "alias: a learning line does not move the champion (its versions are not gated); "
                    "name another alias (e.g. online) and promote a version by hand or through omkl retrain"
                )
        if publish_seconds is not None and not (isinstance(publish_seconds, (int, float)) and publish_seconds > 0):
            raise ValueError(f"publish_seconds must be a number of seconds > 0 or None, got {publish_seconds!r}")
        folder = Path(wal_dir) if wal_dir is not None else store.dir / WAL_FOLDER
        if not (folder / LINE_FILE).exists():  # a new line: refused before its log is made
            _refuse_batch(store, store.resolve(ref))
        options = {} if segment_bytes is None else {"segment_bytes": segment_bytes}
        wal = WriteAheadLog.open(folder, **options)
        try:
            line = _line(folder, store, ref)
            published = _published_by_line(store, line)
            version, end_row = published[-1] if published else (_base_version(store, line), 0)
            model = load_model(store.path(version))
            if wal.n_features is not None and wal.n_features != model.estimator.n_features_in_:
                raise DataError(
                    f"the write-ahead log holds rows of {wal.n_features} features, version {version} of the "
                    f"model takes {model.estimator.n_features_in_}",
                    path=folder,
                    fix="give this model line its own --wal-dir",
                )
            if not wal.segments:
                wal.start_at(end_row)
            block = max_block or model.estimator.feed_rows()
            service = cls(
                store,
                wal,
                line,
                model,
                version=version,
                end_row=end_row,
                publish_rows=publish_rows,
                publish_seconds=publish_seconds,
                max_block=block,
                alias=alias,
                keep_published=keep_published,
                line_versions=[v for v, _ in published],
            )
            service._replay(end_row)
        except BaseException:
            wal.close()
            raise
        service._writer.start()
        service._publisher.start()
        return service

    def _replay(self, start_row: int) -> None:
        """Learn the log's records from ``start_row`` on, with their logged blocks."""
        end = start_row
        for record in self._wal.records(start_row):
            self._learn_record(record)
            end = record.end_row
            self.counters["replayed_rows"] += len(record.labels)
        if end != self._wal.next_row:
            raise DataError(
                f"the write-ahead log ends at row {self._wal.next_row}, its records after row {start_row} at {end}",
                path=self._wal.directory,
                fix="the log lost acknowledged rows: restore it from a backup",
            )
        self._state = _State(Snapshot(self._copy(), self._published_version, end - self._published_end), end)

    # --- the public interface ------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The current immutable snapshot (cheap: no copy, no lock)."""
        return self._state.snapshot

    def learn(self, X, y) -> LearnAck:
        """Learn rows ``X`` (raw, as :meth:`Model.predict` takes them) with the user's labels ``y``;
        returns once they are in the log (fsync'd) and learnt. Thread-safe.

        Raises ValueError (one line: the problem and the fix) for rows or labels the model cannot
        take, before anything is logged; RuntimeError once the service is closed or has failed.
        """
        request = self._validated(X, y)
        with self._lock:
            self._check_running()
            self._queue.append(request)
            self._wake_writer.notify()
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.ack is not None
        return request.ack

    def publish(self) -> int | None:
        """Publish the current snapshot now as a new version (None: nothing new since the last one)."""
        return self._publish_latest()

    def stats(self) -> dict[str, Any]:
        """Counters for ``/metrics`` and ``/v1/model``: ``rows`` and ``mistakes`` learnt since the
        service opened (the replay included; ``mistake_rate`` their ratio), the snapshot's
        ``version`` and ``rows_learnt`` on top of it, ``line_rows`` (the log's next row number),
        ``support_vectors`` (per kernel, summed), the log's ``log_bytes``, ``fsyncs`` and
        ``fsync_seconds``, the groups (``groups``, ``group_rows_max``, ``group_requests_max``),
        ``copy_seconds`` (snapshots) and ``learn_seconds``, ``published`` versions, ``deleted_versions``
        (``keep_published``), the last ``publish_error`` and ``gc_error`` (None once one succeeds)."""
        state = self._state
        with self._lock:
            out = dict(self.counters)
        estimator = state.snapshot.model.estimator
        out.update(
            version=state.snapshot.version,
            rows_learnt=state.snapshot.rows_learnt,
            line_rows=state.end_row,
            mistake_rate=out["mistakes"] / out["rows"] if out["rows"] else None,
            support_vectors=int(np.sum(estimator.n_support_)),
            log_bytes=self._wal.size_bytes,
            log_segments=len(self._wal.segments),
            fsyncs=self._wal.fsyncs,
            fsync_seconds=self._wal.fsync_seconds,
            truncated_bytes=self._wal.truncated_bytes,
        )
        return out

    def close(self, *, publish: bool = True) -> None:
        """Finish the queued requests, stop the writer, publish the rows not yet published (when
        ``publish``), and release the log. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._closing = True
            self._wake_writer.notify()
        self._writer.join()
        try:
            if publish and self._failed is None:
                self._publish_latest()
        finally:
            with self._wake_publisher:
                self._stopped = True
                self._wake_publisher.notify()
            self._publisher.join()
            self._wal.close()

    def __enter__(self) -> LearningService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- validation (in the caller's thread) ---------------------------------------------------
    def _validated(self, X, y) -> _Request:
        model = self._state.snapshot.model  # (immutable: read outside the writer's lock)
        width = model.estimator.n_features_in_
        if model.columns is None and getattr(X, "columns", None) is None:
            X = check_array(X, owner="learn", name="rows", n_features=width, sparse="densify")
        try:
            rows = model.transform(X)
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"learn: the rows cannot be read as the model's features ({exc})") from None
        rows = check_array(rows, owner="learn", name="rows", n_features=width, sparse="densify")
        labels = np.asarray(y)
        if labels.ndim != 1 or len(labels) != len(rows):
            raise ValueError(
                f"learn: {labels.size} label(s) of shape {labels.shape} for {len(rows)} row(s); send one label per row"
            )
        return _Request(np.array(rows, dtype=np.float64, order="C"), _class_indices(labels, model.classes_))

    def _check_running(self) -> None:
        if self._failed is not None:
            raise RuntimeError(
                f"the learning service stopped after an error ({self._failed}); restart it: it recovers from "
                "the write-ahead log"
            )
        if self._closing:
            raise RuntimeError("the learning service is closed; open it again to learn")

    # --- the writer ----------------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._wake_writer.wait()
                if not self._queue:
                    return
                group, rows = [], 0
                while self._queue and (not group or rows + len(self._queue[0].labels) <= MAX_GROUP_ROWS):
                    group.append(self._queue.pop(0))
                    rows += len(group[-1].labels)
                if self._failed is not None:
                    self._fail(group, None)
                    continue
            self._learn_group(group)

    def _learn_group(self, group: list[_Request]) -> None:
        rows = np.concatenate([r.rows for r in group])
        labels = np.concatenate([r.labels for r in group])
        blocks = [min(self.max_block, len(labels) - lo) for lo in range(0, len(labels), self.max_block)]
        try:
            record = self._wal.append(rows, labels, blocks)
            self._wal.commit()
        except BaseException as exc:
            self._fail(group, exc, "the write-ahead log could not be written: nothing was acknowledged")
            return
        try:
            t0 = time.perf_counter()
            scores, mistakes = self._learn_record(record)
            self.counters["learn_seconds"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            estimator = self._copy()
            self.counters["copy_seconds"] += time.perf_counter() - t0
        except BaseException as exc:
            self._fail(group, exc, "the rows were logged but not learnt: restart the service to learn them")
            return
        with self._lock:
            version, base = self._published_version, self._published_end
            self._state = _State(Snapshot(estimator, version, record.end_row - base), record.end_row)
            self.counters["requests"] += len(group)
            self.counters["groups"] += 1
            self.counters["group_rows_max"] = max(self.counters["group_rows_max"], len(labels))
            self.counters["group_requests_max"] = max(self.counters["group_requests_max"], len(group))
            due = self.publish_rows is not None and record.end_row - base >= self.publish_rows
        if due:
            with self._wake_publisher:
                self._publish_due = True
                self._wake_publisher.notify()
        classes = self._model.classes_
        lo = 0
        for request in group:
            n = len(request.labels)
            part = scores[lo : lo + n]
            picked = np.argmax(part, axis=1) if part.ndim == 2 else (part >= 0.0).astype(np.intp)
            request.ack = LearnAck(classes[picked], part, record.first_row + lo, version)
            lo += n
            request.done.set()

    def _learn_record(self, record: Record) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Learn a record's calls in order; the decision values and mistakes of its rows before learning."""
        estimator = self._model.estimator
        scores, mistakes = [], []
        for rows, labels in record.calls():
            outcome = estimator.progressive_partial_fit(rows, self._classes[labels])
            score = outcome["score"]
            if score.ndim == 2 and score.shape[1] == 2:  # a multi-class model of two classes: as decision_function
                score = score[:, 1] - score[:, 0]
            scores.append(score)
            mistakes.append(outcome["mistakes"])
        with self._lock:
            self._digests.append((record.end_row, record.digest()))
            self.counters["rows"] += len(record.labels)
            self.counters["mistakes"] += int(sum(int(m.sum()) for m in mistakes))
        return np.concatenate(scores), np.concatenate(mistakes)

    def _copy(self) -> Model:
        """The snapshot of the writer's model: its estimator copied, the rest (never changed) shared."""
        m = self._model
        return Model(
            copy.deepcopy(m.estimator),
            scaler=m.scaler,
            columns=m.columns,
            label_map=m.label_map,
            feature_names=m.feature_names,
            job=m.job,
            label_name=m.label_name,
        )

    def _fail(self, group: list[_Request], exc: BaseException | None, what: str = "") -> None:
        """Answer ``group`` with an error; after a log or learning error the service stops learning
        (the model and the log may disagree until a restart replays the log)."""
        if exc is not None:
            with self._lock:
                self._failed = exc
        error = RuntimeError(f"{what} ({type(exc).__name__}: {exc})" if exc is not None else str(self._failed))
        for request in group:
            request.error = error
            request.done.set()

    # --- publishing ----------------------------------------------------------------------------
    def _publish_loop(self) -> None:
        while True:
            with self._wake_publisher:
                while not (self._stopped or self._publish_due or self._time_due()):
                    wait = None
                    if self.publish_seconds is not None:
                        wait = max(0.0, self._last_publish + self.publish_seconds - time.monotonic())
                    self._wake_publisher.wait(wait)
                if self._stopped:
                    return
                self._publish_due = False
            try:
                self._publish_latest()
            except Exception as exc:  # noqa: BLE001 - a failed publish is retried; the log keeps the rows
                with self._lock:
                    self.counters["publish_error"] = f"{type(exc).__name__}: {exc}"
            self._last_publish = time.monotonic()

    def _time_due(self) -> bool:
        return self.publish_seconds is not None and time.monotonic() >= self._last_publish + self.publish_seconds

    def _publish_latest(self) -> int | None:
        with self._publishing:
            state = self._state
            with self._lock:
                parent, first = self._published_version, self._published_end
                digests = [d for end, d in self._digests if end <= state.end_row]
            if state.end_row <= first:
                return None
            version = self._publish_state(state, parent, first, hashlib.sha256(b"".join(digests)).hexdigest())
            with self._lock:
                self._published_version, self._published_end = version, state.end_row
                self._digests = [(end, d) for end, d in self._digests if end > state.end_row]
                current = self._state
                rebased = Snapshot(current.snapshot.model, version, current.end_row - state.end_row)
                self._state = _State(rebased, current.end_row)
                self.counters["published"] += 1
                self.counters["publish_error"] = None
                self._wal.drop_before(state.end_row)
            self._line_versions.append(version)
            self._delete_old_versions()
            return version

    def _delete_old_versions(self) -> None:
        """``keep_published``: the line's older versions go (a failure is counted, the publish stands)."""
        if self.keep_published is None:
            return
        try:
            deleted = set(self.store.gc(self.keep_published, among=self._line_versions))
        except Exception as exc:  # noqa: BLE001 - a version left behind is retried at the next publish
            with self._lock:
                self.counters["gc_error"] = f"{type(exc).__name__}: {exc}"
            return
        self._line_versions = [v for v in self._line_versions if v not in deleted]
        with self._lock:
            self.counters["deleted_versions"] += len(deleted)
            self.counters["gc_error"] = None

    def _publish_state(self, state: _State, parent: int, first: int, digest: str) -> int:
        """Save ``state``'s model as a store version with its lineage; its number."""
        end, line = state.end_row, self.line["line"]
        inherited = self.store.lineage(parent)
        lineage = {
            **{key: inherited[key] for key in _INHERITED if key in inherited},
            "model": self.store.name,
            "key": hashlib.sha256(json.dumps(["serve", line, first, end]).encode()).hexdigest(),
            "parent": parent,
            "window": {
                "source": f"omkl serve write-ahead log {self._wal.directory}",
                "rows": [first, end],
                "sha256": digest,
            },
            "serving": {
                "line": line,
                "wal_dir": str(self._wal.directory),
                "first_row": first,
                "last_row": end - 1,
                "end_row": end,
                "rows_learnt": end - first,
                "sha256": digest,
            },
            "gate": {
                "metric": "holdout mistake rate",
                "champion": None,
                "challenger": None,
                "promote": False,
                "decision": "learnt online by omkl serve (not gated; the champion is not moved)",
            },
            "code": {"omkl-dist": metadata.version("omkl-dist")},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        staged = self.store.staging_dir()
        try:
            save_model(
                state.snapshot.model, staged / "model", lineage=lineage, option="the model store's staging folder"
            )
            published = self.store.publish(
                staged / "model", reason=f"omkl serve: rows {first}..{end - 1} of line {line}", key=lineage["key"]
            )
        finally:
            shutil.rmtree(staged, ignore_errors=True)
        version = int(published["version"])
        if self.alias is not None:
            self.store.promote(version, self.alias, reason=f"omkl serve line {line}")
        return version


# --- the line, and where it stands ---------------------------------------------------------------
def _line(folder: Path, store: ModelStore, ref: str | int) -> dict[str, Any]:
    """The line's identity from ``line.json`` (written on its first start, under the log's lock)."""
    path = folder / LINE_FILE
    if path.exists():
        try:
            line = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"{LINE_FILE} cannot be read ({exc})", path=path, fix="restore it from a backup") from None
        ok = isinstance(line, dict) and line.get("kind") == LINE_KIND and isinstance(line.get("line"), str)
        if not ok or not isinstance(line.get("base_version"), int) or isinstance(line.get("base_version"), bool):
            raise DataError(f"{LINE_FILE} is not a learning line's record", path=path, fix="restore it from a backup")
        if line.get("store") != str(store.root) or line.get("model") != store.name:
            raise DataError(
                f"this write-ahead log belongs to model {line.get('model')!r} of store {line.get('store')}",
                path=folder,
                fix="give this model its own --wal-dir",
            )
        return line
    line = {
        "kind": LINE_KIND,
        "schema_version": 1,
        "store": str(store.root),
        "model": store.name,
        "line": secrets.token_hex(8),
        "base_version": store.resolve(ref),
    }
    tmp = folder / f".{LINE_FILE}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(line, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return line


def _published_by_line(store: ModelStore, line: dict[str, Any]) -> list[tuple[int, int]]:
    """``(version, end_row)`` of every version the line published, oldest first."""
    published = []
    for version in store.versions():
        serving = store.lineage(version).get("serving") or {}
        if serving.get("line") == line["line"]:
            published.append((version, int(serving["end_row"])))
    return published


def _refuse_batch(store: ModelStore, version: int) -> None:
    """A batch model (MKBoost, the MKL estimators, the tuned SVC) learns a training set at once, not
    rows as they come: a learning line cannot start from one."""
    from omkl_dist.algorithms.registry import BATCH_ALGORITHMS

    algorithm = store.info(version)["algorithm"]
    if algorithm in {cls.__name__ for cls in BATCH_ALGORITHMS.values()}:
        raise ValueError(
            f"--learn: version {version} of {store.name!r} is a batch model ({algorithm}): it learns a training "
            "set at once, not rows as they come; serve it to predict (--follow champion) and refit it on new "
            "data with omkl retrain"
        )


def _base_version(store: ModelStore, line: dict[str, Any]) -> int:
    """The version the line started from (it published none yet)."""
    base = int(line["base_version"])
    if base not in store.versions():
        raise DataError(
            f"version {base}, where this learning line started, is no longer in the store, and the line "
            "published no version since",
            path=store.dir,
            fix="move the write-ahead log folder away to start a new line from another version",
        )
    return base


def _class_indices(labels: NDArray[Any], classes: NDArray[Any]) -> NDArray[np.int32]:
    """Each label's index in ``classes`` (the model's user labels); ValueError naming an unknown one."""
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError("learn: a label is NaN or inf; send one of the model's classes for every row")
    if all(isinstance(c, str) for c in classes.tolist()) and labels.dtype.kind != "U":
        labels = np.array([canonical(v) for v in labels.tolist()], dtype=str)  # 1 for the stored label "1"
    elif classes.dtype.kind in "iuf" and labels.dtype.kind in "UO":
        try:
            labels = labels.astype(classes.dtype)
        except (ValueError, TypeError):
            pass
    try:
        return recode(labels, classes, np.arange(len(classes), dtype=np.int32)).astype(np.int32)
    except (ValueError, TypeError):
        known = np.array([any(v == c for c in classes.tolist()) for v in labels.tolist()])
        bad = labels[~known][0] if not known.all() else labels[0]
        bad = bad.item() if isinstance(bad, np.generic) else bad
        raise ValueError(
            f"learn: label {bad!r} is not one of the model's classes {classes.tolist()}; send one of them "
            "(a model cannot learn a new class: train a new one)"
        ) from None


def _check_count(name: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a whole number >= 1 or None, got {value!r}")
