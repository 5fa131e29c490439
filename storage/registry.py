"""The dataset registry: the real datasets described by ``MANIFEST.json`` in the data folder.

Each file in the manifest can be addressed in three ways:

* by dataset name (``"codrna"``); a name with several files resolves to its training split --
  the file whose role starts with "train", otherwise the first file listed;
* as ``"name/filename"``, the manifest key (``"a9a/a9a.t.gz"``);
* by file-stem alias: the file name without ``.gz`` (``"a9a.t"``, ``"splice.train.csv"``) and
  without its data extensions (``"splice.train"``, ``"german"``), when no other file claims it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, TypeAlias

from omkl_dist._validation import close_matches

from .datadir import data_dir as _default_data_dir
from .errors import DataError
from .schema import integer, obj, read_json, string

MANIFEST = "MANIFEST.json"
#: ``MANIFEST.json``: per file (path relative to the data folder), its JSON description.
Manifest: TypeAlias = dict[str, dict[str, Any]]
# Extensions peeled off a file name to make its short alias ("cod-rna.train.dense.txt" -> "cod-rna.train").
_DATA_EXTENSIONS = (".txt", ".csv", ".tsv", ".mat", ".libsvm", ".dense", ".data")


_COUNT = integer(minimum=0, maximum=2**48)
#: MANIFEST.json: an object keyed by file path; the fields the registry uses are checked, others kept
MANIFEST_SCHEMA = obj(
    values=obj(
        optional={
            "name": string(min_length=1),
            "role": string(),
            "fmt": string(),
            "rows": _COUNT,
            "features": _COUNT,
            "n_classes": _COUNT,
            "class_counts": obj(values=_COUNT),
            "sha256_gz": string(),
        }
    )
)


def load_manifest(data_dir: str | os.PathLike[str] | None = None) -> Manifest:
    """``MANIFEST.json`` of the data folder, keyed by relative file path."""
    folder = Path(data_dir) if data_dir is not None else _default_data_dir()
    path = folder / MANIFEST
    if not path.is_file():
        raise DataError(
            "no MANIFEST.json: not a datasets folder",
            path=folder,
            fix="set OMKL_DATA_DIR (or --data-dir) to the folder holding MANIFEST.json",
        )
    manifest: Manifest = read_json(path, fix="restore MANIFEST.json from the shared datasets", schema=MANIFEST_SCHEMA)
    return manifest


def list_datasets(data_dir: str | os.PathLike[str] | None = None, verify: bool = True) -> list[dict[str, Any]]:
    """Describe every file of the registry.

    Parameters
    ----------
    data_dir : str or Path, optional
        The datasets folder; default ``$OMKL_DATA_DIR`` or ``../shared/datasets``.
    verify : bool, default True
        Hash each file and compare it with the manifest's ``sha256_gz``.

    Returns
    -------
    list of dict
        One dict per file, sorted by name then file, with keys ``name``, ``file`` (manifest
        key), ``path``, ``role``, ``format``, ``rows``, ``features``, ``classes`` (number of
        classes), ``class_counts``, ``default`` (whether the bare name resolves to it) and
        ``sha256``: ``"ok"``, ``"mismatch"``, ``"missing"`` or ``"unchecked"`` (``verify=False``
        and the file exists).
    """
    folder = Path(data_dir) if data_dir is not None else _default_data_dir()
    manifest = load_manifest(folder)
    defaults = {_default_file(manifest, name) for name in {e.get("name") for e in manifest.values()}}
    rows = []
    for key in sorted(manifest, key=lambda k: (manifest[k].get("name", ""), k)):
        entry = manifest[key]
        path = folder / key
        rows.append(
            {
                "name": entry.get("name", key.split("/")[0]),
                "file": key,
                "path": str(path),
                "role": entry.get("role", ""),
                "format": entry.get("fmt"),
                "rows": entry.get("rows"),
                "features": entry.get("features"),
                "classes": entry.get("n_classes", len(entry.get("class_counts", {}))),
                "class_counts": entry.get("class_counts", {}),
                "default": key in defaults,
                "sha256": _check(path, entry.get("sha256_gz"), verify),
            }
        )
    return rows


def resolve_dataset(name_or_path: str | os.PathLike[str], data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The file a dataset name, ``name/file``, file alias or path refers to.

    Parameters
    ----------
    name_or_path : str or Path
        An existing file (returned as is) or a registry name (see the module docstring).
    data_dir : str or Path, optional
        The datasets folder; default ``$OMKL_DATA_DIR`` or ``../shared/datasets``.

    Returns
    -------
    Path

    Raises
    ------
    DataError
        Unknown name (the message lists close matches), or a registered file that is missing.
    """
    candidate = Path(name_or_path).expanduser()
    if candidate.is_file():
        return Path(name_or_path)
    text = str(name_or_path)
    folder = Path(data_dir) if data_dir is not None else _default_data_dir()
    try:
        manifest = load_manifest(folder)
    except DataError:
        if candidate.exists():  # e.g. a directory: let the reader say what is wrong with it
            return Path(name_or_path)
        raise DataError(
            f"no such file, and no datasets registry to look {text!r} up in",
            path=folder,
            fix="check the path, or set OMKL_DATA_DIR to the folder holding MANIFEST.json",
        ) from None
    key = _lookup(manifest, text)
    if key is None:
        if candidate.exists():
            return Path(name_or_path)
        raise _unknown(text, manifest)
    path = folder / key
    if not path.is_file():
        raise DataError(
            f"{text!r} is registered in MANIFEST.json but its file is missing",
            path=path,
            fix="restore the datasets folder, or point OMKL_DATA_DIR at a complete copy",
        )
    return path


def aliases(manifest: Manifest) -> dict[str, str]:
    """Every accepted name -> manifest key (names and ``name/file`` win over stem aliases)."""
    table = {key: key for key in manifest}
    by_alias: dict[str, set[str]] = {}
    for key, entry in manifest.items():
        name = entry.get("name", key.split("/")[0])
        for alias in _stem_aliases(Path(key).name):
            by_alias.setdefault(alias, set()).add(key)
            by_alias.setdefault(f"{name}/{alias}", set()).add(key)
    # An alias two files share would be a guess: leave it out (they stay reachable as name/file).
    table.update({alias: next(iter(keys)) for alias, keys in by_alias.items() if len(keys) == 1 and alias not in table})
    for name in {e.get("name", k.split("/")[0]) for k, e in manifest.items()}:
        table[name] = _default_file(manifest, name)
    return table


def _lookup(manifest: Manifest, text: str) -> str | None:
    table = aliases(manifest)
    return table.get(text.strip().rstrip("/"))


def _default_file(manifest: Manifest, name: str | None) -> str:
    """The file a bare dataset name means: its training split, else its first file."""
    keys = [k for k, e in manifest.items() if e.get("name", k.split("/")[0]) == name]
    for key in keys:
        if str(manifest[key].get("role", "")).strip().lower().startswith("train"):
            return key
    return keys[0]


def _stem_aliases(filename: str) -> list[str]:
    stem = filename[:-3] if filename.endswith(".gz") else filename
    out = [stem]
    while Path(stem).suffix.lower() in _DATA_EXTENSIONS:
        stem = stem[: -len(Path(stem).suffix)]
        out.append(stem)
    return out


def _unknown(text: str, manifest: Manifest) -> DataError:
    close = close_matches(text, sorted(aliases(manifest)), n=5)
    hint = f" (close matches: {', '.join(repr(c) for c in close)})" if close else ""
    return DataError(
        f"no such file or registered dataset {text!r}{hint}",
        fix="run `omkl data list` to see the registered datasets, or give the path of an existing file",
    )


def _check(path: Path, expected: object, verify: bool) -> str:
    if not path.is_file():
        return "missing"
    if not verify:
        return "unchecked"
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "ok" if digest.hexdigest() == expected else "mismatch"
