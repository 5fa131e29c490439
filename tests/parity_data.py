"""The real-data subsets the parity tests run on: ``"name"`` or ``"name+transform"``.

``+minmax`` scales every column to [0, 1] over the whole file; ``+jitter`` multiplies every entry by
its own 1 + 1e-3·u (integer-valued files have many exactly equal sums of kernel values, whose order
no float summation resolves; the jittered copies keep the data but not those ties). The rows are a
fixed random subset (``default_rng(0)``): some files are sorted by label. The generated sets of
:mod:`generated_data` go by their names too, so a parity test runs on them without real data.
"""

from __future__ import annotations

import numpy as np
from generated_data import NAMES, generated

from omkl_dist.storage import read_dataset, resolve_dataset


def subset(data_dir, name: str, n_rows: int):
    """``(X, y)``: ``n_rows`` random rows of the dataset, transformed as the name says; a generated
    set's name (:mod:`generated_data`, no ``data_dir`` needed) gives its first ``n_rows`` rows."""
    base, _, transform = name.partition("+")
    if base in NAMES:
        X, y = generated(base, n_rows)
    else:
        ds = read_dataset(resolve_dataset(base, data_dir=data_dir))
        X, y = ds.X, ds.y
    if transform == "minmax":
        span = X.max(axis=0) - X.min(axis=0)
        X = (X - X.min(axis=0)) / np.where(span > 0, span, 1.0)
    elif transform == "jitter":
        X = X * (1.0 + 1e-3 * np.random.default_rng(1).uniform(size=X.shape))
    elif transform:
        raise ValueError(f"unknown transform {transform!r} in {name!r}")
    if base in NAMES:
        return X, y
    idx = np.random.default_rng(0).permutation(len(X))[:n_rows]
    return np.ascontiguousarray(X[idx]), y[idx]
