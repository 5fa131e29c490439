"""Save and load fitted models (with their preprocessing) through the storage model store."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from omkl_dist.algorithms.registry import ALGORITHMS, BATCH_ALGORITHMS
from omkl_dist.preprocessing import Scaler
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.location import location
from omkl_dist.storage.models import MODEL_DAMAGED, MODEL_META, read_state, write_state
from omkl_dist.storage.schema import array, check, integer, obj, scalar, string, tuple_of

_LABEL_MAP = array(tuple_of(scalar(), integer(minimum=-1, maximum=2**48)))
#: what every saved estimator's model.json holds besides its state arrays (storage.models checks those)
MODEL_SCHEMA = obj(
    required={
        "algorithm": string(),
        "params": obj(),
        "classes": array(scalar(), min_items=2),
        "classes_dtype": string(max_length=16),
        "n_features_in": integer(minimum=1, maximum=2**48),
        "kernel_pool": string(),
        "scaler": obj(required={"scalars": obj(), "arrays": array(string())}),
    },
    optional={
        "engine": obj(),
        "extra": obj(),
        "learned": obj(),
        "pairs": array(array(integer(minimum=0))),
        "label_map": _LABEL_MAP,  # original label -> the internal one the model was trained on
        "lineage": obj(optional={"label_map": _LABEL_MAP}),
    },
)

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
    check(meta, MODEL_SCHEMA, path=location(directory) / MODEL_META, fix=MODEL_DAMAGED)
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
        model, scaler = cls.from_state(arrays, meta), Scaler.from_dict(scaler_dict)
        _check_consistent(model, scaler, meta)
        return model, scaler, meta
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # a model.json that passed its hash but lacks or mistypes a field (edited, hash recomputed)
        # surfaces here, inside the estimator's own reconstruction
        detail = f"missing entry {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise DataError(
            f"the saved model does not describe a valid {meta['algorithm']} ({detail})",
            path=directory,
            fix=MODEL_DAMAGED,
        ) from None


def _check_consistent(model, scaler: Scaler, meta: dict) -> None:
    """The parts of a loaded model agree: distinct classes (the internal labels of its label map,
    when it has one), the scaler's width, and scores of one row shaped for the classes (a class list
    edited apart from the state would fail mid-prediction). Raises ValueError, turned into the
    damaged-model error by :func:`load_model`."""
    classes = model.classes_
    if len(np.unique(classes)) != len(classes):
        raise ValueError(f"classes {classes.tolist()} repeat a class")
    pairs = (meta.get("lineage") or {}).get("label_map") or meta.get("label_map")
    internals = {internal for _, internal in pairs or ()}
    if pairs and not all(isinstance(c, int) and c in internals for c in classes.tolist()):
        raise ValueError(f"classes {classes.tolist()} are not internal labels of its label map {sorted(internals)}")
    width = getattr(scaler, "n_features_in_", None)  # save_model always stores a fitted scaler
    if width is None:
        raise ValueError("its scaler is not fitted")
    if width != model.n_features_in_:
        raise ValueError(f"the scaler takes {width} features, the model {model.n_features_in_}")
    scores = np.asarray(model.decision_function(np.zeros((1, model.n_features_in_))))
    expected = (1,) if len(classes) == 2 else (1, len(classes))
    if scores.shape != expected:
        columns = scores.shape[1] if scores.ndim == 2 else 1
        raise ValueError(f"{len(classes)} classes, but the state scores {columns} class column(s)")
