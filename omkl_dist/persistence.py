"""Save and load fitted models (with their preprocessing) through the storage model store."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from omkl_dist.algorithms.registry import ALGORITHMS, BATCH_ALGORITHMS
from omkl_dist.preprocessing import Scaler
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.models import MODEL_DAMAGED, read_state, write_state

_BY_CLASS = {cls.__name__: cls for cls in [*ALGORITHMS.values(), *BATCH_ALGORITHMS.values()]}


def save_model(
    model,
    directory,
    *,
    scaler: Scaler | None = None,
    extra_meta: dict | None = None,
    overwrite: bool = False,
    inputs=(),
    option: str = "--model-out",
):
    """Write ``model`` (and the scaler its inputs need) atomically to ``directory``; ``overwrite``
    replaces only an earlier saved model, and ``inputs`` are (label, path) pairs it must keep clear
    of (see :func:`omkl_dist.storage.outputs.check_output`)."""
    arrays, meta = model.to_state()
    if scaler is None:  # the identity, fitted on an empty sparse row: nothing sized by the width
        scaler = Scaler("none").fit(sparse.csr_matrix((1, model.n_features_in_)))
    scaler_dict = scaler.to_dict()
    scaler_meta = {}
    for key, value in scaler_dict.items():
        if isinstance(value, np.ndarray):
            arrays[f"scaler_{key}"] = value
        else:
            scaler_meta[key] = value
    meta["scaler"] = {
        "scalars": scaler_meta,
        "arrays": [k for k, v in scaler_dict.items() if isinstance(v, np.ndarray)],
    }
    meta.update(extra_meta or {})
    return write_state(directory, arrays, meta, overwrite=overwrite, inputs=inputs, option=option)


def load_model(directory):
    """Return ``(model, scaler, meta)`` from a directory written by :func:`save_model`."""
    arrays, meta = read_state(directory)
    try:
        cls = _BY_CLASS[meta["algorithm"]]
    except (KeyError, TypeError):
        raise DataError(
            f"unknown algorithm {meta.get('algorithm')!r} in the saved model",
            path=directory,
            fix=f"this omkl-dist knows {sorted(_BY_CLASS)}",
        ) from None
    try:
        scaler_dict = dict(meta["scaler"]["scalars"])
        scaler_dict.update({k: arrays.pop(f"scaler_{k}") for k in meta["scaler"]["arrays"]})
        return cls.from_state(arrays, meta), Scaler.from_dict(scaler_dict), meta
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # a model.json that passed its hash but lacks or mistypes a field (edited, hash recomputed)
        # surfaces here, inside the estimator's own reconstruction
        detail = f"missing entry {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise DataError(
            f"the saved model does not describe a valid {meta['algorithm']} ({detail})",
            path=directory,
            fix=MODEL_DAMAGED,
        ) from None
