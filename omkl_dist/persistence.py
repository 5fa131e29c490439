"""Save and load a :class:`~omkl_dist.model.Model` (an estimator with its scaler, column encoder,
label map, feature names and job) through the storage model format.

model.json holds the estimator's own description (``algorithm``, ``params``, ``classes``, ...), the
scaler's scalars (its arrays are state arrays beside the estimator's), the column encoder's JSON
(``columns``, when the model was trained on a table it imputes or encodes) and one ``provenance``
block: the label map, the feature names, the label column's name and the job, each present when the
model has it.
"""

from __future__ import annotations

import json

import numpy as np
from scipy import sparse

from omkl_dist.algorithms.registry import ALGORITHMS, BATCH_ALGORITHMS
from omkl_dist.model import Model
from omkl_dist.preprocessing import ColumnEncoder, Scaler
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.location import location
from omkl_dist.storage.models import MODEL_DAMAGED, MODEL_META, read_state, write_state
from omkl_dist.storage.schema import array, check, integer, number, obj, scalar, string, tuple_of

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
        "provenance": obj(
            optional={
                "label_map": _LABEL_MAP,  # the user's label -> the internal one the model was trained on
                "feature_names": array(string()),
                "label_name": string(),  # the training table's label column
                "job": obj(),
                "lineage": obj(),  # a model-store version's record: parent, window, gate, code
            }
        ),
    },
    optional={
        "columns": obj(),  # ColumnEncoder.to_dict(): a raw table's columns imputed and encoded
        "engine": obj(),
        "extra": obj(),
        # an online classifier's probability calibration (omkl_dist.evaluation.calibration)
        "calibration": obj(
            required={
                "slope": number(minimum=0.0),
                "curvature": number(minimum=0.0),
                "class_counts": array(integer(minimum=0)),
            }
        ),
        "learned": obj(),
        "pairs": array(array(integer(minimum=0))),
    },
)
_PROVENANCE = ("label_map", "feature_names", "job", "label_name")

_BY_CLASS = {cls.__name__: cls for cls in [*ALGORITHMS.values(), *BATCH_ALGORITHMS.values()]}


def save_model(
    model,
    directory,
    *,
    overwrite: bool = False,
    inputs=(),
    option: str = "--model-out",
    lineage: dict | None = None,
):
    """Write a :class:`~omkl_dist.model.Model` atomically to ``directory``.

    Parameters
    ----------
    model : Model or fitted estimator
        A bare estimator is saved as ``Model(estimator)``: no scaler, its own classes as labels.
    directory : path or URL
        The model folder.
    overwrite : bool
        Replace an earlier saved model there (nothing else is ever replaced).
    inputs : sequence of (label, path)
        Inputs the folder must keep clear of (see :func:`omkl_dist.storage.outputs.check_output`).
    option : str
        How messages name the folder.
    lineage : dict, optional
        A model-store version's record (its parent version, window, gate decision, code and package
        versions), kept in the provenance block beside the job; :func:`load_model` does not need it
        (the store reads it with :func:`omkl_dist.storage.models.read_meta`).

    Returns
    -------
    Location
        The folder written.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from omkl_dist import KernelPerceptron, Model, load_model, save_model
    >>> X = np.random.default_rng(0).standard_normal((30, 2))
    >>> y = np.where(X[:, 0] > 0, "stay", "churn")
    >>> folder = save_model(Model(KernelPerceptron().fit(X, y), feature_names=["a", "b"]), tempfile.mkdtemp() + "/m")
    >>> load_model(folder).classes_.tolist()
    ['churn', 'stay']
    """
    if not isinstance(model, Model):
        model = Model(model)
    arrays, meta = model.estimator.to_state()
    scaler = model.scaler
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
    if model.columns is not None:
        meta["columns"] = model.columns.to_dict()
    label_map = None if model.label_map is None else [[_plain(o), int(i)] for o, i in model.label_map]
    names = list(model.feature_names_in_) if hasattr(model, "feature_names_in_") else None  # (or the estimator's)
    given = {
        "label_map": label_map,
        "feature_names": names,
        "label_name": model.label_name,
        "job": model.job,
        "lineage": lineage,
    }
    meta["provenance"] = {key: value for key, value in given.items() if value is not None}
    return write_state(directory, arrays, meta, overwrite=overwrite, inputs=inputs, option=option)


def load_model(directory):
    """The :class:`~omkl_dist.model.Model` in a folder written by :func:`save_model`, every array's
    and model.json's hash checked.

    Raises
    ------
    DataError
        Not a saved model, damaged, edited, or of an algorithm this omkl-dist does not know.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from omkl_dist import OMKC, Model, load_model, save_model
    >>> X = np.random.default_rng(0).standard_normal((30, 2))
    >>> trained = Model(OMKC().fit(X, np.where(X[:, 0] > 0, 1, -1)), label_map=[["no", -1], ["yes", 1]])
    >>> model = load_model(save_model(trained, tempfile.mkdtemp() + "/m"))
    >>> model.predict(X[:3]).tolist() == trained.predict(X[:3]).tolist()
    True
    """
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
        estimator, scaler = cls.from_state(arrays, meta), Scaler.from_dict(scaler_dict)
        columns = None if "columns" not in meta else ColumnEncoder.from_dict(meta["columns"])
        provenance = meta["provenance"]
        model = Model(estimator, scaler=scaler, columns=columns, **{key: provenance.get(key) for key in _PROVENANCE})
        _check_consistent(model)
        return model
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        # a model.json that passed its hash but lacks or mistypes a field (edited, hash recomputed)
        # surfaces here, inside the estimator's own reconstruction (OverflowError: a class label
        # beyond its recorded integer type, such as 2**63 for int64)
        detail = f"missing entry {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise DataError(
            f"the saved model does not describe a valid {meta['algorithm']} ({detail})",
            path=directory,
            fix=MODEL_DAMAGED,
        ) from None


def _plain(label):
    """A label as JSON holds it (a numpy scalar as its Python value)."""
    return label.item() if isinstance(label, np.generic) else label


def _check_consistent(model: Model) -> None:
    """The parts of a loaded model agree: distinct classes (the internal labels of its label map,
    when it has one), feature names for every feature, the scaler's width, and scores of one row
    shaped for the classes (a class list edited apart from the state would fail mid-prediction).
    Raises ValueError, turned into the damaged-model error by :func:`load_model`."""
    estimator, pairs = model.estimator, model.label_map
    classes = estimator.classes_
    if len(np.unique(classes)) != len(classes):
        raise ValueError(f"classes {classes.tolist()} repeat a class")
    internals = {internal for _, internal in pairs or ()}
    if pairs is not None and len({json.dumps(original) for original, _ in pairs}) != len(pairs):
        raise ValueError(f"its label map {pairs} repeats a label")
    if pairs is not None and not all(isinstance(c, int) and c in internals for c in classes.tolist()):
        raise ValueError(f"classes {classes.tolist()} are not internal labels of its label map {sorted(internals)}")
    names = model.feature_names
    if names is not None and (len(names) != estimator.n_features_in_ or len(set(names)) != len(names)):
        width = estimator.n_features_in_
        raise ValueError(f"{len(names)} feature names ({len(set(names))} distinct) for {width} features")
    if model.columns is not None and len(model.columns.feature_names_out_) != estimator.n_features_in_:
        encoded = len(model.columns.feature_names_out_)
        raise ValueError(f"its column encoder makes {encoded} features, the model takes {estimator.n_features_in_}")
    width = getattr(model.scaler, "n_features_in_", None)  # save_model always stores a fitted scaler
    if width is None:
        raise ValueError("its scaler is not fitted")
    if width != estimator.n_features_in_:
        raise ValueError(f"the scaler takes {width} features, the model {estimator.n_features_in_}")
    scores = np.asarray(estimator.decision_function(np.zeros((1, estimator.n_features_in_))))
    expected = (1,) if len(classes) == 2 else (1, len(classes))
    if scores.shape != expected:
        columns = scores.shape[1] if scores.ndim == 2 else 1
        raise ValueError(f"{len(classes)} classes, but the state scores {columns} class column(s)")
