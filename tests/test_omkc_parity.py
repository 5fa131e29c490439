"""The block-exact fast path against the naive one-instance-at-a-time references, on real data.

For every dataset and every variant (OMKC (D,D), (D,S), (S,D), (S,S), the stochastic-update ones
also in block-sync mode; the kernel Perceptron with a linear and a gaussian kernel; Perceptron(u);
Perceptron(*)) the fast path must reproduce the reference exactly where the algorithm is discrete
and to 1e-9 (scale-aware, see ``assert_scores_close``) where it is arithmetic:

* the same online mistake of the combined prediction on every row;
* the same support vectors per kernel, in insertion order, with the same coefficients;
* the per-kernel decision values F (before each update);
* the same final Hedge weights (bit for bit: the weight updates are the same float operations).

Then properties of the fast path alone: results do not depend on how the stream is cut into
``partial_fit`` calls, nor (for deterministic updates) on ``block_size``; block-sync with blocks
of one instance is the sequential algorithm; duplicate rows with opposite labels cancel exactly.

The naive references (``tests/naive_omkc.py``) run about 1 ms per instance for 16 kernels, so each
dataset contributes 250 rows (a fixed random subset: some files are sorted by label).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from generated_data import BINARY

from omkl_dist.algorithms import OMKC, SPA, KernelPerceptron, PerceptronStar, PerceptronU
from omkl_dist.kernels import make_pool
from omkl_dist.randomness import block_uniforms, uniforms
from omkl_dist.storage import read_dataset

import naive_omkc as naive_module
from naive_omkc import naive_omkc, naive_perceptron_star, naive_perceptron_u
from parity_data import subset

N_ROWS = 250
SHORT = 48  # rows for runs with blocks of one instance (per-block overhead dominates)
SEED = 91157  # a non-trivial seed of the random streams
BLOCK = 64  # several blocks per run (and a partial last one: 250 = 3·64 + 58)
VALIDATION = 60  # Perceptron(*) validation prefix
RTOL = 1e-9
OMKC16 = list(make_pool("omkc16"))

# australian is used raw (features up to 1e5: large norms, most narrow gaussians underflow to 0);
# "+minmax" scales every column to [0, 1] over the whole file (small distances, near-duplicates);
# "+jitter" multiplies every entry by its own 1 + 1e-3·u: integer-valued files (german.numer, a1a)
# have many exactly equal distances, hence sums whose sign no float summation order resolves (see
# ``first_divergence``); the jittered copies keep the data but not those exact ties.
DATASETS = [
    "australian",
    "fourclass",
    "svmguide3",
    "ionosphere",
    "diabetes",
    "breast-cancer",
    "german.numer",
    "a1a",
    "australian+minmax",
    "diabetes+minmax",
    "german.numer+jitter",
    "a1a+jitter",
]

VARIANTS = {
    "OMKC-DD": dict(kind="omkc", update="D", combination="D", block_sync=False),
    "OMKC-DS": dict(kind="omkc", update="D", combination="S", block_sync=False),
    "OMKC-SD": dict(kind="omkc", update="S", combination="D", block_sync=False),
    "OMKC-SS": dict(kind="omkc", update="S", combination="S", block_sync=False),
    "OMKC-U": dict(kind="omkc", update="D", combination="U", block_sync=False),
    "OMKC-SD-sync": dict(kind="omkc", update="S", combination="D", block_sync=True),
    "OMKC-SS-sync": dict(kind="omkc", update="S", combination="S", block_sync=True),
    "Perceptron-linear": dict(kind="kp", kernel="linear"),
    "Perceptron-gaussian": dict(kind="kp", kernel="gaussian"),  # width chosen per dataset
    "PerceptronU": dict(kind="pu"),
    "PerceptronStar": dict(kind="star"),
}
SYNC_DATASETS = ["australian", "ionosphere", "german.numer", "a1a+jitter"]  # block-sync variants: fewer
PARITY_CASES = [
    pytest.param(d, v, id=f"{d}-{v}")
    for d in DATASETS
    for v in VARIANTS
    if not v.endswith("-sync") or d in SYNC_DATASETS
]
# make test-fast's cases. Perceptron(*) on the integer ties: an exact tie of two narrow-gaussian sums
# (~1e-97, equal kernel values of opposite labels) is decided differently by the fast path's and the
# reference's summation orders, and first_divergence, which compares against sums recomputed after the
# run (naive_sums), finds the split only rows later, where the runs no longer hold the same support
GENERATED_CASES = [
    pytest.param(
        d,
        v,
        id=f"{d}-{v}",
        marks=[pytest.mark.xfail(strict=True, reason="an exact tie the harness locates too late")]
        if (d, v) == ("generated-ties", "PerceptronStar")
        else [],
    )
    for d in BINARY
    for v in VARIANTS
]
DETERMINISTIC_UPDATE = [
    "OMKC-DD",
    "OMKC-DS",
    "OMKC-U",
    "Perceptron-linear",
    "Perceptron-gaussian",
    "PerceptronU",
    "PerceptronStar",
]


# --------------------------------------------------------------------------- randomness
@functools.lru_cache(maxsize=None)
def _block(seed, block, m, block_size):
    out = block_uniforms(seed, block, range(m), block_size)
    out.flags.writeable = False
    return out


def _cached_uniforms(seed, start, stop, kernels, block_size):
    """``randomness.uniforms`` with each (seed, block) drawn once instead of once per instance:
    the naive reference asks for one row at a time and spent 60% of its time re-seeding."""
    kernels = list(kernels)
    assert kernels == list(range(len(kernels)))
    return np.array(
        [_block(seed, t // block_size, len(kernels), block_size)[t % block_size] for t in range(start, stop)]
    ).reshape(stop - start, len(kernels))


@pytest.fixture(autouse=True)
def _fast_naive_uniforms(monkeypatch):
    monkeypatch.setattr(naive_module, "uniforms", _cached_uniforms)


def test_cached_uniforms_are_the_library_streams():
    for start, stop, bs in [(0, 1, 64), (63, 130, 64), (5, 6, 1), (0, 300, 7)]:
        np.testing.assert_array_equal(
            _cached_uniforms(SEED, start, stop, range(16), bs), uniforms(SEED, start, stop, range(16), bs)
        )


# --------------------------------------------------------------------------- data
class Data:
    """A row subset of a real dataset plus naive kernel matrices for the error scales."""

    def __init__(self, name, X, y):
        self.name, self.X, self.y = name, X, y
        self.yf = y.astype(np.float64)
        d2 = np.stack([((X - x) ** 2).sum(axis=1) for x in X])  # direct ‖x_s − x_t‖², [s, t]
        # gaussian Perceptron: a power-of-two width near the median distance
        median = np.sqrt(np.median(d2[np.triu_indices(len(X), 1)]))
        self.sigma = float(2.0 ** np.round(np.log2(max(median, 2.0**-6))))
        self.gaussian = make_pool(f"gaussian(sigma={self.sigma!r})")[0]
        gram, gram_abs = X @ X.T, np.abs(X) @ np.abs(X).T
        self.K, self.Kabs = {}, {}
        for spec in OMKC16 + [make_pool("linear")[0], self.gaussian]:
            if spec.kind in ("linear", "polynomial"):
                p = 1 if spec.kind == "linear" else spec.p
                self.K[spec], self.Kabs[spec] = gram**p, gram_abs**p
            else:
                self.K[spec] = self.Kabs[spec] = np.exp(-d2 / (2.0 * spec.sigma**2))

    def head(self, n):
        """The first n rows (same kernel widths)."""
        part = object.__new__(Data)
        part.__dict__.update(self.__dict__)
        part.X, part.y, part.yf = self.X[:n], self.y[:n], self.yf[:n]
        part.K = {spec: K[:n, :n] for spec, K in self.K.items()}
        part.Kabs = {spec: K[:n, :n] for spec, K in self.Kabs.items()}
        return part


_DATA: dict = {}


def load(data_dir, name, n_rows=N_ROWS) -> Data:
    if (name, n_rows) not in _DATA:
        X, y = subset(data_dir, name, n_rows)
        assert set(np.unique(y)) == {-1, 1}
        _DATA[(name, n_rows)] = Data(name, X, y)
    return _DATA[(name, n_rows)]


# --------------------------------------------------------------------------- runs
def specs_of(variant, data):
    v = VARIANTS[variant]
    if v["kind"] == "kp":
        return [make_pool("linear")[0] if v["kernel"] == "linear" else data.gaussian]
    return OMKC16


def make_estimator(variant, data, *, block_size=BLOCK, seed=SEED, **over):
    v = dict(VARIANTS[variant], **over)
    if v["kind"] == "omkc":
        return OMKC(
            update=v["update"],
            combination=v["combination"],
            kernels="omkc16",
            block_size=block_size,
            block_sync=v["block_sync"],
            n_epochs=1,
            shuffle=False,
            random_state=seed,
        )
    if v["kind"] == "kp":
        return KernelPerceptron(
            kernel=specs_of(variant, data)[0].name, block_size=block_size, n_epochs=1, shuffle=False, random_state=seed
        )
    if v["kind"] == "pu":
        return PerceptronU(kernels="omkc16", block_size=block_size, n_epochs=1, shuffle=False, random_state=seed)
    return PerceptronStar(
        kernels="omkc16",
        validation_size=VALIDATION,
        block_size=block_size,
        n_epochs=1,
        shuffle=False,
        random_state=seed,
    )


def naive_sums(data, specs, sv):
    """F[t, k] = Σ_{s ∈ sv_k, s < t} y_s κ_k(x_s, x_t) from the naive kernel matrices, and the
    error scale Σ |y_s| · |κ_k|-bound (see ``assert_scores_close``)."""
    n = len(data.y)
    F, scale = np.zeros((n, len(specs))), np.zeros((n, len(specs)))
    for k, spec in enumerate(specs):
        idx = np.asarray(sv[k], dtype=np.int64)
        if len(idx) == 0:
            continue
        before = idx[:, None] < np.arange(n)[None, :]
        F[:, k] = (data.K[spec][idx] * data.yf[idx, None] * before).sum(axis=0)
        scale[:, k] = (data.Kabs[spec][idx] * before).sum(axis=0)
    return F, scale


def reference(variant, data):
    """Naive run: mistakes, scores, F, SV index lists per kernel, weights (OMKC), best kernel (*)."""
    v, X, y = VARIANTS[variant], data.X, data.yf
    specs = specs_of(variant, data)
    ref = {}
    if v["kind"] == "omkc":
        mk, sc, F, sv, w = naive_omkc(
            X,
            y,
            specs,
            update=v["update"],
            combination=v["combination"],
            seed=SEED,
            block_size=BLOCK,
            block_sync=v["block_sync"],
        )
        ref.update(F=F, w=w)
    elif v["kind"] in ("kp", "pu"):
        mk, sc, sv_one = naive_perceptron_u(X, y, specs)
        sv = [sv_one] * len(specs)
    else:
        mk, best, sv = naive_perceptron_star(X, y, specs, VALIDATION)
        sc = None
        ref["best"] = best if len(y) > VALIDATION else None
    F_sum, scale = naive_sums(data, specs, sv)
    ref.update(mistakes=mk, score=sc, sv=sv, scale=scale, F=ref.get("F", F_sum))
    return ref


def run_fast(variant, data, **kw):
    model = make_estimator(variant, data, **kw)
    if VARIANTS[variant]["kind"] == "star" and len(data.y) > VALIDATION:  # F before / after the choice
        first = model.progressive_partial_fit(data.X[:VALIDATION], data.y[:VALIDATION], keep_scores=True)
        rest = model.progressive_partial_fit(data.X[VALIDATION:], data.y[VALIDATION:], keep_scores=True)
        out = {
            "mistakes": np.concatenate([first["mistakes"], rest["mistakes"]]),
            "score": np.concatenate([first["score"], rest["score"]]),
            "F": (first["F"], rest["F"]),
        }
    else:
        out = model.progressive_partial_fit(data.X, data.y, keep_scores=True)
    return model, out


def pool_support(model, k):
    """Rows and coefficients of kernel k's support vectors in the shared pool, insertion order."""
    pool = model.engine_.support_vectors
    used = pool.alpha[: pool.n, k] != 0.0
    return pool.X[: pool.n][used], pool.alpha[: pool.n, k][used]


def assert_scores_close(F, F_ref, scale, what):
    """|F − F_ref| ≤ 1e-9 · max(|F_ref|, Σ_s |α_s κ(x_s, x)|) (+ 1e-300).

    Why scale-aware: each term α_s κ(x_s, x) carries a relative rounding error (a dot product or a
    distance summed in another order, exp to 2 ulp, narrow gaussian widths built by repeated
    squaring), so the error of the sum is relative to Σ |terms|, which can be many orders above
    |F| when ± coefficients cancel. For polynomial kernels |κ| is bounded by (|x_s|·|x|)^p: a dot
    product's rounding error is relative to the magnitudes of its products, not to its value.
    1e-300 absorbs subnormal kernel values near the exp underflow (accurate to 1 unit of 5e-324).
    """
    tol = RTOL * np.maximum(np.abs(F_ref), scale) + 1e-300
    err = np.abs(F - F_ref)
    bad = err > tol
    if bad.any():
        t, k = np.argwhere(bad)[0]
        raise AssertionError(
            f"{what}: {bad.sum()} values differ beyond the scale-aware tolerance; first at row "
            f"{t}, kernel {k}: {F[t, k]!r} vs {F_ref[t, k]!r} (scale {scale[t, k]:.3g})"
        )


def assert_same_support(model, data, sv_ref, kernels):
    """Kernel ``kernels[j]`` of the reference ↔ pool column j of the model."""
    for col, k in enumerate(kernels):
        rows, coef = pool_support(model, col)
        idx = np.asarray(sv_ref[k], dtype=np.int64)
        assert model.n_support_[col] == len(idx), (col, model.n_support_[col], len(idx))
        np.testing.assert_array_equal(rows, data.X[idx], err_msg=f"support vectors of kernel {k}")
        np.testing.assert_array_equal(coef, data.yf[idx], err_msg=f"coefficients of kernel {k}")


# --------------------------------------------------------------------------- parity
def _compared(variant, out, ref):
    """Per-kernel decision values as (F_fast, F_ref, scale), n × m; for Perceptron(*) after the
    choice only the kept kernel's column (the others are 0 on both sides)."""
    if VARIANTS[variant]["kind"] != "star" or ref["best"] is None:
        F = out["F"][0] if isinstance(out["F"], tuple) else out["F"]
        return F, ref["F"], ref["scale"]
    F_val, F_rest = out["F"]
    keep = np.zeros(ref["F"].shape, dtype=bool)
    keep[:VALIDATION] = True
    keep[VALIDATION:, ref["best"]] = True
    F = np.zeros(ref["F"].shape)
    F[:VALIDATION], F[VALIDATION:, ref["best"]] = F_val, F_rest[:, 0]
    return F, np.where(keep, ref["F"], 0.0), np.where(keep, ref["scale"], 0.0)


def first_divergence(variant, data, out, ref):
    """First row where the runs decide differently (a kernel's Perceptron mistake y·f <= 0, or
    the combined mistake), else n; there both sides' values must be below the rounding noise.

    Exactly equal kernel values with opposite coefficients (equal distances in integer-valued
    data) cancel exactly in both paths, and what remains can be far below the rounding error of
    the other terms: then the sign depends on the summation order, which neither path fixes
    (np.dot in the reference, a reassociated SIMD sum in the fast path; seen on german.numer and
    a1a: the fast path sometimes agrees with math.fsum where the reference does not, and
    sometimes not). Such a row is a legitimate divergence point, nothing else is.
    """
    F, F_ref, scale = _compared(variant, out, ref)
    y = data.yf[:, None]
    kind = VARIANTS[variant]["kind"]
    z_differs = ((y * F <= 0) != (y * F_ref <= 0)).any(axis=1) if kind in ("omkc", "star") else False
    rows = np.flatnonzero(z_differs | (out["mistakes"] != ref["mistakes"]))
    if len(rows) == 0:
        return len(data.y)
    t = rows[0]
    tol = RTOL * scale[t]
    near_tie = (np.abs(F[t]) <= tol) & (np.abs(F_ref[t]) <= tol)
    if kind in ("omkc", "star"):
        differs = (y[t] * F[t] <= 0) != (y[t] * F_ref[t] <= 0)
        assert near_tie[differs].all(), (
            f"row {t}: kernels {np.flatnonzero(differs & ~near_tie)} decide "
            f"differently and are no numerical tie: {F[t]} vs {F_ref[t]}"
        )
        if not differs.any() and kind == "star":  # the vote is the leading kernel's sign: F_ref is
            # recomputed after the run (naive_sums), the reference decided on its own np.dot sum, and
            # both straddle 0 only at a numerical tie (seen on a1a with AVX-512 summation)
            assert near_tie.any(), (t, F[t], F_ref[t])
        elif not differs.any():  # only the combined vote differs: a tie of the vote, or a kernel whose
            # score is a numerical tie voting differently (sgn 0 vs ±1; both count it a mistake)
            vote_flip = (near_tie & (np.sign(F[t]) != np.sign(F_ref[t]))).any()
            assert vote_flip or (abs(out["score"][t]) <= 1e-12 and abs(ref["score"][t]) <= 1e-12), (
                t,
                out["score"][t],
                ref["score"][t],
            )
    else:  # one Perceptron on the mean kernel (or on its only kernel)
        tol = RTOL * scale[t].mean()
        assert abs(out["score"][t]) <= tol and abs(ref["score"][t]) <= tol, (t, out["score"][t], ref["score"][t])
    return t


def assert_parity(variant, data, model, out, ref):
    kind = VARIANTS[variant]["kind"]
    np.testing.assert_array_equal(out["mistakes"], ref["mistakes"], err_msg="online mistakes")
    assert model.mistakes_ == int(ref["mistakes"].sum())
    assert model.n_samples_seen_ == len(data.y)
    F, F_ref, scale = _compared(variant, out, ref)
    assert_scores_close(F, F_ref, scale, "F")

    if kind == "star":
        if ref["best"] is not None:
            assert model.best_kernel_ == OMKC16[ref["best"]].name
            assert_same_support(model, data, ref["sv"], [ref["best"]])
            # the single-call path (choice inside one call) gives the same online outcome
            single = make_estimator(variant, data).progressive_partial_fit(data.X, data.y)
            np.testing.assert_array_equal(single["mistakes"], ref["mistakes"])
        elif len(data.y) < VALIDATION:
            assert_same_support(model, data, ref["sv"], range(len(OMKC16)))
        return

    assert_same_support(model, data, ref["sv"], range(len(specs_of(variant, data))))
    if kind == "omkc":
        np.testing.assert_array_equal(model.engine_.w, ref["w"], err_msg="Hedge weights")
        np.testing.assert_allclose(model.weights_, ref["w"] / ref["w"].sum(), rtol=1e-15)
        # the vote uses sgn(f_k), 0 = abstain: f_k = 0 on one side and a rounding-noise f_k on the
        # other changes the combined score (not the mistake, nor what is learned)
        vote_differs = np.sign(F) != np.sign(F_ref)
        tol = RTOL * scale + 1e-300
        assert ((np.abs(F) <= tol) & (np.abs(F_ref) <= tol))[vote_differs].all()
        same_vote = ~vote_differs.any(axis=1)
        np.testing.assert_allclose(out["score"][same_vote], ref["score"][same_vote], rtol=0, atol=1e-12)
        # per-kernel Perceptron mistakes: y f_k(x) <= 0, counted whether or not kernel k was updated
        np.testing.assert_array_equal(model.kernel_mistakes_, (data.yf[:, None] * ref["F"] <= 0).sum(axis=0))
    else:  # one Perceptron on the mean kernel (or on the one kernel): score = mean of F
        scale = ref["scale"].mean(axis=1, keepdims=True)
        assert_scores_close(out["score"][:, None], ref["score"][:, None], scale, "score")


@pytest.mark.parametrize(("dataset", "variant"), PARITY_CASES)
def test_fast_path_matches_naive_reference(data_dir, dataset, variant):
    """Exact parity, up to the first numerical tie if any (then full parity on the rows before it:
    both runs are repeated on that prefix, which also checks weights and support vectors there)."""
    data = load(data_dir, dataset)
    ref = reference(variant, data)
    model, out = run_fast(variant, data)
    stop = first_divergence(variant, data, out, ref)
    if stop < len(data.y):
        assert "jitter" not in dataset, f"the jittered copies have no exact ties, yet one at row {stop}"
        data = data.head(stop)
        ref = reference(variant, data)
        model, out = run_fast(variant, data)
        assert first_divergence(variant, data, out, ref) == stop
    assert_parity(variant, data, model, out, ref)


@pytest.mark.parametrize(("dataset", "variant"), GENERATED_CASES)
def test_fast_path_matches_naive_reference_on_generated_data(dataset, variant):
    """The same, on the generated sets (repeated rows of both labels, integer ties, mostly zeros)."""
    test_fast_path_matches_naive_reference(None, dataset, variant)


def test_parity_is_not_vacuous(data_dir):
    """The variants really differ from each other on the same data (so matching each one's own
    reference is informative), and all kernels learn something."""
    data = load(data_dir, "ionosphere")
    outcomes = {v: run_fast(v, data)[0] for v in ["OMKC-DD", "OMKC-DS", "OMKC-SD", "OMKC-SS", "OMKC-SS-sync"]}
    supports = {v: tuple(m.n_support_.tolist()) for v, m in outcomes.items()}
    # the combination does not change what is learned, only the online prediction: (D,S) learns
    # exactly what (D,D) learns, (S,S) what (S,D) learns (same draws select the same updates)
    assert supports["OMKC-DD"] == supports["OMKC-DS"]
    assert supports["OMKC-SD"] == supports["OMKC-SS"]
    assert outcomes["OMKC-DD"].mistakes_ != outcomes["OMKC-DS"].mistakes_
    assert outcomes["OMKC-SD"].mistakes_ != outcomes["OMKC-SS"].mistakes_
    assert len({supports[v] for v in ["OMKC-DD", "OMKC-SD", "OMKC-SS-sync"]}) == 3, supports
    assert (outcomes["OMKC-DD"].n_support_ > 0).all()


# --------------------------------------------------------------------------- chunking, blocks
CHUNKS = [1, 2, 7, 13, 5, 64, 1, 30, 3, 63, 65, 11, 1, 17]


def _chunked(model, X, y, sizes):
    outs, pos, i = [], 0, 0
    while pos < len(y):
        end = min(len(y), pos + sizes[i % len(sizes)])
        outs.append(model.progressive_partial_fit(X[pos:end], y[pos:end], classes=[-1, 1]))
        pos, i = end, i + 1
    return np.concatenate([o["mistakes"] for o in outs]), np.concatenate([o["score"] for o in outs])


def assert_same_model(a, b):
    np.testing.assert_array_equal(a.n_support_, b.n_support_)
    np.testing.assert_array_equal(a.kernel_mistakes_, b.kernel_mistakes_)
    np.testing.assert_array_equal(a.engine_.w, b.engine_.w)
    pa, pb = a.engine_.support_vectors, b.engine_.support_vectors
    assert pa.n == pb.n
    np.testing.assert_array_equal(pa.X[: pa.n], pb.X[: pb.n])
    np.testing.assert_array_equal(pa.alpha[: pa.n], pb.alpha[: pb.n])


@pytest.mark.parametrize(
    ("dataset", "variant"), [("ionosphere", v) for v in VARIANTS] + [("australian", v) for v in VARIANTS if "OMKC" in v]
)
def test_chunking_does_not_change_results(data_dir, dataset, variant):
    data = load(data_dir, dataset)
    whole = make_estimator(variant, data).fit(data.X, data.y)
    ref = make_estimator(variant, data).progressive_partial_fit(data.X, data.y)
    parts = make_estimator(variant, data)
    mistakes, score = _chunked(parts, data.X, data.y, CHUNKS)
    np.testing.assert_array_equal(mistakes, ref["mistakes"])
    np.testing.assert_allclose(score, ref["score"], rtol=1e-12, atol=1e-12)
    assert parts.mistakes_ == whole.mistakes_
    assert_same_model(parts, whole)
    probe = data.X[::7]
    np.testing.assert_allclose(parts.decision_function(probe), whole.decision_function(probe), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", DETERMINISTIC_UPDATE)
def test_block_size_does_not_change_deterministic_updates(data_dir, variant):
    """With deterministic updates the learning state never depends on block_size. The combined
    mistakes do not either, except for (D,S): its combination draws from streams indexed by
    (block, position in block), which block_size changes."""
    data = load(data_dir, "svmguide3")
    models = {bs: make_estimator(variant, data, block_size=bs) for bs in (7, 32, BLOCK, 1000)}
    outs = {bs: m.progressive_partial_fit(data.X, data.y) for bs, m in models.items()}
    for bs in (7, 32, 1000):
        assert_same_model(models[bs], models[BLOCK])
        if variant != "OMKC-DS":
            np.testing.assert_array_equal(outs[bs]["mistakes"], outs[BLOCK]["mistakes"])
    # blocks of one instance, on a shorter stream
    short = load(data_dir, "svmguide3", SHORT)
    one, ref = make_estimator(variant, short, block_size=1), make_estimator(variant, short)
    a, b = one.progressive_partial_fit(short.X, short.y), ref.progressive_partial_fit(short.X, short.y)
    assert_same_model(one, ref)
    if variant != "OMKC-DS":
        np.testing.assert_array_equal(a["mistakes"], b["mistakes"])


@pytest.mark.parametrize("variant", ["OMKC-SD", "OMKC-SS"])
@pytest.mark.parametrize("dataset", ["ionosphere", "german.numer"])
def test_block_sync_with_blocks_of_one_is_the_sequential_algorithm(data_dir, dataset, variant):
    data = load(data_dir, dataset, SHORT)
    sync = make_estimator(variant, data, block_size=1, block_sync=True)
    seq = make_estimator(variant, data, block_size=1, block_sync=False)
    a, b = sync.progressive_partial_fit(data.X, data.y), seq.progressive_partial_fit(data.X, data.y)
    np.testing.assert_array_equal(a["mistakes"], b["mistakes"])
    np.testing.assert_array_equal(a["score"], b["score"])
    assert_same_model(sync, seq)
    # ...while with real blocks the stale sampling weights do change what is learned
    data = load(data_dir, dataset)
    sync64 = make_estimator(variant, data, block_size=BLOCK, block_sync=True).fit(data.X, data.y)
    seq64 = make_estimator(variant, data, block_size=BLOCK, block_sync=False).fit(data.X, data.y)
    assert tuple(sync64.n_support_) != tuple(seq64.n_support_)


# --------------------------------------------------------------------------- exact cancellation
def _dup_streams(data_dir, names=("ionosphere", "australian", "australian+minmax")):
    """(a, z) pairs of real rows for the stream a(+1), a(+1), a(−1), z: the first a becomes a
    support vector of every kernel, the second is classified right (κ(a, a) > 0), the third wrongly,
    so every kernel's classifier is κ(a, ·) − κ(a, ·) when z arrives: F(z) must be exactly 0."""
    pairs = []
    for name in names:
        X = load(data_dir, name).X
        pairs += [(name, X[i], X[i + 1]) for i in range(0, 10, 2)]
    return pairs


ARRANGEMENTS = [
    # how the four instances a, a, a, z fall into blocks (block_size) and partial_fit calls (chunks)
    pytest.param(1, [4], id="all-in-pool"),  # z scanned against a pool holding a, a
    pytest.param(3, [4], id="pool-then-z"),
    pytest.param(BLOCK, [4], id="one-block"),  # everything inside one block: the pair path
    pytest.param(BLOCK, [3, 1], id="calls-3+1"),
    pytest.param(BLOCK, [1, 1, 1, 1], id="calls-1+1+1+1"),
    # first a in the pool, second a in the block of z: one value comes from the pool scan, the
    # other from the intra-block pair path
    pytest.param(2, [4], id="split-block"),
    pytest.param(BLOCK, [2, 2], id="split-calls"),
]


@pytest.mark.parametrize(("block_size", "chunks"), ARRANGEMENTS)
def test_duplicates_with_opposite_labels_cancel_exactly(data_dir, block_size, chunks, streams=None):
    y = np.array([1, 1, -1, 1])
    failures = []
    streams = _dup_streams(data_dir) if streams is None else streams
    for name, a, z in streams:
        X = np.vstack([a, a, a, z])
        model = OMKC(update="D", combination="D", kernels="omkc16", block_size=block_size, random_state=SEED)
        F, mistakes, pos = [], [], 0
        for size in chunks:
            out = model.progressive_partial_fit(
                X[pos : pos + size], y[pos : pos + size], classes=[-1, 1], keep_scores=True
            )
            F.append(out["F"])
            mistakes.append(out["mistakes"])
            pos += size
        F, mistakes = np.concatenate(F), np.concatenate(mistakes)
        mk_ref, _, F_ref, sv_ref, w_ref = naive_omkc(
            X, y.astype(float), OMKC16, update="D", combination="D", seed=SEED, block_size=block_size
        )
        assert (F_ref[3] == 0.0).all()  # the reference cancels exactly
        if (
            (F[3] != 0.0).any()
            or (mistakes != mk_ref).any()
            or [len(s) for s in sv_ref] != model.n_support_.tolist()
            or (model.engine_.w != w_ref).any()
        ):
            failures.append((name, np.flatnonzero(F[3]).tolist(), mistakes.tolist(), mk_ref.tolist()))
    assert not failures, f"{len(failures)} of {len(streams)} streams: {failures[:3]}"


@pytest.mark.parametrize(("block_size", "chunks"), ARRANGEMENTS)
def test_duplicates_with_opposite_labels_cancel_exactly_on_generated_data(block_size, chunks):
    test_duplicates_with_opposite_labels_cancel_exactly(None, block_size, chunks, _dup_streams(None, BINARY))


@pytest.mark.parametrize("block_size", [1, 2, 3, 64])
def test_integer_duplicates_cancel_exactly_through_blas(data_dir, block_size):
    """Integer data (here a1a's binary rows) skips the fixed-order dot products: BLAS is exact for
    it in any order, so κ(a, z) − κ(a, z) is still exactly 0 however the rows fall into blocks."""
    from omkl_dist.scoring.support_vectors import blas_dots_exact, integral_bound

    X = read_dataset(data_dir / "a1a/a1a.csv.gz").X
    assert blas_dots_exact(integral_bound(X), integral_bound(X), X.shape[1])
    for i in range(0, 10, 2):
        a, z = X[i], X[i + 1]
        Xs, y = np.vstack([a, a, a, z]), np.array([1.0, 1.0, -1.0, 1.0])
        out = OMKC(update="D", combination="D", kernels="omkc16", block_size=block_size).progressive_partial_fit(
            Xs, y, classes=[-1, 1], keep_scores=True
        )
        assert (out["F"][3] == 0.0).all()


@pytest.mark.parametrize(
    "make",
    [
        lambda: OMKC(update="S", combination="S", block_size=700, block_sync=True, random_state=4),
        lambda: OMKC(update="D", combination="D", block_size=700),
        lambda: SPA(block_size=700, random_state=4),
    ],
)
def test_long_blocks_are_segmented_without_changing_results(data_dir, monkeypatch, make):
    """Blocks longer than the engine's segment are processed in pieces (bounded memory for large
    block sizes); randomness and block-sync snapshots follow the global blocks, so nothing changes."""
    import omkl_dist.engine.local as local

    ds = read_dataset(data_dir / "australian/australian.libsvm.gz")
    whole = make().progressive_partial_fit(ds.X, ds.y, keep_scores=True)
    monkeypatch.setattr(local, "MAX_SEGMENT", 97)
    monkeypatch.setattr(local, "LAZY_MAX_SEGMENT", 97)
    pieces = make().progressive_partial_fit(ds.X, ds.y, keep_scores=True)
    np.testing.assert_array_equal(pieces["mistakes"], whole["mistakes"])
    np.testing.assert_allclose(pieces["F"], whole["F"], rtol=1e-9, atol=1e-9 * np.abs(whole["F"]).max())
