"""Where datasets, models and checkpoints live: a local path, or an fsspec URL (object storage).

``s3://bucket/data/codrna``, ``gs://...``, ``memory://...`` and every other protocol fsspec knows
(with its package installed: ``s3fs`` for S3) are opened as :class:`upath.UPath`, which offers
pathlib's reading API over fsspec; ``file://`` URLs and plain paths are :class:`pathlib.Path`.
Credentials and endpoints come from the usual places of each filesystem (for S3: the
``AWS_*`` environment variables, e.g. ``AWS_ENDPOINT_URL`` for a server other than AWS, or
``~/.aws``), so a Dask worker on another machine opens the same URL with its own configuration.

Object stores have no rename: an output written to a URL (:func:`upload_output`) is built in a
local temporary folder, and its marker file (``meta.json``, ``model.json``, ``job.json``) is
uploaded last and deleted first on a replacement, so a reader never takes a partial upload for a
complete dataset or model.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

if TYPE_CHECKING:
    from typing_extensions import TypeIs
    from upath import UPath

#: A local folder or file, or a remote (fsspec) one.
Location: TypeAlias = "Path | UPath"
#: What names a location: a path or URL string, a path, or a location.
PathArg: TypeAlias = "str | os.PathLike[str] | Location"

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(value: object) -> TypeGuard[str]:
    """Whether ``value`` names a remote (fsspec) location; ``file://`` URLs are local."""
    return isinstance(value, str) and bool(_URL.match(value)) and not value.startswith("file://")


def location(value: PathArg) -> Location:
    """A :class:`~pathlib.Path` for a local path (``~`` expanded) or ``file://`` URL, an
    :class:`upath.UPath` for any other URL; a location is returned unchanged."""
    if is_remote(value):
        return value
    text = str(value)
    if text.startswith("file://"):
        return Path(text[len("file://") :])
    if is_url(text):
        from upath import UPath

        try:
            return UPath(text)
        except (ImportError, ValueError) as exc:  # no fsspec implementation for the protocol
            raise ValueError(
                f"cannot open {text}: {exc} (install the filesystem's package, e.g. s3fs for s3://)"
            ) from None
    return Path(value).expanduser()  # `--out '~/m'` means the home folder, never a folder named ~


def is_remote(value: object) -> TypeIs[UPath]:
    """Whether ``value`` is a remote location object (a UPath that is not a local path)."""
    return not isinstance(value, (str, Path)) and hasattr(value, "fs") and hasattr(value, "protocol")


def text(loc: PathArg) -> str:
    """The location as a string: a URL for remote locations, the resolved absolute path of local ones
    (what a worker on the same machine, or with the same shared folder, opens)."""
    loc = location(loc)
    return str(loc) if is_remote(loc) else str(loc.expanduser().resolve())


def remove_tree(loc: Location) -> None:
    """Delete a folder (or prefix) and everything in it; nothing if it does not exist."""
    if is_remote(loc):
        if loc.exists():
            loc.fs.rm(loc.path, recursive=True)
        return
    import shutil

    shutil.rmtree(loc, ignore_errors=True)


def upload_output(local: Path, remote: UPath, marker: str) -> None:
    """Put the finished local folder ``local`` at ``remote``: an existing output there loses its marker
    first and its other entries next; the new entries go up with the marker last."""
    fs, root = remote.fs, remote.path.rstrip("/")
    if remote.exists():
        if fs.exists(f"{root}/{marker}"):
            fs.rm(f"{root}/{marker}")
        fs.rm(root, recursive=True)
    for entry in sorted(local.iterdir()):
        if entry.name != marker:
            fs.put(str(entry), f"{root}/{entry.name}", recursive=entry.is_dir())
    fs.put(str(local / marker), f"{root}/{marker}")
