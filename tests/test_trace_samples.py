"""The model read inside a block (``sample_at``, :mod:`omkl_dist.engine.samples`) is the naive
one-instance-at-a-time reference's model after that many rows: its support vectors per kernel
exactly, its kernel weight shares to rounding (SPA: Hedge on losses; OMKC: Hedge on updates)."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.algorithms import OMKC, SPA
from omkl_dist.kernels import make_pool

from naive_omkc import naive_omkc
from naive_spa import naive_spa

SPECS = list(make_pool("omkc16"))
ROWS_READ = np.array([1, 37, 64, 65, 101, 150, 199, 200])  # inside blocks of 64, at their ends, the last


def _reference(algo, X, y, rows):
    """(support vectors per kernel, weight shares) of the naive run over each prefix of ``rows`` rows."""
    out = []
    for r in rows:
        if algo == "spa":
            _, _, sv, w = naive_spa(X[:r], y[:r], SPECS, seed=5, block_size=64, gamma=0.99, delta=0.001, eta=0.1)
        else:
            _, _, _, sv, w = naive_omkc(X[:r], y[:r], SPECS, update="S", combination="S", seed=5, block_size=64)
        out.append(([len(s) for s in sv], w / w.sum()))
    return out


@pytest.mark.parametrize("algo", ["spa", "omkc"])
def test_samples_inside_blocks_are_the_naive_models(algo):
    rng = np.random.default_rng(0)  # (continuous rows: no exact ties, which a reassociated sum may break)
    X = rng.normal(size=(200, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=200) > 0, 1.0, -1.0)
    if algo == "spa":
        model = SPA(kernels="omkc16", random_state=5, block_size=64, gamma=0.99, delta=0.001, eta=0.1)
    else:
        model = OMKC(
            kernels="omkc16",
            update="S",
            combination="S",
            beta=0.8,
            delta=0.01,
            block_sync=False,
            random_state=5,
            block_size=64,
        )
    feed = model.feed_rows()
    rows, support, weights = [], [], []
    for lo in range(0, len(y), feed):  # as omkl run feeds it
        wanted = ROWS_READ[(ROWS_READ > lo) & (ROWS_READ <= lo + feed)]
        out = model.progressive_partial_fit(X[lo : lo + feed], y[lo : lo + feed], classes=[-1, 1], sample_at=wanted)
        rows += out["samples"][0].tolist()
        support += out["samples"][1].tolist()
        weights += list(out["samples"][2])
    assert rows == ROWS_READ.tolist()
    for (ref_support, ref_weights), ours_support, ours_weights in zip(
        _reference(algo, X, y, ROWS_READ), support, weights, strict=True
    ):
        assert ours_support == ref_support
        np.testing.assert_allclose(ours_weights, ref_weights, rtol=1e-9)
    assert support[-1] == model.n_support_.tolist() and np.allclose(weights[-1], model.weights_, rtol=1e-12)
