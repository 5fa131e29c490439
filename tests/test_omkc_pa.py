"""OMKC with PA-I component learners (:class:`OMKCPA`, the C++ toolbox's kernel-ddpa / kernel-sdpa)
against the naive one-instance-at-a-time references (``naive_omkc(..., pa_c=C)``,
``naive_omkc_mc(..., pa_c=C)``), on real data: the same online mistakes, support vectors (rows in
insertion order, coefficients τ y to rounding), per-kernel decision values and Hedge weights."""

from __future__ import annotations

import numpy as np
import pytest

from omkl_dist.algorithms import OMKC, OMKCPA
from omkl_dist.kernels import make_pool

from naive_multiclass import naive_omkc_mc
from naive_omkc import naive_omkc
from parity_data import subset

SEED, BLOCK, C = 7, 32, 0.3
KERNELS = "poly:1,2+norm;gaussian:2^-2,2^0,2^2"  # normalised dot kernels and raw gaussians: κ(x, x) = 1
RAW = "poly:1,2;gaussian:2^0"  # κ(x, x) = (x·x)^p: τ's division by κ(x, x) matters
VARIANTS = [("D", "D", False), ("S", "D", False), ("S", "S", False), ("S", "D", True)]


def _model(update, combination, sync, kernels, **kw):
    return OMKCPA(
        update=update,
        combination=combination,
        kernels=kernels,
        C=C,
        block_size=BLOCK,
        block_sync=sync,
        n_epochs=1,
        shuffle=False,
        random_state=SEED,
        **kw,
    )


def _support(model, k):
    pool = model.engine_.support_vectors
    K = model.engine_.n_classes
    alpha = pool.alpha[: pool.n].reshape(pool.n, -1, K)[:, k]
    used = np.any(alpha != 0.0, axis=1)
    return pool.X[: pool.n][used], alpha[used]


@pytest.mark.parametrize(("update", "combination", "sync"), VARIANTS)
@pytest.mark.parametrize(("dataset", "kernels"), [("ionosphere", KERNELS), ("diabetes+minmax", RAW)])
def test_binary_matches_naive_reference(data_dir, dataset, kernels, update, combination, sync):
    X, y = subset(data_dir, dataset, 160)
    y = y.astype(np.float64)
    specs = list(make_pool(kernels))
    mk, score, F_ref, sv, w = naive_omkc(
        X, y, specs, update=update, combination=combination, seed=SEED, block_size=BLOCK, block_sync=sync, pa_c=C
    )
    model = _model(update, combination, sync, kernels)
    out = model.progressive_partial_fit(X, y, keep_scores=True)
    np.testing.assert_array_equal(out["mistakes"], mk)
    np.testing.assert_allclose(out["F"], F_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(model.engine_.w, w)
    for k in range(len(specs)):
        rows, coef = _support(model, k)
        ref_coef = [_naive_coef(X, y, specs[k], sv[k], F_ref[:, k], t) for t in sv[k]]
        np.testing.assert_array_equal(rows, X[sv[k]])
        np.testing.assert_allclose(coef[:, 0], ref_coef, rtol=1e-9)
    assert 0 < model.n_support_.sum()


def _naive_coef(X, y, spec, sv, F, t):
    from naive_omkc import kernel_column, pa_tau

    kxx = kernel_column(spec, X[t : t + 1], X[t])[0]
    return y[t] * pa_tau(max(0.0, 1.0 - y[t] * F[t]), kxx, C)


@pytest.mark.parametrize(("update", "combination", "sync"), VARIANTS[:2])
def test_multiclass_matches_naive_reference(data_dir, update, combination, sync):
    X, labels = subset(data_dir, "vehicle+minmax", 120)
    classes = np.unique(labels)
    y = np.searchsorted(classes, labels)
    specs = list(make_pool(KERNELS))
    mk, votes, F_ref, sv, w = naive_omkc_mc(
        X, y, len(classes), specs, update=update, combination=combination, seed=SEED, block_size=BLOCK, pa_c=C
    )
    model = _model(update, combination, sync, KERNELS)
    out = model.progressive_partial_fit(X, labels, classes=classes, keep_scores=True)
    np.testing.assert_array_equal(out["mistakes"], mk)
    np.testing.assert_allclose(out["F"].reshape(F_ref.shape), F_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(model.engine_.w, w)
    for k in range(len(specs)):
        rows, _ = _support(model, k)
        np.testing.assert_array_equal(rows, X[sv[k]])


def test_pa_is_not_the_perceptron(data_dir):
    """The component learner changes what is learnt (PA also updates on margin errors, by τ ≠ 1)."""
    X, y = subset(data_dir, "ionosphere", 160)
    pa = _model("D", "D", False, KERNELS).fit(X, y)
    perceptron = OMKC(kernels=KERNELS, block_size=BLOCK, n_epochs=1, shuffle=False, random_state=SEED).fit(X, y)
    assert (pa.n_support_ > perceptron.n_support_).all()
    assert pa.mistakes_ != perceptron.mistakes_ or not np.array_equal(pa.weights_, perceptron.weights_)


def test_cli_runs_kernel_sdpa(tmp_path):
    import json

    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    def invoke(*args):
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)

    out = tmp_path / "s"
    assert invoke("data", "synth", "--rows", 600, "--features", 4, "--seed", 2, "--out", out).exit_code == 0
    args = ["run", "omkc-pa", "--data", out, "--update", "S", "--C", 0.5, "--kernels", "gaussian:0.5,1"]
    res = invoke(*args, "--scaling", "minmax", "--json", "--quiet", "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    assert report["params"]["C"] == 0.5 and report["params"]["update"] == "S" and report["n"] == 600
    res = invoke("run", "omkc-pa", "--data", out, "--C", 0, "--quiet")
    assert res.exit_code == 2 and "C" in res.output
