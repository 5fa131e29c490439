"""The ``python_function`` flavor of an omkl-dist model: MLflow loads our own model folder.

An MLflow model of ours is the folder :func:`omkl_dist.persistence.save_model` writes (zarr arrays
+ ``model.json``, no pickle: the estimator with its scaler, column encoder and label map), as one
uncompressed tar file under the MLflow model's ``data/``, and an ``MLmodel`` whose
``python_function`` flavor names this module as its loader. (One file, not the folder: MLflow's
proxied artifact store lists a folder that holds one file of its own name as that file, and loses
it -- zarr's ``c/0/0``, the one chunk of a 2-D array, would come back missing.)

So ``mlflow.pyfunc.load_model("models:/NAME@champion")`` needs omkl-dist installed (the model's
``requirements.txt`` says which version) and nothing pickled, and its ``predict`` is the
:class:`~omkl_dist.model.Model`'s, row for row what ``omkl predict`` writes:

- ``predict(df)`` -> the user's label of each raw row (a DataFrame matched to the model's features
  by name, or an array in the model's feature order);
- ``predict(df, params={"output": "decision"})`` -> a DataFrame with ``omkl predict``'s columns:
  ``label``, ``decision`` (the binary score, or the winning class's) and, multi-class,
  ``decision_<class>`` per class. ``mlflow.pyfunc.load_model(uri, model_config={"output":
  "decision"})`` makes that the loaded model's default.
"""

from __future__ import annotations

import contextlib
import tarfile
import tempfile
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

LOADER_MODULE = __name__
DATA = "omkl-model"  # the saved model's folder name inside the MLflow model's data
OUTPUTS = ("label", "decision")


class PyfuncModel:
    """What ``_load_pyfunc`` gives MLflow: a loaded :class:`~omkl_dist.model.Model` and its output."""

    def __init__(self, model, output: str = "label"):
        _check_output(output, "model_config's 'output'")
        self.model = model
        self.output = output

    def predict(self, model_input, params: dict | None = None):
        """Labels of the raw rows, or (``output="decision"``) ``omkl predict``'s columns as a DataFrame."""
        output = (params or {}).get("output", self.output)
        _check_output(output, "params' 'output'")
        if output == "label":
            return self.model.predict(model_input)
        import pandas as pd

        from omkl_dist.pipelines.predict import predict_block

        block = predict_block(self.model, model_input)
        classes = self.model.classes_
        columns = {"label": classes[block["index"]], "decision": block["decision"]}
        if "scores" in block:
            columns.update({f"decision_{c}": block["scores"][:, j] for j, c in enumerate(classes)})
        return pd.DataFrame(columns)


def _check_output(output, where: str) -> None:
    if output not in OUTPUTS:
        raise ValueError(f"{where} must be one of {', '.join(map(repr, OUTPUTS))}, got {output!r}")


def _load_pyfunc(data_path, model_config: dict | None = None) -> PyfuncModel:
    """MLflow's entry point (``loader_module``): the model packed at ``data_path``, hashes checked."""
    from omkl_dist.persistence import load_model

    with tempfile.TemporaryDirectory(prefix="omkl-mlflow-") as tmp:
        with tarfile.open(data_path) as packed:
            packed.extractall(tmp, filter="data")  # (no links, nothing outside tmp)
        model = load_model(Path(tmp) / DATA)  # (every array read into memory)
    return PyfuncModel(model, **(model_config or {}))


def _packed(model_dir, into: Path) -> Path:
    """The saved model ``model_dir`` as ``into/omkl-model.tar`` (its entries under ``omkl-model/``)."""
    tar = into / f"{DATA}.tar"
    with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as packed:
        packed.add(str(model_dir), arcname=DATA)
    return tar


def requirements() -> list[str]:
    """The loaded model's pip requirements: this omkl-dist (with the client, for ``load_model``)."""
    return [f"omkl-dist[mlflow]=={metadata.version('omkl-dist')}"]


def signature() -> Any:
    """A signature that declares the ``output`` parameter (MLflow drops undeclared ``params``) and
    no input schema: a model's rows are raw columns (text ones too, with a column encoder), which
    the model itself matches, encodes and checks."""
    from mlflow.models import ModelSignature
    from mlflow.types import ParamSchema, ParamSpec

    return ModelSignature(params=ParamSchema([ParamSpec("output", "string", "label")]))


@contextlib.contextmanager
def _no_input_example_warning() -> Iterator[None]:
    """(MLflow asks for an input example to check an input schema; ours has none, by design.)"""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*An input example was not provided", category=UserWarning)
        yield


def save_pyfunc(model_dir, path) -> Path:
    """An MLflow model at ``path`` (a new folder) holding a copy of the saved model ``model_dir``."""
    import mlflow.pyfunc

    with tempfile.TemporaryDirectory(prefix="omkl-mlflow-") as tmp, _no_input_example_warning():
        mlflow.pyfunc.save_model(
            str(path),
            loader_module=LOADER_MODULE,
            data_path=str(_packed(model_dir, Path(tmp))),
            pip_requirements=requirements(),
            signature=signature(),
        )
    return Path(path)


def log_model(model, name: str = "model", *, registered_model_name: str | None = None, **kwargs):
    """Log a fitted estimator or :class:`~omkl_dist.model.Model` to the active MLflow run (one is
    started if none is) as a ``python_function`` model; returns MLflow's ``ModelInfo``.

    ``registered_model_name`` also registers it; ``kwargs`` go to ``mlflow.pyfunc.log_model``
    (``input_example``, ``metadata``, ``tags``, ...). Load it back with
    ``mlflow.pyfunc.load_model(info.model_uri)``.

    Examples
    --------
    With an MLflow tracking server (``MLFLOW_TRACKING_URI``)::

        import mlflow
        import numpy as np
        from omkl_dist import OMKC
        from omkl_dist.mlflow import log_model

        X = np.random.default_rng(0).standard_normal((60, 3))
        y = np.where(X[:, 0] > 0, "churn", "stay")
        with mlflow.start_run():
            info = log_model(OMKC().fit(X, y), registered_model_name="churn")
        mlflow.pyfunc.load_model(info.model_uri).predict(X[:2])  # the labels, as OMKC predicts them
    """
    import mlflow.pyfunc

    from omkl_dist.persistence import save_model

    with tempfile.TemporaryDirectory(prefix="omkl-mlflow-") as tmp, _no_input_example_warning():
        folder = save_model(model, Path(tmp) / DATA, option="the MLflow model's data")
        return mlflow.pyfunc.log_model(
            name=name,
            loader_module=LOADER_MODULE,
            data_path=str(_packed(folder, Path(tmp))),
            pip_requirements=requirements(),
            signature=signature(),
            registered_model_name=registered_model_name,
            **kwargs,
        )
