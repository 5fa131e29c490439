"""A job: which online algorithm learns, with which parameters, from which rows, and how.

One :class:`Job` says everything a run needs and nothing a run measures: the algorithm (its
registry name) and its parameters under the estimator's own names, the feature scaling and kernel
normalisation (:class:`~omkl_dist.defaults.Settings`), the label map, the data window, the seed,
the block size and the cluster options. It is built once -- by the command line from its options
(:meth:`Job.build`), or from an estimator (:meth:`Job.from_estimator`) -- and written as one JSON
document (:meth:`Job.to_dict`): a cluster job's ``job.json`` (a resume must match it) and the
provenance block of every saved model. Both runners (:class:`omkl_dist.runner.LocalRunner`,
:class:`omkl_dist.distributed.runner.DaskRunner`) take it as it is.

>>> job = Job.build("spa", {"eta": 0.2}, data=DataWindow("data/codrna", stop=5000), seed=3)
>>> job.params["eta"], job.block_size, job.settings.scaling
(0.2, 256, 'auto')
>>> Job.from_dict(job.to_dict()) == job
True
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .algorithms.registry import ALGORITHMS, make_estimator
from .defaults import BLOCK_SIZE, JOB_PARAMS, SCALINGS, SEED, Settings, resolve_settings
from .kernels import make_pool
from .preprocessing import CATEGORICAL, IMPUTE
from .storage.schema import array, boolean, check, integer, obj, scalar, string, tuple_of

JOB_SCHEMA = 3  # 3: one record for job.json and a model's provenance (2: an estimator's parameters)
#: estimator parameters that are the job's own fields (block_size, seed), come from the data, or say
#: how ``fit`` learns a training set (``shuffle``, ``n_epochs``: a job's stream is ordered by its data
#: window and learnt in one pass)
JOB_FIELDS = ("block_size", "random_state", "feature_groups", "shuffle", "n_epochs")

_COUNT = integer(minimum=0, maximum=2**48)
SCHEMA = obj(
    required={
        "schema": integer(minimum=JOB_SCHEMA, maximum=JOB_SCHEMA),
        "algorithm": string(choices=tuple(ALGORITHMS)),
        "params": obj(),
        "data": obj(
            required={"location": string(), "start": _COUNT, "permute": boolean()},
            optional={"stop": _COUNT},
        ),
        "seed": _COUNT,
        "block_size": integer(minimum=1, maximum=2**31),
        "settings": obj(
            required={
                "scaling": string(choices=(*SCALINGS, "auto")),
                "scale_rows": integer(minimum=1, maximum=2**48),
                "origin": string(),
            },
            optional={
                "normalize_kernels": boolean(),
                "candidates": array(string(), min_items=1),
                "race_rows": _COUNT,
                "race": array(_COUNT),
            },
        ),
        "engine": obj(
            required={"checkpoint_every": _COUNT, "max_retries": _COUNT},
            optional={"shards": integer(minimum=1, maximum=2**20)},
        ),
    },
    optional={
        "label_map": array(tuple_of(scalar(), integer(minimum=-1, maximum=2**48))),
        "columns": obj(optional={"categorical": string(choices=CATEGORICAL), "impute": string(choices=IMPUTE)}),
    },
)


@dataclass(frozen=True)
class DataWindow:
    """Rows ``start:stop`` of the dataset at ``location`` (``stop`` None: to its end), in a seeded
    order (``permute``) or as stored."""

    location: str
    start: int = 0
    stop: int | None = None
    permute: bool = True

    @property
    def limit(self) -> int | None:
        """How many rows from ``start`` (None: all)."""
        return None if self.stop is None else self.stop - self.start

    def rows(self, total: int) -> int:
        """The window's length in a dataset of ``total`` rows."""
        return (total if self.stop is None else min(self.stop, total)) - self.start


@dataclass(frozen=True)
class EngineOptions:
    """How a cluster runs a job (not what it learns: a resume may change them)."""

    checkpoint_every: int = 50  # rounds between checkpoints (0: none)
    shards: int | None = None  # kernel shards (None: one per worker)
    max_retries: int = 3  # worker failures recovered from before giving up


@dataclass(frozen=True)
class Job:
    """What an online run learns (see the module's docstring); immutable.

    Parameters
    ----------
    algorithm : str
        A name of :data:`omkl_dist.algorithms.registry.ALGORITHMS` (``"spa"``).
    params : mapping
        The estimator's parameters that were given, under its own names (the others keep their
        defaults); not ``block_size``, ``random_state`` (the job's ``block_size`` and ``seed``),
        ``feature_groups`` (the dataset's views), ``shuffle`` or ``n_epochs`` (``fit``'s order and
        passes; the window's ``permute`` orders a job's stream, which it learns once).
    data : DataWindow
    seed : int
        The estimator's ``random_state`` and the stream's order.
    block_size : int
    settings : Settings
        Feature scaling (fitted on the stream's first ``scale_rows`` rows) and kernel normalisation.
    label_map : tuple of (original label, internal label) pairs, or None until the data is read.
    engine : EngineOptions
    columns : mapping, optional
        How the data's raw columns were made features, recorded once the data is read: the
        :class:`~omkl_dist.preprocessing.ColumnEncoder`'s ``categorical`` and ``impute`` options
        (those given); None: the data's columns are its features.
    """

    algorithm: str
    params: Any
    data: DataWindow
    seed: int = SEED
    block_size: int = BLOCK_SIZE
    settings: Settings = field(default_factory=resolve_settings)
    label_map: tuple | None = None
    engine: EngineOptions = EngineOptions()
    columns: Any = None

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            make_estimator(self.algorithm)  # the error that names the algorithms
        shared = sorted(set(self.params) & set(JOB_FIELDS))
        if shared:
            raise ValueError(
                f"{shared} are the job's own fields (block_size, seed, the window's order), the data's, or fit's "
                "(shuffle, n_epochs: a job learns its stream once, in the window's order), not params"
            )
        # JSON values (a tuple is a list), read-only: the job equals its JSON document read back
        object.__setattr__(self, "params", MappingProxyType(json.loads(json.dumps(dict(self.params)))))
        if self.label_map is not None:
            pairs = tuple((_plain(original), int(internal)) for original, internal in self.label_map)
            object.__setattr__(self, "label_map", pairs)
        if self.columns is not None:
            options = {k: v for k, v in dict(self.columns).items() if v is not None}
            object.__setattr__(self, "columns", MappingProxyType(options))

    def __reduce__(self):  # (a read-only mapping does not pickle)
        return (Job.from_dict, (self.to_dict(),))

    # --------------------------------------------------------------------------------- building
    @classmethod
    def build(
        cls,
        algorithm: str,
        params: dict,
        *,
        data: DataWindow,
        seed: int = SEED,
        block_size: int = BLOCK_SIZE,
        settings: Settings | None = None,
        label_map=None,
        engine: EngineOptions = EngineOptions(),
    ) -> Job:
        """The job of a command's options: ``params`` (None values: the estimator's default, or the
        defaults' :data:`~omkl_dist.defaults.JOB_PARAMS` unless ``settings`` are the papers') with
        the kernel pool normalised -- or not -- as ``settings`` say (default: the defaults)."""
        settings = resolve_settings() if settings is None else settings
        given = {k: v for k, v in params.items() if v is not None}
        if settings.origin != "paper":  # the defaults' own parameter values (the papers' otherwise)
            given = {**JOB_PARAMS.get(algorithm, {}), **given}
        make_estimator(algorithm, **given)  # unknown names are refused here, before any data is read
        return cls(
            algorithm,
            _kernels_as_set(algorithm, given, settings),
            data,
            seed=int(seed),
            block_size=int(block_size),
            settings=settings,
            label_map=label_map,
            engine=engine,
        )

    @classmethod
    def from_estimator(cls, estimator, dataset, *, settings: Settings | None = None, **window) -> Job:
        """The job that learns ``estimator`` (an online one, unfitted or fitted) over ``dataset``;
        ``settings`` default to raw features and the kernels as the estimator has them; ``window``:
        :class:`DataWindow`'s ``start``, ``stop``, ``permute``."""
        from .storage.location import text

        by_class = {c: name for name, c in ALGORITHMS.items()}
        params = estimator.get_params()
        seed = params.get("random_state")
        settings = settings or resolve_settings(scaling="none", kernels_given=True)
        return cls(
            by_class[type(estimator)],
            {k: v for k, v in params.items() if k not in JOB_FIELDS},
            DataWindow(text(dataset), **window),
            seed=SEED if seed is None else int(seed),
            block_size=int(params["block_size"]),
            settings=settings,
        )

    def settled(self, settings: Settings) -> Job:
        """The job with ``settings`` (an automatic setting's choice, :mod:`omkl_dist.race`) in
        place of its own, the kernel pool normalised -- or not -- as they say."""
        return replace(self, settings=settings, params=_kernels_as_set(self.algorithm, dict(self.params), settings))

    def with_data(self, *, sparse: bool, label_map, columns=None) -> Job:
        """The job as it runs on data whose rows are ``sparse`` (or not), with its label map and the
        :class:`~omkl_dist.preprocessing.ColumnEncoder` its features were made with (or None): the
        settings for such rows (:meth:`Settings.for_sparse_rows`), the label map and the encoder's
        options recorded."""
        settings = self.settings.for_sparse_rows() if sparse else self.settings
        options = None if columns is None else {"categorical": columns.categorical, "impute": columns.impute}
        return replace(self, settings=settings, label_map=label_map, columns=options)

    def estimator(self, *, n_rows: int, feature_groups=None):
        """The job's estimator for a stream of ``n_rows`` rows seen block by block (see
        :func:`make_stream_estimator`)."""
        return make_stream_estimator(
            self.algorithm,
            dict(self.params),
            n_rows=n_rows,
            block_size=self.block_size,
            seed=self.seed,
            feature_groups=feature_groups,
        )

    # --------------------------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        """The job as one JSON-able document (:data:`SCHEMA`)."""
        data = {"location": self.data.location, "start": self.data.start, "permute": self.data.permute}
        if self.data.stop is not None:
            data["stop"] = self.data.stop
        settings = {"scaling": self.settings.scaling, "scale_rows": self.settings.scale_rows}
        if self.settings.normalize_kernels is not None:
            settings["normalize_kernels"] = self.settings.normalize_kernels
        if self.settings.candidates:  # an automatic setting: its candidates, and once raced their mistakes
            settings.update(candidates=list(self.settings.candidates), race_rows=self.settings.race_rows)
        if self.settings.race:
            settings["race"] = list(self.settings.race)
        engine = {"checkpoint_every": self.engine.checkpoint_every, "max_retries": self.engine.max_retries}
        if self.engine.shards is not None:
            engine["shards"] = self.engine.shards
        document = {
            "schema": JOB_SCHEMA,
            "algorithm": self.algorithm,
            "params": dict(self.params),
            "data": data,
            "seed": self.seed,
            "block_size": self.block_size,
            "settings": {**settings, "origin": self.settings.origin},
            "engine": engine,
        }
        if self.label_map is not None:
            document["label_map"] = [list(pair) for pair in self.label_map]
        if self.columns is not None:
            document["columns"] = dict(self.columns)
        return document

    @classmethod
    def from_dict(cls, document: dict, *, path="job", fix: str = "write the job again") -> Job:
        """The job of a document :meth:`to_dict` wrote (checked against :data:`SCHEMA` first)."""
        check(document, SCHEMA, path=path, fix=fix)
        data, settings, engine = document["data"], document["settings"], document["engine"]
        return cls(
            document["algorithm"],
            document["params"],
            DataWindow(data["location"], data["start"], data.get("stop"), data["permute"]),
            seed=document["seed"],
            block_size=document["block_size"],
            settings=Settings(
                settings["scaling"],
                settings.get("normalize_kernels"),
                settings["scale_rows"],
                settings["origin"],
                candidates=settings.get("candidates", ()),
                race_rows=settings.get("race_rows", 0),
                race=settings.get("race", ()),
            ),
            label_map=document.get("label_map"),
            engine=EngineOptions(engine["checkpoint_every"], engine.get("shards"), engine["max_retries"]),
            columns=document.get("columns"),
        )

    @property
    def identity(self) -> dict:
        """What a resume must match: the job without its engine options."""
        return {k: v for k, v in self.to_dict().items() if k != "engine"}


def make_stream_estimator(algo: str, params: dict, *, n_rows: int, block_size: int, seed: int, feature_groups=None):
    """The estimator for a job over a stream of ``n_rows`` that it sees block by block: settings
    defined as shares of "the data" refer to the whole stream, not to the first block; kernels may
    name the data's ``feature_groups`` (a multi-view dataset's)."""
    if feature_groups is not None and params.get("feature_groups") is None and _takes(algo, "feature_groups"):
        params = {**params, "feature_groups": feature_groups}
    if params.get("budget") is not None and _takes(algo, "expected_instances"):
        # SPA: the expected budget is spread over the whole stream (the budget baselines RBP,
        # Forgetron, BOGD, BPAS take --budget as a hard number of SVs per kernel)
        params = {**params, "expected_instances": n_rows}
    elif params.get("budget") is not None and params["budget"] > n_rows and not _takes(algo, "n_components"):
        # a kernel keeps at most one support vector per instance: a larger budget is never reached
        # (same model), but its buffers would be allocated whole. Not NOGD's: its budget must stay at
        # least its n_components (and a job asks the estimator of a 1-row stream before it reads data)
        params = {**params, "budget": n_rows}
    model = make_estimator(algo, block_size=block_size, random_state=seed, **params)
    if getattr(model, "horizon", 0) is None:  # OKS: the default step η is set for the stream's length T
        model.set_params(horizon=n_rows)
    if getattr(model, "validation_size", 0) is None:  # Perceptron(*): validate on a share of the stream
        model.set_params(validation_size=max(1, math.ceil(model.validation_fraction * n_rows)))
    return model


def _kernels_as_set(algo: str, params: dict, settings: Settings) -> dict:
    """``params`` with the kernel pool (given, or the estimator's default) normalised -- or not --
    as ``settings`` say; unchanged when they take the kernels as given."""
    key = "kernel" if _takes(algo, "kernel") else "kernels"
    if settings.normalize_kernels is None or not _takes(algo, key):
        return params
    spec = params.get(key)
    if spec is None:  # the default pool; a given but empty spec reaches make_pool, which refuses it
        spec = ALGORITHMS[algo]().get_params()[key]
    return {**params, key: make_pool(spec, normalize=settings.normalize_kernels).to_spec_string()}


def _takes(algo: str, param: str) -> bool:
    """Whether ``algo``'s estimator has the parameter."""
    cls = ALGORITHMS.get(algo)
    return cls is not None and param in cls().get_params()


def _plain(label):
    """A label as a JSON scalar (numpy's scalars as Python's)."""
    return label.item() if hasattr(label, "item") else label
