"""Multi-class learners against their naive one-instance-at-a-time references, on real data.

Multi-class OMKC (every variant), Perceptron(u), Perceptron(*), the kernel Perceptron, SPA and
OM-2 (both norms, several epochs) must reproduce the references of ``tests/naive_multiclass.py``:
the same online mistake on every row, the same support vectors in insertion order, the same
Hedge weights (bit for bit), class scores to 1e-9 (scale-aware). Then properties of the fast path:
decisions do not depend on ``block_size`` or on how the stream is cut into ``partial_fit`` calls,
and a saved model continues exactly.

Data: 160-row random subsets of the multi-class sets glass (6 classes, raw), vehicle (4, min-max
scaled), segment (7, min-max) and dna (3, binary features, jittered), plus a binary set for OM-2.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from omkl_dist.algorithms import OM2, OMKC, SPA, KernelPerceptron, PerceptronStar, PerceptronU
from omkl_dist.kernels import make_pool
from omkl_dist.randomness import block_uniforms

import naive_omkc as naive_module
from naive_multiclass import (
    corollary_p,
    naive_om2,
    naive_omkc_mc,
    naive_perceptron_star_mc,
    naive_perceptron_u_mc,
    naive_spa_mc,
)
from parity_data import subset

N_ROWS = 160
SEED = 4242
BLOCK = 48
VALIDATION = 50
OMKC16 = list(make_pool("omkc16"))
# dna's binary features give many exactly equal sums of kernel values, whose order no float summation
# resolves (see test_omkc_parity.py); "+jitter" multiplies every entry by its own 1 + 1e-3·u
DATASETS = ["glass", "vehicle+minmax", "segment+minmax", "dna+jitter"]
OMKC_VARIANTS = {
    "DD": ("D", "D", False),
    "DS": ("D", "S", False),
    "SD": ("S", "D", False),
    "SS": ("S", "S", False),
    "U": ("D", "U", False),
    "SS-sync": ("S", "S", True),
}


@functools.lru_cache(maxsize=None)
def _block(seed, block, m, block_size, draws):
    return block_uniforms(seed, block, range(m), block_size, draws)


@pytest.fixture(autouse=True)
def _fast_naive_uniforms(monkeypatch):
    """The library's uniforms with each (seed, block) drawn once (the naive code asks per row)."""

    def cached(seed, start, stop, kernels, block_size, draws=1):
        m = len(list(kernels))
        return np.array(
            [_block(seed, t // block_size, m, block_size, draws)[t % block_size] for t in range(start, stop)]
        )

    monkeypatch.setattr(naive_module, "uniforms", cached)
    import naive_multiclass

    monkeypatch.setattr(naive_multiclass, "uniforms", cached)


@functools.lru_cache(maxsize=None)
def load(data_dir, name, n_rows=N_ROWS):
    X, y = subset(data_dir, name, n_rows)
    classes, y = np.unique(y, return_inverse=True)
    return X, y, len(classes)


def _scale(F):
    return max(1.0, float(np.abs(F).max()))


def _support_rows(model):
    """Per kernel, the stream indices of its support vectors (pool rows are stream rows in order)."""
    arrays, _ = model.to_state()
    alpha = arrays["pool_alpha"].reshape(len(arrays["pool_alpha"]), len(arrays["kernel_ids"]), -1)
    return [np.flatnonzero(np.any(alpha[:, k] != 0, axis=1)) for k in range(alpha.shape[1])]


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("variant", list(OMKC_VARIANTS))
def test_multiclass_omkc_matches_naive(data_dir, dataset, variant):
    X, y, K = load(data_dir, dataset)
    update, combination, sync = OMKC_VARIANTS[variant]
    model = OMKC(
        update=update, combination=combination, kernels="omkc16", block_size=BLOCK, block_sync=sync, random_state=SEED
    )
    out = model.progressive_partial_fit(X, y, classes=np.arange(K), keep_scores=True)
    mk, votes, F, sv, w = naive_omkc_mc(
        X, y, K, OMKC16, update=update, combination=combination, seed=SEED, block_size=BLOCK, block_sync=sync
    )
    np.testing.assert_array_equal(out["mistakes"], mk)
    rows = np.array(sorted(set().union(*sv)), dtype=np.int64)  # pool rows: the kept stream rows in order
    np.testing.assert_array_equal(model.to_state()[0]["pool_X"], X[rows])
    for k, support in enumerate(_support_rows(model)):
        np.testing.assert_array_equal(rows[support], sv[k], err_msg=f"kernel {k}")
    np.testing.assert_allclose(out["F"], F, rtol=0, atol=1e-9 * _scale(F))
    np.testing.assert_allclose(out["score"], votes, rtol=0, atol=1e-12)
    assert (model.engine_.w == w).all()
    assert 0 < model.mistakes_ < len(y)


SPA_CASES = [
    ("glass", {}),
    ("vehicle+minmax", {"hedge_loss": "mistake"}),
    ("segment+minmax", {"block_sync": True}),
    ("dna+jitter", {}),
    ("vehicle+minmax", {"kernels": "gaussian:0.5,2;laplacian:1"}),
]  # no lazy Gram


@pytest.mark.parametrize("dataset,params", SPA_CASES, ids=[f"{d}-{p}" for d, p in SPA_CASES])
def test_multiclass_spa_matches_naive(data_dir, dataset, params):
    X, y, K = load(data_dir, dataset)
    specs = list(make_pool(params.get("kernels", "omkc16")))
    model = SPA(**{"kernels": "omkc16", **params}, block_size=BLOCK, random_state=SEED, beta=1.5)
    out = model.progressive_partial_fit(X, y, classes=np.arange(K), keep_scores=True)
    mk, F, sv, w = naive_spa_mc(
        X,
        y,
        K,
        specs,
        beta=1.5,
        seed=SEED,
        block_size=BLOCK,
        block_sync=params.get("block_sync", False),
        hedge_loss=params.get("hedge_loss", "hinge"),
    )
    np.testing.assert_array_equal(out["mistakes"], mk)
    rows = np.array(sorted(set().union(*sv)), dtype=np.int64)
    np.testing.assert_array_equal(model.to_state()[0]["pool_X"], X[rows])
    for k, support in enumerate(_support_rows(model)):
        np.testing.assert_array_equal(rows[support], sv[k], err_msg=f"kernel {k}")
    np.testing.assert_allclose(out["F"], F, rtol=0, atol=1e-9 * _scale(F))
    np.testing.assert_allclose(model.engine_.w, w, rtol=1e-12)
    assert 0 < model.mistakes_ < len(y) and len(rows) > 0


@pytest.mark.parametrize("dataset", DATASETS[:2])
def test_multiclass_perceptron_baselines_match_naive(data_dir, dataset):
    X, y, K = load(data_dir, dataset)
    out = PerceptronU(kernels="omkc16", block_size=BLOCK).progressive_partial_fit(X, y)
    mk, _ = naive_perceptron_u_mc(X, y, K, OMKC16)
    np.testing.assert_array_equal(out["mistakes"], mk)
    star = PerceptronStar(kernels="omkc16", validation_size=VALIDATION, block_size=BLOCK)
    out = star.progressive_partial_fit(X, y)
    mk, best, _ = naive_perceptron_star_mc(X, y, K, OMKC16, VALIDATION)
    np.testing.assert_array_equal(out["mistakes"], mk)
    assert star.best_kernel_ == OMKC16[best].name
    gauss = make_pool("gaussian:1")[0]
    out = KernelPerceptron(kernel="gaussian:1", block_size=BLOCK).progressive_partial_fit(X, y)
    mk, _, _ = naive_perceptron_star_mc(X, y, K, [gauss], VALIDATION)
    np.testing.assert_array_equal(out["mistakes"], mk)


OM2_CASES = [
    ("glass", "exact", 1),
    ("vehicle+minmax", "exact", 2),
    ("segment+minmax", "bound", 1),
    ("dna+jitter", "exact", 1),
    ("australian+minmax", "exact", 1),
]


@pytest.mark.parametrize("dataset,norm,epochs", OM2_CASES, ids=[f"{d}-{n}-{e}" for d, n, e in OM2_CASES])
def test_om2_matches_naive(data_dir, dataset, norm, epochs):
    X, y, K = load(data_dir, dataset, 120)
    model = OM2(kernels="omkc16", norm=norm, n_epochs=epochs, block_size=BLOCK)
    outcomes = []
    for _ in range(epochs):
        outcomes.append(model.progressive_partial_fit(X, y))
    mk, scores, etas, rows, alpha = naive_om2(
        X, y, K, OMKC16, p=corollary_p(16), bounded_norm=norm == "bound", n_epochs=epochs
    )
    np.testing.assert_array_equal(np.concatenate([o["mistakes"] for o in outcomes]), mk)
    got = np.concatenate([o["score"] for o in outcomes])
    np.testing.assert_allclose(got, scores, rtol=1e-9, atol=1e-9 * _scale(scores))
    np.testing.assert_array_equal(model.to_state()[0]["pool_X"], X[rows])
    np.testing.assert_allclose(model.kernel_weights_, alpha, rtol=1e-9, atol=1e-12)
    coef = model.to_state()[0]["pool_alpha"]
    np.testing.assert_allclose(coef.max(axis=1), etas[etas > 0], rtol=1e-9)
    assert model.n_support_.min() == len(rows)


# make test-fast's cases: the same checks on the generated four-class set (repeated rows with other classes)
@pytest.mark.parametrize("variant", list(OMKC_VARIANTS))
def test_multiclass_omkc_matches_naive_on_generated_data(variant):
    test_multiclass_omkc_matches_naive(None, "generated-multiclass", variant)


@pytest.mark.parametrize("params", [p for _, p in SPA_CASES], ids=[str(p) for _, p in SPA_CASES])
def test_multiclass_spa_matches_naive_on_generated_data(params):
    test_multiclass_spa_matches_naive(None, "generated-multiclass", params)


def test_multiclass_perceptron_baselines_match_naive_on_generated_data():
    test_multiclass_perceptron_baselines_match_naive(None, "generated-multiclass")


@pytest.mark.parametrize(
    "dataset,norm,epochs",
    [("generated-multiclass", "exact", 2), ("generated-multiclass", "bound", 1), ("generated-binary", "exact", 1)],
)
def test_om2_matches_naive_on_generated_data(dataset, norm, epochs):
    test_om2_matches_naive(None, dataset, norm, epochs)


def test_om2_fit_stops_after_an_epoch_without_updates(data_dir):
    X, y, K = load(data_dir, "glass", 24)
    model = OM2(kernels="gaussian:0.25,0.5", n_epochs=50, block_size=8).fit(X, y)
    assert model.n_epochs_ < 50 and model.epoch_mistakes_[-1] == 0
    assert (model.predict(X) == y).all()


MODELS = {
    "OM2": lambda b: OM2(block_size=b),
    "OMKC-DD": lambda b: OMKC(block_size=b),
    "OMKC-SS": lambda b: OMKC(update="S", combination="S", block_size=b, random_state=3),
    "SPA": lambda b: SPA(block_size=b, random_state=3),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_multiclass_decisions_do_not_depend_on_blocks_or_calls(data_dir, name):
    """Deterministic models: any block size; stochastic ones draw per (seed, block), so a fixed one."""
    X, y, K = load(data_dir, "vehicle+minmax")
    single = MODELS[name](16).progressive_partial_fit(X, y)
    split = MODELS[name](16 if name in ("OMKC-SS", "SPA") else 1)
    cut = split.progressive_partial_fit(X[:70], y[:70], classes=np.arange(K))
    rest = split.progressive_partial_fit(X[70:], y[70:])
    np.testing.assert_array_equal(np.concatenate([cut["mistakes"], rest["mistakes"]]), single["mistakes"])
    np.testing.assert_allclose(np.vstack([cut["score"], rest["score"]]), single["score"], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "make",
    [
        lambda: OM2(block_size=32, n_epochs=1, shuffle=False),
        lambda: OMKC(update="S", combination="S", block_size=32, n_epochs=1, shuffle=False, random_state=1),
    ],
    ids=["OM2", "OMKC-SS"],
)
def test_saved_multiclass_model_continues_exactly(data_dir, make):
    X, y, K = load(data_dir, "segment+minmax")
    whole = make().fit(X, y)
    first = make().partial_fit(X[:96], y[:96], classes=np.arange(K))
    arrays, meta = first.to_state()
    resumed = type(first).from_state(arrays, meta).partial_fit(X[96:], y[96:])
    a, b = whole.to_state()[0], resumed.to_state()[0]
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    np.testing.assert_array_equal(whole.decision_function(X), resumed.decision_function(X))
    assert whole.decision_function(X).shape == (len(X), K)
