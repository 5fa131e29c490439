"""A job's rows in one order however they are read: a data file parsed into memory (``omkl run
FILE``) and the same file ingested and streamed (``omkl submit FILE`` ingests it) give the same
rows of the same window in the same order, also past one storage chunk (65,536 rows)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.storage import ingest
from omkl_dist.storage import stream as stream_module
from omkl_dist.storage.job_data import mixing_advice, open_job_rows
from omkl_dist.storage.layout import DEFAULT_CHUNK_ROWS

N = DEFAULT_CHUNK_ROWS + 4_464  # two storage chunks once ingested


@pytest.fixture(scope="module")
def file_and_copy(tmp_path_factory):
    """A file whose first feature is the row's number, sorted by label (the first half -1), and its
    ingested copy with the default chunks."""
    root = tmp_path_factory.mktemp("rows")
    ids = np.arange(N)
    labels = np.where(ids < N // 2, -1, 1)
    src = root / "ids.txt"
    src.write_text("".join(f"{lab} {i} {i % 7}\n" for i, lab in zip(ids, labels)))
    ingest(src, root / "copy")
    return src, root / "copy"


def _ids(rows):
    if rows.stream is None:
        return rows.X[:, 0].astype(int), rows.y
    X, y = rows.stream.cursor().take(rows.n_rows)
    return X[:, 0].astype(int), y


@pytest.mark.parametrize("start, stop", [(0, None), (0, 5_000), (1_000, 68_000)])
@pytest.mark.parametrize("permute", [True, False])
def test_a_file_in_memory_learns_its_ingested_copys_rows_in_its_order(file_and_copy, start, stop, permute):
    src, copy = file_and_copy
    window = {"seed": 3, "feed_rows": 1000, "permute": permute, "start": start, "stop": stop}
    in_memory, streamed = open_job_rows(str(src), **window), open_job_rows(str(copy), **window)
    assert in_memory.stream is None and streamed.stream is not None
    ids, y = _ids(in_memory)
    np.testing.assert_array_equal(ids, _ids(streamed)[0])
    np.testing.assert_array_equal(y, _ids(streamed)[1])
    # the window is the file's rows start:stop (--limit N: the first N), whatever the order
    np.testing.assert_array_equal(np.sort(ids), np.arange(start, N if stop is None else stop))
    assert np.array_equal(ids, np.sort(ids)) != permute


def test_rows_grouped_by_label_get_a_note_and_mixed_ones_none(file_and_copy, monkeypatch):
    src, copy = file_and_copy
    for data in (src, copy):
        # narrow rows: the two chunks are shuffled together, uniformly
        assert open_job_rows(str(data), seed=3, feed_rows=1000).mixing_advice is None
        limited = open_job_rows(str(data), seed=3, feed_rows=1000, stop=20_000).mixing_advice  # --limit 20000
        assert limited.startswith("the window is not a sample of the data: rows 1-20,000 are 100% label '-1' (all")
        assert "shuffle the file's rows once" in limited
        assert open_job_rows(str(data), seed=3, feed_rows=1000, permute=False).mixing_advice is None
        assert open_job_rows(str(data), seed=3, feed_rows=1000, stop=60_000).mixing_advice is None  # 58 %
    monkeypatch.setattr(stream_module, "SHUFFLE_BYTES", 8)  # as wide rows are: a chunk at a time
    for data in (src, copy):
        note = open_job_rows(str(data), seed=3, feed_rows=1000).mixing_advice
        # rows 65,537-70,000 (the second chunk) are all label 1, half of those learnt are
        assert note == (
            "the rows are grouped by label, not mixed: a shuffle mixes 65,536 rows at a time, and rows "
            "65,537-70,000 are 100% label '1' (all rows learnt: 50%), so the job learns them together; shuffle "
            "the file's rows once (a header line kept first) and learn from that file"
        )


def test_mixing_advice_weighs_the_window_against_the_data_and_each_part_against_the_window():
    label_map, wide = [["a", 0], ["b", 1], ["c", 2]], 200_000  # (features: a chunk of 100 rows at a time)
    rng = np.random.default_rng(0)
    assert mixing_advice(rng.integers(0, 3, 1000), 0, 1000, 1, wide, 100, label_map) is None  # shuffled
    grouped = np.repeat([0, 1, 2], 400)
    note = mixing_advice(grouped, 0, 1200, 1, wide, 100, label_map)
    assert note.startswith("the rows are grouped by label, not mixed: a shuffle mixes 100 rows at a time, and rows ")
    assert "are 100% label" in note and "(all rows learnt: 33%)" in note
    assert mixing_advice(grouped, 0, 1200, 1, 3, 100, label_map) is None  # narrow rows: one uniform shuffle
    assert mixing_advice(grouped, 0, 300, 1, wide, 100, label_map).startswith(
        "the window is not a sample of the data: rows 1-300 are 100% label 'a' (all rows: 33%)"
    )
    a_run = np.concatenate([rng.integers(0, 3, 50), np.zeros(50, dtype=np.int64), rng.integers(0, 3, 600)])
    assert "rows 51-100 are 100% label 'a'" in mixing_advice(a_run, 50, 700, 1, wide, 100, label_map)
    assert mixing_advice(grouped[:90], 0, 90, 1, wide, 100, label_map) is None  # a single chunk
