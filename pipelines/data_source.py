"""A command's data that is no local file: standard input (``--data -``, ``omkl data ingest -``) and a
data file at a URL (``--data s3://bucket/exports/2026-12-01.csv``, or a folder of parquet files there).

The readers read a file more than once (its format, its labels and every row's check, then its
features), so such data is first saved whole to a temporary local folder -- standard input as a file
named ``stdin``, a URL's file or folder under its own name (its suffix tells its format) -- which the
command then reads as that file, and which is removed when the command ends (the disk holds the
input). An ingested dataset at a URL is not copied: it is streamed from there, as before. Messages
and what the command prints name the data as given (:func:`named`), not the temporary copy.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click

STDIN = "-"
COPY_BYTES = 1 << 22
# temporary copy -> the data as the user gave it (kept after the copy's removal: an error is printed
# once the command's context has closed)
_SHOWN: dict[str, str] = {}


def named(message: str) -> str:
    """``message`` with every temporary copy called what it is a copy of ("standard input", a URL)."""
    for path, shown in _SHOWN.items():
        message = message.replace(path, shown)
    return message


def origin(path) -> str | None:
    """What the temporary copy ``path`` is a copy of ("standard input", a URL), or None for any
    other path."""
    return _SHOWN.get(str(path))


def local_data(ctx: click.Context, param: click.Parameter, value):
    """A click callback: ``value`` as given, or for standard input and a data file (or parquet
    folder) at a URL the path of its temporary local copy."""
    if value == STDIN:
        if sys.stdin.buffer.isatty():
            raise click.BadParameter(
                "- reads the data from standard input, which is a terminal here: pipe the data in "
                "(`zcat day.csv.gz | omkl ...`) or give a file",
                ctx,
                param,
            )
        return _copied(ctx, param, "standard input", "stdin", _save_stdin)
    from omkl_dist.storage.location import is_url

    if not is_url(value):
        return value
    source = _remote_data(value, ctx, param)
    if source is None:  # an ingested dataset: streamed from its URL
        return value
    return _copied(ctx, param, value, source.name or "data", lambda path: _download(source, path))


def _copied(ctx, param, shown: str, name: str, save) -> str:
    """``save(path)`` into a new temporary folder's ``name``, removed when ``ctx`` closes (or at once,
    when saving fails or is interrupted)."""
    folder = Path(tempfile.mkdtemp(prefix="omkl-data-"))
    path = folder / name
    try:
        save(path)
        if path.is_file() and path.stat().st_size == 0:
            raise click.BadParameter(f"{shown} was empty: give the data, or a file", ctx, param)
    except BaseException:  # (an error, a Ctrl-C, a full disk: nothing of the input is left behind)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    ctx.call_on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
    _SHOWN[str(path)] = shown
    return str(path)


def _save_stdin(path: Path) -> None:
    with open(path, "wb") as fh:
        shutil.copyfileobj(sys.stdin.buffer, fh, COPY_BYTES)


def _remote_data(url: str, ctx, param):
    """The location of a data file or folder at ``url`` to copy here, or None for an ingested dataset
    (a folder with meta.json); nothing at ``url`` is refused, naming it."""
    from omkl_dist.storage.layout import META
    from omkl_dist.storage.location import location

    source = location(url)
    if (source / META).is_file():
        return None
    if source.is_file() or source.is_dir():
        return source
    raise click.BadParameter(
        f"nothing at {url}: neither a data file nor a dataset folder (one with {META}) is there", ctx, param
    )


def _download(source, path: Path) -> None:
    """The file or folder at ``source`` (a remote location) copied to ``path``."""
    if source.is_dir():
        source.fs.get(source.path.rstrip("/") + "/", str(path), recursive=True)
        return
    with source.open("rb") as remote, open(path, "wb") as local:
        shutil.copyfileobj(remote, local, COPY_BYTES)
