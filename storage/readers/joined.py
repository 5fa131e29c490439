"""A folder of CSV/TSV files read as one table: a Spark job's ``part-*.csv`` output, a folder of daily
exports.

The folder's text files -- every visible entry one, of one kind (``.csv``, ``.tsv``, ``.txt``,
``.data``; each plain or gzip/bzip2/xz-compressed); names starting with ``.`` or ``_`` (``_SUCCESS``,
checksum files) are not data -- are joined in name order into one temporary file, their header row
once (every file's must be the first's), which is then read as any file is: the same numbers, labels
and checks, block by block when large. An error in a row names the file and line it came from
(:func:`joined_folder` translates them); a folder of anything else is refused as a folder, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import DataError
from ..fetch import temporary_copy
from .detect import detect_format
from .textio import content_chunks

TEXT_FILE = re.compile(r"\.(csv|tsv|txt|data)(\.(gz|bz2|xz))?$", re.IGNORECASE)
_HEADED = ("csv_header", "tsv_header", "ssv_header", "psv_header")
_CHUNK = 1 << 22


def text_files(folder: Path) -> list[Path] | None:
    """The data files of a folder of text files, in name order, or None when it holds anything else
    (a subfolder, another kind of file, files of two kinds) or no file."""
    try:
        entries = sorted(p for p in folder.iterdir() if not p.name.startswith((".", "_")))
    except OSError:
        return None
    kinds = {m[1].lower() if (m := TEXT_FILE.search(p.name)) else None for p in entries}
    if not entries or None in kinds or len(kinds) > 1 or not all(p.is_file() for p in entries):
        return None
    return entries


@contextmanager
def joined_folder(folder: Path, files: list[Path]) -> Iterator[Path]:
    """``files`` (:func:`text_files` of ``folder``) joined into one temporary file with one header
    row; a :class:`DataError` raised while it is used that names a row of it names the file and line
    the row came from instead."""
    starts: list[tuple[int, Path, int]] = []  # (the joined file's first line from a file, the file, its line there)

    def join(path: Path) -> None:
        header: bytes | None = None
        line = 1
        with open(path, "wb") as out:
            for file in files:
                content = _lines(file)
                first = next(content, b"")
                if not first:  # (an empty part: a partition without rows)
                    continue
                if not starts:  # the first file with content: its first line is the header, if it is one
                    head = next(content_chunks(file, 1 << 16) or iter([b""]), b"")
                    header = first if detect_format(file, head) in _HEADED else None
                    starts.append((line, file, 1))
                    out.write(first)
                    line += 1
                elif header is not None and first.rstrip(b"\r\n") != header.rstrip(b"\r\n"):
                    raise DataError(
                        f"its header row differs from {starts[0][1].name}'s ({_shown(first)} against {_shown(header)})",
                        path=file,
                        fix="give files of the same columns, or read them one at a time",
                    )
                else:  # its header (the first file's) left out; a file without one: its first line is data
                    starts.append((line, file, 2 if header is not None else 1))
                    if header is None:
                        out.write(first)
                        line += 1
                for block in content:
                    out.write(block)
                    line += block.count(b"\n")
        if not starts:
            shown = ", ".join(f.name for f in files[:3]) + (", ..." if len(files) > 3 else "")
            raise DataError(f"its data files ({shown}) are empty", path=folder, fix="check the export was complete")

    with temporary_copy(f"{folder.name or 'data'}.joined{_suffix(files[0])}", join) as path:
        try:
            yield path
        except DataError as exc:
            raise _where(exc, path, folder, starts) from None


def _lines(file: Path) -> Iterator[bytes]:
    """The file's lines' bytes (decompressed, without a byte-order mark): its first line, then blocks
    of whole lines; the last ends in a line break."""
    chunks = content_chunks(file, _CHUNK)
    if chunks is None:
        raise DataError("a zip archive in a folder of text files", path=file, fix="unzip it, or give it alone")
    carry = b""
    first = True
    for chunk in chunks:
        data = carry + chunk
        if first:
            end = data.find(b"\n") + 1
            if not end:
                carry = data
                continue
            yield data[:end]
            data, first = data[end:], False
        end = data.rfind(b"\n") + 1
        if end:
            yield data[:end]
        carry = data[end:]
    if carry:
        yield carry + b"\n"


def _where(exc: DataError, path: Path, folder: Path, starts: list[tuple[int, Path, int]]) -> DataError:
    """``exc`` about the joined file ``path`` as about the file (and line) of the folder it came from."""
    if str(exc.path) != str(path):
        return exc
    row = exc.row
    if isinstance(row, int) and starts:
        begin, file, first = max((s for s in starts if s[0] <= row), key=lambda s: s[0], default=starts[0])
        where, row = file, first + row - begin
    else:
        where = folder
    exc.args = (str(exc).replace(f"{path}, row {exc.row}", f"{where}, row {row}", 1).replace(str(path), str(where)),)
    exc.path, exc.row = where, row
    return exc


def _suffix(file: Path) -> str:
    m = TEXT_FILE.search(file.name)
    return f".{m[1].lower()}" if m else ""


def _shown(line: bytes) -> str:
    return repr(line.rstrip(b"\r\n")[:200].decode("utf-8", "replace"))
