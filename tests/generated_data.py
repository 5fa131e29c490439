"""Small seeded datasets for the parity and bit-identity tests of ``make test-fast`` (no real data).

Each is a few hundred rows of a handful of features, made to hold what the real-data runs rely on:

* ``generated-binary``: real-valued features in [-1, 1], labels ±1 from a curved boundary with some
  flipped; every 9th row repeats an earlier row, every other repeat with the opposite label (exact
  cancellations: κ(a, ·) − κ(a, ·));
* ``generated-ties``: small integers 0..3 (as german.numer or a1a): many exactly equal distances and
  dot products, so equal kernel values and ties of sums; repeated rows as above;
* ``generated-multiclass``: four classes (labels 1..4) around four centres, with repeated rows;
* ``generated-sparse``: non-negative, about 70 % zeros (kept in the csr layout when stored), labels ±1,
  with repeated rows.

``generated(name, n_rows)`` returns ``(X, y)`` dense as :func:`parity_data.subset` does (the naive
references take dense rows); ``stored(name, folder)`` ingests the whole set as a dataset directory
(``generated-sparse`` in the csr layout) for the cluster engine.
"""

from __future__ import annotations

import functools

import numpy as np

ROWS = 240  # every generated set; a test takes a prefix
FEATURES = 6
BINARY = ("generated-binary", "generated-ties", "generated-sparse")
MULTICLASS = ("generated-multiclass",)
NAMES = BINARY + MULTICLASS


def _with_repeats(X, y, rng, *, flip_labels):
    """Every 9th row becomes a copy of an earlier row; every other copy takes the opposite label
    (binary) or another class."""
    for n, t in enumerate(range(9, len(X), 9)):
        s = int(rng.integers(0, t))
        X[t] = X[s]
        y[t] = y[s] if n % 2 == 0 else flip_labels(y[s])
    return X, y


@functools.lru_cache(maxsize=None)
def _make(name: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(NAMES.index(name) + 2024)
    if name == "generated-multiclass":
        centres = rng.uniform(-1.0, 1.0, size=(4, FEATURES))
        y = rng.integers(1, 5, size=ROWS)
        X = centres[y - 1] + rng.normal(scale=0.45, size=(ROWS, FEATURES))
        X, y = _with_repeats(X, y, rng, flip_labels=lambda c: c % 4 + 1)
    else:
        if name == "generated-binary":
            X = rng.uniform(-1.0, 1.0, size=(ROWS, FEATURES))
        elif name == "generated-ties":
            X = rng.integers(0, 4, size=(ROWS, FEATURES)).astype(np.float64)
        else:
            kept = rng.random((ROWS, FEATURES)) < 0.2
            kept[np.arange(ROWS), rng.integers(0, FEATURES, size=ROWS)] = True  # no all-zero row
            X = rng.uniform(0.0, 1.0, size=(ROWS, FEATURES)) * kept
        centred = X - X.mean(axis=0)
        y = np.where(centred[:, 0] * centred[:, 1] + 0.5 * centred[:, 2] > 0, 1, -1)
        y[rng.random(ROWS) < 0.1] *= -1  # label noise: the learners keep making mistakes
        X, y = _with_repeats(X, y, rng, flip_labels=lambda c: -c)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


def generated(name: str, n_rows: int = ROWS) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: the first ``n_rows`` rows of the generated set ``name`` (fresh, writable copies)."""
    if name not in NAMES:
        raise ValueError(f"unknown generated dataset {name!r}; choose one of {NAMES}")
    X, y = _make(name)
    return np.array(X[:n_rows]), np.array(y[:n_rows])


def stored(name: str, folder) -> str:
    """Ingest the generated set ``name`` into ``folder/name`` (chunks of 100 rows); its path."""
    import pandas as pd

    from omkl_dist.storage import ingest

    X, y = generated(name)
    table = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(label=y)
    out = str(folder / name)
    layout = "csr" if name == "generated-sparse" else "dense"
    ingest(table, out, chunk_rows=100, label_column="label", layout=layout)
    return out
