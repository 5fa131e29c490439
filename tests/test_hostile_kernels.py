"""Hostile kernel specs and sizes: column views beyond the data, huge or non-finite kernel
parameters, huge kernel counts, empty specs, too-wide data, re-declared classes.

Each must end in the package's own one-line error (a ``ValueError`` naming the parameter for the
Python API, ``error: ...`` and exit status 2 on the command line) -- never a segfault, a numpy or
numba traceback, minutes of work or gigabytes allocated before refusing.
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.algorithms import OKS, OM2, OMKC, SPA, KernelPerceptron
from omkl_dist.pipelines.cli import main
from omkl_dist.storage.synth import synthesize

RNG = np.random.default_rng(0)
X4 = RNG.normal(size=(40, 4))
Y4 = np.where(X4[:, 0] + 0.3 * X4[:, 1] > 0, 1, -1)


@pytest.fixture(scope="module")
def syn(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile") / "syn"
    synthesize(out, rows=300, features=5, seed=0)
    return out


def run_cli(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


# ------------------------------------------------------------------ class 1: views beyond the data
@pytest.mark.parametrize("cls", [OMKC, OM2, SPA, OKS])
@pytest.mark.parametrize("view", ["50:51", "0:1000", "3,4", "200000000:200000001"])
def test_a_view_beyond_the_columns_is_refused_before_learning(cls, view):
    with pytest.raises(ValueError, match=r"sees column \d+, but the data has 4 columns"):
        cls(kernels=f"linear @ {view}").fit(X4, Y4)


def test_a_view_beyond_the_columns_is_refused_by_partial_fit_and_initialize():
    with pytest.raises(ValueError, match="sees column 50"):
        OMKC(kernels="linear @ 50:51").partial_fit(X4, Y4, classes=[-1, 1])
    with pytest.raises(ValueError, match="sees column 4, but the data has 4 columns"):
        OMKC(kernels="gaussian:1 @ 2:5").initialize(4, [-1, 1])  # what a cluster job starts from


def test_a_view_inside_the_columns_still_learns():
    model = OMKC(kernels="linear @ 0:4; gaussian:1 @ 3").fit(X4, Y4)
    assert model.predict(X4).shape == (40,)


def test_a_loaded_model_whose_views_exceed_its_width_is_refused():
    arrays, meta = OMKC(kernels="linear @ 0:2").fit(X4, Y4).to_state()
    meta["kernel_pool"] = meta["params"]["kernels"] = "linear@0:2000"
    with pytest.raises(ValueError, match="sees column 1999, but the data has 4 columns"):
        OMKC.from_state(arrays, meta)


def test_a_loaded_model_whose_width_differs_from_its_support_vectors_is_refused():
    arrays, meta = OMKC(kernels="linear @ 0:2").fit(X4, Y4).to_state()
    meta["n_features_in"] = 400
    with pytest.raises(ValueError, match="400"):
        OMKC.from_state(arrays, meta)


def test_the_command_line_refuses_a_view_beyond_the_columns(syn, tmp_path):
    code, output = run_cli(
        "run", "--quiet", "--algo", "omkc", "--data", str(syn), "--kernels", "linear @ 200000000:200000001",
        "--trace-out", str(tmp_path / "t.json"),
    )  # fmt: skip
    assert code == 2 and "error:" in output and "sees column 200000000" in output


def test_a_sparse_matrix_with_an_index_outside_its_shape_is_refused():
    import scipy.sparse as sp

    indices, indptr = np.array([0, 100, 2]), np.array([0, 1, 2, 3])
    X = sp.csr_matrix((np.ones(3), indices, indptr), shape=(3, 4))  # scipy does not check the indices
    for cls in (OMKC, OKS):
        with pytest.raises(ValueError, match="malformed csr matrix of shape"):
            cls(kernels="linear").fit(X, [1, -1, 1])
    coo = sp.coo_matrix((np.ones(2), (np.array([0, 2]), np.array([0, 1]))), shape=(3, 4))
    coo.row[1] = 7
    with pytest.raises(ValueError, match="malformed coo matrix"):
        OMKC(kernels="linear").fit(coo, [1, -1, 1])
