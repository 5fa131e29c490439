"""``--data -`` (``omkl data ingest -``): a command's data from standard input, e.g.
``zcat day.csv.gz | omkl predict --model-dir m --data - --out -``.

The readers read a file more than once (its format, its labels and every row's check, then its
features), so standard input is first saved whole to a file named ``stdin`` in a temporary folder
(the disk holds the input: plain, compressed, any format a file may have), which the command then
reads as a file and which is removed when the command ends. Messages name it "standard input"
(:func:`named`), not the temporary file.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click

STDIN = "-"
COPY_BYTES = 1 << 20
# the files standard input was saved to in this process (kept after their removal: an error is
# printed once the command's context has closed)
_SAVED: list[str] = []


def named(message: str) -> str:
    """``message`` with the file standard input was saved to called "standard input"."""
    for path in _SAVED:
        message = message.replace(path, "standard input")
    return message


def read_stdin(ctx: click.Context, param: click.Parameter, value):
    """A click callback: ``value`` as given, or for ``-`` the path of standard input saved to a file
    (removed when the command's context closes)."""
    if value != STDIN:
        return value
    stream = sys.stdin.buffer
    if stream.isatty():
        raise click.BadParameter(
            "- reads the data from standard input, which is a terminal here: pipe the data in "
            "(`zcat day.csv.gz | omkl ...`) or give a file",
            ctx,
            param,
        )
    folder = Path(tempfile.mkdtemp(prefix="omkl-stdin-"))
    try:
        path = folder / "stdin"
        with open(path, "wb") as fh:
            shutil.copyfileobj(stream, fh, COPY_BYTES)
        if path.stat().st_size == 0:
            raise click.BadParameter("standard input was empty: pipe the data in, or give a file", ctx, param)
    except BaseException:  # (an error, a Ctrl-C, a full disk: nothing of the input is left behind)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    ctx.call_on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
    _SAVED.append(str(path))
    return str(path)
