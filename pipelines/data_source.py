"""A command's data that is no local file: standard input (``--data -``, ``omkl data ingest -``) and a
data file at a URL (``--data s3://bucket/exports/2026-12-01.csv``, or a folder of parquet files there).

The readers read a file more than once (its format, its labels and every row's check, then its
features), so such data is first saved whole to a temporary local folder -- standard input as a file
named ``stdin``, a URL's file or folder under its own name (:mod:`omkl_dist.storage.fetch`) -- which
the command then reads as that file, and which is removed when the command ends (the disk holds the
input). An ingested dataset at a URL is not copied: it is streamed from there, as before. Messages
and what the command prints name the data as given (:func:`named`), not the temporary copy.
"""

from __future__ import annotations

import atexit
import shutil
import sys
from contextlib import ExitStack

import click

STDIN = "-"
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
    folder) at a URL the path of its temporary local copy, removed when the command ends."""
    if value == STDIN:
        if sys.stdin.buffer.isatty():
            raise click.BadParameter(
                "- reads the data from standard input, which is a terminal here: pipe the data in "
                "(`zcat day.csv.gz | omkl ...`) or give a file",
                ctx,
                param,
            )
        from omkl_dist.storage.fetch import temporary_copy

        return _kept(ctx, param, "standard input", temporary_copy("stdin", _save_stdin))
    from omkl_dist.storage.location import is_url

    if not is_url(value):
        return value
    from omkl_dist.storage import DataError
    from omkl_dist.storage.fetch import local_copy, remote_data

    try:
        source = remote_data(value)
    except DataError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    return value if source is None else _kept(ctx, param, value, local_copy(source))


def _kept(ctx: click.Context, param: click.Parameter, shown: str, copy) -> str:
    """The path of the temporary ``copy`` (a context manager), removed when ``ctx`` closes -- or when
    the process ends: a later option's usage error leaves click's context unclosed."""
    stack = ExitStack()
    path = stack.enter_context(copy)
    ctx.call_on_close(stack.close)
    atexit.register(stack.close)
    if path.is_file() and path.stat().st_size == 0:
        stack.close()
        raise click.BadParameter(f"{shown} was empty: give the data, or a file", ctx, param)
    _SHOWN[str(path)] = shown
    return str(path)


def _save_stdin(path) -> None:
    from omkl_dist.storage.fetch import COPY_BYTES

    with open(path, "wb") as fh:
        shutil.copyfileobj(sys.stdin.buffer, fh, COPY_BYTES)
