"""Where a command may write: only its own kind of output, never its inputs, checked before work.

The rules every writing command follows (ingest, synth, run's ``--model-out``/``--trace-out``,
submit's ``--out``/``--checkpoint-dir``, reproduce's ``--out``):

- An existing path is replaced (with ``--overwrite``) only when it is recognised as the same kind
  of output omkl-dist writes -- a dataset, a model, a checkpoint folder or a JSON report, by its
  marker file and the entries it holds. Anything else is refused with its path and the fix.
- No output may be one of the command's inputs, lie inside one, or contain one.
- :func:`check_output` runs all of this (plus "can the folder be written?") before any work
  starts, so a long run never ends in a lost result; :func:`atomic_output` checks again under
  a lock at the moment it writes.
- A write happens in a hidden temporary sibling (``.NAME.tmp-PID-XXXX``) renamed into place when
  complete. Concurrent writers of one output are serialised by a lock file (the second gets
  :class:`OutputBusy`); SIGINT and SIGTERM remove the temporary folder (library writer threads
  finish their chunk first, see :func:`uninterrupted`); what a killed process left behind is swept
  by the next write of the same output.
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
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeAlias

from .errors import DataError
from .location import Location, PathArg, is_remote, is_url, location, text, upload_output

# What each kind of output looks like on disk: its marker and every entry it may hold.
DATASET, MODEL, CHECKPOINTS, JSON_REPORT, PLOT = "dataset", "model", "checkpoint folder", "JSON report", "PNG plot"
PREDICTIONS = "predictions file"
PREDICTIONS_MARKER = b"omkl_dist.predictions"  # the key in a predictions parquet file's schema metadata
SYNTH_LIBSVM = "generated LIBSVM file"
SYNTH_LIBSVM_MARKER = b"# omkl-synth"  # the first line of a LIBSVM file `omkl data synth` wrote
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_DIR_ENTRIES = {
    DATASET: ("meta.json", {"meta.json", "features.zarr", "features.csr", "labels.parquet"}),
    MODEL: ("model.json", {"model.json", "state.zarr"}),
    CHECKPOINTS: ("job.json", {"job.json"}),  # plus ckpt-* saved models, see _is_own_entry
}
_MAX_REPORT_BYTES = 512 * 2**20  # a JSON report of ours is far smaller; a bigger file is not one
#: A command's inputs and other outputs, as (label, path) pairs; a None path is skipped.
Inputs: TypeAlias = "Iterable[tuple[str, PathArg | None]]"


class OutputBusy(DataError):
    """Another process is writing the same output right now (the CLI exits 75, "try again later")."""


# ---------------------------------------------------------------------------------------------
# recognising our own outputs


def _read_json(path: Location) -> Any:
    try:
        size = path.fs.size(path.path) if is_remote(path) else path.stat().st_size
        if size > _MAX_REPORT_BYTES:
            return None
        return json.loads(path.read_text())
    except (OSError, ValueError):  # unreadable, not UTF-8, not JSON
        return None


def _marker_ok(kind: str, meta: object) -> bool:
    if not isinstance(meta, dict):
        return False
    if kind == DATASET:
        return meta.get("kind") in ("ingest", "synth") and "schema_version" in meta
    if kind == MODEL:
        return meta.get("kind") == "model" and "schema_version" in meta
    if kind == CHECKPOINTS:
        return "schema" in meta and ("algorithm" in meta or "algo" in meta)  # ("algo": schema 1)
    return False


# a checkpoint folder's saved models, and the temporary folder and lock of one being written
_CHECKPOINT_ENTRY = re.compile(r"ckpt-\d+|\.ckpt-\d+\.((tmp|old)-.*|lock)")


def _is_own_entry(kind: str, name: str, allowed: set[str]) -> bool:
    return name in allowed or (kind == CHECKPOINTS and _CHECKPOINT_ENTRY.fullmatch(name) is not None)


def recognise(path: PathArg, kind: str) -> str | None:
    """None when ``path`` is an omkl-dist output of ``kind``; otherwise what it is instead."""
    path = location(path)
    if kind == JSON_REPORT:
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        doc = _read_json(path)
        # a trace of `omkl run` from before the marker existed is recognised by its two keys
        if not (isinstance(doc, dict) and (doc.get("omkl_report") or {"report", "trace"} <= set(doc))):
            return "a file that is not a JSON report written by omkl-dist"
        return None
    if kind == PLOT:  # any PNG image may be replaced by a new plot; nothing else
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        # file kinds are local: check_output refuses a URL for them before asking what it holds
        with open(path, "rb") as fh:  # type: ignore[arg-type]
            return None if fh.read(len(_PNG_SIGNATURE)) == _PNG_SIGNATURE else "a file that is not a PNG image"
    if kind == PREDICTIONS:  # a parquet file `omkl predict` wrote (its schema carries our marker)
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        try:
            import pyarrow.parquet as pq

            metadata = pq.read_schema(str(path)).metadata or {}
        except Exception:  # noqa: BLE001 - not parquet at all, whatever pyarrow says
            metadata = {}
        return None if PREDICTIONS_MARKER in metadata else "a file that is not a predictions file of omkl-dist"
    if kind == SYNTH_LIBSVM:  # a LIBSVM file whose first (comment) line is our generator's
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        head = _first_bytes(path, len(SYNTH_LIBSVM_MARKER))  # type: ignore[arg-type]  # local, as above
        return None if head == SYNTH_LIBSVM_MARKER else ("a file that is not a LIBSVM file generated by omkl-dist")
    if not path.is_dir():
        return "a file, not a folder"
    marker, allowed = _DIR_ENTRIES[kind]
    if not _marker_ok(kind, _read_json(path / marker)):
        return f"a folder without omkl-dist's {marker}"
    names = [e.name for e in (path.iterdir() if is_remote(path) else os.scandir(path))]
    strangers = sorted(name for name in names if not _is_own_entry(kind, name, allowed))
    if strangers:
        shown = ", ".join(strangers[:3]) + (f" and {len(strangers) - 3} more" if len(strangers) > 3 else "")
        return f"a {kind} that also holds other files ({shown})"
    return None


def _first_bytes(path: Path, n: int) -> bytes:
    """The first ``n`` bytes of a file, of its decompressed content when it is gzip."""
    import gzip

    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            return fh.read(n)
    except (OSError, EOFError):
        return b""


# ---------------------------------------------------------------------------------------------
# the checks made before any work


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def _relation(out: Path, inp: Path) -> str | None:
    if out == inp:
        return "is"
    if inp in out.parents:
        return "is inside"
    if out in inp.parents:
        return "contains"
    return None


def check_output(path: PathArg, kind: str, *, overwrite: bool, inputs: Inputs = (), option: str = "--out") -> Location:
    """Check, before any work, that ``path`` may receive an output of ``kind``; return it absolute.

    Parameters
    ----------
    path : str or Path
        Where the command will write.
    kind : str
        ``DATASET``, ``MODEL``, ``CHECKPOINTS`` or ``JSON_REPORT``.
    overwrite : bool
        Whether an existing output of the same kind may be replaced.
    inputs : iterable of (label, path)
        The command's inputs and other outputs: the path may be none of them, lie inside one, or
        contain one.
    option : str
        The command-line option that named ``path``, for messages.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is false.
    DataError
        ``path`` is, contains or lies inside an input, is something other than an output of
        ``kind``, or its folder cannot be written.
    """
    if is_url(path) or is_remote(path):
        return _check_remote_output(location(path), kind, overwrite=overwrite, inputs=inputs, option=option)
    out = Path(path).expanduser().absolute()
    real = _real(out)
    for label, inp in inputs:
        if inp is None or is_url(inp) or is_remote(inp):  # (a local output cannot touch a remote input)
            continue
        _refuse_input(out, _relation(real, _real(inp)), label, inp, option)
    if (out.exists() or out.is_symlink()) and not _empty_folder(out):  # an empty folder has nothing to lose
        _check_replaceable(out, kind, overwrite, option)
    _check_parent_writable(out, option)
    return out


def _refuse_input(out: Location, how: str | None, label: str, inp: PathArg, option: str) -> None:
    """An output that is, lies inside or contains (``how``) one of the command's inputs is refused."""
    if how:
        raise DataError(
            f"{option} {how} the {label} ({inp}); writing there would destroy it",
            path=out,
            fix=f"choose an {option} outside the {label}",
        )


def _check_replaceable(out: Location, kind: str, overwrite: bool, option: str) -> None:
    """An existing ``out`` is replaced only with ``overwrite`` and only if it is our own ``kind``."""
    if not overwrite:
        flag = "--overwrite" if kind != CHECKPOINTS else "--resume to continue that job, or --overwrite"
        raise FileExistsError(f"{out} already exists; pass {flag} to replace it, or choose another {option}")
    what = recognise(out, kind)
    if what is not None:
        raise DataError(
            f"{option} exists and is {what}; omkl-dist replaces only a {kind} it wrote itself",
            path=out,
            fix=f"choose another {option}, or move that path away yourself",
        )


def _check_remote_output(out: Location, kind: str, *, overwrite: bool, inputs: Inputs, option: str) -> Location:
    """:func:`check_output` for a URL: the same rules, on the object store's prefixes."""
    if kind not in _DIR_ENTRIES:
        raise DataError(f"a {kind} cannot be written to a URL", path=out, fix=f"give {option} a local path")
    target = text(out).rstrip("/")
    for label, inp in inputs:
        if inp is None:
            continue
        other = text(location(inp)).rstrip("/")
        how = (
            "is"
            if target == other
            else "lies inside"
            if target.startswith(other + "/")
            else "contains"
            if other.startswith(target + "/")
            else None
        )
        _refuse_input(out, how, label, inp, option)
    if out.exists() and (not out.is_dir() or any(True for _ in out.iterdir())):  # (an empty prefix: nothing)
        _check_replaceable(out, kind, overwrite, option)
    return out


def _empty_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and not any(os.scandir(path))


def _check_parent_writable(out: Path, option: str) -> None:
    ancestor = out.parent
    while not ancestor.exists():
        if ancestor.is_symlink():
            break  # a dangling link: the write itself will say so
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise DataError(
            f"cannot create {out}: {ancestor} is a file, not a folder", path=out, fix=f"choose another {option}"
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise DataError(
            f"cannot create {out}: the folder {ancestor} is not writable",
            path=out,
            fix=f"choose another {option}, or make {ancestor} writable",
        )


# ---------------------------------------------------------------------------------------------
# signals: cleanup on SIGINT / SIGTERM


class Terminated(SystemExit):
    """SIGTERM arrived during a write: raised so that cleanups run; exits 143 like a killed process."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


_signal_state: dict[str, Any] = {"depth": 0, "pending": None}  # nesting of uninterrupted(), held signal number


def _raise_for(signum: int) -> NoReturn:
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _signal_state["depth"]:
        _signal_state["pending"] = signum  # raised when the current chunk write is done
    else:
        _raise_for(signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While writing: SIGINT and SIGTERM raise (so ``finally`` blocks clean up) -- main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends: zarr writes a chunk from its own I/O thread, which
    would go on writing (and recreate a removed temporary folder) after an interrupt raised in the
    middle of the call."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _signal_state["depth"] += 1
    try:
        yield
    finally:
        _signal_state["depth"] -= 1
        pending = _signal_state["pending"]
        if not _signal_state["depth"] and pending is not None:
            _signal_state["pending"] = None
            _raise_for(pending)


# ---------------------------------------------------------------------------------------------
# lock, sweep, atomic write


@contextlib.contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """Hold ``.NAME.lock`` beside ``out`` for the duration of a write; :class:`OutputBusy` if held."""
    lock = out.parent / f".{out.name}.lock"
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise OutputBusy(
                    f"another process is writing {out} right now (lock {lock})",
                    path=out,
                    fix="wait for it to finish and run again, or choose another output",
                ) from None
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed the file as we opened it: lock the new one
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<what>tmp|old)-(?P<pid>\d+)(-[0-9a-f]+)?")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (an exited child is reaped; a zombie counts as gone)."""
    if pid == os.getpid():
        return True
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def sweep_leftovers(out: Path) -> list[str]:
    """Remove what dead writers of ``out`` left (call under its lock); a moved-aside old copy whose
    replacement never arrived is put back. Returns the names handled."""
    handled: list[str] = []
    if not out.parent.is_dir():
        return handled
    for entry in sorted(os.scandir(out.parent), key=lambda e: e.name):
        m = _TEMP.fullmatch(entry.name)
        if not m or m["name"] != out.name or process_alive(int(m["pid"])):
            continue
        path = Path(entry.path)
        if m["what"] == "old" and not (out.exists() or out.is_symlink()):
            os.replace(path, out)
        else:
            _remove(path)
        handled.append(entry.name)
    return handled


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_output(
    out: PathArg, *, kind: str, overwrite: bool = False, inputs: Inputs = (), option: str = "--out", folder: bool = True
) -> Iterator[Path]:
    """Yield a fresh temporary path that becomes ``out`` only if the block succeeds.

    Under the output's lock: what dead writers left is swept, :func:`check_output` is repeated,
    and on success an existing ``out`` is moved aside, the new one renamed in, and only then the
    old one deleted. On any exception -- SIGINT and SIGTERM included -- the temporary path is
    removed and ``out`` is left as it was. A URL ``out`` (object storage) is built in a local
    temporary folder and uploaded marker-last (:func:`~.location.upload_output`).
    """
    if is_url(out) or is_remote(out):
        remote = check_output(out, kind, overwrite=overwrite, inputs=inputs, option=option)
        assert is_remote(remote)  # a URL opens as a remote location
        tmp = Path(tempfile.mkdtemp(prefix=".omkl-upload-"))
        try:
            with _signals_raise():
                yield tmp
                check_output(remote, kind, overwrite=overwrite, inputs=inputs, option=option)
                upload_output(tmp, remote, _DIR_ENTRIES[kind][0])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    out = Path(out).expanduser().absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    with output_lock(out), _signals_raise():
        sweep_leftovers(out)
        check_output(out, kind, overwrite=overwrite, inputs=inputs, option=option)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            if folder:
                tmp.mkdir()  # mode 0777 less the umask, like any folder the user makes
            yield tmp
            with uninterrupted():
                _swap_in(tmp, out)
        except BaseException:
            _remove(tmp)
            raise


def _swap_in(tmp: Path, out: Path) -> None:
    old = None
    if out.exists() or out.is_symlink():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        if old is not None:
            os.replace(old, out)
        raise
    if old is not None:
        _remove(old)


def write_json_report(
    out: str | os.PathLike[str], document: Mapping[str, Any], *, inputs: Inputs = (), option: str = "--out"
) -> Path:
    """Write ``document`` as a JSON report (replacing only an earlier JSON report of ours)."""
    with atomic_output(out, kind=JSON_REPORT, overwrite=True, inputs=inputs, option=option, folder=False) as tmp:
        with open(tmp, "x") as fh:
            json.dump({"omkl_report": True, **document}, fh, indent=1)
            fh.write("\n")
    return Path(out)


def write_plot(
    out: str | os.PathLike[str], draw: Callable[[Path], object], *, inputs: Inputs = (), option: str = "--plot"
) -> Path:
    """Write a PNG image: ``draw(path)`` saves it to a temporary path that then replaces ``out``
    (an earlier PNG image only)."""
    with atomic_output(out, kind=PLOT, overwrite=True, inputs=inputs, option=option, folder=False) as tmp:
        draw(tmp)
    return Path(out)
