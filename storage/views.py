"""Multi-view datasets: several aligned files (row i is the same object in every file) read as one
dataset whose columns are the views side by side, with the feature groups recorded.

A view's columns are its group: kernels name them (``chi2 @ fourier``, see
:mod:`omkl_dist.kernels.specs`). The groups are written into a dataset's ``meta.json`` as
``{"feature_groups": {"fourier": "0:76", ...}}`` (half-open column ranges).

Sources: a mapping ``{view name: file}``, a folder of data files, or a registry name whose files
are views (their manifest role reads ``view '<name>'``, e.g. ``mfeat``). The views' labels must
agree row by row as classes (the same internal codes: ``mfeat``'s pixel file labels its digits
0..9 and the others 1..10, which is the same class order); the first view's label names are kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np

from .errors import DataError
from .readers import Dataset, read_dataset
from .readers.dataset import FeatureMatrix
from .registry import load_manifest

_ROLE_RE = re.compile(r"view '([^']+)'")
#: Views: ``{view name: file}``, a folder of data files or a registry name.
ViewSource: TypeAlias = "str | os.PathLike[str] | dict[str, str] | dict[str, Path]"


def format_groups(groups: Mapping[str, Iterable[int]]) -> dict[str, str]:
    """``{name: column indices}`` → ``{name: "lo:hi,..."}`` (the meta form)."""
    from omkl_dist.kernels.grammar import format_columns

    return {name: format_columns(tuple(cols)) for name, cols in groups.items()}


def checked_groups(
    groups: Mapping[str, str | Iterable[int]], n_features: int, path: object
) -> dict[str, tuple[int, ...]]:
    """``{name: column indices or "lo:hi" text}`` checked against the data's width: names valid,
    columns within it, no column in two groups. Returns ``{name: column indices}``."""
    from omkl_dist.kernels.grammar import check_columns, check_group_name, parse_columns

    out: dict[str, tuple[int, ...]] = {}
    owner: dict[int, str] = {}
    try:
        for name, cols in groups.items():
            check_group_name(name)
            context = f"feature group {name!r}"
            out[name] = (
                parse_columns(cols, context=context) if isinstance(cols, str) else check_columns(cols, context=context)
            )
    except ValueError as exc:
        raise DataError(
            str(exc), path=path, fix="write groups as name=lo:hi, e.g. fourier=0:76;zernike=76:123"
        ) from None
    for name, cols in out.items():
        if cols[-1] >= n_features:
            raise DataError(
                f"feature group {name!r} names column {cols[-1]}, but the data has {n_features} columns",
                path=path,
                fix="give columns 0..n_features-1 (ranges are half-open: 0:76 is 0..75)",
            )
        for c in cols:
            if c in owner:
                raise DataError(
                    f"column {c} is in feature groups {owner[c]!r} and {name!r}",
                    path=path,
                    fix="give each column to one group",
                )
            owner[c] = name
    return out


def feature_groups(meta: Mapping[str, Any]) -> dict[str, tuple[int, ...]] | None:
    """The feature groups a dataset's meta records, ``{name: column indices}``, or None."""
    from omkl_dist.kernels.grammar import parse_columns

    groups = meta.get("feature_groups")
    if groups is None:
        return None
    return {name: parse_columns(text, context=f"feature group {name!r} in meta.json") for name, text in groups.items()}


def is_multiview(source: object, *, data_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``source`` names a registry dataset made of views (``mfeat``); files, folders and
    other names are not (a folder of views must be read with :func:`read_views` explicitly)."""
    if not isinstance(source, str) or Path(source).expanduser().exists():
        return False
    try:
        entries = [e for e in load_manifest(data_dir).values() if e.get("name") == source]
    except DataError:
        return False
    return len(entries) > 1 and all(_ROLE_RE.search(str(e.get("role", ""))) for e in entries)


def view_files(source: ViewSource, *, data_dir: str | os.PathLike[str] | None = None) -> dict[str, Path]:
    """The view files of ``source`` by view name (see the module notes)."""
    if isinstance(source, dict):
        return {str(name): Path(path) for name, path in source.items()}
    folder = Path(source).expanduser()
    if folder.is_dir():
        files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
        return _named_by_stem(files, folder)
    manifest = load_manifest(data_dir)
    root = Path(data_dir) if data_dir is not None else _data_root()
    entries = {key: e for key, e in manifest.items() if e.get("name") == str(source)}
    if not entries:
        raise DataError(
            f"{source!r} is neither a folder of view files nor a dataset name in the registry",
            path=root,
            fix="give a folder, a registry name such as 'mfeat', or {view: file}",
        )
    named: dict[str, Path] = {}
    for key, entry in sorted(entries.items()):
        match = _ROLE_RE.search(str(entry.get("role", "")))
        if match is None:
            raise DataError(
                f"dataset {source!r} has a file that is not a view ({key}: role {entry.get('role')!r})",
                path=root,
                fix="name the view files: {view: file}",
            )
        named[match.group(1)] = root / key
    return named


def _data_root() -> Path:
    from .datadir import data_dir

    return data_dir()


def _named_by_stem(files: list[Path], folder: Path) -> dict[str, Path]:
    if len(files) < 2:
        raise DataError(
            f"a multi-view dataset needs at least two view files, found {len(files)}",
            path=folder,
            fix="put one file per view in the folder",
        )
    stems = [f.name.split(".")[0] for f in files]
    prefix = len(_common_prefix(stems))
    names = [stem[prefix:] or stem for stem in stems]
    return dict(zip(names, files, strict=True))


def _common_prefix(words: list[str]) -> str:
    first, last = min(words), max(words)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def read_views(
    source: ViewSource, *, data_dir: str | os.PathLike[str] | None = None, label_column: str | int | None = None
) -> tuple[Dataset, dict[str, tuple[int, ...]]]:
    """Read the views of ``source`` side by side: ``(dataset, {view name: column indices})``.

    Examples
    --------
    >>> ds, groups = read_views("mfeat")                       # doctest: +SKIP
    >>> ds.X.shape, {name: len(cols) for name, cols in groups.items()}   # doctest: +SKIP
    ((2000, 649), {'factors': 216, 'fourier': 76, 'karhunen': 64, ...})
    """
    files = view_files(source, data_dir=data_dir)
    if len(files) < 2:
        raise DataError(
            f"a multi-view dataset needs at least two views, got {sorted(files)}",
            path=str(source),
            fix="give two or more aligned files",
        )
    parts: list[FeatureMatrix] = []
    groups: dict[str, tuple[int, ...]] = {}
    names: list[str] = []
    digests: list[str] = []
    start = 0
    first: Dataset | None = None
    for name, path in files.items():
        ds = read_dataset(path, label_column=label_column, sparse=False)  # views are stacked densely
        if first is None:
            first = ds
        elif ds.n_rows != first.n_rows:
            raise DataError(
                f"view {name!r} has {ds.n_rows} rows, the first view {first.n_rows}: the views are not aligned",
                path=path,
                fix="give files with row i the same object in every view",
            )
        elif ds.n_classes != first.n_classes or not np.array_equal(ds.labels, first.labels):
            row = int(np.argmax(ds.labels != first.labels)) if ds.n_classes == first.n_classes else 0
            raise DataError(
                f"view {name!r} labels row {row} as class code {ds.labels[row]}, the first view as "
                f"{first.labels[row]}: the views are not aligned",
                path=path,
                fix="give files whose rows are in the same order",
            )
        parts.append(ds.X)
        digests.append(f"{name}={ds.sha256}")
        groups[name] = tuple(range(start, start + ds.n_features))
        names.extend(f"{name}:{f}" for f in (ds.feature_names or range(ds.n_features)))
        start += ds.n_features
    X = np.ascontiguousarray(np.hstack(parts))
    assert first is not None  # two views or more were read
    merged = replace(
        first,
        X=X,
        fmt="views",
        path=Path(str(source)) if not isinstance(source, dict) else Path("."),
        sha256=_combined_digest(digests),
        feature_names=names,
    )
    return merged, groups


def _combined_digest(items: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(items).encode()).hexdigest()
