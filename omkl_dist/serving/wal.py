"""The write-ahead log of a learning service: every learnt row on disk, fsync'd, before it is acknowledged.

One :class:`WriteAheadLog` per model line, written by one process (an exclusive ``flock`` on
``.lock``; a second writer gets :class:`LogBusy`). Rows are numbered ``0, 1, ...`` along the line
(the *row sequence numbers*); a record holds a run of consecutive rows and the boundaries of the
learning calls the writer made over them, so a replay makes exactly the same calls (the model
depends on where calls end: docs/design.md, "Block-exact online learning").

Layout of the folder::

    WAL_DIR/
      .lock                         the writer's lock (fcntl.flock); its text is the writer's pid
      wal-<first row, 20 digits>.log  segments, in row order; only the newest one is appended to

Format (all integers little-endian; no pickle, nothing but numbers):

- a segment starts with 16 bytes: the magic ``b"OMKLWAL1"`` and the row number of its first row
  (``u64``);
- then records, each a 28-byte header -- magic ``b"OWRC"``, payload length (``u64``), first row
  (``u64``), CRC-32 of the payload (``u32``), CRC-32 of the header's first 24 bytes (``u32``) --
  followed by the payload: ``n_rows``, ``n_features``, ``n_blocks`` and a zero (four ``u32``), the
  block lengths (``u32`` each, summing to ``n_rows``), the labels (``i32`` each: the index of the
  row's class in the model's class order, ``Model.classes_``), zero padding to a multiple of 8
  bytes, and the rows (``f64``, row-major: the rows as the estimator takes them, i.e. after the
  model's column encoder and scaler, so the replay does not depend on re-encoding them).

A record is written whole by one ``write`` and is durable once :meth:`WriteAheadLog.commit`
returns (one ``fsync`` for every record appended since the last commit: group commit). A process
killed mid-write leaves a *torn tail*: a last record cut short (or, after a power cut, bytes that
are no record). :meth:`WriteAheadLog.open` cuts it off the newest segment -- it was never
acknowledged -- and refuses a log damaged anywhere else (a bad record followed by a good one, a
gap in the row numbers): that is lost data, never silently skipped.

Segments are rotated at ``segment_bytes`` and deleted by :meth:`WriteAheadLog.drop_before` once
a published model version holds all their rows.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from omkl_dist.storage.errors import DataError
from omkl_dist.storage.model_store import fsync_dir
from omkl_dist.storage.outputs import OutputBusy

SEGMENT_MAGIC = b"OMKLWAL1"
RECORD_MAGIC = b"OWRC"
_SEGMENT_HEAD = struct.Struct("<8sQ")
_RECORD_HEAD = struct.Struct("<4sQQII")  # magic, payload bytes, first row, payload crc, header crc
_COUNTS = struct.Struct("<IIII")  # n_rows, n_features, n_blocks, 0
_SEGMENT_NAME = re.compile(r"wal-([0-9]{20})\.log")
LOCK = ".lock"
SEGMENT_BYTES = 64 * 2**20
_MAX_PAYLOAD = 2**34  # 16 GiB: a length beyond it is damage, not a record
_DAMAGED_FIX = (
    "the log lost acknowledged rows: restore the folder from a backup, or move it away to start the "
    "line again from its newest published version (its rows after that version are lost)"
)


class LogBusy(OutputBusy):
    """Another process holds the write-ahead log (the CLI exits 75)."""


@dataclass(frozen=True)
class Record:
    """One logged run of rows: ``rows`` (n, d) float64 as the estimator takes them, ``labels`` (n,)
    class indices, ``blocks`` the lengths of the learning calls made over them, ``first_row`` the
    sequence number of ``rows[0]``."""

    first_row: int
    rows: NDArray[np.float64]
    labels: NDArray[np.int32]
    blocks: tuple[int, ...]

    @property
    def end_row(self) -> int:
        return self.first_row + len(self.labels)

    def digest(self) -> bytes:
        """sha256 of the rows (f8) and labels (i4), little-endian: what a version's lineage digests."""
        h = hashlib.sha256(np.ascontiguousarray(self.rows, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(self.labels, dtype="<i4").tobytes())
        digest: bytes = h.digest()
        return digest

    def calls(self) -> Iterator[tuple[NDArray[np.float64], NDArray[np.int32]]]:
        """The (rows, labels) of each learning call, in order."""
        lo = 0
        for n in self.blocks:
            yield self.rows[lo : lo + n], self.labels[lo : lo + n]
            lo += n


def encode_record(first_row: int, rows: NDArray[np.float64], labels: NDArray[np.int32], blocks: Sequence[int]) -> bytes:
    """The bytes of a record (header and payload), see the module's docstring."""
    rows = np.ascontiguousarray(rows, dtype="<f8")
    labels = np.ascontiguousarray(labels, dtype="<i4")
    counts = np.asarray(blocks, dtype="<u4")
    n, d = rows.shape
    if len(labels) != n or int(counts.sum()) != n or bool((counts == 0).any()):
        raise ValueError(f"a record of {n} rows needs {n} labels and non-empty blocks summing to {n}")
    head = _COUNTS.pack(n, d, len(counts), 0) + counts.tobytes() + labels.tobytes()
    payload = head + bytes(-len(head) % 8) + rows.tobytes()
    fields = _RECORD_HEAD.pack(RECORD_MAGIC, len(payload), first_row, zlib.crc32(payload), 0)[:24]
    return fields + struct.pack("<I", zlib.crc32(fields)) + payload


def _decode_payload(first_row: int, payload: memoryview) -> Record:
    n, d, n_blocks, _ = _COUNTS.unpack_from(payload, 0)
    at = _COUNTS.size
    blocks = np.frombuffer(payload, dtype="<u4", count=n_blocks, offset=at)
    at += 4 * n_blocks
    labels = np.frombuffer(payload, dtype="<i4", count=n, offset=at)
    at += 4 * n
    at += -at % 8
    rows = np.frombuffer(payload, dtype="<f8", count=n * d, offset=at).reshape(n, d)
    if at + 8 * n * d != len(payload) or int(blocks.sum()) != n:
        raise ValueError("its counts do not match its length")
    return Record(first_row, rows.astype(np.float64), labels.astype(np.int32), tuple(int(b) for b in blocks))


def _scan(data: bytes, start: int) -> Iterator[tuple[int, Record | None]]:
    """``(offset, record)`` of each record from ``start`` on; ``(offset, None)`` at the first bad one."""
    view = memoryview(data)
    at = start
    while at < len(data):
        if len(data) - at < _RECORD_HEAD.size:
            yield at, None
            return
        magic, size, first, crc, head_crc = _RECORD_HEAD.unpack_from(data, at)
        body = at + _RECORD_HEAD.size
        if (
            magic != RECORD_MAGIC
            or zlib.crc32(view[at : at + 24]) != head_crc
            or size > _MAX_PAYLOAD
            or body + size > len(data)
            or zlib.crc32(view[body : body + size]) != crc
        ):
            yield at, None
            return
        try:
            record = _decode_payload(first, view[body : body + size])
        except ValueError:
            yield at, None
            return
        yield at, record
        at = body + size


def _good_record_after(data: bytes, offset: int) -> bool:
    """Whether a valid record starts anywhere after ``offset`` (then the damage is not a torn tail)."""
    at = data.find(RECORD_MAGIC, offset + 1)
    while at >= 0:
        found = next(_scan(data, at), (at, None))[1]
        if found is not None:
            return True
        at = data.find(RECORD_MAGIC, at + 1)
    return False


class WriteAheadLog:
    """The log in ``directory``, opened for appending by this process only.

    Use :meth:`open`; then :meth:`records` to replay, :meth:`append` + :meth:`commit` to log
    (records appended before one commit share its ``fsync``), :meth:`drop_before` to delete
    segments a published version covers, :meth:`close` to release the lock.
    """

    def __init__(self, directory: Path, lock_fd: int, n_features: int | None, segment_bytes: int) -> None:
        self.directory, self._lock_fd = directory, lock_fd
        self.n_features, self.segment_bytes = n_features, int(segment_bytes)
        self._mutex = threading.Lock()  # the writer appends while a publisher drops segments
        self.next_row = 0
        self.truncated_bytes = 0  # cut off a torn tail when opened
        self.fsyncs, self.fsync_seconds, self.bytes_written = 0, 0.0, 0
        self._fh: io.FileIO | None = None
        self._pending = 0  # bytes appended since the last commit
        self._segments: list[tuple[int, Path]] = []  # (first row, path), in order

    # --- opening -----------------------------------------------------------------------------
    @classmethod
    def open(
        cls, directory: str | os.PathLike[str], *, n_features: int | None = None, segment_bytes: int = SEGMENT_BYTES
    ) -> WriteAheadLog:
        """Lock ``directory`` (created if missing), check every segment, cut a torn tail.
        ``n_features``: the rows' width (None: the first record's, checked against every other)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise LogBusy(
                f"the write-ahead log is in use by another learning service (pid {holder})",
                path=directory,
                fix="stop that service first, or give this one another model line (another --wal-dir)",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        log = cls(directory, fd, n_features, segment_bytes)
        try:
            log._recover()
        except BaseException:
            log.close()
            raise
        return log

    def _recover(self) -> None:
        names = sorted(e.name for e in os.scandir(self.directory) if _SEGMENT_NAME.fullmatch(e.name))
        expected: int | None = None
        for i, name in enumerate(names):
            path = self.directory / name
            first = int(_SEGMENT_NAME.fullmatch(name)[1])  # type: ignore[index]
            last = i == len(names) - 1
            end = self._check_segment(path, first, last=last)
            if end is None:  # the newest segment's own header was torn: it held nothing
                path.unlink()
                fsync_dir(self.directory)
                continue
            if expected is not None and first != expected:
                raise DataError(
                    f"the write-ahead log has a gap: a segment starts at row {first}, the one before it "
                    f"ends at row {expected}",
                    path=path,
                    fix=_DAMAGED_FIX,
                )
            self._segments.append((first, path))
            expected = end
        self.next_row = 0 if expected is None else expected

    def _check_segment(self, path: Path, first: int, *, last: bool) -> int | None:
        """The end row of a segment; a torn tail of the newest segment is cut (None: nothing left)."""
        data = path.read_bytes()
        if last and len(data) < _SEGMENT_HEAD.size:
            return None  # a segment whose creation was cut short: it holds no record
        if _SEGMENT_HEAD.unpack_from(data)[0] != SEGMENT_MAGIC:
            raise DataError("not a segment of omkl-dist's write-ahead log", path=path, fix=_DAMAGED_FIX)
        if _SEGMENT_HEAD.unpack_from(data)[1] != first:
            raise DataError("the segment's first row differs from its name", path=path, fix=_DAMAGED_FIX)
        row = first
        for offset, record in _scan(data, _SEGMENT_HEAD.size):
            if record is None:
                if not last or _good_record_after(data, offset):
                    raise DataError(
                        f"a damaged record at byte {offset} of the write-ahead log", path=path, fix=_DAMAGED_FIX
                    )
                with open(path, "r+b") as fh:  # the torn tail of a write that was never acknowledged
                    fh.truncate(offset)
                    os.fsync(fh.fileno())
                self.truncated_bytes = len(data) - offset
                break
            if self.n_features is None:
                self.n_features = record.rows.shape[1]
            if record.first_row != row or record.rows.shape[1] != self.n_features:
                raise DataError(
                    f"the record at byte {offset} starts at row {record.first_row} with {record.rows.shape[1]} "
                    f"features; expected row {row} with {self.n_features}",
                    path=path,
                    fix=_DAMAGED_FIX,
                )
            row = record.end_row
        return row

    # --- reading -----------------------------------------------------------------------------
    def records(self, start_row: int = 0) -> Iterator[Record]:
        """The committed records from row ``start_row`` on (which must be a record boundary)."""
        with self._mutex:
            segments = list(self._segments)
        started = False
        for i, (first, path) in enumerate(segments):
            following = segments[i + 1][0] if i + 1 < len(segments) else self.next_row
            if following <= start_row:
                continue
            if first > start_row and not started:
                raise DataError(
                    f"the write-ahead log starts at row {first}, after row {start_row} where the replay starts",
                    path=path,
                    fix=_DAMAGED_FIX,
                )
            started = True
            for _, record in _scan(path.read_bytes(), _SEGMENT_HEAD.size):
                if record is None or record.end_row > self.next_row:
                    break
                if record.end_row <= start_row:
                    continue
                if record.first_row < start_row:
                    raise DataError(
                        f"row {start_row}, where the replay starts, falls inside a record "
                        f"(rows {record.first_row}..{record.end_row - 1})",
                        path=path,
                        fix=_DAMAGED_FIX,
                    )
                yield record

    @property
    def size_bytes(self) -> int:
        """Bytes in the log's segments now."""
        with self._mutex:
            return sum(path.stat().st_size for _, path in self._segments)

    @property
    def segments(self) -> list[Path]:
        with self._mutex:
            return [path for _, path in self._segments]

    # --- writing -----------------------------------------------------------------------------
    def start_at(self, row: int) -> None:
        """Number the next row ``row``: an empty log (a new line, or one whose folder was emptied)
        continues the line where its newest published version ends."""
        with self._mutex:
            if self._segments:
                raise ValueError("start_at: the log is not empty")
            self.next_row = int(row)

    def append(self, rows: NDArray[np.float64], labels: NDArray[np.int32], blocks: Sequence[int]) -> Record:
        """Write a record of the next rows (durable only after :meth:`commit`)."""
        if rows.ndim != 2 or rows.shape[1] != (self.n_features or rows.shape[1]):
            raise ValueError(f"rows of {self.n_features} features expected, got shape {rows.shape}")
        data = encode_record(self.next_row, rows, labels, blocks)
        with self._mutex:
            if self._fh is None or self._fh.tell() >= self.segment_bytes:
                self._rotate()
            assert self._fh is not None
            written = 0
            while written < len(data):  # (a raw write may take only part of a large buffer)
                written += self._fh.write(memoryview(data)[written:])
            self._pending += len(data)
            self.n_features = rows.shape[1]
        record = Record(self.next_row, rows, np.asarray(labels, dtype=np.int32), tuple(int(b) for b in blocks))
        self.next_row = record.end_row
        return record

    def commit(self) -> None:
        """Make every record appended so far durable: one ``fsync`` for all of them (group commit)."""
        with self._mutex:
            self._commit()

    def _commit(self) -> None:
        if self._fh is None or not self._pending:
            return
        t0 = time.perf_counter()
        os.fsync(self._fh.fileno())
        self.fsync_seconds += time.perf_counter() - t0
        self.fsyncs += 1
        self.bytes_written += self._pending
        self._pending = 0

    def _rotate(self) -> None:
        """Continue in the newest segment, or start a new one at the next row (its header fsync'd
        with the folder, so a crash never leaves a segment the folder does not list)."""
        if self._fh is not None:
            self._commit()
            self._fh.close()
            self._fh = None
        elif self._segments and self._segments[-1][1].stat().st_size < self.segment_bytes:
            self._fh = open(self._segments[-1][1], "ab", buffering=0)  # noqa: SIM115 - kept open while logging
            return
        path = self.directory / f"wal-{self.next_row:020d}.log"
        fh = open(path, "xb", buffering=0)  # noqa: SIM115
        fh.write(_SEGMENT_HEAD.pack(SEGMENT_MAGIC, self.next_row))
        os.fsync(fh.fileno())
        fsync_dir(self.directory)
        self._fh = fh
        self._segments.append((self.next_row, path))

    def drop_before(self, row: int) -> list[Path]:
        """Delete the segments whose rows all lie before ``row`` (a published version holds them);
        the newest segment is kept. Returns the paths deleted."""
        doomed = []
        with self._mutex:
            while len(self._segments) > 1 and self._segments[1][0] <= row:
                doomed.append(self._segments.pop(0)[1])
        for path in doomed:
            path.unlink()
        if doomed:
            fsync_dir(self.directory)
        return doomed

    def close(self) -> None:
        """Commit what is pending, close the segment, release the lock."""
        with self._mutex:
            if self._fh is not None:
                self._commit()
                self._fh.close()
                self._fh = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = -1
