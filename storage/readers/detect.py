"""Which format a file is in: the name given (:func:`check_format`) or one guessed from its content."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

from ..errors import DataError
from ..tables import check_distinct_names
from .dataset import FORMATS
from .textio import check_not_office, decode_utf8, empty_file_error, first_lines, is_number

# Names used elsewhere (MANIFEST.json, other tools) for the same formats.
_FORMAT_ALIASES = {"dense_ws": "dense", "svmlight": "libsvm"}
_SNIFF_LINES = 20
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def detect_format(path: str | os.PathLike[str], content: bytes) -> str:
    """Guess the format of decompressed ``content`` read from ``path``.

    Rules, in order:

    1. content starting ``MATLAB`` (v5/v7.3 header), an HDF5 signature, or a name ending in
       ``.mat`` (before any ``.gz``) -> ``"mat"``;
    2. NUL bytes in the first 4 KiB -> error (binary file of unknown kind);
    3. among the first 20 non-blank lines, one whose second whitespace token looks like
       ``index:value`` -> ``"libsvm"``;
    4. first non-blank line contains a tab -> ``"tsv_header"`` if it is a header (see below),
       else ``"dense"`` (tabs are whitespace);
    5. first non-blank line contains a comma -> ``"csv_header"`` if it is a header, else ``"csv"``;
    6. first non-blank line contains a semicolon (a spreadsheet's CSV where the comma is the decimal
       point) or a pipe, and names the columns of the line below -> ``"ssv_header"``, ``"psv_header"``;
    7. otherwise -> ``"dense"``.

    A first line is a header when one of its fields is not a number (a numeric row that merely
    mixes tabs and spaces is not), or when its fields are the consecutive integers
    ``0, 1, 2, ...`` (at least three) -- the column names pandas writes for an unnamed frame, as in
    ``a1a.csv`` -- and the second line is not.
    """
    path = Path(path)
    if looks_mat(path, content):
        return "mat"
    check_not_office(content, path)
    if b"\x00" in content[:4096]:
        raise DataError(
            "binary content that is not a MATLAB .mat file",
            path=path,
            fix=f"convert it to one of the supported formats {FORMATS}",
        )
    lines = first_lines(content, _SNIFF_LINES)
    if not lines:
        raise empty_file_error(path)
    if any(_looks_libsvm(line) for line in lines):
        return "libsvm"
    first = lines[0]
    second = lines[1] if len(lines) > 1 else None
    if b"\t" in first:
        return "tsv_header" if _is_header(first, second, "\t", path) else "dense"
    if b";" in first and decimal_commas_only(first):  # (a ';' export's data row: its error says how to read it)
        return "ssv_header" if _names_columns(first, second, ";", path) else "dense"
    if b"," in first:
        return "csv_header" if _is_header(first, second, ",", path) else "csv"
    for delimiter, fmt in ((";", "ssv_header"), ("|", "psv_header")):
        if delimiter.encode() in first and _names_columns(first, second, delimiter, path):
            return fmt
    return "dense"


def looks_mat(path: str | os.PathLike[str], content: bytes) -> bool:
    """Rule 1 of :func:`detect_format`: a MATLAB file by its header, HDF5 signature or name."""
    return is_hdf5(content) or content.startswith(b"MATLAB") or _stem_suffix(Path(path)) == ".mat"


def check_format(fmt: str, path: object) -> str:
    fmt = _FORMAT_ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}", path=path, fix=f"use one of {', '.join(FORMATS)} or omit it")
    return fmt


def _stem_suffix(path: Path) -> str:
    """The name's suffix under a compression's (``x.mat.gz``: ``.mat``)."""
    name = path.name.lower()
    for compressed in (".gz", ".bz2", ".xz", ".zip"):
        name = name.removesuffix(compressed)
    return Path(name).suffix


def is_hdf5(content: bytes) -> bool:
    # MATLAB v7.3 files are HDF5 with a 512-byte text header before the HDF5 signature.
    return (
        content.startswith(_HDF5_SIGNATURE) or content[512:520] == _HDF5_SIGNATURE or content.startswith(b"MATLAB 7.3")
    )


# index:value -- one colon, no comma: a CSV row starting with a time ("2024-01-01 00:00:00,1.5,...")
# has "00:00:00,1.5,..." as its second token, and was read as LIBSVM ("label ',x1,x2' is not a number")
_LIBSVM_TOKEN = re.compile(rb"^\d+:[^:,\s]*$")


def _looks_libsvm(line: bytes) -> bool:
    tokens = line.split()
    return len(tokens) > 1 and bool(_LIBSVM_TOKEN.match(tokens[1]))


def _is_consecutive_ints(fields: list[str]) -> bool:
    try:
        ints = [int(f) for f in fields]
    except ValueError:
        return False
    return len(ints) >= 3 and ints == list(range(len(ints)))


def split_header(
    line: bytes, delimiter: str, path: object = None, row: int | None = None, *, sniffing: bool = False
) -> list[str]:
    """The fields of a header (or first) line, CSV quoting understood; unless ``sniffing`` (telling a
    header from data), text that is not UTF-8 (:func:`.textio.decode_utf8`) or a name given to two
    columns is an error."""
    text = line.decode("utf-8", "replace") if sniffing else decode_utf8(line, path, first_number=row, what="the header")
    try:
        names = [f.strip() for f in next(csv.reader([text], delimiter=delimiter))]
    except csv.Error as exc:  # a field over csv's limit (a quote left open), a line end inside a field
        raise DataError(
            f"cannot split the line into fields ({exc})",
            path=path,
            row=row,
            fix="check the file's delimiter and quotes; header names must be shorter than "
            f"{csv.field_size_limit():,} characters",
        ) from None
    if not sniffing:
        check_distinct_names(names, path, "the header")
    return names


def _names_columns(first: bytes, second: bytes | None, delimiter: str, path: Path) -> bool:
    """Whether ``first`` is a header of ``delimiter``-separated columns, as :func:`_is_header` tells (a
    decimal comma read as a point): two fields or more, a word over a number of the line below (or
    no line below)."""

    def number(field: str) -> bool:
        return is_number(field.replace(",", "."))

    fields = split_header(first, delimiter, path, sniffing=True)
    if len(fields) < 2 or all(number(f) for f in fields):
        return False
    if second is None:
        return True
    below = split_header(second, delimiter, path, sniffing=True)
    return len(below) == len(fields) and any(not number(a) and number(b) for a, b in zip(fields, below))


def decimal_commas_only(line: bytes) -> bool:
    """Whether every comma of ``line`` stands between two digits (``1,5;-0,25``: decimal commas)."""
    return _STRAY_COMMA.search(line) is None


_STRAY_COMMA = re.compile(rb"(?<!\d),|,(?!\d)")


def decimal_point(content: bytes, delimiter: str) -> str:
    """``","`` for a ``;``-separated file whose first rows write numbers with a decimal comma (and
    none with a point), else ``"."``."""
    if delimiter != ";":
        return "."
    head = b"\n".join(first_lines(content, _SNIFF_LINES)[1:])
    comma = re.search(rb"(^|[;\n])\s*[+-]?\d+,\d+\s*(?=[;\n]|$)", head) is not None
    point = re.search(rb"(^|[;\n])\s*[+-]?\d*\.\d+\s*(?=[;\n]|$)", head) is not None
    return "," if comma and not point else "."


def _is_header(first: bytes, second: bytes | None, delimiter: str, path: Path) -> bool:
    fields = split_header(first, delimiter, path, sniffing=True)
    if all(is_number(f) for f in fields):
        return _is_consecutive_ints(fields) and (
            second is None or not _is_consecutive_ints(split_header(second, delimiter, path, sniffing=True))
        )
    # A numeric row that mixes tabs and spaces is dense text, not a header.
    if delimiter == "\t" and all(is_number(t) for t in first.split()):
        return False
    if second is None:
        return True
    below = split_header(second, delimiter, path, sniffing=True)
    # A header names columns that hold numbers below it; a first row whose words stand where the
    # next row has words too (word labels such as yes/no or g/h) is data.
    return len(below) != len(fields) or any(not is_number(a) and is_number(b) for a, b in zip(fields, below))
