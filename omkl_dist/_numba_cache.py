"""numba's on-disk cache, keyed by this package's sources.

numba checks a cached function against its own source file only, not against the functions it
inlined from other modules (every kernel here inlines helpers such as ``scoring._vexp``): after an
edit, or an upgrade in place that leaves old cache files behind, a stale kernel could be loaded
and compute with the old arithmetic. So the cache lives in a directory named after a hash of
every module of the package: ``omkl_dist/__pycache__/numba-<hash>``, or that name under
``NUMBA_CACHE_DIR`` if the user set one. It is exported through the environment, so worker
processes started from here use the same directory (and a package with other sources, another).

A package installed where its user cannot write (a system or read-only install, another user's
checkout) cannot keep its cache beside it, and numba then refuses to cache at all ("no locator
available"). So the first of these folders that can really be written to is used: the one above,
then ``$XDG_CACHE_HOME/omkl-dist`` (default ``~/.cache/omkl-dist``), then a private folder of
this user's in the temporary directory (``omkl-dist-<uid>``, mode 0700, refused if another user
owns it or can write to it: numba's cache files are pickles, loaded as code).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def sources_digest() -> str:
    """A hash of the package's Python sources (paths and contents)."""
    h = hashlib.sha256()
    for path in sorted(ROOT.rglob("*.py")):
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def writable(folder: Path) -> bool:
    """Whether ``folder`` exists or can be made, and a file can be created in it (tried, not
    judged from permission bits: root may write anywhere, a read-only mount refuses even root)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _private_temp_dir() -> Path | None:
    """This user's own folder in the temporary directory, or None if it cannot be trusted."""
    folder = Path(tempfile.gettempdir()) / f"omkl-dist-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    ours = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    return folder if ours else None


def _user_cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/omkl-dist`` or ``~/.cache/omkl-dist`` (None without a home)."""
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        return Path(base if base else Path.home() / ".cache") / "omkl-dist"
    except RuntimeError:  # no home directory can be determined
        return None


def cache_dir_candidates(name: str, user_set: str = "") -> Iterator[Path]:
    """Where the cache named ``name`` may go, in order of preference (found lazily: the fallbacks
    are not even made while the first is writable)."""
    yield Path(user_set) / name if user_set else ROOT / "__pycache__" / name
    for locate in (_user_cache_dir, _private_temp_dir):
        folder = locate()
        if folder is not None:
            yield folder / name


def choose_cache_dir(candidates: Iterable[Path]) -> Path:
    """The first writable of ``candidates``; the first one if none is (numba then says why)."""
    tried = []
    for folder in candidates:
        if writable(folder):
            return folder
        tried.append(folder)
    return tried[0]


def use_versioned_cache() -> str:
    """Point numba's cache at the directory of these sources (before any kernel is defined).

    numba reads ``NUMBA_CACHE_DIR`` when it is imported, so numba is not imported here (``import
    omkl_dist`` stays light: the ``omkl`` entry point handles a Ctrl-C during the heavy imports);
    only a numba imported before this package is told the directory directly."""
    name = f"numba-{sources_digest()}"
    current = os.environ.get("NUMBA_CACHE_DIR", "")
    if Path(current).name != name:  # not yet set by this package (here or in a parent process)
        chosen = choose_cache_dir(cache_dir_candidates(name, current))
        os.environ["NUMBA_CACHE_DIR"] = str(chosen)
        if not (chosen / FIRST_USE).exists():  # new sources: an edit, an upgrade
            try:
                (chosen / FIRST_USE).touch()
            except OSError:  # (no writable folder: numba says why when it saves)
                pass
            else:
                prune_other_caches(chosen)
    numba = sys.modules.get("numba")
    if numba is not None and hasattr(numba, "config"):
        numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
    return os.environ["NUMBA_CACHE_DIR"]


SAVE_LOCK = ".save-lock"  # in the cache folder: held while numba saves an entry (lock_cache_writes)
FIRST_USE = ".first-use"  # in the cache folder: made by the first process that uses it
#: caches of other sources kept beside the one in use (the ones changed last): a few branches or versions
KEEP_OTHER_CACHES = 3
# numba's index and data files, and the markers this package and pipelines/warmup.py leave beside them
_CACHE_FILE = re.compile(r"[^/]+\.(nbi|nbc)|\.save-lock|\.first-use|omkl-warmup-done|compiled-ahead-[\w.+-]+")
_CACHE_SUBDIR = re.compile(r"\w+_[0-9a-f]{40}")  # numba's per-source-folder directories
_OURS = re.compile(r"numba-[0-9a-f]{16}")  # (use_versioned_cache's names)


def prune_other_caches(current: Path, keep: int = KEEP_OTHER_CACHES) -> list[Path]:
    """Delete the caches of other sources beside ``current`` but the ``keep`` changed last, and
    return them. Each edit of the package, and each upgrade in place, makes a new ``numba-<hash>``
    folder (8-10 MB; a development checkout held 44 of them, 397 MB) and nothing removed the old
    ones. Only a folder holding nothing but numba's files and this package's markers is deleted, and
    only when no process is saving to it (its :data:`SAVE_LOCK`)."""
    others = [p for p in current.parent.glob("numba-*") if _OURS.fullmatch(p.name) and p.is_dir() and p != current]
    others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    removed = []
    for folder in others[keep:]:
        try:
            doomed = _cache_contents(folder)
            if doomed is None or not _unlocked(folder / SAVE_LOCK):
                continue  # (not only a cache, or a process saving to it: left alone)
            for path in doomed:  # (files before the folders holding them)
                if path.is_dir():
                    path.rmdir()
                else:
                    path.unlink(missing_ok=True)
            folder.rmdir()
            removed.append(folder)
        except OSError:  # (another process pruning it, a file a system will not delete: kept)
            continue
    return removed


def _cache_contents(folder: Path) -> list[Path] | None:
    """What ``folder`` holds, files before their folders, when all of it is numba's cache (index and
    data files in the locator's ``<package>_<sha1>`` folders) and this package's markers; else None."""
    contents: list[Path] = []
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink() and _CACHE_SUBDIR.fullmatch(entry.name):
            inner = _cache_contents(entry)
            if inner is None:
                return None
            contents += [*inner, entry]
        elif entry.is_file() and _CACHE_FILE.fullmatch(entry.name):
            contents.append(entry)
        else:
            return None
    return contents


def _unlocked(lock_file: Path) -> bool:
    """Whether no process holds ``lock_file``'s save lock (taken and released at once); True when
    there is no lock file or no ``flock``."""
    try:
        import fcntl
    except ImportError:
        return True
    try:
        with open(lock_file, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def lock_cache_writes() -> bool:
    """Make numba's cache saves in this process exclusive with those of other processes that call
    this too (a ``flock`` on :data:`SAVE_LOCK` in the cache folder); whether saves are locked.

    numba saves an entry by reading the function's index, adding the entry under the first free
    data file number and writing both back: two processes saving two signatures of one function at
    once may both take number 1, and the index of one then names the other's machine code. Each
    file is replaced whole (never half written), so saving one after the other is enough. Where
    ``flock`` does not exist (not POSIX), nothing changes and False is returned: the caller then
    must not compile in two processes at once."""
    try:
        import fcntl
    except ImportError:
        return False
    from numba.core import caching

    save = caching.IndexDataCacheFile.save
    if getattr(save, "locked", False):
        return True

    def locked_save(self, key, data):
        try:
            lock = open(Path(os.environ["NUMBA_CACHE_DIR"]) / SAVE_LOCK, "a")
        except (KeyError, OSError):  # (no folder to lock in: numba's own save says what is wrong)
            return save(self, key, data)
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes)
            save(self, key, data)

    locked_save.locked = True  # type: ignore[attr-defined]
    caching.IndexDataCacheFile.save = locked_save
    return True
