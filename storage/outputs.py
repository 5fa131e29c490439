"""Where a command may write: only its own kind of output, never its inputs, checked before work.

The rules every writing command follows (ingest, synth, run's ``--model-out``/``--trace-out``,
submit's ``--out``/``--checkpoint-dir``, reproduce's ``--out``):

- An existing path is replaced (with ``--overwrite``) only when it is recognised as the same kind
  of output omkl-dist writes -- a dataset, a model, a checkpoint folder, a report folder, a JSON
  report or a PNG plot, by the marker inside it (a marker file, a JSON key, a PNG text chunk) and
  the entries it holds. Anything else is refused with its path and the fix; a file output never
  replaces a folder, not even an empty one.
- No output may be one of the command's inputs, lie inside one, or contain one.
- :func:`check_output` runs all of this (plus "can the folder be written?") before any work
  starts, so a long run never ends in a lost result; :func:`atomic_output` checks again under
  a lock at the moment it writes.
- A write happens in a hidden work folder beside the output, ``.NAME.tmp-PID-START-TOKEN`` (the
  writer's process id and start time, a random token) holding our marker file: the output is built
  in it and renamed into place when complete (an output being replaced is moved into it first).
  Concurrent writers of one output are serialised by a lock file ``.NAME.lock`` that we create
  exclusively with a marker line (the second writer gets :class:`OutputBusy`; a file of that name
  that is not our lock is refused, never removed). SIGINT, SIGTERM, SIGHUP and SIGQUIT remove the
  work folder (library writer threads finish their chunk first, see :func:`uninterrupted`); what a
  killed process left is swept by the next write of the same output -- only a work folder whose
  marker matches its name and whose writer (process id and start time) is gone.
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
import stat
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeAlias

from .errors import DataError
from .location import Location, PathArg, is_remote, is_url, location, text, upload_output

# What each kind of output looks like on disk: its marker and every entry it may hold.
DATASET, MODEL, CHECKPOINTS, JSON_REPORT, PLOT = "dataset", "model", "checkpoint folder", "JSON report", "PNG plot"
REPORT = "report folder"  # report.json and the PNGs of `omkl report` / `omkl retrain --report-dir` (and reports in it)
REPORT_MARKER = "report.json"
PREDICTIONS = "predictions file"
PREDICTIONS_MARKER = b"omkl_dist.predictions"  # the key in a predictions parquet file's schema metadata
# a predictions file's formats by its name's suffix (.gz: compressed): delimited text, else parquet
PREDICTIONS_TEXT = {".csv": ",", ".tsv": "\t"}
PREDICTIONS_PARQUET = (".parquet", ".pq", "")
PREDICTIONS_COLUMNS = ("row", "label", "decision")  # the first columns of every predictions file
SYNTH_LIBSVM = "generated LIBSVM file"
SYNTH_LIBSVM_MARKER = b"# omkl-synth"  # the first line of a LIBSVM file `omkl data synth` wrote
MARKDOWN_REPORT = "Markdown report"
MARKDOWN_MARKER = b"<!-- omkl-dist report"  # the first line of a Markdown report (`omkl study defaults --doc`)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PLOT_MARKER = b"Software\x00omkl-dist"  # the tEXt chunk (keyword, NUL, text) in every PNG omkl-dist writes
_PNG_HEAD_CHUNKS = 64  # the marker sits right after IHDR; a PNG of ours has few chunks before its image data
_DIR_ENTRIES = {
    DATASET: ("meta.json", {"meta.json", "features.zarr", "features.csr", "labels.parquet", "carried.parquet"}),
    MODEL: ("model.json", {"model.json", "state.zarr"}),
    CHECKPOINTS: ("job.json", {"job.json"}),  # plus ckpt-* saved models, see _is_own_entry
    REPORT: (REPORT_MARKER, {REPORT_MARKER}),  # plus marked PNG plots and report folders, see _is_own_entry
}
_REMOTE_KINDS = (DATASET, MODEL, CHECKPOINTS, PREDICTIONS)  # what may be written to object storage
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
    except (OSError, ValueError, RecursionError):  # unreadable, not UTF-8, not JSON, nested absurdly deep
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
    if kind == REPORT:
        return meta.get("omkl_report") is True and meta.get("kind") in ("retrain", "run")
    return False


# a checkpoint folder's saved models, and the work folder and lock of one being written
_CHECKPOINT_ENTRY = re.compile(r"ckpt-\d+|\.ckpt-\d+\.(tmp-.*|lock)")


def _is_own_entry(kind: str, folder: Location, name: str, allowed: set[str]) -> bool:
    if name in allowed:
        return True
    if kind == CHECKPOINTS:
        return _CHECKPOINT_ENTRY.fullmatch(name) is not None
    if kind == REPORT:  # a plot of ours (a PNG carrying our marker), or a report folder of ours inside
        entry = folder / name  # (e.g. the scheduler's history report drawn into a retrain's report folder)
        if name.endswith(".png") and entry.is_file():
            return _png_marked(entry)  # type: ignore[arg-type]  # reports are local
        return entry.is_dir() and not entry.is_symlink() and recognise(entry, REPORT) is None
    return False


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
    if kind == PLOT:  # a PNG image carrying our marker; any other PNG is the user's
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        # file kinds are local: check_output refuses a URL for them before asking what it holds
        return None if _png_marked(path) else "a file that is not a PNG plot written by omkl-dist"  # type: ignore[arg-type]
    if kind == PREDICTIONS:  # a file `omkl predict` wrote: parquet whose schema has our marker, or our text header
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        delimiter = predictions_delimiter(path)
        if delimiter is not None:  # text has no metadata: a file whose header is ours
            header = delimiter.join(PREDICTIONS_COLUMNS).encode()
            head = _first_bytes(path, len(header) + 1)
            ours = head[: len(header)] == header and head[len(header) :] in (b"\n", b"\r", delimiter.encode())
            return None if ours else "a file that is not a predictions file of omkl-dist"
        try:
            import pyarrow.parquet as pq

            with path.open("rb") as fh:  # (a local file or an object: the footer read through it)
                metadata = pq.read_schema(fh).metadata or {}
        except Exception:  # noqa: BLE001 - not parquet at all, whatever pyarrow says
            metadata = {}
        return None if PREDICTIONS_MARKER in metadata else "a file that is not a predictions file of omkl-dist"
    if kind == SYNTH_LIBSVM:  # a LIBSVM file whose first (comment) line is our generator's
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        head = _first_bytes(path, len(SYNTH_LIBSVM_MARKER))
        return None if head == SYNTH_LIBSVM_MARKER else ("a file that is not a LIBSVM file generated by omkl-dist")
    if kind == MARKDOWN_REPORT:  # a Markdown file whose first line is our marker comment
        if not path.is_file():
            return "a folder" if path.is_dir() else "not a regular file"
        head = _first_bytes(path, len(MARKDOWN_MARKER))
        return None if head == MARKDOWN_MARKER else "a file that is not a Markdown report written by omkl-dist"
    if not path.is_dir():
        return "a file, not a folder"
    marker, allowed = _DIR_ENTRIES[kind]
    if not _marker_ok(kind, _read_json(path / marker)):
        return f"a folder without omkl-dist's {marker}"
    names = [e.name for e in (path.iterdir() if is_remote(path) else os.scandir(path))]
    strangers = sorted(name for name in names if not _is_own_entry(kind, path, name, allowed))
    if strangers:
        shown = ", ".join(strangers[:3]) + (f" and {len(strangers) - 3} more" if len(strangers) > 3 else "")
        return f"a {kind} that also holds other files ({shown})"
    return None


def predictions_delimiter(path: PathArg) -> str | None:
    """The delimiter of a predictions file named ``path`` (``.csv``, ``.tsv``, either ``.gz``), None for
    parquet (``.parquet``, ``.pq`` or no suffix).

    Raises
    ------
    DataError
        Another suffix: ``--out scores.txt`` would otherwise be parquet under a text file's name.
    """
    name = location(path).name.lower()
    stem = name[: -len(".gz")] if name.endswith(".gz") else name
    suffix = os.path.splitext(stem)[1]
    if suffix in PREDICTIONS_TEXT:
        return PREDICTIONS_TEXT[suffix]
    if suffix in PREDICTIONS_PARQUET and stem == name:
        return None
    raise DataError(
        f"omkl predict writes parquet or delimited text, and {name[len(os.path.splitext(stem)[0]) :]!r} is neither",
        path=path,
        fix="end it in .parquet (with the model's provenance in its metadata), or .csv / .tsv, optionally "
        ".csv.gz / .tsv.gz",
    )


def _png_marked(path: Path) -> bool:
    """Whether ``path`` is a PNG image with :data:`PLOT_MARKER` among the chunks before its image data."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_PNG_SIGNATURE)) != _PNG_SIGNATURE:
                return False
            for _ in range(_PNG_HEAD_CHUNKS):
                head = fh.read(8)
                if len(head) < 8 or head[4:] in (b"IDAT", b"IEND"):
                    return False
                length = int.from_bytes(head[:4], "big")
                body = fh.read(length) if head[4:] == b"tEXt" and length == len(PLOT_MARKER) else None
                if body == PLOT_MARKER:
                    return True
                fh.seek((length if body is None else 0) + 4, os.SEEK_CUR)  # the rest of the chunk, its CRC
    except OSError:
        return False
    return False


def mark_png(path: str | os.PathLike[str]) -> None:
    """Insert :data:`PLOT_MARKER` as a PNG ``tEXt`` chunk right after the header chunk of ``path``.

    Raises
    ------
    RuntimeError
        ``path`` is not a PNG image (a plot function that saved something else).
    """
    data = Path(path).read_bytes()
    ihdr_end = len(_PNG_SIGNATURE) + 8 + 13 + 4  # length, type, 13 bytes of header, CRC
    if data[: len(_PNG_SIGNATURE)] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise RuntimeError(f"{path}: the plot was not saved as a PNG image")
    chunk = b"tEXt" + PLOT_MARKER
    text_chunk = len(PLOT_MARKER).to_bytes(4, "big") + chunk + zlib.crc32(chunk).to_bytes(4, "big")
    Path(path).write_bytes(data[:ihdr_end] + text_chunk + data[ihdr_end:])


def _first_bytes(path: Location, n: int) -> bytes:
    """The first ``n`` bytes of a file (local or an object), of its decompressed content when it is gzip."""
    import gzip

    try:
        with path.open("rb") as fh:
            head = fh.read(2)
        with path.open("rb") as fh:
            return (gzip.GzipFile(fileobj=fh) if head == b"\x1f\x8b" else fh).read(n)
    except (OSError, EOFError):
        return b""


# ---------------------------------------------------------------------------------------------
# the checks made before any work


def real_path(path: str | os.PathLike[str]) -> Path:
    """``path`` with ``~`` expanded and every link resolved: what two names for one folder share."""
    return Path(os.path.realpath(Path(path).expanduser()))


def path_relation(out: Path, other: Path) -> str | None:
    """How the (real) path ``out`` stands to ``other``: "is", "lies inside", "contains", or None."""
    if out == other:
        return "is"
    if other in out.parents:
        return "lies inside"
    if out in other.parents:
        return "contains"
    return None


def check_output(path: PathArg, kind: str, *, overwrite: bool, inputs: Inputs = (), option: str = "--out") -> Location:
    """Check, before any work, that ``path`` may receive an output of ``kind``; return it absolute.

    Parameters
    ----------
    path : str or Path
        Where the command will write.
    kind : str
        A folder kind (``DATASET``, ``MODEL``, ``CHECKPOINTS``, ``REPORT``) or a file kind
        (``JSON_REPORT``, ``PLOT``, ``PREDICTIONS``, ``SYNTH_LIBSVM``, ``MARKDOWN_REPORT``).
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
        ``kind`` (a folder, even an empty one, for a file kind), or its folder cannot be written.
    """
    if is_url(path) or is_remote(path):
        return _check_remote_output(location(path), kind, overwrite=overwrite, inputs=inputs, option=option)
    out = Path(path).expanduser().absolute()
    real = real_path(out)
    for label, inp in inputs:
        if inp is None or is_url(inp) or is_remote(inp):  # (a local output cannot touch a remote input)
            continue
        _refuse_input(out, path_relation(real, real_path(inp)), label, inp, option)
    # an empty folder has nothing to lose -- to a folder output; a file never replaces a folder
    if (out.exists() or out.is_symlink()) and not (kind in _DIR_ENTRIES and _empty_folder(out)):
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
    if kind not in _DIR_ENTRIES and out.is_dir():  # (--overwrite would not help: say so first)
        raise DataError(
            f"{option} is a folder; a {kind} is a file and never replaces a folder",
            path=out,
            fix=f"give {option} the path of a file (a new name, or one inside that folder)",
        )
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
    if kind not in _REMOTE_KINDS:
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
# signals: cleanup on SIGINT, SIGTERM, SIGHUP and SIGQUIT

# The signals that end a command and would otherwise leave a half-written output behind. SIGPIPE
# is ignored by Python itself (a write to a closed pipe raises BrokenPipeError, which cleans up
# like any error); SIGKILL cannot be caught: the next write of the output sweeps what it left.
_CLEANUP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Terminated(SystemExit):
    """SIGTERM, SIGHUP or SIGQUIT arrived during a write: raised so that cleanups run; exits
    128 + the signal's number, like a process killed by it (143 for SIGTERM, 129 for SIGHUP)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(128 + signum)
        self.signum = signum


_signal_state: dict[str, Any] = {"depth": 0, "pending": None}  # nesting of uninterrupted(), held signal number


def _raise_for(signum: int) -> NoReturn:
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _signal_state["depth"]:
        _signal_state["pending"] = signum  # raised when the current chunk write is done
    else:
        _raise_for(signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While writing: the cleanup signals raise (so ``finally`` blocks clean up) -- main thread only.

    A signal the process was told to ignore stays ignored: under ``nohup`` (SIGHUP ignored) or as a
    background job of a script (SIGINT ignored) a write goes on as the user asked."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = [s for s in _CLEANUP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, _on_signal) for s in handled}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Hold the cleanup signals until the block ends: zarr writes a chunk from its own I/O thread,
    which would go on writing (and recreate a removed work folder) after an interrupt raised in the
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
# processes: is the writer that left something behind still running?


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


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot, field 22 of ``/proc/PID/stat``);
    None where that cannot be read (no such process, no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _writer_alive(pid: int, start: int) -> bool:
    """Whether the process that recorded (``pid``, ``start``) still runs -- not another process
    that was given the same id later. An unreadable start time counts as alive (keep, not sweep)."""
    if not process_alive(pid):
        return False
    now = process_start(pid)
    return now is None or now == start


# ---------------------------------------------------------------------------------------------
# the lock of an output: `.NAME.lock`, created exclusively, holding our marker line

_LOCK_MARKER = b"omkl-dist output lock\n"  # the first line of every lock file we create
_LOCK_SETTLE_TRIES, _LOCK_SETTLE_SECONDS = 100, 0.01  # how long an empty lock may be "being created"


def _foreign_lock(lock: Path, out: Path, what: str) -> DataError:
    return DataError(
        f"{what}, not omkl-dist's lock file; omkl-dist locks {out.name} under that name and never removes "
        "a file it did not create",
        path=lock,
        fix=f"move or delete {lock} yourself if you do not need it, or choose another output name",
    )


def _open_lock(lock: Path, out: Path) -> tuple[int, bool] | None:
    """``(fd, created)`` of the lock file, made now or already there; None when it vanished meanwhile."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(lock, flags | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError:
        pass
    try:
        fd = os.open(lock, flags | os.O_NONBLOCK)  # (a FIFO must not block us)
    except FileNotFoundError:
        return None  # its holder removed it just now: create it again
    except OSError as exc:  # a folder, a symbolic link, a file we may not write
        raise _foreign_lock(lock, out, f"it exists and cannot be opened as a lock ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _foreign_lock(lock, out, "it exists and is not a regular file")
    return fd, False


def _take_lock(lock: Path, out: Path) -> int:
    """An open descriptor of our lock file ``lock``, flock-ed; :class:`OutputBusy` if another holds it."""
    for _ in range(_LOCK_SETTLE_TRIES):
        with uninterrupted():  # a lock file of ours is never left empty by a Ctrl-C
            opened = _open_lock(lock, out)
            if opened is not None and opened[1]:  # created: the marker first, even if we lose the race
                os.write(opened[0], _LOCK_MARKER + f"pid {os.getpid()}\n".encode())
        if opened is None:
            continue
        fd = opened[0]
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
        head = os.pread(fd, len(_LOCK_MARKER), 0)
        try:
            same = os.path.samestat(os.fstat(fd), os.lstat(lock))
        except FileNotFoundError:
            same = False
        if head == _LOCK_MARKER and same:
            return fd
        os.close(fd)
        if not _LOCK_MARKER.startswith(head):
            raise _foreign_lock(lock, out, "it exists and holds something else")
        # removed by its holder as we opened it, or just created and its marker not written yet
        time.sleep(_LOCK_SETTLE_SECONDS)
    raise _foreign_lock(lock, out, "it exists and is empty (or holds a part of our marker line only)")


@contextlib.contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """Hold ``.NAME.lock`` beside ``out`` for the duration of a write; :class:`OutputBusy` if held.

    The lock file is created exclusively with a marker line, or reused when a killed writer left
    it; a file of that name without the marker (or a folder, a link) is the user's: it is refused
    with a :class:`~.errors.DataError` naming it, never removed. On release the file is removed only
    if it is still the one we locked."""
    lock = out.parent / f".{out.name}.lock"
    fd = _take_lock(lock, out)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(fd), os.lstat(lock)):
                os.unlink(lock)
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# the work folder of a write, and the sweep of dead writers' work folders

# .NAME.tmp-PID-START-TOKEN: the writer's process id and start time, and a random token
_WORK = re.compile(r"\.(?P<name>.+)\.tmp-(?P<pid>\d+)-(?P<start>\d+)-(?P<token>[0-9a-f]{16})")
_WORK_MARKER = ".omkl-work.json"  # in every work folder: the same pid, start, token and output name
_NEW, _OLD = "new", "old"  # in a work folder: the output being built, an output being replaced


def _work_record(name: str, pid: int, start: int, token: str) -> dict[str, Any]:
    return {"omkl_work": name, "pid": pid, "start": start, "token": token}


def _make_work_folder(out: Path) -> Path:
    pid, start, token = os.getpid(), process_start(os.getpid()) or 0, secrets.token_hex(8)
    work = out.parent / f".{out.name}.tmp-{pid}-{start}-{token}"
    work.mkdir()  # mode 0777 less the umask, like any folder the user makes
    with open(work / _WORK_MARKER, "x") as fh:
        json.dump(_work_record(out.name, pid, start, token), fh)
    return work


def _is_our_work_folder(entry: os.DirEntry[str], match: re.Match[str]) -> bool:
    """Whether a folder named like a work folder holds our marker, agreeing with its name, and
    nothing but what a write puts there."""
    if not entry.is_dir(follow_symlinks=False):
        return False
    work = Path(entry.path)
    try:
        if not stat.S_ISREG(os.lstat(work / _WORK_MARKER).st_mode) or not set(os.listdir(work)) <= {
            _WORK_MARKER,
            _NEW,
            _OLD,
        }:
            return False
        record = json.loads((work / _WORK_MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(record == _work_record(match["name"], int(match["pid"]), int(match["start"]), match["token"]))


def _discard_work(work: Path, out: Path) -> None:
    """Remove a work folder; an output moved into it whose replacement never arrived goes back first.

    The marker file goes last: a removal cut short (SIGKILL, a file that would not go) leaves a
    folder the next sweep still recognises and finishes."""
    old = work / _OLD
    if _present(old) and not _present(out):
        os.replace(old, out)
    for name in (_NEW, _OLD):
        _remove(work / name)
    if not (_present(work / _NEW) or _present(old)):
        (work / _WORK_MARKER).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            work.rmdir()


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def sweep_leftovers(out: Path) -> list[str]:
    """Remove the work folders dead writers of ``out`` left (call under its lock); an output one
    had moved aside whose replacement never arrived is put back. Returns the names handled.

    Only a folder named ``.NAME.tmp-PID-START-TOKEN`` whose marker file records that same pid,
    start time, token and name, and whose writer no longer runs, is touched (an empty folder of
    that name -- a writer killed before its marker was written -- is removed with ``rmdir``, which
    cannot remove anything else)."""
    handled: list[str] = []
    if not out.parent.is_dir():
        return handled
    for entry in sorted(os.scandir(out.parent), key=lambda e: e.name):
        m = _WORK.fullmatch(entry.name)
        if not m or m["name"] != out.name or _writer_alive(int(m["pid"]), int(m["start"])):
            continue
        if _is_our_work_folder(entry, m):
            with uninterrupted():
                _discard_work(Path(entry.path), out)
        elif entry.is_dir(follow_symlinks=False) and not any(os.scandir(entry.path)):
            with contextlib.suppress(OSError):
                os.rmdir(entry.path)
        else:
            continue
        handled.append(entry.name)
    return handled


def _make_parent(out: Path, option: str) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file or a dangling link where a folder should be; a race with one
        raise DataError(
            f"cannot create the folder {out.parent} ({exc.strerror})", path=out, fix=f"choose another {option}"
        ) from None


@contextlib.contextmanager
def atomic_output(
    out: PathArg, *, kind: str, overwrite: bool = False, inputs: Inputs = (), option: str = "--out", folder: bool = True
) -> Iterator[Path]:
    """Yield a fresh temporary path that becomes ``out`` only if the block succeeds.

    :func:`check_output` runs first; then under the output's lock what dead writers left is swept,
    :func:`check_output` is repeated, and the output is built at a path inside a new work folder
    (a folder there when ``folder``, else a file the block creates). On success an existing
    ``out`` is moved into the work folder, the new one renamed into place, and only then the work
    folder deleted. On any exception -- the cleanup signals included -- the work folder is removed
    and ``out`` is left as it was. A URL ``out`` (object storage) is built in a local temporary
    folder and uploaded marker-last (:func:`~.location.upload_output`); a file, as one object.
    """
    if is_url(out) or is_remote(out):
        remote = check_output(out, kind, overwrite=overwrite, inputs=inputs, option=option)
        assert is_remote(remote)  # a URL opens as a remote location
        tmp = Path(tempfile.mkdtemp(prefix=".omkl-upload-"))
        try:
            with _signals_raise():
                yield tmp if folder else tmp / remote.name
                check_output(remote, kind, overwrite=overwrite, inputs=inputs, option=option)
                if folder:
                    upload_output(tmp, remote, _DIR_ENTRIES[kind][0])
                else:  # one object, put whole: a reader sees the old one or the new one
                    remote.fs.put_file(str(tmp / remote.name), remote.path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    out = Path(out).expanduser().absolute()
    check_output(out, kind, overwrite=overwrite, inputs=inputs, option=option)  # before making any folder
    _make_parent(out, option)
    with _signals_raise(), output_lock(out):
        sweep_leftovers(out)
        check_output(out, kind, overwrite=overwrite, inputs=inputs, option=option)
        work: Path | None = None
        try:
            with uninterrupted():  # the work folder and its marker come into being together
                work = _make_work_folder(out)
            new = work / _NEW
            if folder:
                new.mkdir()  # mode 0777 less the umask, like any folder the user makes
            yield new
            with uninterrupted():
                _swap_in(work, out)
        finally:
            if work is not None:
                with uninterrupted():  # a second Ctrl-C must not cut the cleanup short
                    _discard_work(work, out)


def _swap_in(work: Path, out: Path) -> None:
    """Put ``work/new`` in place of ``out``; an existing ``out`` waits in ``work/old`` meanwhile."""
    old = work / _OLD
    replacing = out.exists() or out.is_symlink()
    if replacing:
        os.replace(out, old)
    try:
        os.replace(work / _NEW, out)
    except BaseException:
        if replacing:
            os.replace(old, out)
        raise


def first_free(path: str | os.PathLike[str]) -> Path:
    """``path``, or the first of ``STEM-2SUFFIX``, ``STEM-3SUFFIX``, ... that does not exist: where a
    command's default output goes, so that a default never replaces an earlier output.

    >>> first_free("/nonexistent/trace.json")
    PosixPath('/nonexistent/trace.json')
    """
    path = Path(path)
    candidate, n = path, 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def dump_json_report(path: str | os.PathLike[str], document: Mapping[str, Any]) -> None:
    """Create the file ``path`` (it must not exist) holding ``document`` with our marker key."""
    with open(path, "x") as fh:
        json.dump({"omkl_report": True, **document}, fh, indent=1)
        fh.write("\n")


def draw_png(path: str | os.PathLike[str], draw: Callable[[Path], object]) -> None:
    """``draw(path)`` saves a PNG image, which then gets our marker (:func:`mark_png`)."""
    draw(Path(path))
    mark_png(path)


def write_json_report(
    out: str | os.PathLike[str], document: Mapping[str, Any], *, inputs: Inputs = (), option: str = "--out"
) -> Path:
    """Write ``document`` as a JSON report (replacing only an earlier JSON report of ours)."""
    with atomic_output(out, kind=JSON_REPORT, overwrite=True, inputs=inputs, option=option, folder=False) as tmp:
        dump_json_report(tmp, document)
    return Path(out)


def write_plot(
    out: str | os.PathLike[str], draw: Callable[[Path], object], *, inputs: Inputs = (), option: str = "--plot"
) -> Path:
    """Write a PNG image: ``draw(path)`` saves it to a temporary path that then, marked as ours,
    replaces ``out`` (an earlier plot of ours only)."""
    with atomic_output(out, kind=PLOT, overwrite=True, inputs=inputs, option=option, folder=False) as tmp:
        draw_png(tmp, draw)
    return Path(out)
