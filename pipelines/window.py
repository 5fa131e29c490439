"""A data window: rows ``[start, stop)`` of an ingested dataset, named explicitly (never "the
latest"), with a content hash, split into a training head and a held-out tail."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass

import numpy as np

from omkl_dist.preprocessing import ColumnEncoder
from omkl_dist.storage import open_stream
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.job_data import is_ingested
from omkl_dist.storage.location import location, text


@dataclass(frozen=True)
class Window:
    """Rows ``start:stop`` of ``data``; the last ``holdout`` of them are the gate's held-out tail."""

    data: object
    meta: dict
    start: int
    stop: int
    holdout: int

    @property
    def split(self) -> int:
        """The first held-out row."""
        return self.stop - self.holdout

    @property
    def n_rows(self) -> int:
        return self.stop - self.start

    @property
    def columns(self) -> ColumnEncoder | None:
        """The encoder that made the dataset's features of a table's raw columns (None: numbers as read)."""
        return None if "columns" not in self.meta else ColumnEncoder.from_dict(self.meta["columns"])

    @property
    def label_map(self) -> list:
        return [list(pair) for pair in self.meta["label_map"]]

    def sha256(self) -> str:
        """The window's content hash: the stored checksums of every chunk it touches, its bounds and
        the dataset's shape, labels and dtype (each chunk is checked against them when read)."""
        rows = int(self.meta["chunk_rows"])
        first, last = self.start // rows, -(-self.stop // rows)
        sums = self.meta["checksums"]
        body = {
            "n_features": self.meta["n_features"],
            "dtype": self.meta["dtype"],
            "label_map": self.meta["label_map"],
            "chunk_rows": rows,
            "rows": [self.start, self.stop],
            "features": sums["features"][first:last],
            "labels": sums["labels"][first:last],
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def describe(self) -> dict:
        return {
            "source": text(self.data),
            "rows": [self.start, self.stop],
            "n_rows": self.n_rows,
            "train_rows": [self.start, self.split],
            "holdout_rows": [self.split, self.stop],
            "sha256": self.sha256(),
            "dataset_sha256": self.meta.get("meta_sha256"),
        }

    def blocks(self, lo: int, hi: int, block_rows: int, scaler=None, *, first: int | None = None):
        """Rows ``lo:hi`` in order, ``block_rows`` at a time (the first block ``first`` rows, if
        given), as (X, y) with X scaled by ``scaler``."""
        cursor = open_stream(self.data, start=lo, stop=hi).cursor()
        n, left = first or block_rows, hi - lo
        while left > 0:
            X, y = cursor.take(min(n, left))
            yield (scaler.transform(X) if scaler is not None else X), y
            left -= len(y)
            n = block_rows

    def read(self, lo: int, hi: int, scaler=None) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo:hi`` in memory (a batch model's training set)."""
        Xs, ys = zip(*self.blocks(lo, hi, 65_536, scaler))
        return np.concatenate(Xs), np.concatenate(ys)


_ROWS = re.compile(r"\s*(\d*)\s*:\s*(\d*)\s*")
_PARTITION = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def open_window(data, *, rows: str | None = None, partition: str | None = None, holdout: float = 0.2) -> Window:
    """The window of the ingested dataset ``data``: all its rows, ``rows="A:B"`` or the
    ``partition="I/N"``-th of N equal parts (0-based); the last ``holdout`` share is held out."""
    path = location(data)
    try:
        meta = open_stream(path).meta  # the window is learnt from: a dataset without labels is refused
    except DataError as exc:
        if is_ingested(path):
            raise  # a dataset, damaged or without labels: its own error says what to do
        raise DataError(
            f"--data must be an ingested dataset ({exc})",
            path=path,
            fix="ingest the window first: omkl data ingest FILE --out DIR",
        ) from None
    total = int(meta["n_rows"])
    if rows is not None and partition is not None:
        raise ValueError("give --rows or --partition, not both")
    start, stop = 0, total
    if rows is not None:
        m = _ROWS.fullmatch(rows)
        if not m:
            raise ValueError(f"--rows must look like START:STOP (e.g. 0:100000), got {rows!r}")
        start, stop = int(m[1] or 0), int(m[2] or total)
        if not 0 <= start < stop <= total:
            raise ValueError(f"--rows {rows}: the dataset has rows 0:{total}; give 0 <= START < STOP <= {total}")
    elif partition is not None:
        m = _PARTITION.fullmatch(partition)
        if not m or not 0 <= int(m[1]) < int(m[2]):
            raise ValueError(f"--partition must be I/N with 0 <= I < N (e.g. 3/7), got {partition!r}")
        i, n = int(m[1]), int(m[2])
        start, stop = i * total // n, (i + 1) * total // n
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"--holdout must be a share in (0, 1), got {holdout}")
    held = max(1, int(round(holdout * (stop - start))))
    option = "--rows" if rows is not None else "--partition" if partition is not None else "--data"
    _check_window_size(stop - start, held, holdout, option)
    return Window(path, meta, start, stop, held)


#: The fewest rows a retrain learns from and gates on: below this, one row's mistake moves the
#: held-out rate by more than 2 points and a version would be promoted on noise.
MIN_TRAIN_ROWS = MIN_HOLDOUT_ROWS = 50


def _check_window_size(n_rows: int, held: int, holdout: float, option: str) -> None:
    """A window long enough to train on (its head) and to gate on (its held-out tail)."""
    if held >= MIN_HOLDOUT_ROWS and n_rows - held >= MIN_TRAIN_ROWS:
        return
    need = max(
        MIN_TRAIN_ROWS + MIN_HOLDOUT_ROWS,
        math.ceil(MIN_HOLDOUT_ROWS / holdout),
        math.ceil(MIN_TRAIN_ROWS / (1.0 - holdout)),
    )
    raise ValueError(
        f"{option}: the window has {n_rows} row(s), {n_rows - held} to train on and {held} held out "
        f"(--holdout {holdout:g}); a retrain needs at least {MIN_TRAIN_ROWS} to train on and "
        f"{MIN_HOLDOUT_ROWS} to gate on. Fix: give a window of at least {need} rows"
    )
