"""A generated rcv1-shaped sparse labelled stream, written as a LIBSVM file (:func:`write_sparse_libsvm`,
``omkl data synth --shape rcv1``): 47,236 features at 0.16 % density, L2-normalised tf-idf-like rows,
labels of a sparse hidden linear model with flips (the Bayes error), for tests and benchmarks of the csr
layout; see :func:`iter_sparse_blocks` for its model. ``omkl data ingest FILE --out DIR`` stores it.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from omkl_dist._validation import MAX_FEATURES as MAX_MODEL_FEATURES

from .outputs import atomic_output
from .synth import check_features, check_integer, check_noise

__all__ = [
    "SPARSE_GENERATOR_NAME",
    "RCV1_FEATURES",
    "RCV1_DENSITY",
    "sparse_generator_params",
    "iter_sparse_blocks",
    "write_sparse_libsvm",
]


SPARSE_GENERATOR_NAME = "omkl-synth-rcv1-v1"
RCV1_FEATURES = 47_236  # rcv1.binary's width
RCV1_DENSITY = 0.0016  # rcv1's fill: ~76 non-zeros per row
SPARSE_BLOCK_ROWS = 4096  # rows per generation block: ~300,000 non-zeros at rcv1's density
ZIPF_EXPONENT, ZIPF_OFFSET = 1.0, 10.0  # term popularity 1 / (rank + offset) ** exponent
LENGTH_SIGMA = 0.5  # spread of log(row length), a lognormal around the mean length
INFORMATIVE = 0.02  # fraction of the columns the hidden linear model uses
_SPARSE_PILOT_ROWS = 8192
MAX_ROW_NNZ = 512  # mean non-zeros per row (rcv1 has ~76); the 8,192-row pilot then peaks near 250 MB
# Independent random streams, keyed after the seed (the "seeding" of sparse_generator_params)
_MODEL, _ROWS, _FLIPS, _PILOT = 0, 1, 2, 3
_LENGTHS, _TERMS, _COUNTS = 0, 1, 2  # sub-streams of a row block's generator

_SPARSE_FORMULA = (
    "rows: length k ~ round(lognormal(log(density*d) - sigma^2/2, sigma)) clipped to [1, d]; k distinct "
    "columns drawn by Zipf popularity p_j ~ 1/(rank_j + offset)^exponent; value = (1 + log count) * "
    "log(1/q_j) with count ~ geometric(0.6) and q_j = min(1, density*d*p_j); rows L2-normalised. "
    "labels: y_clean = sign(w . x - offset_w) (+1 at 0) for a sparse w (INFORMATIVE*d columns drawn "
    "by popularity, N(0,1) weights); y = -y_clean with probability noise, independently of x"
)


def _check_density(density: float, features: int) -> float:
    ok = isinstance(density, numbers.Real) and not isinstance(density, bool)
    if not ok or not (0.0 < float(density) <= 1.0) or float(density) * features < 1.0:
        raise ValueError(
            f"density must be a float in (0, 1] giving at least one non-zero per row "
            f"(density * features >= 1), got {density!r} for {features} features"
        )
    if float(density) * features > MAX_ROW_NNZ:  # a generation block would hold 4,096 such rows
        raise ValueError(
            f"density {density!r} of {features:,} features gives {float(density) * features:,.0f} non-zeros per "
            f"row, more than {MAX_ROW_NNZ:,}; lower the density or the features"
        )
    return float(density)


def sparse_generator_params(
    seed: int = 0, features: int = RCV1_FEATURES, density: float = RCV1_DENSITY, noise: float = 0.05
) -> dict[str, Any]:
    """The JSON-able description of the rcv1-shaped generator for ``(seed, features, density)``.

    The popularity order, the hidden weights and the label offset are re-derived from these by
    :func:`iter_sparse_blocks` (they are ``features``-long arrays, not worth storing).

    Examples
    --------
    >>> p = sparse_generator_params(0, features=20_000, density=0.004)
    >>> p["name"], p["mean_row_nnz"], p["informative"]
    ('omkl-synth-rcv1-v1', 80.0, 400)
    """
    seed = check_integer("seed", seed, 0)
    features = check_features(features, MAX_MODEL_FEATURES)
    return {
        "name": SPARSE_GENERATOR_NAME,
        "formula": _SPARSE_FORMULA,
        "seed": seed,
        "features": features,
        "density": _check_density(density, features),
        "noise": check_noise(noise),
        "mean_row_nnz": round(float(density) * features, 6),
        "zipf_exponent": ZIPF_EXPONENT,
        "zipf_offset": ZIPF_OFFSET,
        "length_sigma": LENGTH_SIGMA,
        "informative": max(1, round(INFORMATIVE * features)),
        "block_rows": SPARSE_BLOCK_ROWS,
        "seeding": {
            "model": "default_rng([seed, 0]): permutation(d) -> popularity order (the most popular "
            "column is the last, so the file is d wide); choice(d, informative, p) -> "
            "columns of w; standard_normal -> weights",
            "rows": "block b: default_rng([seed, 1, b, part]) for lengths, columns, counts",
            "flips": "block b: default_rng([seed, 2, b]).random(n_b) < noise",
            "offset": f"median of w . x over {_SPARSE_PILOT_ROWS} rows of default_rng([seed, 3, part])",
        },
    }


class _SparseModel:
    """The arrays behind :func:`sparse_generator_params`: popularity, idf and the hidden model."""

    def __init__(self, params: dict[str, Any]):
        self.params = params
        self.d = d = int(params["features"])
        self.mean_nnz = float(params["density"]) * d
        rng = np.random.default_rng([int(params["seed"]), _MODEL])
        order = rng.permutation(d)  # order[rank] = column
        top = int(np.flatnonzero(order == d - 1)[0])
        order[[0, top]] = order[[top, 0]]  # the most popular column is the last: the file is d wide
        weight = 1.0 / (np.arange(d) + float(params["zipf_offset"])) ** float(params["zipf_exponent"])
        self.popularity = np.empty(d)
        self.popularity[order] = weight / weight.sum()
        self.cdf = np.cumsum(self.popularity)
        self.cdf[-1] = 1.0
        inclusion = np.minimum(1.0, self.mean_nnz * self.popularity)
        self.idf = np.log(1.0 / inclusion) + 1.0 / d  # > 0 even for a column in every row
        k = int(params["informative"])
        self.w = np.zeros(d)
        self.w[rng.choice(d, size=k, replace=False, p=self.popularity)] = rng.standard_normal(k)
        self.offset = 0.0
        pilot, _ = self.rows([int(params["seed"]), _PILOT], _SPARSE_PILOT_ROWS)
        self.offset = float(np.median(pilot @ self.w))

    def rows(self, key: list[int], n: int) -> tuple[sp.csr_matrix, NDArray[np.int64]]:
        """``n`` L2-normalised tf-idf rows drawn from ``default_rng([*key, part])`` as a canonical
        CSR matrix, and their clean labels."""
        lengths_rng, terms_rng, counts_rng = (
            np.random.default_rng([*key, part]) for part in (_LENGTHS, _TERMS, _COUNTS)
        )
        sigma = float(self.params["length_sigma"])
        lengths = np.rint(lengths_rng.lognormal(math.log(self.mean_nnz) - sigma**2 / 2, sigma, n))
        lengths = np.clip(lengths, 1, self.d).astype(np.int64)
        rows, cols = self._distinct_columns(terms_rng, lengths)
        values = (1.0 + np.log(counts_rng.geometric(0.6, len(cols)))) * self.idf[cols]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
        X = sp.csr_matrix((values, cols, indptr), shape=(n, self.d))
        norms = np.sqrt(np.add.reduceat(np.square(X.data), X.indptr[:-1]))  # every row has >= 1 value
        X.data /= np.repeat(norms, np.diff(X.indptr))
        return X, np.where(X @ self.w - self.offset >= 0.0, 1, -1).astype(np.int64)

    def _distinct_columns(
        self, rng: np.random.Generator, lengths: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Per row, ``length`` distinct columns drawn by popularity: draws with replacement (a few
        more than needed), the first ``length`` distinct ones kept, sorted (row-major)."""
        extra = lengths + np.ceil(0.25 * lengths).astype(np.int64) + 4
        cand_rows = np.repeat(np.arange(len(lengths)), extra)
        cand_cols = np.minimum(np.searchsorted(self.cdf, rng.random(len(cand_rows)), side="right"), self.d - 1)
        _, first = np.unique(cand_rows * self.d + cand_cols, return_index=True)
        first.sort()  # back to draw order within each row
        rows = cand_rows[first]
        rank = np.arange(len(first)) - np.searchsorted(rows, rows)
        keep = first[rank < lengths[rows]]
        order = np.lexsort((cand_cols[keep], cand_rows[keep]))
        return cand_rows[keep][order], cand_cols[keep][order]


def iter_sparse_blocks(
    *,
    rows: int,
    features: int = RCV1_FEATURES,
    density: float = RCV1_DENSITY,
    seed: int = 0,
    noise: float = 0.05,
    params: dict[str, Any] | None = None,
) -> Iterator[tuple[sp.csr_matrix, NDArray[np.int64]]]:
    """Yield the rcv1-shaped stream as ``(X, y)`` blocks: canonical float64 CSR matrices of at most
    ``SPARSE_BLOCK_ROWS`` rows (memory: one block) and int64 labels in {-1, +1}.

    Block ``b`` depends only on ``(seed, features, density, noise, b)``: the first ``n`` rows of a
    longer stream are the stream of ``n`` rows. The clean label is a deterministic function of the
    row and flips are independent of it, so the Bayes error is exactly ``noise``. ``params`` may
    pass precomputed :func:`sparse_generator_params` (then the other keywords are ignored).

    Examples
    --------
    >>> X, y = next(iter_sparse_blocks(rows=100, features=5_000, density=0.01, seed=1))
    >>> X.shape, X.format, bool((X.data > 0).all()), sorted(set(y.tolist()))
    ((100, 5000), 'csr', True, [-1, 1])
    """
    rows = check_integer("rows", rows, 1)
    params = params or sparse_generator_params(seed, features, density, noise)
    model = _SparseModel(params)
    block_rows, seed = int(params["block_rows"]), int(params["seed"])
    for b in range(-(-rows // block_rows)):
        n_b = min(block_rows, rows - b * block_rows)
        X, y = model.rows([seed, _ROWS, b], n_b)
        y[np.random.default_rng([seed, _FLIPS, b]).random(n_b) < float(params["noise"])] *= -1
        yield X, y


def write_sparse_libsvm(
    out: str | os.PathLike[str],
    *,
    rows: int,
    features: int = RCV1_FEATURES,
    density: float = RCV1_DENSITY,
    seed: int = 0,
    noise: float = 0.05,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write an rcv1-shaped LIBSVM file: wide (default 47,236 features), sparse (default 0.16 %,
    ~76 non-zeros per row), positive tf-idf-like values with L2-normalised rows, and +-1 labels of a
    sparse hidden linear model flipped with probability ``noise`` (the Bayes error).

    The file is written a generation block at a time (bounded memory for any ``rows``), gzip-
    compressed when ``out`` ends in ``.gz`` (reproducibly: no time stamp), into a temporary sibling
    renamed into place when complete. Its first line is a ``#`` comment naming the generator and
    its parameters, by which ``overwrite`` recognises a file this function wrote (nothing else is
    replaced). ``omkl data ingest FILE --out DIR`` stores it in the csr layout.

    Returns
    -------
    dict
        ``path``, ``rows``, ``features``, ``nnz``, ``density`` (realised), ``class_counts``,
        ``bayes_error``, ``sha256`` (of the file's bytes) and ``generator`` (its parameters).

    Raises
    ------
    ValueError
        Bad ``rows``, ``features``, ``density``, ``seed`` or ``noise``.
    FileExistsError
        ``out`` exists and ``overwrite`` is false.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "wide.svm"
    >>> info = write_sparse_libsvm(out, rows=200, features=20_000, density=0.004, seed=3)
    >>> info["rows"], info["features"], out.read_text().splitlines()[0].split()[1]
    (200, 20000, 'omkl-synth-rcv1-v1')
    """
    import gzip

    from .outputs import SYNTH_LIBSVM

    rows = check_integer("rows", rows, 1)
    params = sparse_generator_params(seed, features, density, noise)
    header = (
        f"# {SPARSE_GENERATOR_NAME} seed={params['seed']} rows={rows} features={params['features']} "
        f"density={params['density']!r} noise={params['noise']!r}\n"
    )
    nnz = n_pos = 0
    with atomic_output(out, kind=SYNTH_LIBSVM, overwrite=overwrite, folder=False) as tmp:
        with open(tmp, "xb") as raw:
            fh = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if str(out).endswith(".gz") else raw
            fh.write(header.encode())
            for X, y in iter_sparse_blocks(rows=rows, params=params):
                fh.write(_libsvm_text(X, y).encode())
                nnz, n_pos = nnz + X.nnz, n_pos + int(np.count_nonzero(y == 1))
            if fh is not raw:
                fh.close()
        sha = _file_sha256(tmp)
    return {
        "path": str(out),
        "rows": rows,
        "features": params["features"],
        "nnz": nnz,
        "density": nnz / (rows * params["features"]),
        "class_counts": {"-1": rows - n_pos, "1": n_pos},
        "bayes_error": params["noise"],
        "sha256": sha,
        "generator": params,
    }


def _libsvm_text(X: sp.csr_matrix, y: NDArray[np.int64]) -> str:
    """Rows as LIBSVM lines: ``label index:value ...`` with 1-based indices, 6 significant digits."""
    cols, vals, ptr = (X.indices + 1).tolist(), X.data.tolist(), X.indptr.tolist()
    lines: list[str] = []
    for i, label in enumerate(y.tolist()):
        a, b = ptr[i], ptr[i + 1]
        lines.append(("1" if label > 0 else "-1") + "".join(f" {c}:{v:.6g}" for c, v in zip(cols[a:b], vals[a:b])))
    return "\n".join(lines) + "\n"


def _file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for piece in iter(lambda: fh.read(1 << 20), b""):
            digest.update(piece)
    return digest.hexdigest()
