"""Bytes in: read a file, undo its gzip, and the line helpers every text format's parser uses."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..schema import read_at_most, special_file_kind

# Compressed streams read like gzip (the standard library's readers): magic bytes -> (name, opener, the
# command that confirms damage). zstd (no reader in Python 3.11's standard library) is only named.
_STREAMS = {
    b"\x1f\x8b": ("gzip", lambda fh: gzip.GzipFile(fileobj=fh), "gzip -t FILE"),
    b"BZh": ("bzip2", bz2.BZ2File, "bzip2 -t FILE"),
    b"\xfd7zXZ\x00": ("xz", lzma.LZMAFile, "xz -t FILE"),
}
_ZIP_MAGIC = b"PK\x03\x04"
_OTHER_MAGIC = {b"(\xb5/\xfd": "zstd"}
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Excel 97-2003 workbooks (.xls), Word's .doc
# an HTML document's start (after a byte-order mark, blanks and comments)
_HTML = re.compile(rb"(?:\xef\xbb\xbf)?(?:\s|<!--.*?-->)*<(?:!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL)
_SAVE_AS_CSV = (
    "save the sheet as CSV (File > Save As > CSV UTF-8), or with pandas: "
    "pd.read_excel(path).to_csv('data.csv', index=False)"
)


def read_bytes(path: Path) -> bytes:
    """The bytes of a regular file. A device or socket never ends (``/dev/zero``) and a FIFO can
    be read only once while a file is sniffed, hashed and parsed: they are refused unopened."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DataError(
            "no such file", path=path, fix="check the path, or give a registry name (`omkl data list`)"
        ) from None
    if stat.S_ISDIR(mode):
        raise DataError("is a directory, not a data file", path=path, fix=_folder_fix(path))
    if not stat.S_ISREG(mode):
        raise DataError(
            f"is {special_file_kind(mode)}, not a regular file: it is read more than once, and may never end",
            path=path,
            fix="save the data to a file first (e.g. `cat SOURCE > data.csv`) and give that file",
        )
    size = os.stat(path).st_size
    if size > memory_budget():
        raise _too_large(path, f"the file is {size / 2**30:.1f} GiB")
    data = path.read_bytes()
    if not data:
        raise empty_file_error(path)
    return data


def _folder_fix(path: Path) -> str:
    """What to give instead of a folder: the files in it, by name (a registry dataset's folder holds
    its file), or a dataset `omkl data ingest` writes (a folder with meta.json, streamed)."""
    try:
        files = sorted(p.name for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    except OSError:
        files = []
    ingested = "an ingested dataset (a folder `omkl data ingest` writes: the commands stream it, open_stream in Python)"
    if not files:
        return f"give a data file, or {ingested}"
    shown = ", ".join(files[:3]) + (f" (and {len(files) - 3} more)" if len(files) > 3 else "")
    fix = f"give a data file inside it ({shown}), or {ingested}"
    texts = [f for f in files if re.search(r"\.(csv|tsv|txt|data)(\.(gz|bz2|xz))?$", f, re.IGNORECASE)]
    if texts:  # (a folder of only such files is one table: storage/readers/joined.py)
        others = sorted({p.name for p in path.iterdir() if not p.name.startswith((".", "_"))} - set(texts))
        fix += (
            "; a folder holding only CSV/TSV files of one kind (names starting with . or _ aside) is read as one "
            f"table, its files joined in name order: move the rest ({', '.join(others[:3])}) out of it"
        )
    return fix


def memory_budget() -> int:
    """Bytes a file's (decompressed) content may take: half the memory available now, so that its
    parsing fits too."""
    import psutil

    return int(psutil.virtual_memory().available) // 2


def _too_large(path: Path, what: str) -> DataError:
    return DataError(
        f"{what}, more than half the memory available: a text or .mat file is read whole",
        path=path,
        fix="ingest it first (`omkl data ingest FILE --out DIR` reads a CSV/TSV file block by block, never whole; "
        "then give DIR), convert it to parquet (read in row batches), or use a machine with more memory; "
        "a file much larger than its data is damaged (or a compression bomb)",
    )


def empty_file_error(path: object) -> DataError:
    return DataError("empty file: no data rows", path=path, fix="check the file was copied or exported completely")


def decompress(stored: bytes, path: Path) -> bytes:
    """The file's content: a gzip, bzip2 or xz stream, or a zip archive of one file, decompressed
    (at most :func:`memory_budget` bytes: a few MB may decompress to many GB); other compressions
    are refused by name."""
    budget = memory_budget()
    for magic, (name, opener, test) in _STREAMS.items():
        if stored.startswith(magic):
            return _checked_content(_decompressed(stored, path, name, opener, test, budget), path, budget)
    if stored.startswith(_ZIP_MAGIC):
        return _checked_content(_unzipped(stored, path, budget), path, budget)
    check_not_office(stored, path)
    for magic, name in _OTHER_MAGIC.items():
        if stored.startswith(magic):
            raise DataError(
                f"{name}-compressed file; gzip, bzip2, xz and zip are read",
                path=path,
                fix="decompress it, or re-compress it with gzip",
            )
    if is_blank(stored):
        raise empty_file_error(path)
    return _strip_bom(stored)


def _decompressed(stored: bytes, path: Path, name: str, opener: Any, test: str, budget: int) -> bytes:
    """A compressed stream's content, at most ``budget + 1`` bytes; a truncated or corrupt stream is
    an error naming it."""
    with _damage_named(path, name, test):
        with opener(io.BytesIO(stored)) as archive:
            return read_at_most(archive, budget + 1)


@contextmanager
def _damage_named(path: Path, name: str, test: str) -> Iterator[None]:
    """A truncated or corrupt ``name`` stream read inside the block is an error naming it and the
    ``test`` command that confirms the damage."""
    fix = f"re-download or re-copy the file; `{test}` confirms the damage"
    try:
        yield
    except EOFError:
        raise DataError(
            f"truncated {name} file: the compressed stream ends before its end marker", path=path, fix=fix
        ) from None
    except (OSError, ValueError, zlib.error, lzma.LZMAError) as exc:  # (gzip.BadGzipFile is an OSError)
        raise DataError(f"corrupt {name} file ({exc})", path=path, fix=fix) from None


def content_chunks(path: Path, size: int, progress: Callable[[int], None] | None = None) -> Iterator[bytes] | None:
    """The content of a plain, gzip, bzip2 or xz file as chunks of ``size`` bytes (the last shorter),
    read as they are used, never whole -- a byte-order mark removed, damage named as by
    :func:`decompress`; None for other files (a zip archive...), which are read whole. ``progress``:
    called after each chunk with the bytes of the stored (compressed) file read so far."""
    with open(path, "rb") as fh:
        magic = fh.read(8)
    if magic.startswith((_ZIP_MAGIC, *_OTHER_MAGIC)):
        return None
    stream = next(((name, opener, test) for m, (name, opener, test) in _STREAMS.items() if magic.startswith(m)), None)
    return _chunks(path, size, stream, progress)


def _chunks(
    path: Path, size: int, stream: tuple[str, Any, str] | None, progress: Callable[[int], None] | None
) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        name, opener, test = stream if stream is not None else ("", None, "")
        with _damage_named(path, name, test) if stream is not None else nullcontext():
            source = opener(fh) if opener is not None else fh
            first = True
            while chunk := source.read(size):
                if progress is not None:
                    progress(fh.tell())
                yield _strip_bom(chunk) if first else chunk
                first = False


def _unzipped(stored: bytes, path: Path, budget: int) -> bytes:
    """The one data file of a zip archive (a download's ``data.csv.zip``), at most ``budget + 1`` bytes;
    an archive of several files is refused naming them (which one is the data is the user's to say)."""
    fix = "re-download or re-copy the file; `unzip -t FILE` confirms the damage"
    try:
        with zipfile.ZipFile(io.BytesIO(stored)) as archive:
            members = [m for m in archive.infolist() if not m.is_dir() and not m.filename.startswith("__MACOSX/")]
            workbook = _workbook(archive, [m.filename for m in members])
            if workbook is not None:
                raise DataError(f"{workbook}, not a data file", path=path, fix=_SAVE_AS_CSV)
            if len(members) != 1:
                names = [m.filename for m in members][:5]
                raise DataError(
                    f"the zip archive holds {len(members)} files {names}; one data file per archive is read",
                    path=path,
                    fix="unzip it and give the data file itself",
                )
            with archive.open(members[0]) as member:
                content = read_at_most(member, budget + 1)
    except RuntimeError as exc:  # (zipfile's error for an encrypted member)
        raise DataError(f"the zip archive cannot be read ({exc})", path=path, fix="unzip it first") from None
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error, NotImplementedError) as exc:
        raise DataError(f"corrupt zip file ({exc})", path=path, fix=fix) from None
    return content


def check_not_office(head: bytes, path: Path) -> None:
    """Refuse an Excel 97-2003 workbook (or another OLE2 office file) by its first bytes, saying how
    to save it as data; and a web page (HTML: a file's page on GitHub or a sign-in page downloaded in
    its place), saying where the data file is."""
    if head.startswith(_OLE2_MAGIC):
        problem = "a Microsoft Office file (an Excel 97-2003 workbook?), not a data file"
        raise DataError(problem, path=path, fix=_SAVE_AS_CSV)
    if _HTML.match(head[:4096]):
        raise DataError(
            "a web page (HTML), not a data file",
            path=path,
            fix="give the address of the file itself: its download link, or for a file shown on GitHub the "
            "address of its Raw button (raw.githubusercontent.com/...)",
        )


def _workbook(archive: zipfile.ZipFile, names: list[str]) -> str | None:
    """What a zip archive is when it is an office document rather than an archive of data: an Excel
    workbook (.xlsx: ``xl/`` parts), an OpenDocument spreadsheet (.ods), another office file."""
    if "[Content_Types].xml" in names:
        return "an Excel workbook (.xlsx)" if any(n.startswith("xl/") for n in names) else "a Microsoft Office file"
    if "mimetype" in names:
        kind = archive.read("mimetype")[:100]
        if kind.startswith(b"application/vnd.oasis.opendocument"):
            return "an OpenDocument spreadsheet (.ods)" if b"spreadsheet" in kind else "an OpenDocument file"
    return None


def _checked_content(content: bytes, path: Path, budget: int) -> bytes:
    """Decompressed content within the memory budget, not blank, without a byte-order mark."""
    if len(content) > budget:
        raise _too_large(path, f"the file decompresses to more than {budget / 2**30:.1f} GiB")
    if is_blank(content):
        raise empty_file_error(path)
    return _strip_bom(content)


def is_blank(content: bytes) -> bool:
    """Nothing but whitespace (``not content.strip()`` without copying a file of hundreds of MB)."""
    return not content or content.isspace()


def _strip_bom(content: bytes) -> bytes:
    """Drop a UTF-8 byte-order mark (spreadsheet exports write one): it would make the first row's
    first field non-numeric, so the row would be taken for a header and lost."""
    return content[len(codecs.BOM_UTF8) :] if content.startswith(codecs.BOM_UTF8) else content


#: The longest line (or field) a text file may have: wider data than 64 MiB a line (millions of
#: dense features) is not read as text; a longer line is damage (a binary or truncated file).
MAX_LINE_BYTES = 64 * 2**20


def text_content(content: bytes, path: Path) -> bytes:
    """Decompressed text ready for the parsers: old Mac line ends (CR only) become LF, and a line
    longer than :data:`MAX_LINE_BYTES` is refused before a parser copies it."""
    if b"\r" in content and content.count(b"\r") != content.count(b"\r\n"):  # some CR ends a line alone
        content = content.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    check_line_lengths(content, path)
    return content


def check_line_lengths(content: bytes, path: Path) -> None:
    """Refuse a line over :data:`MAX_LINE_BYTES`; one search per window of that size, not per line."""
    start = 0
    while len(content) - start > MAX_LINE_BYTES:
        newline = content.rfind(b"\n", start, start + MAX_LINE_BYTES + 1)
        if newline < 0:
            raise DataError(
                f"the line is longer than {MAX_LINE_BYTES:,} bytes, the most a line of a text data file may hold",
                path=path,
                row=content.count(b"\n", 0, start) + 1,
                fix="check that the file is complete text data (not binary, not missing its line ends); very "
                "wide data belongs in a LIBSVM or parquet file",
            )
        start = newline + 1


def first_lines(content: bytes, n: int) -> list[bytes]:
    out: list[bytes] = []
    for line in io.BytesIO(content):
        if line.strip():
            out.append(line.rstrip(b"\r\n"))
            if len(out) == n:
                break
    return out


def text_lines(content: bytes, *, first_number: int = 1, delimiter: str | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` for the lines numpy's reader treats as rows.

    numpy skips empty lines; with whitespace as the delimiter it also skips lines of spaces,
    while with ``,`` or tab such a line is a (bad) row, so it is yielded for the diagnosis.
    """
    for number, line in enumerate(content.split(b"\n"), start=first_number):
        line = line.rstrip(b"\r")
        if line.strip() if delimiter is None else line:
            yield number, line


def is_number(text: str | bytes) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


#: How to convert a file that is not UTF-8: spreadsheets and older tools on Windows save Latin-1 or
#: Windows-1252, whose letters with accents are single bytes UTF-8 does not allow.
UTF8_FIX = (
    "save the file as UTF-8 text (e.g. `iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.utf8`, or UTF-8 in the "
    "spreadsheet's CSV export)"
)


def decode_utf8(data: bytes, path: object, *, first_number: int | None = None, what: str = "the text") -> str:
    """``data`` decoded as UTF-8, or an error naming the line and bytes that are not UTF-8 (decoding
    with replacement would turn ``é`` and ``è`` of a Latin-1 file both into ``\ufffd``: two labels
    made one). ``first_number``: the file line number of ``data``'s first line, if known."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        line = data[start : end if end >= 0 else len(data)].rstrip(b"\r")
        row = None if first_number is None else first_number + data.count(b"\n", 0, exc.start)
        shown = line if len(line) <= 60 else line[:60] + b"..."
        raise DataError(
            f"{what} is not UTF-8: byte {data[exc.start : exc.start + 1]!r} in {shown!r} (Latin-1 or Windows-1252?)",
            path=path,
            row=row,
            fix=UTF8_FIX,
        ) from None


def show_bytes(value: bytes, limit: int = 40) -> str:
    text = value.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")
