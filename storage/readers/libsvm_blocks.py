"""Large LIBSVM files read block by block, as :mod:`.blocks` reads CSV/TSV files.

:func:`.libsvm.read_libsvm` parses a file whole and then densifies it: the content, scikit-learn's
sparse matrix and the dense features are in memory at once -- a 71 MiB file of a9a's shape (123
binary features, 1,000,000 rows) peaks at 1.56 GB (0.42 GB block by block). A LIBSVM file of
:data:`~.blocks.STREAM_MIN_BYTES` or more whose features are stored dense (its largest index under
:data:`~.dataset.SPARSE_MIN_FEATURES`, or ``sparse=False``) is read in blocks of whole lines instead:
a first pass checks every row (each block parsed by scikit-learn's parser, as the whole-file
reader's) and keeps the labels (an index among the distinct labels, 4 bytes a row), the largest
feature index (the width) and where each row's line is; a second yields the dense features block
by block -- from the first pass's parse, kept on disk beside the dataset being written, when
ingested (:meth:`LibsvmBlockFile.checked_chunks`), else parsed again. The dataset is the whole-file
reader's bit for bit, and so are its errors: a block's bad line is named by the whole-file reader's
own diagnosis; what is not read the same way (rows without labels when labels are wanted, a file of
sparse features, a parse error it cannot name) raises :class:`~.blocks.NotStreamed` and the file is
read whole (tests/test_libsvm_blocks.py compares them).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..errors import DataError
from ..labels import nonfinite_label
from .blocks import LabelCodes, NotStreamed, Span, line_blocks, row_line
from .dataset import SPARSE_MIN_FEATURES, nonfinite_feature
from .libsvm import UNLABELLED_LATER_ROW, UNLABELLED_ROW, check_dense_size, densify_into, diagnose_libsvm
from .textio import text_lines


@dataclass
class LibsvmBlockFile:
    """A LIBSVM file as :func:`open_libsvm_blocks` found it (the first pass): its rows, width (the
    largest feature index), non-zeros and labels (None: read without labels)."""

    path: Path
    sha256: str
    no_labels: bool  # ``label_column="none"``: rows to predict (a row without a label read as the whole reader does)
    dense_chosen: bool  # ``sparse=False``: the caller asked for dense features (the refusal's fix says so)
    n_rows: int = 0
    width: int = 0  # the features: n_features when given, else the largest index
    nnz: int = 0
    top: int = 0  # the largest feature index
    top_row: int = 0  # the first row holding it (named by a refusal)
    labels: tuple[NDArray[Any], NDArray[np.int32]] | None = None
    spans: list[Span] = field(default_factory=list)
    sparse: bool | None = None  # as read_dataset's: None, decided by the width
    n_features: int | None = None  # the width given (None: the largest index)
    checked: bool = False  # the first pass has run
    spilled: list[Path] | None = None  # the first pass's parsed blocks, saved for the second (checked_chunks)
    # what the ingest and read_dataset read of a block file (a LIBSVM file has no header, no dropped column)
    fmt: ClassVar[str] = "libsvm"
    names: ClassVar[None] = None
    feature_names: ClassVar[None] = None
    label_name: ClassVar[None] = None
    dropped: ClassVar[list[int]] = []
    kept: ClassVar[list[int]] = []
    label_given: ClassVar[bool] = True

    @property
    def labelled(self) -> bool:
        """Whether the rows have labels (not read as rows to predict)."""
        return not self.no_labels

    def line_of(self, row: int) -> int:
        """The file's line number of data row ``row`` (0-based)."""
        return row_line(self.spans, row)

    @staticmethod
    def column_of(j: int) -> int:
        return j + 1  # a column is named by its index in the file

    def check_size(self, *, held: bool) -> None:
        """The whole-file reader's refusal of a dense matrix that is huge and nearly empty (a stray
        index), or (``held``: in memory whole) cannot fit."""
        check_dense_size(
            self.n_rows,
            self.nnz,
            self.width,
            self.top,
            lambda: self.line_of(self.top_row),
            self.path,
            chosen=self.dense_chosen,
            held=held,
        )

    def chunks(self, rows: int) -> Iterator[tuple[NDArray[np.float64], None]]:
        """``(features, None)``: :meth:`feature_chunks` (a LIBSVM file has no columns to keep)."""
        return ((X, None) for X in self.feature_chunks(rows))

    def checked_chunks(
        self, rows: int, work: Path, progress: Callable[[int], None] | None = None
    ) -> Iterator[tuple[NDArray[np.float64], None]]:
        """:meth:`chunks` after the first pass (its width, the largest index, is known only at its end),
        unless :func:`open_libsvm_blocks` ran it: that pass saves each block as scikit-learn parsed it
        into the new folder ``work`` (the non-zeros, 12 bytes each: 3.1 times the text of a9a's 0/1 features,
        about its size for features written with several digits), and the chunks are made from them
        instead of a second parse. The caller removes ``work``. ``progress``: the first pass's, as
        :func:`.blocks.line_blocks`'s."""
        if not self.checked:
            work.mkdir()
            _first_pass(self, spill=work, progress=progress)
        return self.chunks(rows)

    def feature_chunks(self, rows: int) -> Iterator[NDArray[np.float64]]:
        """The dense features in chunks of ``rows`` rows (the last shorter), in row order: the second
        pass. Each block's non-zeros are written straight into the chunk (a block of a9a's shape
        is 13 times larger dense than as text: no dense copy of it is made)."""
        chunk, filled, left = None, 0, self.n_rows
        for X in self._parsed_blocks():
            done = 0
            while done < X.shape[0]:
                if chunk is None:
                    if left <= 0:
                        raise self._changed()
                    chunk, filled = np.zeros((min(rows, left), self.width)), 0
                take = min(len(chunk) - filled, X.shape[0] - done)
                densify_into(chunk, X[done : done + take], filled)
                filled, done, left = filled + take, done + take, left - take
                if filled == len(chunk):
                    yield chunk
                    chunk = None
        if chunk is not None:
            raise self._changed()

    def _parsed_blocks(self) -> Iterator[sp.csr_matrix]:
        """Each block's features: as the first pass saved them, else parsed again."""
        if self.spilled is not None:
            yield from (sp.load_npz(part) for part in self.spilled)
            return
        for block, line in line_blocks(self.path):
            try:
                yield self.parsed_block(block, line, self.width)[0]
            except NotStreamed:
                raise self._changed() from None

    def _changed(self) -> DataError:
        """The second pass read other rows than the first."""
        return DataError("the file changed while it was read", path=self.path, fix="read it again")

    def matrix(self) -> tuple[NDArray[np.float64], None]:
        """``(features, None)``: the features as one float64 matrix, filled block by block, refused as
        the whole-file reader refuses one that cannot fit (a LIBSVM file has no columns to keep)."""
        self.check_size(held=True)
        X = np.empty((self.n_rows, self.width))
        lo = 0
        for chunk in self.feature_chunks(2**16):
            X[lo : lo + len(chunk)] = chunk
            lo += len(chunk)
        return X, None

    def parsed_block(
        self, block: bytes, first_line: int, width: int | None = None
    ) -> tuple[sp.csr_matrix, NDArray[np.float64]]:
        """A block's features (``width`` wide: default its largest index) and labels, parsed as the
        whole-file reader parses them (its first line: line ``first_line`` of the file)."""
        from sklearn.datasets import load_svmlight_file

        if UNLABELLED_ROW.match(block) or UNLABELLED_LATER_ROW.search(block):
            if not self.no_labels:
                raise NotStreamed("rows without labels")  # (the whole-file reader's refusal names them)
            block = UNLABELLED_ROW.sub(b"0 ", block)
        try:
            X, y = load_svmlight_file(io.BytesIO(block), n_features=width, zero_based=False)
        except (ValueError, OverflowError):
            diagnose_libsvm(block, self.path, first_number=first_line)
            raise NotStreamed("a line scikit-learn's parser refuses") from None  # (the whole reader words it)
        return X, y


def open_libsvm_blocks(
    path: Path,
    sha256: str,
    *,
    no_labels: bool,
    sparse: bool | None,
    n_features: int | None = None,
    check: bool = True,
    progress: Callable[[int], None] | None = None,
) -> LibsvmBlockFile:
    """``path`` (a LIBSVM file, :data:`~.blocks.STREAM_MIN_BYTES` or more) read block by block: the
    first pass (``check=False``: later, by :meth:`LibsvmBlockFile.checked_chunks`). Raises
    :class:`NotStreamed` for a file the whole-file reader reads otherwise (sparse features...) and
    :class:`DataError` for a bad row, exactly as it would. ``progress``: the first pass's, as
    :func:`.blocks.line_blocks`'s."""
    if sparse or (sparse is None and n_features is not None and n_features >= SPARSE_MIN_FEATURES):
        raise NotStreamed("sparse features")  # (kept sparse by the whole-file reader)
    file = LibsvmBlockFile(path, sha256, no_labels, dense_chosen=sparse is False, sparse=sparse, n_features=n_features)
    if check:
        _first_pass(file, progress=progress)
    return file


def _first_pass(
    file: LibsvmBlockFile, spill: Path | None = None, progress: Callable[[int], None] | None = None
) -> None:
    """Every row parsed and checked; the rows, width, non-zeros and labels kept; each block's parse
    saved in the folder ``spill`` (if given) for the second pass."""
    path, sparse, n_features, no_labels = file.path, file.sparse, file.n_features, file.no_labels
    file.spilled = [] if spill is not None else None
    codes = LabelCodes()
    bad_x: tuple[int, int, float] | None = None
    bad_y: tuple[int, float] | None = None
    for block, first_line in line_blocks(path, progress):
        X, y = file.parsed_block(block, first_line)
        if spill is not None and file.spilled is not None:
            file.spilled.append(spill / f"{len(file.spilled):07d}.npz")
            sp.save_npz(file.spilled[-1], X, compressed=False)
        if X.nnz:
            filled = np.flatnonzero(np.diff(X.indptr) > 0)
            row_max = np.maximum.reduceat(X.indices, X.indptr[filled]) + 1
            k = int(np.argmax(row_max))
            if row_max[k] > file.top:
                file.top, file.top_row = int(row_max[k]), file.n_rows + int(filled[k])
            if sparse is None and n_features is None and file.top >= SPARSE_MIN_FEATURES:
                raise NotStreamed("sparse features")  # (kept sparse by the whole-file reader)
            bad = np.flatnonzero(~np.isfinite(X.data))
            if bad_x is None and len(bad):
                row = int(np.searchsorted(X.indptr, bad[0], side="right")) - 1
                bad_x = (file.n_rows + row, int(X.indices[bad[0]]), float(X.data[bad[0]]))
        if not no_labels:
            if bad_y is None and not np.isfinite(y).all():
                row = int(np.flatnonzero(~np.isfinite(y))[0])
                bad_y = (file.n_rows + row, float(y[row]))
            codes.add(y)
        file.spans.append(Span(file.n_rows, first_line, _row_lines(block, first_line, X.shape[0])))
        file.n_rows += X.shape[0]
        file.nnz += X.nnz
    if not file.n_rows or not file.top:
        raise NotStreamed("no rows or no features")  # (the whole-file reader's error, or its empty matrix)
    if n_features is not None and file.top > n_features:
        raise DataError(
            f"feature index {file.top} is above n_features={n_features}",
            path=path,
            row=file.line_of(file.top_row),
            column=file.top,
            fix="correct the index, or raise --n-features",
        )
    file.width = file.top if n_features is None else n_features
    file.check_size(held=False)  # (the whole-file reader's checks, in its order: the matrix's size, features, labels)
    if bad_x is not None:
        row, col, value = bad_x
        raise nonfinite_feature(value, path, file.line_of(row), file.column_of(col))
    if bad_y is not None:
        raise nonfinite_label(bad_y[1], path, file.line_of(bad_y[0]))
    file.labels = None if no_labels else codes.result()
    file.checked = True


def _row_lines(block: bytes, first_line: int, rows: int) -> NDArray[np.int64] | None:
    """Each row's line number when the block has lines that are no rows (blank, comments), else None."""
    if block.count(b"\n") + (not block.endswith(b"\n")) == rows:
        return None
    lines = [n for n, line in text_lines(block, first_number=first_line) if line.split(b"#", 1)[0].strip()]
    return np.array(lines, dtype=np.int64)
