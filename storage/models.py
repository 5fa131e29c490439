"""Model store: a model's full state as a zarr group of arrays + JSON metadata (DESIGN §7).

::

    DIR/
      state.zarr/   one array per state entry
      model.json    schema_version, kind="model", the caller's metadata, and per array its
                    dtype, shape and sha256

Written atomically (temporary directory + rename); loading verifies the schema version and every
checksum and never unpickles.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import zarr

from .errors import DataError
from .layout import atomic_output_dir

MODEL_SCHEMA_VERSION = 1
STATE = "state.zarr"
MODEL_META = "model.json"


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def write_state(directory, arrays: dict, meta: dict, *, overwrite: bool = False) -> Path:
    """Write ``arrays`` (name -> numeric ndarray) and JSON-able ``meta`` to ``directory``."""
    with atomic_output_dir(directory, overwrite=overwrite) as tmp:
        group = zarr.open_group(str(tmp / STATE), mode="w")
        index = {}
        for name, value in arrays.items():
            a = np.asarray(value)
            if a.dtype.kind not in "biuf":
                raise TypeError(f"state array {name!r} has dtype {a.dtype}; only numeric arrays are stored")
            if a.ndim == 0:
                raise TypeError(f"state array {name!r} is a scalar; store scalars in the metadata")
            # one chunk per array: model state is read whole; empty dimensions still need chunk >= 1
            group.create_array(name, shape=a.shape, dtype=a.dtype, chunks=tuple(max(n, 1) for n in a.shape))
            if a.size:
                group[name][...] = a
            index[name] = {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": _digest(a)}
        full = {"schema_version": MODEL_SCHEMA_VERSION, "kind": "model", **meta, "arrays": index}
        (tmp / MODEL_META).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
    return Path(directory)


def read_state(directory) -> tuple[dict, dict]:
    """Read back ``(arrays, meta)``; a missing file, other schema or bad checksum is a DataError."""
    directory = Path(directory)
    meta_path = directory / MODEL_META
    if not meta_path.is_file() or not (directory / STATE).exists():
        raise DataError("not a saved model (needs model.json and state.zarr)", path=directory,
                        fix="save one with `omkl run ... --model-out DIR` or omkl_dist's save_model")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"model.json is not valid JSON ({exc})", path=meta_path,
                        fix="the model directory is damaged; restore it or retrain") from None
    version = meta.get("schema_version")
    if version != MODEL_SCHEMA_VERSION:
        raise DataError(f"model schema version {version!r}, this omkl-dist reads {MODEL_SCHEMA_VERSION}",
                        path=directory, fix="load it with the omkl-dist version that wrote it, or retrain")
    group = zarr.open_group(str(directory / STATE), mode="r")
    arrays = {}
    for name, info in meta["arrays"].items():
        shape = tuple(info["shape"])
        a = np.asarray(group[name][...]) if np.prod(shape) else np.zeros(shape, dtype=info["dtype"])
        if _digest(a) != info["sha256"]:
            raise DataError(f"state array {name!r} does not match its checksum", path=directory,
                            fix="the model directory is damaged; restore it or retrain")
        arrays[name] = a
    return arrays, meta
