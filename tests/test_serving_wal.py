"""The write-ahead log of omkl serve: records round-trip, group commit, a torn tail cut, damage
refused, one writer, segments rotated and dropped (omkl_dist/serving/wal.py)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.serving.wal import LogBusy, WriteAheadLog, encode_record
from omkl_dist.storage.errors import DataError

D = 3


def _rows(seed: int, n: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, D)), rng.integers(0, 3, n).astype(np.int32)


def _fill(folder, sizes, **options):
    """A log with one committed record per size; returns what was logged."""
    log = WriteAheadLog.open(folder, n_features=D, **options)
    logged = []
    for i, n in enumerate(sizes):
        rows, labels = _rows(i, n)
        blocks = [n] if n < 3 else [n - 2, 2]
        logged.append(log.append(rows, labels, blocks))
        log.commit()
    log.close()
    return logged


def _same(a, b):
    assert a.first_row == b.first_row and a.blocks == b.blocks
    assert a.rows.tobytes() == b.rows.tobytes() and np.array_equal(a.labels, b.labels)


def test_records_round_trip_with_their_blocks(tmp_path):
    logged = _fill(tmp_path / "wal", [5, 1, 7])
    log = WriteAheadLog.open(tmp_path / "wal")
    try:
        read = list(log.records())
        assert log.next_row == 13 and log.n_features == D and log.truncated_bytes == 0
        assert len(read) == 3
        for a, b in zip(read, logged, strict=True):
            _same(a, b)
        assert [len(r) for r, _ in read[2].calls()] == [5, 2]
        assert [r.first_row for r in log.records(5)] == [5, 6]
        with pytest.raises(DataError, match="falls inside a record"):
            list(log.records(3))
    finally:
        log.close()


def test_group_commit_is_one_fsync_for_every_record_waiting(tmp_path):
    log = WriteAheadLog.open(tmp_path / "wal", n_features=D)
    for i in range(5):
        log.append(*_rows(i, 4), [4])
    log.commit()
    log.commit()  # nothing new: no fsync
    assert log.fsyncs == 1
    log.close()
    reopened = WriteAheadLog.open(tmp_path / "wal")
    assert reopened.next_row == 20
    reopened.close()


@pytest.mark.parametrize("cut", ["mid-payload", "mid-header", "zeros", "garbage"])
def test_a_torn_final_record_is_cut_and_the_log_goes_on(tmp_path, cut):
    logged = _fill(tmp_path / "wal", [5, 4])
    (segment,) = sorted((tmp_path / "wal").glob("wal-*.log"))
    whole = segment.stat().st_size
    torn = encode_record(9, *_rows(9, 6), [6])
    tail = {
        "mid-payload": torn[: len(torn) // 2],
        "mid-header": torn[:10],
        "zeros": bytes(300),  # a power cut: the file grew, its data never arrived
        "garbage": b"\x17" * 50,
    }[cut]
    with open(segment, "ab") as fh:
        fh.write(tail)
    log = WriteAheadLog.open(tmp_path / "wal")
    assert log.truncated_bytes == len(tail) and segment.stat().st_size == whole
    assert log.next_row == 9
    for a, b in zip(log.records(), logged, strict=True):
        _same(a, b)
    log.append(*_rows(20, 2), [2])  # the log continues right after the last whole record
    log.commit()
    log.close()
    again = WriteAheadLog.open(tmp_path / "wal")
    assert [r.first_row for r in again.records()] == [0, 5, 9] and again.next_row == 11
    again.close()


def test_damage_before_the_tail_is_refused_not_cut(tmp_path):
    _fill(tmp_path / "wal", [5, 4, 3])
    (segment,) = sorted((tmp_path / "wal").glob("wal-*.log"))
    data = bytearray(segment.read_bytes())
    data[16 + 28 + 20] ^= 0xFF  # a byte of the first record's payload
    segment.write_bytes(bytes(data))
    with pytest.raises(DataError, match="damaged record at byte 16"):
        WriteAheadLog.open(tmp_path / "wal")
    assert segment.stat().st_size == len(data)  # nothing cut


def test_a_second_writer_is_refused(tmp_path):
    log = WriteAheadLog.open(tmp_path / "wal", n_features=D)
    try:
        with pytest.raises(LogBusy, match="in use by another learning service"):
            WriteAheadLog.open(tmp_path / "wal", n_features=D)
    finally:
        log.close()
    WriteAheadLog.open(tmp_path / "wal", n_features=D).close()  # released on close


def test_segments_rotate_and_are_dropped_once_covered(tmp_path):
    logged = _fill(tmp_path / "wal", [6] * 8, segment_bytes=400)
    log = WriteAheadLog.open(tmp_path / "wal", segment_bytes=400)
    try:
        firsts = [int(p.name[4:-4]) for p in log.segments]
        assert len(firsts) > 2 and firsts[0] == 0
        dropped = log.drop_before(firsts[2])
        assert [int(p.name[4:-4]) for p in dropped] == firsts[:2]
        assert not any(p.exists() for p in dropped)
        kept = list(log.records(firsts[2]))
        assert [r.first_row for r in kept] == [r.first_row for r in logged if r.first_row >= firsts[2]]
        with pytest.raises(DataError, match="starts at row"):
            list(log.records(0))
        log.drop_before(10**9)
        assert len(log.segments) == 1  # the newest segment is always kept
    finally:
        log.close()


def test_a_segment_whose_creation_was_cut_short_is_removed(tmp_path):
    _fill(tmp_path / "wal", [5])
    stub = tmp_path / "wal" / f"wal-{5:020d}.log"
    stub.write_bytes(b"OMKLW")
    log = WriteAheadLog.open(tmp_path / "wal")
    assert not stub.exists() and log.next_row == 5
    log.close()


def test_a_gap_between_segments_is_refused(tmp_path):
    _fill(tmp_path / "wal", [6] * 6, segment_bytes=400)
    segments = sorted((tmp_path / "wal").glob("wal-*.log"))
    segments[1].unlink()
    with pytest.raises(DataError, match="gap"):
        WriteAheadLog.open(tmp_path / "wal")
