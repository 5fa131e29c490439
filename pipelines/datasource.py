"""Turn ``--data`` (a registry name, a data file or a folder) into an ingested dataset for the jobs
that stream one from disk (``submit``, ``retrain``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from omkl_dist.storage import ingest, resolve_dataset
from omkl_dist.storage.ingest import dataset_info
from omkl_dist.storage.job_data import is_ingested, refuse_label_options
from omkl_dist.storage.location import location


def ingested_source(data, *, under, labels: dict | None = None):
    """``data`` as an ingested dataset, for the jobs that stream one (``submit``, ``retrain``): itself
    when it is one (it took its label options at ingest), else the file (or registry name, or
    parquet folder) ingested with ``labels`` into ``under/<digest>``, a folder named after the
    source's bytes and the label options -- so a rerun on the same file reuses it, and another
    file or other options never replace it."""
    labels = {k: v for k, v in (labels or {}).items() if v is not None}
    path = location(data)
    if is_ingested(path):
        refuse_label_options(data, labels)
        return path
    source = Path(data) if Path(data).is_dir() else resolve_dataset(data)
    target = location(under) / _source_digest(source, labels)
    if not is_ingested(target):
        ingest(source, target, **labels)
    dataset_info(target)  # a damaged earlier ingest is an error here, not a silent reuse
    return target


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
