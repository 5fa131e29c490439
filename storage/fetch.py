"""Data files at URLs: the night's export at ``s3://bucket/exports/2026-12-01.csv``, or a folder of
parquet files a Spark job wrote there.

The readers read a file more than once (its format, its labels and every row's check, then its
features), which a remote object cannot give cheaply, so :func:`local_copy` copies the file (or
folder) to a temporary local folder under its own name -- its suffix tells its format -- and removes
it afterwards. An ingested dataset at a URL (a folder with ``meta.json``) is not data to copy: it is
streamed from there (:func:`remote_data` says which is which).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from .errors import DataError
from .layout import META
from .location import Location, is_remote, location

COPY_BYTES = 1 << 22
_WEB = ("http", "https")  # (no folders there: fsspec lists an HTML page's links as one, fetching it whole)


def _folder(source: Location) -> bool:
    """Whether ``source`` is a folder to copy whole (a parquet dataset): never a web address."""
    return is_remote(source) and source.protocol not in _WEB and source.is_dir()


def remote_data(url: str) -> Location | None:
    """The data file or folder at ``url`` to copy here, or None for an ingested dataset there.

    Raises
    ------
    DataError
        Nothing is at ``url``.
    """
    source = location(url)
    if (source / META).is_file():
        return None
    if _folder(source) or source.is_file():
        return source
    raise DataError(
        f"nothing at {url}: neither a data file nor a dataset folder (one with {META}) is there",
        fix="check the URL (and that these credentials may list it)",
    )


@contextmanager
def temporary_copy(name: str, write: Callable[[Path], None]) -> Iterator[Path]:
    """``write(path)`` for ``path`` = ``name`` in a new temporary folder, which is removed on leaving
    (also when writing fails or is interrupted)."""
    folder = Path(tempfile.mkdtemp(prefix="omkl-data-"))
    try:
        path = folder / name
        write(path)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def local_copy(source: Location) -> AbstractContextManager[Path]:
    """:func:`temporary_copy` of the file or folder at ``source`` (a :func:`remote_data` location),
    under its own name."""

    def download(path: Path) -> None:
        if is_remote(source) and _folder(source):  # (is_remote again: what the type checker follows)
            source.fs.get(source.path.rstrip("/") + "/", str(path), recursive=True)
            return
        with source.open("rb") as remote, open(path, "wb") as local:
            shutil.copyfileobj(remote, local, COPY_BYTES)

    return temporary_copy(source.name or "data", download)
