"""A generated dense labelled stream with a known Bayes error, written chunk by chunk
(:func:`synthesize`, ``omkl data synth``). The rcv1-shaped sparse generator (``--shape rcv1``) is
:mod:`.synth_sparse`, which shares this module's argument checks.

Generative model (``omkl-synth-v1``)
------------------------------------
Let ``d = features``, ``k = min(3, d)`` (the latent dimension) and ``m = 4`` (cosine terms).
All parameters are derived from ``seed`` (and ``d``) alone:

* ``P`` (k x d): orthonormal rows, the transposed Q factor (signs fixed by ``diag(R) > 0``) of the
  QR decomposition of a d x k standard normal matrix drawn from ``default_rng([seed, 0])``.
  Because the rows are orthonormal, ``z = P x ~ N(0, I_k)`` whenever ``x ~ N(0, I_d)``.
* ``w_1..w_m`` (m x k): frequencies ``N(0, I_k) / length_scale`` (``length_scale = 2``), then signs
  ``s_1..s_m`` uniform on {-1, +1}, drawn next from the same generator.
* ``offset``: the median of the un-centred score ``g0`` over ``2**16`` latent points
  ``z ~ N(0, I_k)`` from ``default_rng([seed, 3])``, so that ``P(g(x) > 0) ~= 1/2``
  (balanced classes up to the pilot's sampling error, about +-0.002).

With ``z = P x`` the score is::

    g(x) = (||z||^2 - k) / sqrt(2k)  +  c * sqrt(2/m) * sum_j s_j cos(w_j . z)  -  offset,   c = 0.5  (cos_weight)

Every term is even in ``z`` (``g(-x) = g(x)``) and ``x`` is symmetric, so the label is
uncorrelated with every linear function of ``x`` (``E[y x] = 0``) and a linear classifier stays
near chance, while ``g`` is smooth (a quadratic plus low-frequency cosines) and depends on ``x``
only through a ``k``-dimensional subspace, which a Gaussian-kernel learner recovers from data.
The cosines keep the boundary from being exactly quadratic, so a degree-2 polynomial kernel can
only approximate it.

Rows are independent: ``x ~ N(0, I_d)``; the clean label is ``sign(g(x))`` (``+1`` where
``g(x) = 0``, an event of probability zero); the observed label is the clean label flipped
independently of ``x`` with probability ``noise``.

Bayes error. For every ``x``, ``P(y = sign g(x) | x) = 1 - noise > 1/2`` (as ``noise < 1/2``), so
the Bayes classifier is ``sign(g)`` and its conditional error is ``noise`` at every ``x``: the
Bayes error is exactly ``noise``. It is stored as ``meta["bayes_error"]``.

Reproducibility. Rows are produced in fixed generation blocks of ``block_rows`` rows
(``min(65536, max(1, 2**21 // d))``, i.e. at most 16 MiB of float64 per block). Block ``b``'s
features are ``default_rng([seed, 1, b]).standard_normal((n_b, d))`` and its flips
``default_rng([seed, 2, b]).random(n_b) < noise``. The data therefore depend only on
``(seed, rows, features, noise)``, never on ``chunk_rows`` (the zarr chunking) or ``dtype`` beyond
the final cast, and the first ``n`` rows of a longer stream are the stream of ``n`` rows. Labels are
computed from the float64 features; with ``dtype="float32"`` only the stored features are rounded.

All parameters are stored in ``meta.json`` under ``"generator"``; :func:`score` evaluates ``g``
from that dict exactly (JSON round-trips float64), so a consumer can recompute clean labels.

Example
-------
>>> import tempfile, pathlib
>>> from omkl_dist.storage.synth import synthesize, clean_labels
>>> from omkl_dist.storage.layout import open_features, read_labels
>>> out = pathlib.Path(tempfile.mkdtemp()) / "toy"
>>> meta = synthesize(out, rows=1000, features=5, seed=1, noise=0.1)
>>> meta["bayes_error"], meta["n_rows"], meta["class_counts"]["1"] + meta["class_counts"]["-1"]
(0.1, 1000, 1000)
>>> X, y = open_features(out)[:], read_labels(out)
>>> flipped = (y != clean_labels(X, meta["generator"])).mean()
>>> bool(0.05 < flipped < 0.15)
True
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .layout import DEFAULT_CHUNK_ROWS, DatasetWriter, check_dtype
from .outputs import DATASET, atomic_output

__all__ = [
    "GENERATOR_NAME",
    "generator_params",
    "score",
    "clean_labels",
    "iter_blocks",
    "synthesize",
    "check_integer",
    "check_features",
    "check_noise",
]

GENERATOR_NAME = "omkl-synth-v1"
LATENT_DIM = 3
N_COS = 4
LENGTH_SCALE = 2.0
COS_WEIGHT = 0.5
PILOT_ROWS = 1 << 16
MAX_BLOCK_ROWS = 1 << 16
BLOCK_VALUES = 1 << 21  # float64 values per generation block: 16 MiB, whatever the width

# Size bounds, checked on the arguments before anything is allocated: the dense generator's
# projection (3 x features, stored in meta.json) and one zarr chunk of float64 rows in memory (the
# writer holds about three copies), and the dataset on disk.
MAX_FEATURES = 1 << 16
MAX_CHUNK_BYTES = 1 << 29  # 512 MiB: the default 65,536-row chunk of 1,000 float64 features fits
MAX_DATASET_BYTES = 1 << 40  # 1 TiB

# Independent random streams, keyed after the seed, so adding rows never shifts earlier draws.
_PARAMS, _FEATURES, _FLIPS, _PILOT = 0, 1, 2, 3

_FORMULA = (
    "z = P x; g(x) = (||z||^2 - k)/sqrt(2k) + cos_weight*sqrt(2/m)*sum_j signs_j*cos(frequencies_j . z)"
    " - offset; y_clean = sign(g) (+1 at 0); y = -y_clean with probability noise, independently of x"
)


def check_integer(name: str, value: object, minimum: int) -> int:
    """``value`` as an int, refused unless an integer (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_features(features: object, limit: int) -> int:
    """A width from 1 to ``limit`` (the dense generator's, or the widest data a model learns from)."""
    if isinstance(features, bool) or not isinstance(features, numbers.Integral) or not 1 <= int(features) <= limit:
        raise ValueError(f"features must be an integer from 1 to {limit:,}, got {features!r}")
    return int(features)


def _check_dense_size(rows: int, features: int, chunk_rows: int, itemsize: int) -> None:
    """Refuse a chunk that does not fit in memory or a dataset too large to store, by arithmetic."""
    chunk = min(rows, chunk_rows) * features * 8
    if chunk > MAX_CHUNK_BYTES:
        fit = max(1, MAX_CHUNK_BYTES // (features * 8))
        raise ValueError(
            f"a chunk of {min(rows, chunk_rows):,} rows x {features:,} features is {chunk / 2**20:,.0f} MiB in "
            f"memory, more than {MAX_CHUNK_BYTES // 2**20} MiB; pass chunk_rows (--chunk-rows) of at most {fit:,}"
        )
    total = rows * features * itemsize
    if total > MAX_DATASET_BYTES:
        raise ValueError(
            f"{rows:,} rows x {features:,} features is {total / 2**40:,.1f} TiB, more than the "
            f"{MAX_DATASET_BYTES // 2**40} TiB a generated dataset may take; ask for fewer rows or features"
        )


def check_noise(noise: float) -> float:
    """``noise`` as a float, refused unless a flip probability in [0, 0.5)."""
    ok = isinstance(noise, numbers.Real) and not isinstance(noise, bool)
    if not ok or not (0.0 <= float(noise) < 0.5):  # also rejects NaN
        raise ValueError(f"noise must be a float in [0, 0.5) (a flip probability below 1/2), got {noise!r}")
    return float(noise)


def _block_rows(features: int) -> int:
    return min(MAX_BLOCK_ROWS, max(1, BLOCK_VALUES // features))


def generator_params(seed: int, features: int, noise: float = 0.05) -> dict[str, Any]:
    """Parameters of the generative model for ``(seed, features)``, as a JSON-able dict.

    Parameters
    ----------
    seed : int
        Non-negative seed.
    features : int
        Input dimension ``d``.
    noise : float
        Label flip probability; recorded only (it does not change ``g``).

    Returns
    -------
    dict
        Everything :func:`score` needs (``projection``, ``frequencies``, ``signs``, ``offset``, ...)
        plus a description of the formula and of the seeding.

    Examples
    --------
    >>> p = generator_params(0, 18)
    >>> p["latent_dim"], len(p["projection"]), len(p["projection"][0]), len(p["frequencies"])
    (3, 3, 18, 4)
    """
    seed = check_integer("seed", seed, 0)
    features = check_features(features, MAX_FEATURES)
    noise = check_noise(noise)
    k = min(LATENT_DIM, features)
    rng = np.random.default_rng([seed, _PARAMS])
    q, r = np.linalg.qr(rng.standard_normal((features, k)))
    # QR is unique only up to column signs; pin them so P does not depend on LAPACK's choice.
    signs_r = np.where(np.diag(r) < 0, -1.0, 1.0)
    projection = (q * signs_r).T
    frequencies = rng.standard_normal((N_COS, k)) / LENGTH_SCALE
    signs = rng.choice(np.array([-1.0, 1.0]), size=N_COS)
    params = {
        "name": GENERATOR_NAME,
        "formula": _FORMULA,
        "seed": seed,
        "features": features,
        "noise": noise,
        "latent_dim": k,
        "n_cos": N_COS,
        "length_scale": LENGTH_SCALE,
        "cos_weight": COS_WEIGHT,
        "projection": projection.tolist(),
        "frequencies": frequencies.tolist(),
        "signs": signs.tolist(),
        "offset": 0.0,
        "pilot_rows": PILOT_ROWS,
        "block_rows": _block_rows(features),
        "seeding": {
            "params": "default_rng([seed, 0]): standard_normal((d, k)) -> QR -> projection; "
            "standard_normal((m, k)) / length_scale -> frequencies; choice([-1, 1], m) -> signs",
            "offset": "median of g (offset 0) over default_rng([seed, 3]).standard_normal((pilot_rows, k)) taken as z",
            "features": "block b (rows b*block_rows ...): default_rng([seed, 1, b]).standard_normal((n_b, d))",
            "flips": "block b: default_rng([seed, 2, b]).random(n_b) < noise",
        },
    }
    # z = P x is exactly N(0, I_k), so the centring pilot can be drawn in k dimensions: cheap for any d.
    pilot = np.random.default_rng([seed, _PILOT]).standard_normal((PILOT_ROWS, k))
    params["offset"] = float(np.median(_score_latent(pilot, params)))
    return params


def _score_latent(z: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    k = int(params["latent_dim"])
    m = int(params["n_cos"])
    freqs = np.asarray(params["frequencies"], dtype=np.float64)
    signs = np.asarray(params["signs"], dtype=np.float64)
    quad = (np.einsum("ij,ij->i", z, z) - k) / math.sqrt(2 * k)
    waves = np.cos(z @ freqs.T) @ signs
    g: np.ndarray = quad + float(params["cos_weight"]) * math.sqrt(2.0 / m) * waves - float(params["offset"])
    return g


def score(X: ArrayLike, generator: dict[str, Any]) -> np.ndarray:
    """The score ``g(x)`` of each row of ``X`` under a generator's parameters.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Inputs (converted to float64).
    generator : dict
        :func:`generator_params` output or ``meta["generator"]`` of a synthesized dataset.

    Returns
    -------
    numpy.ndarray, shape (n,)
        ``g(x)``; its sign is the clean (Bayes-optimal) label.

    Examples
    --------
    >>> import numpy as np
    >>> p = generator_params(0, 4)
    >>> score(np.zeros((2, 4)), p).shape
    (2,)
    """
    X = np.asarray(X, dtype=np.float64)
    projection = np.asarray(generator["projection"], dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != projection.shape[1]:
        raise ValueError(f"X must have shape (n, {projection.shape[1]}), got {X.shape}")
    return _score_latent(X @ projection.T, generator)


def clean_labels(X: ArrayLike, generator: dict[str, Any]) -> np.ndarray:
    """Noise-free labels ``sign(g(x))`` in {-1, +1} (``+1`` where ``g = 0``), as int64.

    Examples
    --------
    >>> import numpy as np
    >>> sorted(clean_labels(np.random.default_rng(0).standard_normal((50, 3)), generator_params(0, 3)).tolist())[::49]
    [-1, 1]
    """
    return np.where(score(X, generator) >= 0.0, 1, -1).astype(np.int64)


def iter_blocks(
    *,
    rows: int,
    features: int,
    seed: int = 0,
    noise: float = 0.05,
    generator: dict[str, Any] | None = None,
    first_row: int = 0,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield the stream as ``(X, y)`` generation blocks (float64 features, int64 labels in {-1, +1}).

    Memory is one block (at most ``block_rows`` rows). ``generator`` may pass precomputed
    :func:`generator_params` for the same ``(seed, features)`` to skip recomputing them.
    ``first_row``: start at this row of the seed's stream (the first and last blocks are cut), so
    rows ``first_row:first_row + rows`` of a long stream can be made alone (a later window of it).

    Examples
    --------
    >>> blocks = list(iter_blocks(rows=70_000, features=2, seed=3))
    >>> [len(X) for X, _ in blocks]
    [65536, 4464]
    """
    rows = check_integer("rows", rows, 1)
    features = check_features(features, MAX_FEATURES)
    seed = check_integer("seed", seed, 0)
    noise = check_noise(noise)
    if generator is None:
        params = generator_params(seed, features, noise)
    elif (generator.get("seed"), generator.get("features")) != (seed, features):
        raise ValueError(
            f"generator was built for seed={generator.get('seed')!r}, "
            f"features={generator.get('features')!r}, not seed={seed}, features={features}"
        )
    else:
        params = generator
    first_row = check_integer("first_row", first_row, 0)
    block_rows = int(params["block_rows"])
    stop = first_row + rows
    for b in range(first_row // block_rows, -(-stop // block_rows)):
        lo = b * block_rows
        n_b = min(block_rows, stop - lo)  # a block's rows are the same however many of them are made
        X = np.random.default_rng([seed, _FEATURES, b]).standard_normal((n_b, features))
        flip = np.random.default_rng([seed, _FLIPS, b]).random(n_b) < noise
        y = clean_labels(X, params)
        y[flip] *= -1
        cut = max(0, first_row - lo)
        yield X[cut:], y[cut:]


def _rechunk(
    blocks: Iterable[tuple[NDArray[Any], NDArray[Any]]], size: int
) -> Iterator[tuple[NDArray[Any], NDArray[Any]]]:
    """Regroup ``(X, y)`` blocks into pieces of exactly ``size`` rows (the last may be shorter).

    Writes then line up with zarr chunks, so no chunk is read back and rewritten.
    """
    xs: list[NDArray[Any]] = []
    ys: list[NDArray[Any]] = []
    held = 0
    for X, y in blocks:
        start = 0
        while start < len(X):
            take = min(size - held, len(X) - start)
            xs.append(X[start : start + take])
            ys.append(y[start : start + take])
            held += take
            start += take
            if held == size:
                yield (xs[0], ys[0]) if len(xs) == 1 else (np.concatenate(xs), np.concatenate(ys))
                xs, ys, held = [], [], 0
    if held:
        yield (xs[0], ys[0]) if len(xs) == 1 else (np.concatenate(xs), np.concatenate(ys))


def synthesize(
    out: str | os.PathLike[str],
    *,
    rows: int,
    features: int,
    seed: int = 0,
    noise: float = 0.05,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    dtype: str = "float64",
    overwrite: bool = False,
    first_row: int = 0,
) -> dict[str, Any]:
    """Write a generated labelled binary stream to ``out`` (features.zarr, labels.parquet, meta.json).

    The model is described in the module docstring. Rows are generated and written one block at a
    time, so memory stays bounded (about one zarr chunk plus one generation block) for any ``rows``.
    The directory appears only once complete; an existing ``out`` is refused unless ``overwrite``.

    Parameters
    ----------
    out : str or Path
        Output dataset directory.
    rows, features : int
        Stream length (>= 1) and dimension (>= 1).
    seed : int
        Non-negative seed; the data depend only on ``(seed, rows, features, noise)``.
    noise : float
        Label flip probability in [0, 0.5); it is the Bayes error.
    chunk_rows : int
        Rows per zarr chunk (and per parquet row group); does not change the data.
    dtype : {"float64", "float32"}
        Stored feature dtype.
    overwrite : bool
        Replace an existing dataset ``out`` (anything else there is refused).
    first_row : int
        Write rows ``first_row:first_row + rows`` of the seed's stream (a later window of it).

    Returns
    -------
    dict
        The metadata written to ``meta.json``: ``kind="synth"``, ``source``, ``label_map``,
        ``n_classes``, ``class_counts``, ``generator``, ``bayes_error``, ``sha256`` (over each row's
        features in the stored little-endian dtype followed by its int64 label, row by row; see
        ``sha256_of``) and the layout fields.

    Raises
    ------
    ValueError
        Bad ``rows``, ``features``, ``seed``, ``noise``, ``chunk_rows`` or ``dtype``; more than
        :data:`MAX_FEATURES` features, a chunk over :data:`MAX_CHUNK_BYTES` or a dataset over
        :data:`MAX_DATASET_BYTES` (checked before anything is allocated).
    FileExistsError
        ``out`` exists and ``overwrite`` is false.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "s"
    >>> meta = synthesize(out, rows=500, features=3, seed=7, chunk_rows=128)
    >>> meta["source"], meta["label_map"], meta["n_classes"]
    ('synth:seed=7,rows=500,features=3,noise=0.05', [['-1', -1], ['1', 1]], 2)
    """
    rows = check_integer("rows", rows, 1)
    features = check_features(features, MAX_FEATURES)
    seed = check_integer("seed", seed, 0)
    noise = check_noise(noise)
    chunk_rows = check_integer("chunk_rows", chunk_rows, 1)
    dtype = check_dtype(dtype)
    _check_dense_size(rows, features, chunk_rows, np.dtype(dtype).itemsize)
    params = generator_params(seed, features, noise)

    # Hash row records (features then label) so the digest is independent of the chunking.
    record = np.dtype([("x", np.dtype(dtype).newbyteorder("<"), (features,)), ("y", "<i8")])
    digest = hashlib.sha256()
    n_pos = 0
    with atomic_output(out, kind=DATASET, overwrite=overwrite) as tmp:
        writer = DatasetWriter(tmp, n_rows=rows, n_features=features, chunk_rows=chunk_rows, dtype=dtype)
        blocks = iter_blocks(
            rows=rows, features=features, seed=seed, noise=noise, generator=params, first_row=first_row
        )
        for X, y in _rechunk(blocks, chunk_rows):
            rec = np.empty(len(X), dtype=record)
            rec["x"] = X
            rec["y"] = y
            digest.update(rec.tobytes())
            writer.append(X, y)
            n_pos += int(np.count_nonzero(y == 1))
        meta = writer.close(
            {
                "kind": "synth",
                "format": "synth",
                "source": f"synth:seed={seed},rows={rows},features={features},noise={noise!r}"
                + (f",first_row={first_row}" if first_row else ""),
                "sha256": digest.hexdigest(),
                "sha256_of": f"row by row: features as little-endian {dtype} then label as little-endian int64",
                "label_map": [["-1", -1], ["1", 1]],
                "n_classes": 2,
                "class_counts": {"-1": rows - n_pos, "1": n_pos},
                "generator": params,
                "bayes_error": noise,
            }
        )
    return meta
