"""Turn ``--data`` (a registry name, a data file or a folder) into an ingested dataset for the jobs
that stream one from disk (``submit``, ``retrain``), or into the path the outputs keep clear of."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from omkl_dist.preprocessing import ColumnEncoder
from omkl_dist.storage import DataError, ingest, resolve_dataset
from omkl_dist.storage.ingest import dataset_info
from omkl_dist.storage.job_data import is_ingested, refuse_label_options
from omkl_dist.storage.labels import has_no_labels
from omkl_dist.storage.location import is_remote, location

from .data_source import origin


def data_path(data: str) -> Path | None:
    """The file or folder ``--data`` names (a registry name resolved), for the output checks."""
    path = location(data)
    if is_remote(path) or path.exists():
        return path
    try:
        return resolve_dataset(data)
    except ValueError:  # not a registry name either: the command reports it
        return None


def refuse_unlabelled(data, labels: dict | None) -> None:
    """A job that learns needs labels: ``--label-column none`` is refused before any work (before
    the file is read, ingested or a store or output folder is made)."""
    if has_no_labels((labels or {}).get("label_column")):
        raise DataError(
            "--label-column none reads rows without labels, which can be predicted but not learnt from",
            path=data,
            fix="name the label column (or leave --label-column out); predict rows without labels with "
            "omkl predict --label-column none",
        )


def ingested_source(
    data,
    *,
    under,
    labels: dict | None = None,
    columns: ColumnEncoder | None = None,
    coding: dict | None = None,
    progress=None,
):
    """``data`` as an ingested dataset, for the jobs that stream one (``submit``, ``retrain``): itself
    when it is one (it took its label options at ingest), else the file (or registry name, or
    parquet folder) ingested with ``labels`` into ``under/<file name>-<digest>``, a folder named
    after the source's bytes and the label options -- so a rerun on the same file reuses it, and another
    file or other options never replace it. ``columns``: a fitted encoder (a champion's) that makes
    a table's features, instead of one fitted on the file. ``coding``: the ``classes`` (and
    ``positive_class``) a champion's labels are coded by, for the labels the file does not name
    (not part of the digest: a model's windows are always coded by its own classes, and a file
    its first version ingested with its own classes, the same, is found again)."""
    refuse_unlabelled(data, labels)
    labels = {k: v for k, v in (labels or {}).items() if v is not None}
    path = location(data)
    if is_ingested(path):
        refuse_label_options(data, labels)
        return path
    source = Path(data) if Path(data).is_dir() else resolve_dataset(data)
    encoder = {} if columns is None else {"columns": columns.to_dict()}
    digest = _source_digest(source, {**labels, **encoder})
    # named after the file too: the folder's name is the dataset's name in a job's report and trace
    # (a bare digest read "spa on ba33e2f4b5802e25"); a folder of an earlier version, named by the
    # digest alone, is still the one a rerun finds
    target = location(under) / digest
    if not is_ingested(target):
        target = location(under) / f"{_UNSAFE.sub('_', source.name)[:64]}-{digest}"
    if not is_ingested(target):
        ingest(
            source, target, **{**(coding or {}), **labels}, columns=columns, origin=origin(source), progress=progress
        )
    dataset_info(target)  # a damaged earlier ingest is an error here, not a silent reuse
    return target


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")  # (what a folder name keeps of a file's name)


def _source_digest(source: Path, labels: dict) -> str:
    """sha256 (first 16 hex digits) of a source's bytes (a folder's files, by relative path) and the
    label options it is read with."""
    h = hashlib.sha256(json.dumps(labels, sort_keys=True, default=str).encode())
    files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
    for f in files:
        h.update(str(f.relative_to(source) if source.is_dir() else f.name).encode())
        with open(f, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]
