"""Large CSV/TSV files read block by block: the rows of a file too large to parse whole in memory.

:func:`~.dispatch.read_dataset` parses a text file whole: its content, pyarrow's table of it and the
feature matrix are in memory at once, about five times the file (a 0.5 GB CSV of 3 million rows
peaked at 2.6 GB) -- a data team's 6 GB export would be killed by the kernel on a 24 GB machine.
:func:`open_blocks` reads a CSV or TSV file (with or without a header; plain, gzip, bzip2 or xz)
in blocks of whole lines instead. One pass checks every row and keeps the labels (for the label map,
which is known only at the end) and hands over the features as it parses them: to
:func:`~omkl_dist.storage.ingest`, which writes them chunk by chunk and the labels last
(:meth:`BlockFile.checked_chunks`; memory: the labels, and a few blocks); and to :func:`~.dispatch.read_dataset`,
which fills the matrix a job holds with them (:meth:`BlockFile.matrix`; a second pass where the space for
it cannot be reserved).

Each block is parsed by the whole-file reader's own function (:func:`.delimited.arrow_cells`), and
a bad row is diagnosed by its own :func:`.delimited.diagnose_delimited` (the counts and reference
rows of its messages taken over the whole file), so a file is read into the same numbers, label
map and errors as by the whole-file reader; what the block reader does not read the same way -- a
quoted field holding a delimiter, carriage returns alone, a zip archive -- raises :class:`NotStreamed`,
and the file is read whole (tests/test_blocks.py compares the two readers). Large LIBSVM files: :mod:`.libsvm_blocks`.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import stat
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..errors import DataError
from ..labels import default_label_column, has_no_labels, is_label_name, nonfinite_label, resolve_label_column
from . import textio
from .dataset import nonfinite_feature
from .delimited import (
    arrow_cells,
    column_namer,
    count_empty_fields,
    diagnose_delimited,
    drop_leading_lines,
    row_name_columns,
    split_fields,
    wrong_delimiter,
)
from .detect import check_format, detect_format, split_header
from .textio import content_chunks, first_lines, is_number, text_lines

if TYPE_CHECKING:
    from .libsvm_blocks import LibsvmBlockFile

#: Files at least this large (as stored) are read block by block; smaller ones whole.
STREAM_MIN_BYTES = 64 * 2**20
#: The bytes of text parsed at a time (whole lines: a block ends at a line end).
BLOCK_BYTES = 4 * 2**20
#: The start of the file its format and header are read from (detection reads its first 20 lines).
HEAD_BYTES = 2**20
_DELIMITERS = {"csv": ",", "csv_header": ",", "tsv_header": "\t"}


class NotStreamed(Exception):
    """The file is not read block by block (another format, quoted fields...): read it whole."""


@dataclass
class Span:
    """A block's rows: the first row's index, the first line's number, and each row's line number
    when blank lines make them other than consecutive."""

    first_row: int
    first_line: int
    lines: NDArray[np.int64] | None


@dataclass
class BlockFile:
    """A delimited text file as :func:`open_blocks` found it: its layout and (after the first pass)
    its rows' count and labels (None: rows without labels) -- numbers, or stripped text when some
    label is not a number."""

    path: Path
    fmt: str
    delimiter: str
    width: int
    names: list[str] | None
    label_col: int | None
    dropped: list[int]
    label_given: bool
    sha256: str
    n_rows: int = 0
    words: bool = False  # the labels are read as text (some label is not a number)
    labels: tuple[NDArray[Any], NDArray[np.int32]] | None = None  # (sorted distinct labels, each row's index)
    spans: list[Span] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)  # columns left out and kept as text (ids: ingest --keep)
    # the features matrix and kept columns the checking pass filled as it parsed (open_blocks's ``hold``)
    held: tuple[NDArray[np.float64], Any] | None = None

    @property
    def feature_names(self) -> list[str] | None:
        return [n for i, n in enumerate(self.names) if i not in self.dropped] if self.names else None

    @property
    def label_name(self) -> str | None:
        return self.names[self.label_col] if self.names and self.label_col is not None else None

    @property
    def labelled(self) -> bool:
        """Whether the rows have labels (a label column)."""
        return self.label_col is not None

    @property
    def left_out(self) -> list[int]:
        """The columns read as text and left out of the features: row names, columns left out by name."""
        return [d for d in self.dropped if d != self.label_col]

    @property
    def column_of(self) -> Callable[[int], str]:
        return column_namer(self.dropped, self.names)

    def line_of(self, row: int) -> int:
        """The file's line number of data row ``row`` (0-based)."""
        return row_line(self.spans, row)

    def feature_chunks(self, rows: int) -> Iterator[NDArray[np.float64]]:
        """The features in chunks of ``rows`` rows (the last shorter), in row order: the second pass
        (the rows were checked by the first)."""
        return (X for X, _ in self.chunks(rows))

    def chunks(self, rows: int) -> Iterator[tuple[NDArray[np.float64], Any]]:
        """``(features, kept columns)`` in chunks of ``rows`` rows (the last shorter), in row order: the
        kept columns as the text they hold (a pyarrow Table named as the header, None when none are kept)."""

        def blocks() -> Iterator[tuple[NDArray[np.float64], Any]]:
            for block, _ in _data_blocks(self):
                texts: dict[int, Any] = {}
                cells = arrow_cells(
                    _unquoted(block, self.delimiter),
                    self.delimiter,
                    self.label_col if self.words else None,
                    self.left_out,
                    texts,
                )
                if cells is None or cells[0].shape[1] != self.width:  # (it passed the first pass)
                    raise DataError("the file changed while it was read", path=self.path, fix="read it again")
                yield self.features_of(cells[0]), self.kept_of(texts)

        return _rechunked(blocks(), rows)

    def checked_chunks(
        self, rows: int, work: Path | None = None, progress: Callable[[int], None] | None = None
    ) -> Iterator[tuple[NDArray[np.float64], Any]]:
        """:meth:`chunks` read in the pass that checks every row and keeps the labels: ``n_rows``,
        ``labels`` and the line numbers are set once it has ended (a file of :func:`open_blocks`\'s
        ``check=False``). A bad row raises the error the checking pass raises, after the chunks
        before it; so does a non-finite value, after the last chunk (as the whole-file reader names it
        after its parse). (``work``: unused; a LIBSVM file's first pass keeps its parse there.) ``progress``:
        called with the bytes of the stored file read so far, as :func:`.textio.content_chunks` reads them."""
        return _rechunked(_checked_blocks(self, keep=True, progress=progress), rows)

    def features_of(self, table: NDArray[np.float64]) -> NDArray[np.float64]:
        """A block's features: its cells without the columns that are not features."""
        return np.delete(table, self.dropped, axis=1) if self.dropped else table

    def kept_of(self, texts: dict[int, Any]) -> Any:
        """A block's kept columns (a pyarrow Table named as the header; None when none are kept)."""
        if not self.kept:
            return None
        import pyarrow as pa

        assert self.names is not None  # (columns are kept by name)
        return pa.table({self.names[j]: texts[j] for j in self.kept})

    def matrix(self) -> tuple[NDArray[np.float64], Any]:
        """``(features, kept columns or None)``: the features as one float64 matrix, filled block by
        block (for a job that holds its rows in memory), refused when it would take more than half the
        memory available; the kept columns as :meth:`chunks` reads them (a pyarrow Table)."""
        import pyarrow as pa

        n_features = self.width - len(self.dropped)
        need = self.n_rows * n_features * 8
        if self.held is not None:
            held, self.held = self.held, None
            return held
        if need > textio.memory_budget():
            raise DataError(
                f"its {self.n_rows:,} rows x {n_features} features take {need / 2**30:.1f} GiB in memory, more than "
                "half the memory available",
                path=self.path,
                fix="ingest it (`omkl data ingest FILE --out DIR`: read block by block, never whole) and give the "
                "dataset folder DIR: a dataset is streamed chunk by chunk",
            )
        X = np.empty((self.n_rows, n_features))
        kept = []
        lo = 0
        for chunk, texts in self.chunks(2**16):
            X[lo : lo + len(chunk)] = chunk
            kept += [] if texts is None else [texts]
            lo += len(chunk)
        return X, pa.concat_tables(kept) if kept else None


def _rechunked(
    blocks: Iterator[tuple[NDArray[np.float64], Any]], rows: int
) -> Iterator[tuple[NDArray[np.float64], Any]]:
    """``(features, kept columns or None)`` of ``blocks`` regrouped in chunks of ``rows`` rows (the last shorter)."""
    import pyarrow as pa

    pending: list[NDArray[np.float64]] = []
    kept: list[Any] = []
    held = 0
    for X, texts in blocks:
        pending.append(X)
        if texts is not None:
            kept.append(texts)
        held += len(X)
        while held >= rows:
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            texts_joined = pa.concat_tables(kept) if kept else None
            yield joined[:rows], None if texts_joined is None else texts_joined.slice(0, rows)
            pending, held = [joined[rows:]], held - rows
            kept = [] if texts_joined is None else [texts_joined.slice(rows)]
    if held:
        yield np.concatenate(pending), pa.concat_tables(kept) if kept else None


def row_line(spans: list[Span], row: int) -> int:
    """The file's line number of data row ``row`` (0-based), of a file whose blocks are ``spans``."""
    span = spans[bisect.bisect_right([s.first_row for s in spans], row) - 1]
    offset = row - span.first_row
    return int(span.lines[offset]) if span.lines is not None else span.first_line + offset


class LabelCodes:
    """The labels of a file's blocks kept as each row's index among the sorted distinct labels (4
    bytes a row, not the text): :meth:`add` each block's, then :meth:`result`."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}  # label -> its index in order of appearance
        self._codes: list[NDArray[np.int32]] = []

    def add(self, y: NDArray[Any]) -> None:
        values, inverse = np.unique(y, return_inverse=True)
        index = np.array([self._ids.setdefault(v, len(self._ids)) for v in values.tolist()], dtype=np.int32)
        self._codes.append(index[inverse.ravel()])

    def result(self) -> tuple[NDArray[Any], NDArray[np.int32]]:
        """``(the distinct labels sorted as numpy's unique sorts them, each row's index among them)``."""
        found = np.array(list(self._ids))
        order = np.argsort(found, kind="stable")
        rank = np.empty(len(order), dtype=np.int32)
        rank[order] = np.arange(len(order), dtype=np.int32)
        codes = np.concatenate(self._codes) if self._codes else np.empty(0, dtype=np.int32)
        return found[order], rank[codes]


def open_blocks(
    path: Path,
    *,
    fmt: str | None = None,
    label_column: str | int | None = None,
    label_by_names: Callable[[list[str]], tuple[str | int | None, list[str]]] | None = None,
    sparse: bool | None = None,
    n_features: int | None = None,
    leave_out: Collection[str] = (),
    keep: Collection[str] = (),
    check: bool = True,
    hold: bool = False,
    progress: Callable[[int], None] | None = None,
) -> BlockFile | LibsvmBlockFile:
    """``path`` read block by block: its header, then (a first pass) every row checked and the labels
    kept -- for a CSV/TSV file with ``check=False``, later, by :meth:`BlockFile.checked_chunks`.
    ``label_by_names``: the label column chosen from the header's names, and the columns to carry
    (kept, as ``keep``) (rows to predict, by the model's features), instead of ``label_column``. A
    LIBSVM file: :mod:`.libsvm_blocks` (``sparse``, ``n_features``: as :func:`~.dispatch.read_dataset`'s;
    a delimited file's width is checked against ``n_features`` by the caller). Raises
    :class:`NotStreamed` for a file under :data:`STREAM_MIN_BYTES` or not read alike (see the module),
    and :class:`DataError` for a bad row, exactly as :func:`~.dispatch.read_dataset` would. A file with
    a header: ``leave_out`` names columns that are not features (read as text), ``keep`` those of them
    kept (:meth:`BlockFile.chunks`). ``hold``: a CSV/TSV file's features are kept as the first pass
    parses them, for :meth:`BlockFile.matrix` (no second pass), unless they outgrow the memory the
    matrix may take (it is then refused). ``progress``: the first pass's, as :func:`line_blocks`'s."""
    try:
        info = path.stat()
    except OSError:
        raise NotStreamed("no file") from None  # (named by the whole-file reader)
    if not stat.S_ISREG(info.st_mode):  # a FIFO or device: the whole-file reader refuses it by name
        raise NotStreamed("not a regular file")
    if info.st_size < STREAM_MIN_BYTES:
        raise NotStreamed("small file")
    head = _head(path)
    if not head.strip():
        raise NotStreamed("blank start")
    fmt = check_format(fmt, path) if fmt is not None else detect_format(path, head)
    if fmt == "libsvm":
        from .libsvm_blocks import open_libsvm_blocks

        if label_column is not None and not has_no_labels(label_column):
            raise NotStreamed("a label column for a LIBSVM file")  # (the whole-file reader's error)
        no_labels = label_column is not None
        return open_libsvm_blocks(
            path,
            file_sha256(path),
            no_labels=no_labels,
            sparse=sparse,
            n_features=n_features,
            check=check,
            progress=progress,
        )
    if fmt not in _DELIMITERS:
        raise NotStreamed(fmt)
    file = _layout(path, head, fmt, label_column, label_by_names, list(leave_out), list(keep))
    if check:
        matrix = _FilledMatrix.allocate(file.width - len(file.dropped)) if hold else None
        for X, kept in _checked_blocks(file, keep=matrix is not None, progress=progress):
            if matrix is not None:
                matrix = matrix.add(X, kept)
        file.held = None if matrix is None else matrix.result()
    return file


class _FilledMatrix:
    """A file's features copied into one matrix as the checking pass parses them: allocated as large
    as a matrix may be (half the memory available: only the pages written take memory), cut to the
    rows at the end. Held blocks would cost the matrix twice: the freed blocks' memory stays with the
    allocator while the matrix is filled."""

    def __init__(self, X: NDArray[np.float64]) -> None:
        self.X, self.rows = X, 0
        self.kept: list[Any] = []

    @classmethod
    def allocate(cls, n_features: int) -> _FilledMatrix | None:
        """The matrix's space, or None where it cannot be reserved (no overcommit): two passes then."""
        try:
            return cls(np.empty((textio.memory_budget() // max(8 * n_features, 1), n_features)))
        except MemoryError:
            return None

    def add(self, X: NDArray[np.float64], kept: Any) -> _FilledMatrix | None:
        """Add a block's rows; None once they outgrow the space (the matrix would be refused)."""
        hi = self.rows + len(X)
        if hi > len(self.X):
            return None
        self.X[self.rows : hi] = X
        self.kept += [] if kept is None else [kept]
        self.rows = hi
        return self

    def result(self) -> tuple[NDArray[np.float64], Any]:
        """``(features, kept columns or None)``, as :meth:`BlockFile.matrix` returns them."""
        import pyarrow as pa

        self.X.resize((self.rows, self.X.shape[1]), refcheck=False)  # (its unwritten pages given back)
        return self.X, pa.concat_tables(self.kept) if self.kept else None


def _layout(
    path: Path,
    head: bytes,
    fmt: str,
    label_column: str | int | None,
    label_by_names: Callable[[list[str]], tuple[str | int | None, list[str]]] | None,
    leave_out: list[str],
    keep: list[str],
) -> BlockFile:
    """The file's columns, from its first block (as :func:`.delimited._read_delimited` finds them), and
    the columns ``leave_out`` and ``keep`` name left out (refused as the table reader refuses them), the
    ``keep`` ones kept."""
    delimiter = _DELIMITERS[fmt]
    body, first_number = drop_leading_lines(head, 0)
    first = first_lines(body, 1)
    names: list[str] | None = None
    if fmt != "csv":
        names = split_header(first[0], delimiter, path)  # (as read_dataset splits it first: no row named)
        if len(names) < 2:
            raise wrong_delimiter(first[0], delimiter, path, row=first_number, sample=body[:4096])
        body, first_number = drop_leading_lines(body, 1, first_number)
        if not first_lines(body, 1):
            raise NotStreamed("no data rows in the first block")
        first = first_lines(body, 1)
    width = len(names) if names is not None else len(split_fields(first[0], delimiter))
    if label_by_names is not None and names is not None:
        label_column, carried = label_by_names(names)
        keep = [*keep, *carried]
    leave_out = [*leave_out, *keep]
    label_col: int | None = None
    if not has_no_labels(label_column):
        if width < 2:
            raise wrong_delimiter(first[0], delimiter, path, row=first_number, sample=body[:4096])
        label_col = (
            default_label_column(names)
            if label_column is None
            else resolve_label_column(label_column, names, width, path)
        )
    dropped = sorted({*([] if label_col is None else [label_col]), *row_name_columns(names, label_col)})
    if leave_out:
        if names is None:
            raise NotStreamed("columns left out by name, without a header")  # (the whole-file reader's error)
        unknown = [name for name in leave_out if name not in names]
        if unknown or (label_col is not None and names[label_col] in leave_out):
            raise NotStreamed("a column to leave out that is not there, or the labels")  # (named by the table reader)
        dropped = sorted({*dropped, *(names.index(name) for name in leave_out)})
    label_given = label_column is not None
    kept = [names.index(name) for name in keep] if names is not None else []
    return BlockFile(path, fmt, delimiter, width, names, label_col, dropped, label_given, file_sha256(path), kept=kept)


def _checked_blocks(
    file: BlockFile, *, keep: bool, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[NDArray[np.float64], Any]]:
    """Every row parsed and checked (the first pass); the row count, line numbers and labels kept --
    each row's label as an index among the sorted distinct labels (4 bytes a row, not the text). A
    non-finite value is named after the whole file parsed (as the whole-file reader checks it after
    its parse). ``keep``: yields each block's ``(features, kept columns or None)`` as it is checked.
    The labels are read as numbers until one is a word; then every label is read again as text (as
    the whole-file reader reads them), from the first row -- the features of the rows already yielded
    are the same numbers, and are not yielded again. ``progress``: as :func:`line_blocks`'s, never
    back (the labels read again as words: the reports wait until the first reading's place is passed)."""
    yielded, reached = 0, 0

    def forward(done: int) -> None:
        nonlocal reached
        if progress is not None and done > reached:
            reached = done
            progress(done)

    for words in (False, True):
        codes = LabelCodes()
        nonfinite: tuple[int, int, float] | None = None
        nonfinite_y: tuple[int, float] | None = None
        file.spans, file.n_rows, file.words = [], 0, words
        for block, first_line in _data_blocks(file, forward):
            texts: dict[int, Any] | None = {} if keep and file.kept else None
            (table, y), block_words = _parse(file, block, first_line, words=words, texts=texts)
            if block_words and not words:  # a word among the labels: every label is text, from the first row
                break
            X = file.features_of(table)
            if keep and file.n_rows + len(X) > yielded:
                skip = yielded - file.n_rows  # (rows yielded before the labels turned out to be words)
                kept = file.kept_of(texts) if texts is not None else None
                yield X[skip:], None if kept is None else kept.slice(skip)
                yielded = file.n_rows + len(X)
            bad = ~np.isfinite(X)
            if nonfinite is None and bad.any():
                row, col = (int(v) for v in np.argwhere(bad)[0])
                nonfinite = (file.n_rows + row, col, float(X[row, col]))
            if file.label_col is not None:
                if not words and nonfinite_y is None and not np.isfinite(y).all():
                    row = int(np.flatnonzero(~np.isfinite(y))[0])
                    nonfinite_y = (file.n_rows + row, float(y[row]))
                codes.add(y)
            file.spans.append(Span(file.n_rows, first_line, _line_numbers(block, first_line, file.delimiter)))
            file.n_rows += len(table)
        else:
            break  # (the whole file read)
    if not file.n_rows:
        raise NotStreamed("no data rows")
    if nonfinite is not None:
        row, col, value = nonfinite
        raise nonfinite_feature(value, file.path, file.line_of(row), file.column_of(col))
    if nonfinite_y is not None:
        raise nonfinite_label(nonfinite_y[1], file.path, file.line_of(nonfinite_y[0]))
    if file.label_col is not None:
        file.labels = codes.result()


_Cells = tuple[NDArray[np.float64], NDArray[Any]]


def _parse(
    file: BlockFile, block: bytes, first_line: int, *, words: bool, texts: dict[int, Any] | None = None
) -> tuple[_Cells, bool]:
    """A block's cells and labels, and whether its labels are words: every cell a number first (the
    labels then numbers), else the labels as text -- the whole-file reader's order. ``texts``: the
    text columns' cells go there (:func:`.delimited.arrow_cells`)."""
    label_col = file.label_col
    quoted, block = block, _unquoted(block, file.delimiter)
    cells = None if words else arrow_cells(block, file.delimiter, text=file.left_out, texts=texts)
    if cells is not None and cells[0].shape[1] == file.width:
        return (cells[0], cells[0][:, label_col] if label_col is not None else cells[1]), False
    if label_col is not None:
        cells = arrow_cells(block, file.delimiter, label_col, file.left_out, texts)
        if cells is not None and cells[0].shape[1] == file.width:
            labels = np.unique(cells[1])
            if not (labels == "").any() and (words or not all(is_number(v) for v in labels)):
                return cells, True
    if cells is not None and cells[0].shape[1] != file.width:
        raise NotStreamed("a block of another width")  # (the whole-file reader's width check names it)
    # (a label column given or found by its name is not second-guessed in the fix, as by the whole-file reader)
    chosen = file.label_given or label_col is None or (file.names is not None and is_label_name(file.names[label_col]))
    diagnose_delimited(
        quoted,
        first_line,
        file.path,
        file.delimiter,
        file.width,
        label_col,
        file.names,
        chosen=chosen,
        reference=file.spans[0].first_line if file.spans and file.names is None else None,
        count_empty=lambda column: _count_empty(file, column),
        skip=file.left_out,
    )
    raise NotStreamed("a block only numpy's reader takes (quotes...)")


def _unquoted(block: bytes, delimiter: str) -> bytes:
    """``block`` with its quoted fields' quotes removed, when every quote opens or closes a whole field
    holding no quote, delimiter or line end (``"yes"``, ``"1"``: R's ``write.csv`` quotes every text and
    row name) -- read so, the fields are those the whole-file reader's quote-aware reader finds. Other
    quoting (a field with a delimiter inside...): :class:`NotStreamed`, the file is read whole."""
    if b'"' not in block:
        return block
    sep = re.escape(delimiter.encode())
    plain = re.sub(rb"(?<![^" + sep + rb'\n])"([^"' + sep + rb'\r\n]*)"(?=[' + sep + rb"\r\n]|\Z)", rb"\1", block)
    if b'"' in plain:
        raise NotStreamed("quoted fields holding delimiters or quotes")
    return plain


def _count_empty(file: BlockFile, column: int) -> int:
    """The rows of the whole file with an empty field in ``column`` (for an error's message)."""
    return sum(count_empty_fields(block, line, file.delimiter, column) for block, line in _data_blocks(file))


# a blank line inside a block: one search (two `in` tests took 5.7 ms a 4 MB block, this 1.5 ms)
_BLANK_LINE = re.compile(rb"\n\r?\n")


def _line_numbers(block: bytes, first_line: int, delimiter: str) -> NDArray[np.int64] | None:
    """Each row's line number when the block has blank lines (rows are then not one a line), else None."""
    if not (block.startswith((b"\n", b"\r\n")) or _BLANK_LINE.search(block)):
        return None
    return np.array([n for n, _ in text_lines(block, first_number=first_line, delimiter=delimiter)], dtype=np.int64)


def _data_blocks(file: BlockFile, progress: Callable[[int], None] | None = None) -> Iterator[tuple[bytes, int]]:
    """The blocks after the header: ``(bytes, line number of the first line)``."""
    for block, first_line in line_blocks(file.path, progress):
        if first_line == 1:
            block, first_line = drop_leading_lines(block, 0 if file.names is None else 1)
            if not block:
                continue
        yield block, first_line


def _head(path: Path) -> bytes:
    """The first :data:`HEAD_BYTES` or so of the content, whole lines (the format's and header's sniffing)."""
    parts, size = [], 0
    for block, _ in line_blocks(path):
        parts.append(block)
        size += len(block)
        if size >= HEAD_BYTES:
            break
    return b"".join(parts)


def line_blocks(path: Path, progress: Callable[[int], None] | None = None) -> Iterator[tuple[bytes, int]]:
    """The file's content in blocks of whole lines (about :data:`BLOCK_BYTES`), with the line number
    of each block's first line (see :func:`_check_lines`); the LIBSVM reader's too. ``progress``: as
    :func:`.textio.content_chunks`'s."""
    chunks = content_chunks(path, BLOCK_BYTES, progress)
    if chunks is None:
        raise NotStreamed("a zip archive")
    carry, line = b"", 1
    for chunk in chunks:
        data = carry + chunk
        end = data.rfind(b"\n") + 1
        if not end:
            if len(data) > textio.MAX_LINE_BYTES:
                raise NotStreamed("a very long line")
            carry = data
            continue
        block, carry = data[:end], data[end:]
        _check_lines(block)
        yield block, line
        line += newlines(block)
    if carry:
        _check_lines(carry)
        yield carry, line


def _check_lines(block: bytes) -> None:
    """:class:`NotStreamed` for what the whole-file reader turns or refuses: a carriage return ending a
    line alone, a line longer than :data:`~.textio.MAX_LINE_BYTES`."""
    if b"\r" in block and block.count(b"\r") != block.count(b"\r\n"):  # (a search: 100x faster than a count)
        raise NotStreamed("carriage returns alone")
    try:
        textio.check_line_lengths(block, Path())
    except DataError:
        raise NotStreamed("a very long line") from None


def newlines(block: bytes) -> int:
    """The line ends in ``block``, counted by numpy (6x faster than ``bytes.count``: 4 MiB in 0.23 ms)."""
    return int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == ord("\n")))


def file_sha256(path: Path) -> str:
    """The stored file's sha256 (of its compressed bytes, as the whole-file reader hashes them)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
