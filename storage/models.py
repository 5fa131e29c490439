"""Model store: a model's full state as a zarr group of arrays + JSON metadata (docs/design.md, "The store").

::

    DIR/
      state.zarr/   one array per state entry
      model.json    schema_version, kind="model", the caller's metadata, per array its
                    dtype, shape and sha256, and meta_sha256 over all of that

Written atomically (temporary directory + rename, replacing only an earlier model); loading checks
model.json's structure, each array's declared shape against zarr's own metadata and the memory it
would take *before* reading it, then the schema version and every checksum; it never unpickles.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import zarr
from numpy.typing import ArrayLike, NDArray

from .errors import DataError
from .layout import meta_digest
from .location import Location, PathArg, is_remote, location
from .outputs import MODEL, Inputs, atomic_output, uninterrupted
from .schema import obj, read_json

MODEL_SCHEMA_VERSION = 2  # 2: meta_sha256 covers model.json
STATE = "state.zarr"
MODEL_META = "model.json"


def _digest(a: NDArray[Any]) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def write_state(
    directory: PathArg,
    arrays: Mapping[str, ArrayLike],
    meta: Mapping[str, Any],
    *,
    overwrite: bool = False,
    inputs: Inputs = (),
    option: str = "--model-out",
) -> Location:
    """Write ``arrays`` (name -> numeric ndarray) and JSON-able ``meta`` to ``directory``.

    ``inputs``: (label, path) pairs the directory must not be, lie in or contain (see
    :func:`omkl_dist.storage.outputs.check_output`); ``option`` names it in messages.
    """
    with atomic_output(directory, kind=MODEL, overwrite=overwrite, inputs=inputs, option=option) as tmp:
        with uninterrupted():  # zarr writes from its own thread: let it finish before a Ctrl-C cleans up
            group = zarr.open_group(str(tmp / STATE), mode="w")
        index: dict[str, dict[str, Any]] = {}
        for name, value in arrays.items():
            a = np.asarray(value)
            if a.dtype.kind not in "biuf":
                raise TypeError(f"state array {name!r} has dtype {a.dtype}; only numeric arrays are stored")
            if a.ndim == 0:
                raise TypeError(f"state array {name!r} is a scalar; store scalars in the metadata")
            with uninterrupted():
                # one chunk per array: model state is read whole; empty dimensions still need chunk >= 1
                array = group.create_array(name, shape=a.shape, dtype=a.dtype, chunks=tuple(max(n, 1) for n in a.shape))
                if a.size:
                    array[...] = a
            index[name] = {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": _digest(a)}
        full = {"schema_version": MODEL_SCHEMA_VERSION, "kind": "model", **meta, "arrays": index}
        full["meta_sha256"] = meta_digest(full)
        (tmp / MODEL_META).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
    return location(directory)


MODEL_DAMAGED = "the model directory is damaged; restore it from a copy or retrain"
_NUMERIC_KINDS = "biuf"


def read_state(
    directory: PathArg, *, memory_limit: int | None = None
) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
    """Read back ``(arrays, meta)``; anything missing, malformed, too large or not matching its
    checksum is a DataError naming the file and the array.

    ``memory_limit``: bytes the arrays may take (default: the memory available now).
    """
    directory = location(directory)
    meta_path = directory / MODEL_META
    meta = _read_meta(directory)
    index = _check_index(meta.get("arrays"), meta_path, memory_limit)
    try:
        group = zarr.open_group(str(directory / STATE), mode="r")
    except Exception as exc:  # zarr's errors name no file
        raise DataError(
            f"state.zarr cannot be opened ({type(exc).__name__}: {exc})", path=directory / STATE, fix=MODEL_DAMAGED
        ) from None
    arrays: dict[str, NDArray[Any]] = {}
    for name, (shape, dtype, digest) in index.items():
        arrays[name] = _read_array(group, name, shape, dtype, digest, directory / STATE)
    _check_meta_digest(meta, meta_path)
    return arrays, meta


def read_meta(directory: PathArg) -> dict[str, Any]:
    """A saved model's model.json (its description and provenance, ``meta_sha256``), checked against
    its recorded hash, without reading its arrays."""
    directory = location(directory)
    meta = _read_meta(directory)
    _check_meta_digest(meta, directory / MODEL_META)
    return meta


def _read_meta(directory: Location) -> dict[str, Any]:
    """model.json as a JSON object of this schema version (its hash not checked yet)."""
    meta_path = directory / MODEL_META
    if is_remote(directory):  # (its credentials or endpoint failing raise here: is_file says False to any error)
        directory.exists()
    if not meta_path.is_file() or not (directory / STATE).is_dir():
        raise DataError(
            "not a saved model (needs model.json and state.zarr)",
            path=directory,
            fix="save one with `omkl run ... --model-out DIR` or omkl_dist's save_model",
        )
    meta: dict[str, Any] = read_json(meta_path, fix=MODEL_DAMAGED, schema=obj())  # bounded, UTF-8, an object
    version = meta.get("schema_version")
    if version != MODEL_SCHEMA_VERSION:
        raise DataError(
            f"model schema version {version!r}, this omkl-dist reads {MODEL_SCHEMA_VERSION}",
            path=directory,
            fix="load it with the omkl-dist version that wrote it, or retrain",
        )
    return meta


def _check_meta_digest(meta: dict[str, Any], meta_path: Location) -> None:
    if meta.get("meta_sha256") != meta_digest(meta):
        raise DataError(
            "model.json does not match its recorded hash (meta_sha256): it was edited or damaged "
            "after the model was saved",
            path=meta_path,
            fix=MODEL_DAMAGED,
        )


def _check_index(
    index: object, meta_path: Location, memory_limit: int | None
) -> dict[str, tuple[tuple[int, ...], np.dtype[Any], str]]:
    """model.json's ``arrays`` as {name: (shape, dtype, sha256)}, each entry checked, and the whole
    small enough to read."""
    if not isinstance(index, dict):
        raise DataError("model.json has no 'arrays' object", path=meta_path, fix=MODEL_DAMAGED)
    out: dict[str, tuple[tuple[int, ...], np.dtype[Any], str]] = {}
    total = 0
    for name, info in index.items():
        try:
            shape = tuple(info["shape"])
            dtype = np.dtype(info["dtype"])
            digest = info["sha256"]
            ok = (
                all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
                and dtype.kind in _NUMERIC_KINDS
                and isinstance(digest, str)
            )
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise DataError(
                f"model.json's entry for state array {name!r} is malformed (needs a non-negative "
                "integer shape, a numeric dtype and a sha256)",
                path=meta_path,
                fix=MODEL_DAMAGED,
            )
        out[name] = (shape, dtype, digest)
        total += math.prod(shape) * dtype.itemsize
    limit = _available_memory() if memory_limit is None else int(memory_limit)
    if total > limit:
        raise DataError(
            f"the model's arrays would take {total / 2**30:.1f} GiB, more than the {limit / 2**30:.1f} "
            "GiB of memory available",
            path=meta_path,
            fix="load it on a machine with more memory; if the model is small, model.json is damaged",
        )
    return out


def _available_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def _read_array(
    group: zarr.Group, name: str, shape: tuple[int, ...], dtype: np.dtype[Any], digest: str, where: Location
) -> NDArray[Any]:
    if math.prod(shape) == 0:
        a = np.zeros(shape, dtype=dtype)
    else:
        try:
            stored = group[name]
        except KeyError:
            raise DataError(f"state array {name!r} is missing", path=where, fix=MODEL_DAMAGED) from None
        except Exception as exc:
            raise DataError(
                f"state array {name!r} cannot be opened ({type(exc).__name__}: {exc})", path=where, fix=MODEL_DAMAGED
            ) from None
        if tuple(getattr(stored, "shape", ())) != shape or getattr(stored, "dtype", None) != dtype:
            # checked before reading: a shape edited in zarr.json must not allocate anything
            raise DataError(
                f"state array {name!r} is stored as {getattr(stored, 'shape', '?')} "
                f"{getattr(stored, 'dtype', '?')}, model.json says {shape} {dtype}",
                path=where,
                fix=MODEL_DAMAGED,
            )
        try:
            a = np.asarray(stored[...])  # type: ignore[index]  # a Group (no shape) was refused above
        except Exception as exc:  # codec errors (e.g. a truncated chunk) name no file
            raise DataError(
                f"state array {name!r} cannot be read ({type(exc).__name__}: {exc})", path=where, fix=MODEL_DAMAGED
            ) from None
    if _digest(a) != digest:
        raise DataError(f"state array {name!r} does not match its checksum", path=where, fix=MODEL_DAMAGED)
    return a
