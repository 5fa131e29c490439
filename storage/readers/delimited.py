"""Delimited text: whitespace-separated (``dense``), CSV and TSV, with or without a header row."""

from __future__ import annotations

import csv
import io
import re
import sys
import time
import warnings
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from ..dates import DATE_FIX, date_or_time
from ..errors import DataError
from ..labels import default_label_column, has_no_labels, is_label_name, resolve_label_column, row_names_column
from .dataset import ParsedFile
from .detect import decimal_commas_only, split_header
from .textio import decode_utf8, empty_file_error, first_lines, is_blank, is_number, show_bytes, text_lines

_DELIMITER_NAMES: dict[str | None, str] = {",": "','", "\t": "tab", ";": "';'", "|": "'|'", None: "whitespace"}


def read_dense(content: bytes, path: Path, label_column: str | int | None = None) -> ParsedFile:
    lines = first_lines(content, 2)
    skip = 1 if len(lines) == 2 and _is_shape_line(lines[0], lines[1], content, path) else 0
    return _read_delimited(content, path, delimiter=None, header=False, skip=skip, label_column=label_column)


def read_csv(content: bytes, path: Path, label_column: str | int | None = None) -> ParsedFile:
    return _read_delimited(content, path, delimiter=",", header=False, label_column=label_column)


def read_csv_header(content: bytes, path: Path, label_column: str | int | None = None) -> ParsedFile:
    return _read_delimited(content, path, delimiter=",", header=True, label_column=label_column)


def read_tsv_header(content: bytes, path: Path, label_column: str | int | None = None) -> ParsedFile:
    return _read_delimited(content, path, delimiter="\t", header=True, label_column=label_column)


def text_columns(content: bytes, path: Path, delimiter: str, names: list[str]) -> Any:
    """The columns ``names`` of delimited text with a header, as the text they hold (a pyarrow Table:
    ``00123`` is not the number 123, an empty field is ``""``): the ids a dataset keeps or rows to
    predict carry, as the block reader reads them."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = first_lines(content, 1)[0].decode("utf-8", "replace")
    raw = {name.strip(): name for name in next(csv.reader([header], delimiter=delimiter))}
    wanted = [raw[name] for name in names]
    options = pacsv.ConvertOptions(
        include_columns=wanted,
        column_types={name: pa.string() for name in wanted},
        null_values=[],
        strings_can_be_null=False,
    )
    return _pyarrow_csv(content, path, delimiter, options).rename_columns(names)


def text_table(content: bytes, path: Path, delimiter: str, decimal_point: str = ".") -> Any:
    """Delimited text with a header as a pyarrow Table, each column's type inferred (numbers, with
    ``decimal_point``, else text) and empty fields, ``NA``, ``null``, ``NaN`` missing: the columns read
    by name, as a parquet table's, when they are chosen (``--features``) or encoded, and a
    ``;``/``|``-separated file's always."""
    import pyarrow.csv as pacsv

    options = pacsv.ConvertOptions(strings_can_be_null=True, decimal_point=decimal_point)
    table = _pyarrow_csv(content, path, delimiter, options)
    return table.rename_columns([name.strip() for name in table.column_names])


def _pyarrow_csv(content: bytes, path: Path, delimiter: str, options: Any) -> Any:
    """Delimited text with a header read by pyarrow with ``options`` (its ConvertOptions); a ragged row
    or a quote left open is an error naming the file."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        return arrow_read_csv(content, parse_options=pacsv.ParseOptions(delimiter=delimiter), convert_options=options)
    except pa.ArrowInvalid as exc:
        raise DataError(
            f"could not read the columns ({exc})",
            path=path,
            fix="every row needs a value (maybe empty) for each header column",
        ) from None


def arrow_read_csv(content: bytes, **options: Any) -> Any:
    """pyarrow's ``read_csv`` of ``content`` (its options by name), returned only once pyarrow's threads
    have let go of the bytes. A read that fails returns while its threads still read ahead (a third of
    the time); when the last of them lets go after the interpreter began to exit, it needs the GIL to
    do so, cannot take it, and the process aborts: "terminate called without an active exception",
    status 134 instead of the error's 2, after an error message about a file (apache/arrow#34314)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    unheld = sys.getrefcount(content)
    try:
        return pacsv.read_csv(pa.BufferReader(content), **options)
    finally:  # (pyarrow's threads hold the bytes by a reference each: milliseconds after a failure)
        deadline = time.monotonic() + 10.0
        while sys.getrefcount(content) > unheld and time.monotonic() < deadline:
            time.sleep(0.001)


def _is_shape_line(first: bytes, second: bytes, content: bytes, path: Path) -> bool:
    """True for a leading ``"N D"`` line stating the rows and features that follow.

    A shape line whose row count disagrees with the file is an error: the file was most likely
    cut short (or extended) after it was written.
    """
    fields = first.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        return False
    n_rows, n_features = (int(f) for f in fields)
    width = len(second.split())
    if width == 2 or width not in (n_features, n_features + 1):
        return False
    found = sum(1 for _ in text_lines(content)) - 1
    if found != n_rows:
        raise DataError(
            f"the first line declares {n_rows} rows x {n_features} features but {found} data rows follow",
            path=path,
            row=1,
            fix="the file is probably truncated: re-copy it (or delete line 1 if the count is stale)",
        )
    return True


def split_fields(line: bytes, delimiter: str | None) -> list[bytes]:
    """A line's fields; with a delimiter and a quote, CSV's rules (``"1,234.50"`` is one field: split at
    every comma it made a row of 3 fields "ragged: 4 fields")."""
    if delimiter is None:
        return line.split()
    if b'"' not in line:
        return line.split(delimiter.encode())
    fields = next(csv.reader([line.decode("utf-8", "replace")], delimiter=delimiter), [])
    return [f'"{f}"'.encode() for f in fields]  # (quoted as they were: _field strips the quotes)


def _read_delimited(
    content: bytes,
    path: Path,
    *,
    delimiter: str | None,
    header: bool,
    skip: int = 0,
    label_column: str | int | None = None,
) -> ParsedFile:
    """Parse label + numeric features with pyarrow's reader (or numpy's: :func:`arrow_cells`);
    diagnose in Python only on failure. ``label_column="none"``: every column is a feature, the rows have no labels."""
    body, first_number = drop_leading_lines(content, skip)
    first = first_lines(body, 1)
    if not first:
        raise empty_file_error(path)
    names: list[str] | None = None
    if header:
        assert delimiter is not None  # the formats with a header are comma or tab separated
        names = split_header(first[0], delimiter, path, first_number)
        if len(names) < 2:
            raise wrong_delimiter(first[0], delimiter, path, row=first_number, sample=body[:4096])
        body, first_number = drop_leading_lines(body, 1, first_number)
        if is_blank(body):
            raise DataError("only a header row, no data rows", path=path, fix="check the export was complete")
    width = len(names) if names is not None else len(split_fields(first[0], delimiter))
    if has_no_labels(label_column):
        return _read_features(body, first_number, path, delimiter, width, names)
    if width < 2:
        raise wrong_delimiter(first[0], delimiter, path, row=first_number, sample=body[:4096])
    label_col = (
        default_label_column(names) if label_column is None else resolve_label_column(label_column, names, width, path)
    )
    y_raw: NDArray[Any]
    row_names = row_name_columns(names, label_col)  # (read as text: row names may be words, or empty)
    try:
        table = _numbers(body, delimiter, row_names)
        y_raw = table[:, label_col]
    except ValueError as exc:
        words = _word_labels(body, delimiter, width, label_col, row_names)
        if words is not None:
            table, y_raw = words
        else:
            # a label column given, or found by its header name, is not second-guessed in the error's fix
            named = names is not None and is_label_name(names[label_col])
            chosen = label_column is not None or named
            numeric_labels = diagnose_delimited(
                body, first_number, path, delimiter, width, label_col, names, chosen=chosen, skip=row_names
            )
            if numeric_labels and not row_names:
                raise _unparsed(exc, path) from None
            table, y_raw = _read_string_labels(body, delimiter, width, label_col, path, first_number, row_names)
            if numeric_labels:  # (row names in quotes, numbers for labels: read as numbers, as pyarrow reads them)
                y_raw = y_raw.astype(np.float64)
    _check_width(table, width, path, first_number)
    dropped = sorted({label_col, *row_names})
    label_name = names[label_col] if names else None
    return _parsed(table, y_raw, dropped, body, first_number, delimiter, names, label_name=label_name)


def row_name_columns(names: list[str] | None, label_col: int | None) -> list[int]:
    """The column of row names (:func:`~omkl_dist.storage.labels.row_names_column`), unless it was
    chosen as the labels: left out of the features."""
    column = row_names_column(names)
    return [] if column is None or column == label_col else [column]


def _parsed(
    table: NDArray[np.float64],
    y_raw: NDArray[Any] | None,
    dropped: list[int],
    body: bytes,
    first_number: int,
    delimiter: str | None,
    names: list[str] | None,
    label_name: str | None = None,
) -> ParsedFile:
    """The file's features: its columns but the ``dropped`` ones (the labels, named ``label_name``; row names)."""
    return ParsedFile(
        X=np.delete(table, dropped, axis=1) if dropped else table,
        y_raw=y_raw,
        line_of=_data_line_mapper(body, first_number, delimiter),
        column_of=column_namer(dropped, names),
        feature_names=[n for i, n in enumerate(names) if i not in dropped] if names else None,
        label_name=label_name,
    )


def _read_features(
    body: bytes, first_number: int, path: Path, delimiter: str | None, width: int, names: list[str] | None
) -> ParsedFile:
    """Rows without labels: every column a numeric feature, but the row names."""
    row_names = row_name_columns(names, None)
    try:
        X = _numbers(body, delimiter, row_names)
    except ValueError as exc:
        diagnose_delimited(body, first_number, path, delimiter, width, None, names, chosen=True, skip=row_names)
        if not row_names:
            raise _unparsed(exc, path) from None
        X = _read_string_labels(body, delimiter, width, None, path, first_number, row_names)[0]
    _check_width(X, width, path, first_number)
    return _parsed(X, None, row_names, body, first_number, delimiter, names)


def _unparsed(exc: Exception, path: Path) -> DataError:
    """numpy's reader refused rows the diagnosis found nothing wrong with."""
    return DataError(f"could not parse ({exc})", path=path, fix="check the file's format (fmt=...)")


def _numbers(body: bytes, delimiter: str | None, text: Collection[int]) -> NDArray[np.float64]:
    """Every cell a number but those of the ``text`` columns (row names: pyarrow reads them as text,
    numpy's reader only as numbers), rows of one width; a ValueError otherwise."""
    cells = arrow_cells(body, delimiter, text=text)
    if cells is not None:
        return cells[0]
    quote = '"' if delimiter else None
    return np.loadtxt(io.BytesIO(body), dtype=np.float64, delimiter=delimiter, comments=None, quotechar=quote, ndmin=2)


def _check_width(table: NDArray[np.float64], width: int, path: Path, first_number: int) -> None:
    """Every data row agrees, but maybe not with the header."""
    if table.shape[1] != width:
        raise DataError(
            f"the header names {width} columns but the data rows have {table.shape[1]}",
            path=path,
            row=first_number,
            fix="give every column a name in the header (or drop the extra values)",
        )


def _read_string_labels(
    body: bytes,
    delimiter: str | None,
    width: int,
    label_col: int | None,
    path: Path,
    first_number: int,
    text: Collection[int] = (),
) -> tuple[NDArray[np.float64], NDArray[np.str_]]:
    """Second pass, by numpy's reader, of a file whose labels are words (``g``/``b``) or whose row names
    (the ``text`` columns) are text: the features numeric (the labels' and ``text`` columns left 0),
    the labels str (UTF-8: other bytes are an error naming their row, :func:`.textio.decode_utf8`;
    none without ``label_col``). The rows were checked by the diagnosis (numpy's reader of some columns
    would not see a ragged row)."""
    quote = '"' if delimiter else None
    feature_cols = [i for i in range(width) if i != label_col and i not in text]
    try:
        X = np.loadtxt(
            io.BytesIO(body),
            dtype=np.float64,
            delimiter=delimiter,
            comments=None,
            quotechar=quote,
            usecols=feature_cols,
            ndmin=2,
        )
    except ValueError as exc:
        raise _unparsed(exc, path) from None
    table = np.zeros((len(X), width), dtype=np.float64)
    table[:, feature_cols] = X
    if label_col is None:
        return table, np.empty(0, dtype=str)
    with warnings.catch_warnings():  # numpy's note on its own chunks' max_rows, which no one set here
        warnings.filterwarnings("ignore", message="Input line .* contained no data", category=UserWarning)
        y = np.loadtxt(  # (text as UTF-8, as the header's names: from bytes numpy decoded Latin-1, 'été' as 'Ã©tÃ©')
            io.StringIO(decode_utf8(body, path, first_number=first_number, what="the text")),
            dtype=str,
            delimiter=delimiter,
            comments=None,
            quotechar=quote,
            usecols=[label_col],
            ndmin=1,
        )
    return table, np.char.strip(y)


def _word_labels(
    body: bytes, delimiter: str | None, width: int, label_col: int, text: Collection[int]
) -> tuple[NDArray[np.float64], NDArray[np.str_]] | None:
    """A file whose labels are words, read at once when nothing needs the row-by-row diagnosis
    (:func:`diagnose_delimited`, ~7 s in Python for a million rows of 13 columns before the same
    read): pyarrow reads every row whole, every feature a number, no label is empty and some label
    is not a number. None otherwise: the diagnosis then finds what is wrong, or reads the file as
    before."""
    cells = arrow_cells(body, delimiter, label_col, text)
    if cells is None or cells[0].shape[1] != width:
        return None
    table, y = cells
    labels = np.unique(y)
    if (labels == "").any() or all(is_number(label) for label in labels):
        return None
    return table, y


def arrow_cells(
    body: bytes,
    delimiter: str | None,
    label_col: int | None = None,
    text: Collection[int] = (),
    texts: dict[int, Any] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.str_]] | None:
    """The rows' cells read by pyarrow's CSV reader, on threads: ``(table, labels)``, the table every
    column as float64 (the ``label_col`` column zeros, its cells the stripped ``labels`` text; the
    ``text`` columns -- row names, columns left out -- zeros, whatever they hold; given ``texts``, their
    cells go there as they are, pyarrow strings by column). 3.5x
    numpy's ``loadtxt`` (a million rows of 13 columns: 0.9 s against 3.3 s), and the same numbers
    bit for bit: both parse every cell as the correctly rounded double and accept the same spellings
    (tests/test_readers.py). None when pyarrow refuses the rows (a row of another width, a cell that
    is no number, a line of spaces) or might split them otherwise than ``loadtxt`` (quotes, no
    delimiter, a carriage return alone): ``loadtxt`` and the diagnosis take those, as before."""
    if delimiter is None or b'"' in body or (b"\r" in body and body.count(b"\r") != body.count(b"\r\n")):
        return None
    first = first_lines(body, 1)
    if not first:
        return None
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [f"c{j}" for j in range(len(split_fields(first[0], delimiter)))]
    types = {name: pa.string() if j == label_col or j in text else pa.float64() for j, name in enumerate(names)}
    try:
        read = arrow_read_csv(
            body,
            read_options=pacsv.ReadOptions(column_names=names),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False),
        )
    except pa.ArrowException:
        return None
    table = np.zeros((read.num_rows, len(names)))
    labels = np.empty(0, dtype=str)
    for j, column in enumerate(read.columns):
        if j == label_col:
            labels = np.char.strip(column.to_numpy(zero_copy_only=False).astype(str))
        elif j not in text:
            table[:, j] = column.to_numpy()
        elif texts is not None:
            texts[j] = column
    return table, labels


def column_namer(dropped: list[int], names: list[str] | None) -> Callable[[int], str]:
    """Feature j's column in the file (1-based, with its name), the ``dropped`` columns (sorted) skipped."""

    def column_of(j: int) -> str:
        file_col = j
        for d in dropped:
            if d <= file_col:
                file_col += 1
        return f"{file_col + 1} ({names[file_col]!r})" if names else str(file_col + 1)

    return column_of


def drop_leading_lines(content: bytes, n_nonblank: int, first_number: int = 1) -> tuple[bytes, int]:
    """Drop leading blank lines and then ``n_nonblank`` lines (a header or a shape line).

    Returns the rest and the file line number of its first line.
    """
    pos, dropped, number = 0, 0, first_number
    while pos < len(content):
        end = content.find(b"\n", pos)
        end = len(content) if end < 0 else end + 1
        if content[pos:end].strip():
            if dropped == n_nonblank:
                break
            dropped += 1
        pos, number = end, number + 1
    return content[pos:], number


def _data_line_mapper(body: bytes, first_number: int, delimiter: str | None) -> Callable[[int], int]:
    """Map a data-row index to its file line number; computed lazily (only errors need it)."""
    cache: list[list[int]] = []

    def line_of(i: int) -> int:
        if not cache:
            cache.append([n for n, _ in text_lines(body, first_number=first_number, delimiter=delimiter)])
        return cache[0][i]

    return line_of


def wrong_delimiter(line: bytes, delimiter: str | None, path: Path, row: int, sample: bytes = b"") -> DataError:
    """The error of a line without the format's delimiter; ``sample``: the file's first rows, where a
    ';'-separated spreadsheet export shows its decimal commas (its header has no numbers)."""
    expected = _DELIMITER_NAMES[delimiter]
    found = [d for d in (",", "\t", ";", "|") if d != delimiter and d.encode() in line]
    if ";" in found and decimal_commas_only(line):  # (its commas are decimal points)
        found.remove(";")
        found.insert(0, ";")
    if found:
        seen = _DELIMITER_NAMES[found[0]]
        hint = {",": "csv or csv_header", "\t": "tsv_header (or dense if it has no header)"}.get(found[0])
        if hint is not None:
            fix = f"read it as {hint} (fmt=..., --format)"
        else:  # ';' or '|' without a header (with one: ssv_header, psv_header, decimal commas understood)
            decimal = found[0] == ";" and re.search(rb"\d,\d", line + sample) is not None
            fix = (
                f"give it a header row naming its columns (it is then read as {'ssv' if found[0] == ';' else 'psv'}"
                f"_header), or save it comma-separated{', with decimal points' if decimal else ''}, e.g. with pandas: "
                f"pd.read_csv(path, sep={found[0]!r}, header=None{', decimal=' + repr(',') if decimal else ''})"
                ".to_csv('data.csv', index=False)"
            )
        return DataError(
            f"expected delimiter {expected} but the line has none; it looks {seen}-separated",
            path=path,
            row=row,
            fix=fix,
        )
    return DataError(
        f"only one field (expected delimiter {expected}); a row needs a label and at least one feature",
        path=path,
        row=row,
        fix="check the delimiter and the format (fmt=..., --format)",
    )


def diagnose_delimited(
    body: bytes,
    first_number: int,
    path: Path,
    delimiter: str | None,
    width: int,
    label_col: int | None,
    names: list[str] | None,
    chosen: bool = False,
    reference: int | None = None,
    count_empty: Callable[[int], int] | None = None,
    skip: Collection[int] = (),
) -> bool:
    """Find the first bad row (ragged, non-numeric feature, empty field) and raise a DataError.

    Returns whether every label is numeric when no feature problem is found, so the caller
    knows whether word labels explain numpy's failure. ``reference``: the file's first row, when
    ``body`` is a later part of it (a ragged row is compared with it); ``count_empty``: the rows of the
    whole file with an empty field in a column (default: those of ``body``); ``skip``: columns
    that are not read (row names: text, numbers or empty).
    """
    numeric_labels = True
    column_of = column_namer([] if label_col is None else [label_col], names)
    for number, line in text_lines(body, first_number=first_number, delimiter=delimiter):
        if not line.strip():
            raise DataError("line of only spaces inside the data", path=path, row=number, fix="delete the line")
        fields = split_fields(line, delimiter)
        if len(fields) != width:
            _raise_ragged(line, delimiter, path, number, len(fields), width, reference, names)
        reference = reference or number
        for i, raw in enumerate(fields):
            value = _field(raw)
            if i == label_col:
                numeric_labels = numeric_labels and is_number(value)
                if not value:
                    raise DataError("empty label", path=path, row=number, column=i + 1, fix="fill in or drop the row")
                continue
            if i not in skip and not is_number(value):
                if value:
                    problem = f"non-numeric value {show_bytes(value)}"
                    leave = f"--features -{names[i]}" if names else "--features; the file needs a header row"
                    fix = (
                        "features must be numbers: encode a text column with --categorical one-hot or ordinal "
                        f"(categorical=...; the file needs a header row), leave it out ({leave}) or correct the value"
                    )
                    if _formatted_number(value):
                        problem += ": a number written with a currency sign, percent or thousands separators"
                        col = repr(names[i]) if names else str(i)
                        fix = (
                            "write the numbers plain (12.5, 1234.5), e.g. with pandas: df[{0}] = "
                            "pd.to_numeric(df[{0}].str.replace(r\"[$€£¥%,' ]\", '', regex=True))".format(col)
                        )
                    elif date_or_time(value):
                        problem += ": a date or time"
                        fix = DATE_FIX.format(leave=leave)
                else:
                    empty = count_empty(i) if count_empty else count_empty_fields(body, first_number, delimiter, i)
                    problem = f"empty field (missing value): {empty} row{'s' * (empty > 1)} of this column have one"
                    fix = (
                        "fill missing values with --impute mean, median or most_frequent (impute=...; the file "
                        "needs a header row), or drop the rows"
                    )
                dated = bool(value) and date_or_time(value)  # (a date is no label: no hint of one)
                if value and not dated and i in (0, width - 1) and i != label_col and not chosen:  # words at an end
                    where = "first" if i == 0 else "last"
                    fix = (
                        f"if the {where} column holds the labels, pass --label-column {where} "
                        f"(label_column={where!r}); otherwise " + fix
                    )
                elif value and not chosen:
                    # words at an end of the row too: that column is the likelier labels (churn after city)
                    j = next((j for j in (width - 1, 0) if j != label_col and not is_number(_field(fields[j]))), i)
                    cli, api = (names[j], repr(names[j])) if names else (str(j), f"{j}, 0-based")
                    which = f"column {j + 1}" + (f" ({names[j]!r})" if names and j != i else "")
                    hint = f"if {which} holds the labels, pass --label-column {cli} (label_column={api})"
                    fix = fix if dated and j == i else f"{hint}; otherwise {fix}"
                if number == first_number and names is None:
                    fix += "; if this line is a header, read the file as csv_header/tsv_header (fmt=...)"
                raise DataError(
                    problem,
                    path=path,
                    row=number,
                    column=column_of(i - (label_col is not None and i > label_col)),
                    fix=fix,
                )
    return numeric_labels


_FORMATTED = re.compile(rb"[$\xe2\x82\xac\xc2\xa3\xc2\xa5%,' ]")  # $ euro pound yen % , ' and spaces (as UTF-8)


def _formatted_number(value: bytes) -> bool:
    """A number a spreadsheet formatted (``$12.50``, ``12%``, ``1,234.50``, ``1'234``): a number once
    those marks are gone, and not one with them."""
    plain = _FORMATTED.sub(b"", value)
    return plain != value and bool(plain) and is_number(plain)


def _field(raw: bytes) -> bytes:
    """A field's value: without its spaces and quotes."""
    return raw.strip().strip(b'"')


def count_empty_fields(body: bytes, first_number: int, delimiter: str | None, column: int) -> int:
    """How many rows have an empty field in ``column`` (error path only)."""
    count = 0
    for _, line in text_lines(body, first_number=first_number, delimiter=delimiter):
        fields = split_fields(line, delimiter)
        count += column < len(fields) and not _field(fields[column])
    return count


def _raise_ragged(
    line: bytes,
    delimiter: str | None,
    path: Path,
    number: int,
    got: int,
    width: int,
    reference: int | None,
    names: list[str] | None,
) -> NoReturn:
    if got == 1 and delimiter is not None:
        raise wrong_delimiter(line, delimiter, path, row=number)
    like = " (as in the header)" if names else f" (as in row {reference})" if reference else ""
    raise DataError(
        f"ragged row: {got} fields, expected {width}{like}",
        path=path,
        row=number,
        fix="every row needs the label and all features; fix or drop the row",
    )
