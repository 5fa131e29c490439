"""A versioned model store: numbered, immutable model versions, aliases and an event log, in files.

::

    STORE/<name>/
      versions/<N>/   a saved model (model.json + state.zarr, :mod:`.models`), never changed again
      refs.json       {"aliases": {"champion": N, ...}, "last_version": N}, replaced atomically
      events.jsonl    one JSON object per line, appended: publish, promote, rollback, alias, cleanup
      staging/        <pid>-<random>/: what a running writer builds; renamed into versions/ whole
      reports/        retrain reports (report.json and plots), one folder per run
      .lock           the writers' lock (fcntl), held only to publish or change an alias

Version numbers only grow and are never reused (``last_version`` survives a ``gc`` of the newest).
A version is built in ``staging/`` *outside* the lock (training takes minutes) and renamed into
``versions/`` under it, so no reader ever sees half a version; what a killed writer left in
``staging/`` is removed by the next writer. The lock is taken with a timeout; a writer that cannot
get it raises :class:`StoreLocked` (the CLI exits 75, "try again later").
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import DataError
from .models import MODEL_META, read_state
from .outputs import OutputBusy, process_alive

VERSIONS, STAGING, REPORTS = "versions", "staging", "reports"
REFS, EVENTS, LOCK = "refs.json", "events.jsonl", ".lock"
CHAMPION = "champion"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_ALIAS = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


class StoreLocked(OutputBusy):
    """Another writer holds the store's lock for longer than the timeout (exit 75)."""


class ModelStore:
    """The versions, aliases and events of one model ``name`` in the store folder ``root``.

    Parameters
    ----------
    root : path of the store (a folder; created on the first write)
    name : the model's name (letters, digits, ``.``, ``_``, ``-``)
    lock_timeout : seconds a writer waits for the lock before :class:`StoreLocked`

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
        self.root, self.name, self.lock_timeout = root.absolute(), name, float(lock_timeout)
        self.dir = self.root / name

    # --- reading -----------------------------------------------------------------------------
    def exists(self) -> bool:
        return (self.dir / VERSIONS).is_dir()

    def versions(self) -> list[int]:
        """The version numbers present, ascending."""
        folder = self.dir / VERSIONS
        if not folder.is_dir():
            return []
        return sorted(int(e.name) for e in os.scandir(folder) if e.name.isdigit() and e.is_dir())

    def refs(self) -> dict[str, Any]:
        path = self.dir / REFS
        if not path.exists():
            return {"aliases": {}, "last_version": 0}
        try:
            refs: dict[str, Any] = json.loads(path.read_text())
            ok = (
                isinstance(refs.get("aliases"), dict)
                and isinstance(refs.get("last_version"), int)
                and all(isinstance(v, int) for v in refs["aliases"].values())
            )
        except (OSError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise DataError(
                f"{REFS} is damaged (it must hold 'aliases' and 'last_version')",
                path=path,
                fix=f"restore it from a backup; the aliases' history is in {EVENTS}",
            )
        return refs

    def aliases(self) -> dict[str, int]:
        return dict(self.refs()["aliases"])

    def path(self, version: int) -> Path:
        return self.dir / VERSIONS / str(int(version))

    def resolve(self, ref: str | int) -> int:
        """The version a reference names: an alias (``champion``), a number, or ``v3``."""
        text = str(ref)
        number = text[1:] if text[:1] == "v" and text[1:].isdigit() else text
        if number.isdigit():
            if int(number) not in self.versions():
                raise DataError(
                    f"model {self.name!r} has no version {number}",
                    path=self.dir,
                    fix=f"choose one of {self.versions() or 'none (nothing published yet)'}",
                )
            return int(number)
        aliases = self.aliases()
        if text not in aliases:
            raise DataError(
                f"model {self.name!r} has no alias {text!r}",
                path=self.dir,
                fix=f"use one of {sorted(aliases) or 'none yet'}, or a version number "
                f"({self.versions() or 'none published'}); `omkl models list` shows them",
            )
        version = aliases[text]
        if version not in self.versions():
            raise DataError(
                f"alias {text!r} points at version {version}, which is missing",
                path=self.dir,
                fix="point it at an existing version with `omkl models promote`",
            )
        return version

    def info(self, version: int) -> dict[str, Any]:
        """A version's model.json (its lineage, metrics, parameters), without reading its arrays."""
        path = self.path(version) / MODEL_META
        try:
            info: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(
                f"version {version}'s {MODEL_META} cannot be read ({exc})",
                path=path,
                fix="`omkl models verify` lists damaged versions",
            ) from None
        return info

    def events(self) -> list[dict[str, Any]]:
        path = self.dir / EVENTS
        if not path.exists():
            return []
        out: list[dict[str, Any]] = []
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                if number == len(lines):
                    continue  # a last line cut short by a crash: the event never happened
                raise DataError(
                    f"line {number} of {EVENTS} is not JSON",
                    path=path,
                    fix="restore the log from a backup or remove the damaged line",
                ) from None
        return out

    def find(self, key: str) -> int | None:
        """The version trained from exactly this retrain ``key`` (parent, data, parameters, code), if any."""
        for version in reversed(self.versions()):
            with contextlib.suppress(DataError):
                if self.info(version).get("lineage", {}).get("key") == key:
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
            elif event["event"] in ("promote", "alias") and (not stack or stack[-1] != int(event["version"])):
                stack.append(int(event["version"]))  # (promoting the champion again changes nothing)
        return stack

    # --- writing -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store's writer lock (waiting up to ``lock_timeout`` s); sweep dead writers' staging."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
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
                    time.sleep(0.05)
            self._sweep_staging()
            self._repair()
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def staging_dir(self) -> Path:
        """A fresh folder path in ``staging/`` for this process to build a version in (not created)."""
        folder = self.dir / STAGING
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{os.getpid()}-{secrets.token_hex(4)}"

    def _sweep_staging(self) -> None:
        folder = self.dir / STAGING
        if not folder.is_dir():
            return
        for entry in os.scandir(folder):
            pid = entry.name.split("-", 1)[0]
            if pid.isdigit() and not process_alive(int(pid)):
                shutil.rmtree(entry.path, ignore_errors=True)

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
        "existing", "champion"}``.
        """
        with self.lock():
            if key is not None and (found := self.find(key)) is not None:
                shutil.rmtree(staged, ignore_errors=True)
                return {"version": found, "promoted": False, "existing": True, "champion": self.aliases().get(CHAMPION)}
            refs = self.refs()
            version = max([refs["last_version"], *self.versions()]) + 1
            (self.dir / VERSIONS).mkdir(exist_ok=True)
            os.rename(staged, self.path(version))
            _fsync_dir(self.dir / VERSIONS)
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

    def promote(self, ref: str | int, alias: str = CHAMPION, *, reason: str = "by hand") -> dict[str, Any]:
        """Point ``alias`` at version ``ref``; returns ``{"alias", "version", "previous"}``."""
        if not _ALIAS.fullmatch(alias):
            raise DataError(
                f"alias {alias!r} is not valid",
                path=self.dir,
                fix="use letters, digits, '_' and '-', starting with a letter",
            )
        with self.lock():
            version = self.resolve(ref)
            refs = self.refs()
            previous = refs["aliases"].get(alias)
            self._set_alias(refs, alias, version, event="promote" if alias == CHAMPION else "alias", reason=reason)
            return {"alias": alias, "version": version, "previous": previous}

    def rollback(self, *, reason: str = "by hand") -> dict[str, Any]:
        """Make the previous champion (per the log) the champion again; returns ``{"from", "to"}``."""
        with self.lock():
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
            self._set_alias(refs, CHAMPION, target, event="rollback", reason=reason, previous=current)
            return {"from": current, "to": target}

    def gc(self, keep: int) -> list[int]:
        """Delete all but the newest ``keep`` versions, never one an alias points at; returns those deleted."""
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        with self.lock():
            pinned = set(self.aliases().values())
            versions = self.versions()
            newest = set(versions[-keep:]) if keep else set()
            doomed = [v for v in versions if v not in pinned and v not in newest]
            trash = self.dir / STAGING
            trash.mkdir(exist_ok=True)
            for version in doomed:
                # renamed out of versions/ first: a reader never meets a half-deleted version
                target = trash / f"{os.getpid()}-gc-{version}-{secrets.token_hex(2)}"
                os.rename(self.path(version), target)
                shutil.rmtree(target, ignore_errors=True)
            if doomed:
                self._log("cleanup", versions=doomed, kept=sorted(pinned | newest))
            return doomed

    def verify(self) -> dict[str, Any]:
        """Re-check every version (every array's sha256, model.json's hash), the aliases and the log.

        Returns ``{"versions": {N: "ok" | problem}, "problems": [...]}``; nothing is changed.
        """
        problems: list[str] = []
        results: dict[int, str] = {}
        for version in self.versions():
            try:
                read_state(self.path(version), memory_limit=2**62)
                results[version] = "ok"
            except DataError as exc:
                results[version] = str(exc)
                problems.append(f"version {version}: {exc}")
        try:
            events = self.events()
            refs = self.refs()
        except DataError as exc:
            return {"versions": results, "problems": [*problems, str(exc)]}
        for alias, version in refs["aliases"].items():
            if version not in results:
                problems.append(f"alias {alias!r} points at version {version}, which is missing")
        published = [e["version"] for e in events if e.get("event") == "publish"]
        if published != sorted(set(published)):
            problems.append(f"the log's published versions are not strictly increasing: {published}")
        for version in results:
            if version not in published:
                problems.append(f"version {version} has no publish event in {EVENTS}")
            if version > refs["last_version"]:
                problems.append(f"version {version} is above last_version {refs['last_version']} in {REFS}")
        return {"versions": results, "problems": problems}

    # --- internals (call under the lock) ------------------------------------------------------
    def _set_alias(
        self, refs: dict[str, Any], alias: str, version: int, *, event: str, reason: str, previous: int | None = None
    ) -> None:
        before = refs["aliases"].get(alias) if previous is None else previous
        refs["aliases"][alias] = version
        self._write_refs(refs)
        self._log(event, alias=alias, version=version, previous=before, reason=reason)

    def _write_refs(self, refs: dict[str, Any]) -> None:
        tmp = self.dir / f".{REFS}.tmp-{os.getpid()}"
        with open(tmp, "w") as fh:
            json.dump(refs, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.dir / REFS)
        _fsync_dir(self.dir)

    def _log(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "pid": os.getpid(), **fields}
        with open(self.dir / EVENTS, "a") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
