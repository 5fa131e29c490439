"""Read-only arrays (a memory-mapped X, a model loaded with joblib's ``mmap_mode="r"``) reach the
compiled loops as writeable copies: numba types a read-only array differently, so each would compile
every kernel a second time (about a minute, see ``scoring.rows.writeable``)."""

from __future__ import annotations

import joblib
import numpy as np
import pytest

from omkl_dist.algorithms import OKS, OMKC, RBP
from omkl_dist.engine import _budget_loops, _recurrence
from omkl_dist.learners import oks as oks_loops
from omkl_dist.scoring import _dense

# the compiled entry points each engine calls with the rows and the model's kernel program
ENTRY_POINTS = {
    "OMKC": [_recurrence.omkc_block, _dense.accumulate_dot_gauss],
    "RBP": [_budget_loops._budget_block_range, _budget_loops._budget_scores_range],
    "OKS": [oks_loops.oks_block, oks_loops._score_pass_range],
}
MODELS = {
    "OMKC": lambda: OMKC(kernels="gaussian:1;linear", block_size=16, random_state=0),
    "RBP": lambda: RBP(kernels="gaussian:1;linear", budget=10, block_size=16, random_state=0),
    "OKS": lambda: OKS(kernels="gaussian:1;linear", block_size=16),
}


def _readonly_signatures(name):
    return [str(sig) for fn in ENTRY_POINTS[name] for sig in fn.signatures if "readonly" in str(sig)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_read_only_rows_and_models_compile_nothing_new(name, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    expected = MODELS[name]().fit(X, y).predict(X)

    X_ro = X.copy()
    X_ro.setflags(write=False)
    model = MODELS[name]().fit(X_ro, y)
    np.testing.assert_array_equal(model.predict(X_ro), expected)

    joblib.dump(model, tmp_path / "model.joblib")
    loaded = joblib.load(tmp_path / "model.joblib", mmap_mode="r")
    np.testing.assert_array_equal(loaded.predict(X_ro), expected)

    assert _readonly_signatures(name) == []
    for fn in ENTRY_POINTS[name]:
        assert fn.signatures, f"{fn.py_func.__name__} was not called: the entry-point list is out of date"
