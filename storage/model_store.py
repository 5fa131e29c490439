"""A versioned model store: numbered, immutable model versions, aliases and an event log, in files.

::

    STORE/
      store.json      the store's marker: {"kind": "omkl-model-store", "schema_version": 1}
      <name>/
        store.json    the model's marker: {"kind": "omkl-model-store-model", "schema_version": 1, "name": ...}
        versions/<N>/ a saved model (model.json + state.zarr, :mod:`.models`), never changed again
        refs.json     {"aliases": {"champion": N, ...}, "last_version": N}, replaced atomically
        events.jsonl  one JSON object per line, appended: publish, promote, rollback, alias, cleanup
        staging/      <pid>-<random>/: what a running writer builds; renamed into versions/ whole
        reports/      retrain reports (report.json and plots), one folder per run
        windows/      data files a retrain ingested (one dataset per file content)
        .lock         the writers' lock (fcntl), held only to publish or change an alias

A store is made only in a new or empty folder, its marker written first and exclusively; an
existing folder without the marker is refused (a store made before the markers existed is
recognised by its ``refs.json``/``events.jsonl`` and gets them at its next write). Nothing in a
store is followed through a symbolic link, and ``gc`` deletes only version folders named by the
scheme (``1``, ``2``, ...) that hold exactly a saved model of ours. Every file is checked against
its schema before use: a damaged one is an error naming it.

Version numbers only grow and are never reused (``last_version`` survives a ``gc`` of the newest).
A version is built in ``staging/`` *outside* the lock (training takes minutes) and renamed into
``versions/`` under it, so no reader ever sees half a version; what a killed writer left in
``staging/`` is removed by the next writer. The lock is taken with a timeout; a writer that cannot
get it raises :class:`StoreLocked` (the CLI exits 75, "try again later"). SIGINT and SIGTERM are
held while the store changes (:func:`signals_held`): a signal that arrives before a version is
renamed into place publishes nothing, one that arrives after waits until the publish (and its
promotion) is complete.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from .errors import DataError
from .layout import meta_digest
from .models import MODEL_META, STATE, read_state
from .outputs import MODEL, OutputBusy, Terminated, path_relation, process_alive, real_path, recognise

VERSIONS, STAGING, REPORTS, WINDOWS = "versions", "staging", "reports", "windows"
REFS, EVENTS, LOCK, MARKER = "refs.json", "events.jsonl", ".lock", "store.json"
CHAMPION = "champion"
STORE_KIND, MODEL_KIND, STORE_SCHEMA_VERSION = "omkl-model-store", "omkl-model-store-model", 1
EVENT_KINDS = ("publish", "promote", "alias", "rollback", "cleanup")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_ALIAS = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_VERSION_NAME = re.compile(r"[1-9][0-9]{0,17}")  # a version folder: 1, 2, ... (no sign, no leading zero)
_REF_NUMBER = re.compile(r"v?([0-9]{1,18})")
# what a writer makes in staging/: <pid>-<8 hex> (a version being built), <pid>-gc-<N>-<4 hex> (one being deleted)
_STAGING_NAME = re.compile(r"([0-9]+)-(?:[0-9a-f]+|gc-[0-9]+-[0-9a-f]+)")
_OWN_TEMP = re.compile(r"\.(store|refs)\.json\.tmp-(?P<pid>[0-9]+)-[0-9a-f]+")  # a marker or refs.json being written
_MODEL_ENTRIES = {VERSIONS, STAGING, REPORTS, WINDOWS, REFS, EVENTS, LOCK, MARKER}
_NEVER_LINKS = (VERSIONS, STAGING, REFS, EVENTS, LOCK, MARKER)  # entries a writer opens, appends to or deletes in
_MAX_JSON_BYTES = 64 * 2**20  # refs.json and a marker are tiny; a bigger file is not one of ours
_DAMAGED_FIX = f"restore it from a backup; the aliases' history is in {EVENTS}"


class StoreLocked(OutputBusy):
    """Another writer holds the store's lock for longer than the timeout (exit 75)."""


# ---------------------------------------------------------------------------------------------
# the schemas of the store's files


def _is_count(value: object, least: int = 0) -> bool:
    """An integer >= ``least`` (a bool is not one: ``true`` is no version number)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def refs_problem(doc: object) -> str | None:
    """What is wrong with a ``refs.json`` document, or None when it follows the schema."""
    if not isinstance(doc, dict):
        return "it does not hold a JSON object"
    missing = sorted({"aliases", "last_version"} - set(doc))
    if missing:
        return f"it lacks {', '.join(map(repr, missing))}"
    unknown = sorted(set(doc) - {"aliases", "last_version"})
    if unknown:
        return f"it holds unknown keys {unknown}"
    if not _is_count(doc["last_version"]):
        return f"'last_version' is {doc['last_version']!r}, not an integer >= 0"
    if not isinstance(doc["aliases"], dict):
        return f"'aliases' is {doc['aliases']!r}, not an object of alias: version"
    for alias, version in doc["aliases"].items():
        if not _ALIAS.fullmatch(alias):
            return f"alias {alias!r} is not a valid alias name"
        if not _is_count(version, 1):
            return f"alias {alias!r} points at {version!r}, not a version number (an integer >= 1)"
    return None


def event_problem(doc: object) -> str | None:
    """What is wrong with one ``events.jsonl`` record, or None when it follows the schema."""
    if not isinstance(doc, dict):
        return "it is not a JSON object"
    kind = doc.get("event")
    if kind not in EVENT_KINDS:
        return f"its 'event' is {kind!r}, not one of {', '.join(EVENT_KINDS)}"
    if kind == "cleanup":
        versions = doc.get("versions")
        if not (isinstance(versions, list) and all(_is_count(v, 1) for v in versions)):
            return "a cleanup event needs 'versions', a list of version numbers"
        return None
    if not _is_count(doc.get("version"), 1):
        return f"a {kind} event needs 'version', an integer >= 1 (it has {doc.get('version')!r})"
    if kind == "publish":
        return None
    if not (isinstance(doc.get("alias"), str) and _ALIAS.fullmatch(doc["alias"])):
        return f"a {kind} event needs 'alias', an alias name (it has {doc.get('alias')!r})"
    if doc.get("previous") is not None and not _is_count(doc["previous"], 1):
        return f"its 'previous' is {doc['previous']!r}, not a version number or null"
    return None


def _marker_problem(doc: object, kind: str, name: str | None) -> str | None:
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        return f"its kind is not {kind!r}"
    if not _is_count(doc.get("schema_version"), 1):
        return "its 'schema_version' is not an integer >= 1"
    if doc["schema_version"] > STORE_SCHEMA_VERSION:
        return f"schema version {doc['schema_version']}: a newer omkl-dist made it"
    if name is not None and doc.get("name") != name:
        return f"it names the model {doc.get('name')!r}, not {name!r}"
    return None


def _load_json(path: Path) -> object:
    """A small JSON file's content, or None when it is missing, a link, too big or not JSON."""
    try:
        if path.is_symlink() or path.stat().st_size > _MAX_JSON_BYTES:
            return None
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# signals: a store change is finished or not begun


_held: dict[str, Any] = {"depth": 0, "signal": None}
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _record_signal(signum: int, frame: object) -> None:
    _held["signal"] = signum


def _raise_for(signum: int) -> NoReturn:
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated()


@contextlib.contextmanager
def signals_held(*, deliver: bool = True) -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends (main thread; nests).

    A store change (a publish and its promotion, an alias, a gc) is one step that either happens
    whole or not at all: a signal is recorded, and the code before its point of no return calls
    :func:`interrupt_pending` to give up cleanly. When the outermost hold ends, a signal that
    arrived is raised (KeyboardInterrupt, or :class:`~.outputs.Terminated` for SIGTERM) if
    ``deliver``; with ``deliver=False`` the caller has finished its work and reports the signal
    with :func:`signal_arrived` instead (a command that published a version says so and exits 0).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # (signals reach the main thread only)
        return
    outermost = _held["depth"] == 0
    if outermost:
        _held["signal"] = None
        previous = {s: signal.signal(s, _record_signal) for s in _HELD_SIGNALS}
    _held["depth"] += 1
    try:
        yield
    finally:
        _held["depth"] -= 1
        if outermost:
            for s, handler in previous.items():
                signal.signal(s, signal.SIG_DFL if handler is None else handler)
    if outermost and deliver and _held["signal"] is not None:
        arrived, _held["signal"] = _held["signal"], None
        _raise_for(arrived)


def signal_arrived() -> int | None:
    """The signal that arrived during the current (or the last, undelivered) hold, if any."""
    arrived: int | None = _held["signal"]
    return arrived


def interrupt_pending() -> None:
    """Before a store change's point of no return: raise the signal held so far, if one arrived."""
    if not _held["depth"]:
        return  # (no hold: a signal raised where it arrived)
    arrived, _held["signal"] = _held["signal"], None
    if arrived is not None:
        _raise_for(arrived)


# ---------------------------------------------------------------------------------------------
# recognising a store


def _legacy_model_folder(folder: Path) -> bool:
    """A model folder made before the markers existed: our entries only, and a valid refs.json or
    log (or, before the first publish, the writers' empty lock file)."""
    try:
        names = {e.name for e in os.scandir(folder)}
    except OSError:
        return False
    if not all(n in _MODEL_ENTRIES or _OWN_TEMP.fullmatch(n) for n in names):
        return False
    if REFS in names:
        return refs_problem(_load_json(folder / REFS)) is None
    if EVENTS in names and not (folder / EVENTS).is_symlink():
        with contextlib.suppress(OSError, ValueError), open(folder / EVENTS) as fh:
            return event_problem(json.loads(fh.readline())) is None
        return False
    # a writer stopped before its first publish: only the empty lock file it made (and staging/)
    lock = folder / LOCK
    return lock.is_file() and not lock.is_symlink() and lock.stat().st_size == 0


def _legacy_store_root(folder: Path) -> bool:
    """A store made before the markers existed: model folders only, one at least recognised."""
    entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]
    return (
        bool(entries)
        and all(e.is_dir(follow_symlinks=False) and _NAME.fullmatch(e.name) for e in entries)
        and any(_legacy_model_folder(Path(e.path)) for e in entries)
    )


def _empty_but_ours(folder: Path) -> bool:
    """Nothing in ``folder`` but a marker another writer is making right now."""
    return all(_OWN_TEMP.fullmatch(e.name) for e in os.scandir(folder))


def _write_marker(folder: Path, doc: dict[str, Any]) -> None:
    """Write ``folder/store.json`` exclusively and whole: a complete temporary file hard-linked to
    the name (a second writer's link fails, and it reads the first one's marker)."""
    tmp = folder / f".{MARKER}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    with open(tmp, "x") as fh:
        json.dump(doc, fh, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, folder / MARKER)
    except FileExistsError:
        pass  # another writer marked it first: the caller checks that marker
    finally:
        tmp.unlink()
    fsync_dir(folder)


class ModelStore:
    """The versions, aliases and events of one model ``name`` in the store folder ``root``.

    Parameters
    ----------
    root : path of the store (a folder; created, or claimed when empty, on the first write)
    name : the model's name (letters, digits, ``.``, ``_``, ``-``)
    lock_timeout : seconds a writer waits for the lock before :class:`StoreLocked` (finite, >= 0)

    Examples
    --------
    >>> import tempfile
    >>> store = ModelStore(tempfile.mkdtemp(), "nightly")
    >>> store.versions(), store.aliases()
    ([], {})
    """

    def __init__(self, root: str | os.PathLike[str], name: str, *, lock_timeout: float = 30.0) -> None:
        if "://" in str(root):
            raise DataError(
                "a model store is a local folder (it needs file locks and atomic renames)",
                path=root,
                fix="give a local path; copy versions to object storage with your own tools",
            )
        root = Path(root).expanduser()
        if root.exists() and not root.is_dir():
            raise DataError(
                "the model store path is a file, not a folder",
                path=root,
                fix="give the store's folder (it is created if missing)",
            )
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise DataError(
                f"model name {name!r} is not valid",
                path=root,
                fix="use letters, digits, '.', '_' and '-' (at most 128, starting with a letter or digit)",
            )
        try:
            timeout = math.nan if isinstance(lock_timeout, (bool, str)) else float(lock_timeout)
        except (TypeError, ValueError):
            timeout = math.nan
        if not 0 <= timeout < 1e9:
            raise ValueError(f"lock_timeout must be a finite number of seconds >= 0, got {lock_timeout!r}")
        self.root, self.name, self.lock_timeout = root.absolute(), name, timeout
        self.dir = self.root / name

    # --- reading -----------------------------------------------------------------------------
    def exists(self) -> bool:
        return (self.dir / VERSIONS).is_dir()

    def versions(self) -> list[int]:
        """The version numbers present, ascending; anything else in ``versions/`` is an error naming it."""
        numbers, strangers = self._scan_versions()
        if strangers:
            raise strangers[0]
        return numbers

    def _scan_versions(self) -> tuple[list[int], list[DataError]]:
        """The version folders (by name: 1, 2, ...; real folders, not links) and what else is there."""
        folder = self.dir / VERSIONS
        if folder.is_symlink():
            return [], [_link_error(folder)]
        if not folder.is_dir():
            return [], []
        numbers, strangers = [], []
        for entry in os.scandir(folder):
            if entry.name.startswith("."):
                continue  # (a file manager's hidden files: not ours, never touched)
            if _VERSION_NAME.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                numbers.append(int(entry.name))
                continue
            what = "a symbolic link" if entry.is_symlink() else "a file" if not entry.is_dir() else "a folder"
            strangers.append(
                DataError(
                    f"{what} named {entry.name!r} in {VERSIONS}/ is not a version of omkl-dist (versions are "
                    "folders named 1, 2, 3, ...)",
                    path=entry.path,
                    fix=f"move it out of the store's {VERSIONS}/ folder; the store never reads or deletes it",
                )
            )
        return sorted(numbers), strangers

    def refs(self) -> dict[str, Any]:
        """``refs.json`` checked against its schema: ``{"aliases": {alias: N}, "last_version": N}``."""
        path = self.dir / REFS
        if path.is_symlink():
            raise _link_error(path)
        if not path.exists():
            return {"aliases": {}, "last_version": 0}
        try:
            refs: Any = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            problem: str | None = f"it cannot be read as JSON ({exc})"
            raise DataError(f"{REFS} is damaged: {problem}", path=path, fix=_DAMAGED_FIX) from None
        problem = refs_problem(refs)
        if problem:
            raise DataError(f"{REFS} is damaged: {problem}", path=path, fix=_DAMAGED_FIX)
        return refs  # type: ignore[no-any-return]

    def aliases(self) -> dict[str, int]:
        return dict(self.refs()["aliases"])

    def path(self, version: int) -> Path:
        return self.dir / VERSIONS / str(int(version))

    def resolve(self, ref: str | int) -> int:
        """The version a reference names: an alias (``champion``), a number, or ``v3``."""
        text = str(ref)
        number = _REF_NUMBER.fullmatch(text)
        if number:
            if int(number[1]) not in self.versions():
                raise DataError(
                    f"model {self.name!r} has no version {int(number[1])}",
                    path=self.dir,
                    fix=f"choose one of {self.versions() or 'none (nothing published yet)'}",
                )
            return int(number[1])
        aliases = self.aliases()
        if text not in aliases:
            fix = (
                f"use one of {sorted(aliases) or 'none yet'}, or a version number ({self.versions()}); "
                "`omkl models list` shows them"
                if self.versions()
                else "nothing is published under this name yet: check --store and --model, or publish a "
                "version first (`omkl retrain`, `omkl models import`)"
            )
            raise DataError(f"model {self.name!r} has no alias {text!r}", path=self.dir, fix=fix)
        version = aliases[text]
        if version not in self.versions():
            raise DataError(
                f"alias {text!r} points at version {version}, which is missing",
                path=self.dir / REFS,
                fix="point it at an existing version with `omkl models promote`",
            )
        return version

    def info(self, version: int) -> dict[str, Any]:
        """A version's model.json (its provenance, parameters), checked against its own hash,
        without reading its arrays."""
        path = self.path(version) / MODEL_META
        try:
            info: Any = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(
                f"version {version}'s {MODEL_META} cannot be read ({exc})",
                path=path,
                fix="`omkl models verify` lists damaged versions",
            ) from None
        if not isinstance(info, dict) or info.get("meta_sha256") != meta_digest(info):
            raise DataError(
                f"version {version}'s {MODEL_META} does not match its recorded hash (meta_sha256): it was "
                "edited or damaged after the version was published",
                path=path,
                fix="restore the version from a backup; `omkl models verify` lists damaged versions",
            )
        lineage = (info.get("provenance") or {}).get("lineage", {})
        if not isinstance(lineage, dict):
            raise DataError(
                f"version {version}'s lineage (provenance.lineage) is not a JSON object",
                path=path,
                fix="publish models with omkl retrain or omkl models import",
            )
        return info

    def lineage(self, version: int) -> dict[str, Any]:
        """How a version came to be (model.json's ``provenance.lineage``: its parent, window,
        parameters, gate, code, ...), empty when it has none."""
        lineage: dict[str, Any] = (self.info(version).get("provenance") or {}).get("lineage") or {}
        return lineage

    def events(self) -> list[dict[str, Any]]:
        """``events.jsonl``, every line checked against the schema of its event."""
        path = self.dir / EVENTS
        if path.is_symlink():
            raise _link_error(path)
        if not path.exists():
            return []
        out: list[dict[str, Any]] = []
        try:
            lines = path.read_text().splitlines()
        except UnicodeDecodeError:
            raise DataError(f"{EVENTS} is not UTF-8 text", path=path, fix="restore the log from a backup") from None
        problem: str | None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(lines):
                    continue  # a last line cut short by a crash: the event never happened
                record, problem = None, "it is not JSON"
            else:
                problem = event_problem(record)
            if problem:
                raise DataError(
                    f"line {number} of {EVENTS} is damaged: {problem}",
                    path=path,
                    fix="restore the log from a backup or remove the damaged line",
                )
            out.append(record)
        return out

    def find(self, key: str) -> int | None:
        """The version trained from exactly this retrain ``key`` (parent, data, parameters, code), if any."""
        for version in reversed(self.versions()):
            with contextlib.suppress(DataError):
                if self.lineage(version).get("key") == key:
                    return version
        return None

    def champion_history(self) -> list[int]:
        """Champions in order, replayed from the log: a promotion pushes, a rollback pops."""
        stack: list[int] = []
        for event in self.events():
            if event.get("alias") != CHAMPION:
                continue
            if event["event"] == "rollback" and stack:
                stack.pop()
            elif event["event"] in ("promote", "alias") and (not stack or stack[-1] != event["version"]):
                stack.append(event["version"])  # (promoting the champion again changes nothing)
        return stack

    # --- where a store may be ----------------------------------------------------------------
    def check_inputs(self, inputs: Iterable[tuple[str, str | os.PathLike[str] | None]]) -> None:
        """Refuse a store that is, lies inside or contains one of a command's ``inputs`` ((label,
        path) pairs: the dataset, a model...), or that is (or holds) the home folder -- before any work.
        A window the store ingested itself (``NAME/windows/``) is its own entry, not an input."""
        store = real_path(self.root)
        _refuse_home(self.root, store)
        own_windows = real_path(self.dir / WINDOWS)
        for label, path in inputs:
            if path is None or "://" in str(path) or not os.path.lexists(Path(path).expanduser()):
                continue  # (a name the registry resolves, a URL: nothing a local store could write into)
            other = real_path(path)
            if other == own_windows or own_windows in other.parents:
                continue
            how = path_relation(store, other)
            if how:
                raise DataError(
                    f"--store {how} the {label} ({path}); the store would write into it",
                    path=self.root,
                    fix=f"choose a --store outside the {label} (a new or empty folder)",
                )

    def prepare(self) -> Path:
        """Make (or check) the store's and the model's folders, each with its marker; returns the
        model's folder. A folder that exists and is not a store of ours is refused."""
        _refuse_home(self.root, real_path(self.root))
        self._claim(self.root, STORE_KIND, None, legacy=_legacy_store_root)
        self._claim(self.dir, MODEL_KIND, self.name, legacy=_legacy_model_folder)
        for entry in _NEVER_LINKS:
            if (self.dir / entry).is_symlink():
                raise _link_error(self.dir / entry)
        return self.dir

    def _claim(self, folder: Path, kind: str, name: str | None, *, legacy: Callable[[Path], bool]) -> None:
        """Make ``folder`` (the store, or the model's folder when ``name``) ours: created, or claimed
        when empty, with its marker; accepted when it has a valid marker or is a store from before
        the markers (``legacy``); refused otherwise."""
        if folder.is_symlink() and name is not None:
            raise _link_error(folder)
        if os.path.lexists(folder) and not folder.is_dir():
            what = "a broken symbolic link" if folder.is_symlink() else "a file"
            raise DataError(
                f"{what}, not a folder, where the model store should be",
                path=folder,
                fix="move it away, or choose another --store or model name",
            )
        folder.mkdir(parents=True, exist_ok=True)  # (a racing writer may make it too: the marker decides)
        marker = folder / MARKER
        if not (os.path.lexists(marker) or legacy(folder)):
            if not _empty_but_ours(folder):
                raise DataError(
                    f"the folder exists and is not omkl-dist's model store (it has no {MARKER}); a store "
                    "is made only in a new or empty folder",
                    path=folder,
                    fix="choose a new or empty folder for --store",
                )
            doc = {"kind": kind, "schema_version": STORE_SCHEMA_VERSION}
            _write_marker(folder, doc if name is None else {**doc, "name": name})
        elif not os.path.lexists(marker):
            return  # a store from before the markers: it gets them under the lock (_mark_legacy)
        problem = _marker_problem(_load_json(marker), kind, name)
        if problem:
            raise DataError(
                f"{MARKER} is not omkl-dist's model store marker ({problem})",
                path=marker,
                fix="choose a new or empty folder for --store",
            )

    def _mark_legacy(self) -> None:
        """Give a store made before the markers existed its markers (under the lock)."""
        for folder, doc in (
            (self.root, {"kind": STORE_KIND}),
            (self.dir, {"kind": MODEL_KIND, "name": self.name}),
        ):
            if not os.path.lexists(folder / MARKER):
                _write_marker(folder, {**doc, "schema_version": STORE_SCHEMA_VERSION})

    # --- writing -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, *, create: bool = True) -> Iterator[None]:
        """Hold the store's writer lock (waiting up to ``lock_timeout`` s); sweep dead writers' staging.

        ``create``: make the store if it does not exist yet (a publish); otherwise (promote,
        rollback, gc) a missing model is an error. SIGINT and SIGTERM are held while it is held
        (:func:`signals_held`).
        """
        if not create and not self.dir.is_dir():
            raise DataError(
                f"model {self.name!r} has no versions in this store",
                path=self.root,
                fix="check --store and the name (`omkl models list --store ...` shows the models)",
            )
        self.prepare()
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        deadline = time.monotonic() + self.lock_timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() >= deadline:
                        raise StoreLocked(
                            f"the model store is locked by another writer for more than {self.lock_timeout:g} s",
                            path=self.dir,
                            fix="try again later (exit 75), or raise --lock-timeout",
                        ) from None
                    interrupt_pending()  # (a caller holding signals: Ctrl-C ends the wait)
                    time.sleep(0.05)
            with signals_held():
                self._mark_legacy()
                self._sweep_staging()
                self._repair()
                yield
        finally:
            os.close(fd)  # closing releases the flock

    def staging_dir(self) -> Path:
        """A fresh folder path in ``staging/`` for this process to build a version in (not created)."""
        folder = self.prepare() / STAGING
        folder.mkdir(exist_ok=True)
        return folder / f"{os.getpid()}-{secrets.token_hex(4)}"

    def _sweep_staging(self) -> None:
        """Remove what dead writers left: their folders in ``staging/``, their temporary refs.json
        and markers (only names of our scheme, never through a link)."""
        folder = self.dir / STAGING
        for entry in os.scandir(folder) if folder.is_dir() else ():
            m = _STAGING_NAME.fullmatch(entry.name)
            if m and not entry.is_symlink() and not process_alive(int(m[1])):
                shutil.rmtree(entry.path, ignore_errors=True)
        for entry in [*os.scandir(self.dir), *os.scandir(self.root)]:
            m = _OWN_TEMP.fullmatch(entry.name)
            if m and entry.is_file(follow_symlinks=False) and not process_alive(int(m["pid"])):
                os.unlink(entry.path)

    def _repair(self) -> None:
        """Finish what a writer killed under the lock left: a log line cut short is dropped; a
        version renamed into place but not yet logged (or counted in refs.json) is recorded."""
        log = self.dir / EVENTS
        if log.exists():
            data = log.read_bytes()
            if data and not data.endswith(b"\n"):
                with open(log, "r+b") as fh:
                    fh.truncate(data.rfind(b"\n") + 1)
        logged = {e.get("version") for e in self.events() if e.get("event") == "publish"}
        versions = self.versions()
        for version in versions:
            if version not in logged:
                self._log("publish", version=version, reason="recovered: its writer stopped before logging it")
        refs = self.refs()
        if versions and versions[-1] > refs["last_version"]:
            self._write_refs({**refs, "last_version": versions[-1]})

    def publish(
        self,
        staged: Path,
        *,
        reason: str,
        promote: bool = False,
        expect_champion: int | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Move the complete saved model ``staged`` into the next version number (under the lock).

        ``promote``: make it the champion -- only if the champion is still ``expect_champion`` (the
        one it was gated against); ``key``: if a version with this retrain key appeared meanwhile,
        ``staged`` is dropped and that version returned. Returns ``{"version", "promoted",
        "existing", "champion"}``. One critical section: a signal before the version is renamed
        into place publishes nothing; after it, the publish and the promotion complete first.
        """
        with self.lock():
            if key is not None and (found := self.find(key)) is not None:
                shutil.rmtree(staged, ignore_errors=True)
                return {"version": found, "promoted": False, "existing": True, "champion": self.aliases().get(CHAMPION)}
            refs = self.refs()
            version = max([refs["last_version"], *self.versions()]) + 1
            (self.dir / VERSIONS).mkdir(exist_ok=True)
            interrupt_pending()  # the point of no return is the rename below
            os.rename(staged, self.path(version))
            fsync_dir(self.dir / VERSIONS)
            refs["last_version"] = version
            self._write_refs(refs)
            self._log("publish", version=version, reason=reason)
            current = refs["aliases"].get(CHAMPION)
            promoted = promote and current == expect_champion
            if promoted:
                self._set_alias(refs, CHAMPION, version, event="promote", reason=reason)
            return {
                "version": version,
                "promoted": promoted,
                "existing": False,
                "champion": version if promoted else current,
            }

    def check_alias(self, alias: object) -> None:
        """DataError unless ``alias`` is a name an alias can have."""
        if not isinstance(alias, str) or not _ALIAS.fullmatch(alias):
            raise DataError(
                f"alias {alias!r} is not valid",
                path=self.dir,
                fix="use letters, digits, '_' and '-', starting with a letter",
            )

    def promote(self, ref: str | int, alias: str = CHAMPION, *, reason: str = "by hand") -> dict[str, Any]:
        """Point ``alias`` at version ``ref``; returns ``{"alias", "version", "previous"}``."""
        self.check_alias(alias)
        with self.lock(create=False):
            version = self.resolve(ref)
            refs = self.refs()
            previous = refs["aliases"].get(alias)
            interrupt_pending()
            self._set_alias(refs, alias, version, event="promote" if alias == CHAMPION else "alias", reason=reason)
            return {"alias": alias, "version": version, "previous": previous}

    def rollback(self, *, reason: str = "by hand") -> dict[str, Any]:
        """Make the previous champion (per the log) the champion again; returns ``{"from", "to"}``."""
        with self.lock(create=False):
            history = self.champion_history()
            refs = self.refs()
            current = refs["aliases"].get(CHAMPION)
            if len(history) < 2:
                raise DataError(
                    f"model {self.name!r} has no earlier champion to roll back to (champions so far: "
                    f"{history or 'none'})",
                    path=self.dir,
                    fix="promote a version by number instead (`omkl models promote`)",
                )
            target = history[-2]
            if target not in self.versions():
                raise DataError(
                    f"the previous champion, version {target}, was deleted",
                    path=self.dir,
                    fix=f"promote one of {self.versions()} by number",
                )
            interrupt_pending()
            self._set_alias(refs, CHAMPION, target, event="rollback", reason=reason, previous=current)
            return {"from": current, "to": target}

    def gc(self, keep: int, *, among: Iterable[int] | None = None) -> list[int]:
        """Delete all but the newest ``keep`` versions, never one an alias points at; returns those deleted.

        ``among``: only these versions may go, and the newest ``keep`` of them stay (``omkl serve
        --keep-published`` bounds its own line's versions, never another's). Only version folders
        of ours are deleted (named 1, 2, ..., holding exactly a saved model, no link): anything
        else in ``versions/`` stops the gc before it deletes anything.
        """
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep must be an integer >= 0, got {keep!r}")
        with self.lock(create=False):
            pinned = set(self.aliases().values())
            versions = self.versions()
            if among is not None:
                allowed = set(among)
                versions = [v for v in versions if v in allowed]
            newest = set(versions[-keep:]) if keep else set()
            doomed = [v for v in versions if v not in pinned and v not in newest]
            for version in doomed:
                self._check_own_version(version)
            trash = self.dir / STAGING
            trash.mkdir(exist_ok=True)
            interrupt_pending()
            for version in doomed:
                # renamed out of versions/ first: a reader never meets a half-deleted version
                target = trash / f"{os.getpid()}-gc-{version}-{secrets.token_hex(2)}"
                os.rename(self.path(version), target)
                shutil.rmtree(target, ignore_errors=True)
            if doomed:
                self._log("cleanup", versions=doomed, kept=sorted(pinned | newest))
            return doomed

    def _check_own_version(self, version: int) -> None:
        """Refuse a version folder that holds anything but exactly a saved model of ours."""
        path = self.path(version)
        what = recognise(path, MODEL)
        if what is None and any((path / entry).is_symlink() for entry in (MODEL_META, STATE)):
            what = "a model folder with a symbolic link in it"
        if what is not None:
            raise DataError(
                f"version {version} is {what}; the store deletes only the saved models it wrote, so "
                "nothing was deleted",
                path=path,
                fix=f"move what you keep there out of {VERSIONS}/ (or restore the version from a backup) and run again",
            )

    def verify(self) -> dict[str, Any]:
        """Re-check every version (every array's sha256, model.json's hash, nothing else inside),
        the aliases and the log: every version an alias points at or the log records must exist.

        Returns ``{"versions": {N: "ok" | problem}, "problems": [...]}``; nothing is changed.
        """
        numbers, strangers = self._scan_versions()
        problems = [str(exc) for exc in strangers]
        results: dict[int, str] = {}
        for version in numbers:
            try:
                read_state(self.path(version), memory_limit=2**62)
                self._check_own_version(version)
                results[version] = "ok"
            except DataError as exc:
                results[version] = str(exc)
                problems.append(f"version {version}: {exc}")
        try:
            events = self.events()
            refs = self.refs()
        except DataError as exc:
            return {"versions": results, "problems": [*problems, str(exc)]}
        return {"versions": results, "problems": problems + _log_problems(numbers, refs, events)}

    # --- internals (call under the lock) ------------------------------------------------------
    def _set_alias(
        self, refs: dict[str, Any], alias: str, version: int, *, event: str, reason: str, previous: int | None = None
    ) -> None:
        before = refs["aliases"].get(alias) if previous is None else previous
        refs["aliases"][alias] = version
        self._write_refs(refs)
        self._log(event, alias=alias, version=version, previous=before, reason=reason)

    def _write_refs(self, refs: dict[str, Any]) -> None:
        tmp = self.dir / f".{REFS}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        with open(tmp, "x") as fh:
            json.dump(refs, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.dir / REFS)
        fsync_dir(self.dir)

    def _log(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "pid": os.getpid(), **fields}
        fd = os.open(self.dir / EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        with open(fd, "a") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def _log_problems(numbers: list[int], refs: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """What refs.json and the log say that the version folders ``numbers`` contradict."""
    problems = []
    present = set(numbers)
    for alias, version in refs["aliases"].items():
        if version not in present:
            problems.append(f"alias {alias!r} in {REFS} points at version {version}, which is missing")
    published = [e["version"] for e in events if e["event"] == "publish"]
    if published != sorted(set(published)):
        problems.append(f"the log's published versions are not strictly increasing: {published}")
    cleaned = {v for e in events if e["event"] == "cleanup" for v in e["versions"]}
    for version in sorted(set(published) - present - cleaned):
        problems.append(f"version {version} was published ({EVENTS}) but its folder is missing, with no cleanup event")
    named = {e["version"] for e in events if e["event"] != "cleanup"} - set(published)
    for version in sorted(named):
        problems.append(f"{EVENTS} names version {version}, which it never published")
    for version in numbers:
        if version not in published:
            problems.append(f"version {version} has no publish event in {EVENTS}")
    highest = max([*numbers, *published], default=0)
    if highest > refs["last_version"]:
        problems.append(f"version {highest} is above last_version {refs['last_version']} in {REFS}")
    return problems


def _link_error(path: Path) -> DataError:
    return DataError(
        "a symbolic link inside the model store; the store follows none (it could lead to your own files)",
        path=path,
        fix="replace the link with what the store made there, or restore the store from a backup",
    )


def _refuse_home(root: Path, real: Path) -> None:
    """The home folder (or a folder holding it) is never a store: a store needs a folder of its own."""
    try:
        home = real_path(Path.home())
    except (RuntimeError, KeyError):  # no home folder known
        return
    if real == home or real in home.parents:
        what = "your home folder" if real == home else "a folder that holds your home folder"
        raise DataError(
            f"--store is {what}; a model store needs a folder of its own",
            path=root,
            fix="choose a new folder for --store, e.g. ~/omkl-store",
        )


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (a file renamed into it, or deleted) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
