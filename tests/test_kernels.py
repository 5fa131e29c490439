"""Kernel layer: specs, pool parsing, and the shared-work block evaluators.

Values are checked against scikit-learn's ``pairwise_kernels`` and against a naive double loop
(``tests/naive_kernels.py``), on random data and on real rows of fourclass and australian.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.datasets import load_svmlight_file
from sklearn.metrics.pairwise import pairwise_kernels

from omkl_dist.kernels import (
    NAMED_POOLS,
    ChiSquare,
    Gaussian,
    KernelPool,
    KernelSpec,
    Laplacian,
    Linear,
    PairwiseParts,
    Polynomial,
    _numba,
    make_pool,
    parse_spec,
)
from omkl_dist.kernels.gram import _PARALLEL_MIN_WORK

import naive_kernels as naive

RTOL, ATOL = 1e-10, 1e-12
EPS = np.finfo(np.float64).eps
# Documented bound of the gemm squared distance, with margin: |ΔD²| ≤ 8·eps·(‖a‖² + ‖b‖²).
SQDIST_C = 8.0

ALL_KINDS = "linear;poly:1,2,3;gaussian:2^-3..2^2;laplacian:0.5,2;chi2:0.5,2;achi2"


# ----------------------------------------------------------------------------- helpers
def sklearn_kernel(spec: KernelSpec, A, B) -> np.ndarray:
    """The same kernel through sklearn.metrics.pairwise_kernels (B is None → Gram matrix)."""
    if spec.kind == "linear":
        return pairwise_kernels(A, B, metric="linear")
    if spec.kind == "polynomial":
        return pairwise_kernels(A, B, metric="poly", gamma=1.0, coef0=0.0, degree=spec.p)
    if spec.kind == "gaussian":
        return pairwise_kernels(A, B, metric="rbf", gamma=1.0 / (2.0 * spec.sigma**2))
    if spec.kind == "laplacian":
        return pairwise_kernels(A, B, metric="laplacian", gamma=1.0 / spec.sigma)
    if spec.kind == "chi2":
        return pairwise_kernels(A, B, metric="chi2", gamma=spec.gamma)
    if spec.kind == "achi2":  # 2xy/(x+y) = ((x+y) - (x-y)²/(x+y))/2; sklearn's is -(x-y)²/(x+y)
        Bs = A if B is None else B
        return (A.sum(1)[:, None] + Bs.sum(1)[None, :] + pairwise_kernels(A, B, metric="additive_chi2")) / 2
    raise AssertionError(spec)


def gemm_slack(spec: KernelSpec, A, B) -> np.ndarray | float:
    """Extra absolute error a gaussian may carry from the gemm squared distance.

    |e^-u − e^-v| ≤ |u − v| for u, v ≥ 0, and u − v = ΔD²/(2σ²) with the documented ΔD² bound.
    """
    if spec.kind != "gaussian":
        return 0.0
    B = A if B is None else B
    norms = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :]
    return SQDIST_C * EPS * norms / (2.0 * spec.sigma**2)


def assert_kernel_close(got, want, slack=0.0, rtol=RTOL, atol=ATOL):
    bound = atol + rtol * np.abs(want) + slack
    err = np.abs(got - want)
    bound = np.broadcast_to(bound, err.shape)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert (err <= bound).all(), f"at {worst}: got {got[worst]!r}, want {want[worst]!r}, allowed error {bound[worst]!r}"


def rng(seed=0):
    return np.random.default_rng(seed)


@pytest.fixture(scope="module")
def fourclass(data_dir):
    X, _ = load_svmlight_file(str(data_dir / "fourclass" / "fourclass_scale.gz"))
    return X.toarray()


@pytest.fixture(scope="module")
def australian(data_dir):
    X, _ = load_svmlight_file(str(data_dir / "australian" / "australian.libsvm.gz"))
    return X.toarray()


# ----------------------------------------------------------------------------- specs
def test_spec_names():
    assert Linear().name == "linear"
    assert Polynomial(p=2).name == "polynomial(p=2)"
    assert Gaussian(sigma=0.25).name == "gaussian(sigma=0.25)"
    assert Gaussian(sigma=2**-6).name == "gaussian(sigma=0.015625)"
    assert Gaussian(sigma=128).name == "gaussian(sigma=128)"
    assert Laplacian(sigma=1).name == "laplacian(sigma=1)"
    assert ChiSquare(gamma=0.5).name == "chi2(gamma=0.5)"
    assert str(Gaussian(0.1)) == "gaussian(sigma=0.1)"


@pytest.mark.parametrize(
    "make, param",
    [
        (lambda: Gaussian(0), "sigma"),
        (lambda: Gaussian(-1.0), "sigma"),
        (lambda: Gaussian(float("nan")), "sigma"),
        (lambda: Gaussian(float("inf")), "sigma"),
        (lambda: Gaussian(True), "sigma"),
        (lambda: Gaussian("1"), "sigma"),
        (lambda: Laplacian(-2), "sigma"),
        (lambda: ChiSquare(0), "gamma"),
        (lambda: Polynomial(0), "p"),
        (lambda: Polynomial(-1), "p"),
        (lambda: Polynomial(2.5), "p"),
        (lambda: Polynomial(True), "p"),
    ],
)
def test_spec_validation_messages(make, param):
    with pytest.raises(ValueError) as info:
        make()
    msg = str(info.value)
    assert f"{param} must be" in msg and "got" in msg
    assert ("> 0" in msg) or ("positive integer" in msg)


def test_spec_values_are_normalised():
    assert Gaussian(1) == Gaussian(1.0) and hash(Gaussian(1)) == hash(Gaussian(1.0))
    assert isinstance(Gaussian(np.float32(0.5)).sigma, float)
    p = Polynomial(np.int64(3)).p
    assert p == 3 and type(p) is int
    assert Polynomial(2.0) == Polynomial(2)
    assert Gaussian(1.0) != Laplacian(1.0)
    with pytest.raises(AttributeError):
        Gaussian(1.0).sigma = 2.0  # frozen


@pytest.mark.parametrize(
    "spec",
    [Linear(), Polynomial(3), Gaussian(2**-6), Gaussian(0.1), Laplacian(3.5), ChiSquare(1e-3)],
)
def test_parse_spec_round_trip(spec):
    assert parse_spec(spec.name) == spec


def test_parse_spec_forms():
    assert parse_spec("rbf(2^-3)") == Gaussian(0.125)
    assert parse_spec("poly(p=2)") == Polynomial(2)
    assert parse_spec(" Gaussian ( sigma = 1e-2 ) ") == Gaussian(0.01)
    assert parse_spec("linear()") == Linear()
    assert parse_spec("chi-square(gamma=2)") == ChiSquare(2.0)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("gaussian(p=1)", "no parameter 'p'"),
        ("gausian(sigma=1)", "did you mean 'gaussian'"),
        ("linear(1)", "takes no parameter"),
        ("gaussian()", "needs its parameter sigma"),
        ("gaussian(sigma=abc)", "cannot read 'abc'"),
        ("gaussian(sigma=1, 2)", "single parameter"),
    ],
)
def test_parse_spec_errors(text, needle):
    with pytest.raises(ValueError) as info:
        parse_spec(text)
    assert needle in str(info.value)


# ----------------------------------------------------------------------------- pools: names
def test_named_pools():
    omkc = make_pool("omkc16")
    assert len(omkc) == 16
    assert omkc.names[:3] == ("polynomial(p=1)", "polynomial(p=2)", "polynomial(p=3)")
    assert [s.sigma for s in omkc[3:]] == [2.0**e for e in range(-6, 7)]
    mkb = make_pool("MKBoost17")
    assert len(mkb) == 17
    assert [s.sigma for s in mkb[:14]] == [2.0**e for e in range(-6, 8)]
    assert mkb.names[14:] == ("polynomial(p=1)", "polynomial(p=2)", "polynomial(p=3)")
    assert set(NAMED_POOLS) == {"omkc16", "mkboost17"}


def test_spec_strings():
    assert make_pool("poly:1,2,3;gaussian:2^-6..2^6") == make_pool("omkc16")
    pool = make_pool("gaussian:0.5,1,2;linear;laplacian:1;chi2:1")
    assert pool.names == (
        "gaussian(sigma=0.5)",
        "gaussian(sigma=1)",
        "gaussian(sigma=2)",
        "linear",
        "laplacian(sigma=1)",
        "chi2(gamma=1)",
    )
    assert make_pool("gaussian:2^2..2^0").names == (
        "gaussian(sigma=4)",
        "gaussian(sigma=2)",
        "gaussian(sigma=1)",
    )
    assert make_pool("poly:1..3") == make_pool("polynomial:1,2,3")
    assert make_pool(" RBF : 0.25 , 2^-1.. 2^0 ;").names == (
        "gaussian(sigma=0.25)",
        "gaussian(sigma=0.5)",
        "gaussian(sigma=1)",
    )
    assert len(make_pool("omkc16;laplacian:1")) == 17


def test_make_pool_inputs():
    pool = make_pool(["gaussian(sigma=0.5)", Polynomial(2), "laplacian:1,2"])
    assert pool.names == (
        "gaussian(sigma=0.5)",
        "polynomial(p=2)",
        "laplacian(sigma=1)",
        "laplacian(sigma=2)",
    )
    assert make_pool(pool) is pool
    assert make_pool(Gaussian(1.0)) == KernelPool([Gaussian(1.0)])
    assert KernelPool.from_spec("linear") == KernelPool([Linear()])


@pytest.mark.parametrize(
    "spec, needles",
    [
        (
            "gausian:1",
            ["unknown kernel name 'gausian'", "did you mean 'gaussian'", "linear", "omkc16"],
        ),
        ("omkc61", ["did you mean 'omkc16'", "mkboost17"]),
        ("", ["empty kernel pool"]),
        (" ; ", ["empty kernel pool"]),
        ("gaussian:1,1", ["appears twice", "positions 0 and 1"]),
        ("omkc16;mkboost17", ["appears twice"]),
        ("linear:1", ["takes no parameter"]),
        ("gaussian", ["needs its parameter sigma"]),
        ("gaussian:2^1..8", ["cannot read range", "2^-6..2^6"]),
        ("gaussian:abc", ["cannot read 'abc'"]),
        ("gaussian:1,,2", ["empty value"]),
        ("gaussian:-1", ["sigma must be"]),
        ("poly:1.5", ["positive integer"]),
        ("gaussian:2^0..2^2000", ["2001 kernels"]),
    ],
)
def test_make_pool_errors(spec, needles):
    with pytest.raises(ValueError) as info:
        make_pool(spec)
    for needle in needles:
        assert needle in str(info.value)


def test_make_pool_type_errors():
    with pytest.raises(TypeError, match="make_pool takes"):
        make_pool(3)
    with pytest.raises(TypeError, match="pool elements"):
        make_pool([Gaussian(1.0), 2.0])
    with pytest.raises(TypeError, match="use make_pool"):
        KernelPool(["gaussian:1"])
    with pytest.raises(TypeError, match="base class"):
        KernelSpec()


@pytest.mark.parametrize(
    "spec",
    [
        "omkc16",
        "mkboost17",
        ALL_KINDS,
        "gaussian:1,2,8,16,32;laplacian:0.1,3;gaussian:0.5",
        "chi2:2^3..2^-3",
    ],
)
def test_spec_string_round_trip(spec):
    pool = make_pool(spec)
    text = pool.to_spec_string()
    assert make_pool(text) == pool
    assert eval(repr(pool), {"KernelPool": KernelPool}) == pool


def test_spec_string_is_compact():
    assert make_pool("omkc16").to_spec_string() == "polynomial:1,2,3;gaussian:2^-6..2^6"
    assert make_pool("mkboost17").to_spec_string() == "gaussian:2^-6..2^7;polynomial:1,2,3"
    assert make_pool("gaussian:1,2,8,16,32").to_spec_string() == "gaussian:1,2,2^3..2^5"


def test_pool_is_an_immutable_sequence():
    pool = make_pool(ALL_KINDS)
    assert len(pool) == 15
    assert pool[0] == Linear() and pool[-2] == ChiSquare(2.0)
    assert isinstance(pool[1:4], KernelPool) and pool[1:4].names == pool.names[1:4]
    assert list(pool) == list(pool.specs)
    assert Gaussian(0.125) in pool and pool.index(Gaussian(0.125)) == 4
    assert pool == make_pool(ALL_KINDS) and hash(pool) == hash(make_pool(ALL_KINDS))
    assert pool != make_pool("linear") and pool != ALL_KINDS
    assert pool.needs == {"dot", "sqdist", "l1", "chi2", "achi2"}
    assert make_pool("omkc16").needs == {"dot", "sqdist"}
    with pytest.raises(AttributeError):
        pool._specs = ()


def test_pool_pickles():
    pool = make_pool(ALL_KINDS)
    back = pickle.loads(pickle.dumps(pool))
    assert back == pool and back.names == pool.names
    X = rng().uniform(0, 1, size=(6, 3))
    np.testing.assert_array_equal(back.evaluate(X), pool.evaluate(X))
    assert pickle.loads(pickle.dumps(Gaussian(0.5))) == Gaussian(0.5)


# ----------------------------------------------------------------------------- values
@pytest.mark.parametrize("same", [False, True])
def test_all_kinds_match_naive_and_sklearn_random(same):
    g = rng(1)
    A = g.uniform(0, 1, size=(23, 5))  # non-negative so chi2 is defined
    B = None if same else g.uniform(0, 1, size=(17, 5))
    pool = make_pool(ALL_KINDS)
    K = pool.evaluate(A, B)
    Bref = A if same else B
    assert K.shape == (len(pool), 23, Bref.shape[0]) and K.dtype == np.float64
    for k, spec in enumerate(pool):
        slack = gemm_slack(spec, A, Bref)
        assert_kernel_close(K[k], naive.naive_kernel(spec, A, Bref), slack)
        assert_kernel_close(K[k], sklearn_kernel(spec, A, B), 2 * slack)


def test_signed_data_matches_sklearn():
    g = rng(2)
    A, B = g.normal(size=(40, 9)), g.normal(size=(31, 9))
    pool = make_pool("linear;poly:1..4;gaussian:2^-1..2^3;laplacian:2^0..2^4")
    K = pool.evaluate(A, B)
    for k, spec in enumerate(pool):
        assert_kernel_close(K[k], sklearn_kernel(spec, A, B), 2 * gemm_slack(spec, A, B))


def test_fourclass_rows(fourclass):
    A, B = fourclass[:60], fourclass[400:440]
    pos = (fourclass + 1.0) / 2.0  # chi2 needs non-negative features
    pool = make_pool("omkc16;laplacian:2^-4..2^2")
    K = pool.evaluate(A, B)
    for k, spec in enumerate(pool):
        slack = gemm_slack(spec, A, B)
        assert_kernel_close(K[k], naive.naive_kernel(spec, A, B), slack)
        assert_kernel_close(K[k], sklearn_kernel(spec, A, B), 2 * slack)
    chi = make_pool("chi2:2^-2..2^2")
    Kc = chi.evaluate(pos[:60], pos[400:440])
    for k, spec in enumerate(chi):
        assert_kernel_close(Kc[k], naive.naive_kernel(spec, pos[:60], pos[400:440]))
        assert_kernel_close(Kc[k], sklearn_kernel(spec, pos[:60], pos[400:440]))


def test_australian_rows(australian):
    # Raw features (up to 1e5): the gemm slack matters here, which is the point of the test.
    scaled = (australian - australian.min(0)) / np.ptp(australian, axis=0)
    pool = make_pool("mkboost17;laplacian:1,4;chi2:2^-4,1")
    for X in (australian, scaled):
        A, B = X[:50], X[300:335]
        K = pool.evaluate(A, B)
        G = pool.evaluate(A)
        for k, spec in enumerate(pool):
            slack = gemm_slack(spec, A, B)
            assert_kernel_close(K[k], naive.naive_kernel(spec, A, B), slack)
            assert_kernel_close(K[k], sklearn_kernel(spec, A, B), 2 * slack)
            assert_kernel_close(G[k], sklearn_kernel(spec, A, None), 2 * gemm_slack(spec, A, A))
    # Real row values reach 1e5, so the polynomials are large: relative agreement still holds.
    assert make_pool("poly:3").evaluate(australian[:5]).max() > 1e18


def test_gemm_sqdist_bound_and_direct_path():
    """The documented accuracy: gemm error ≤ 8·eps·(‖a‖²+‖b‖²); direct is relatively exact."""
    g = rng(3)
    A = g.uniform(-1, 1, size=(30, 12)) * np.array([1e5] + [1.0] * 11)
    B = A + 1e-7 * g.normal(size=A.shape)  # near-duplicates: worst case for the gemm formula
    exact = naive._pairwise(A, B, naive.sqdist)
    pool = make_pool("gaussian:2^-6")
    gemm = pool.products(A, B).sqdist
    direct = pool.products(A, B, sqdist="direct").sqdist
    norms = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :]
    assert (np.abs(gemm - exact) <= SQDIST_C * EPS * norms).all()
    assert (np.abs(direct - exact) <= 8 * EPS * exact).all()
    assert (np.abs(gemm - exact) > 1e-3 * exact).any()  # the bound is not vacuous here
    assert_kernel_close(pool.evaluate(A, B, sqdist="direct")[0], naive.gaussian(A, B, 2**-6), rtol=1e-13)


def test_gram_matrix_is_symmetric_with_exact_diagonal(fourclass):
    X = fourclass[:80]
    pool = make_pool(ALL_KINDS.replace(";chi2:0.5,2;achi2", ""))
    K = pool.evaluate(X)
    np.testing.assert_array_equal(K, K.transpose(0, 2, 1))
    diag = pool.evaluate_diag(X)
    np.testing.assert_array_equal(np.diagonal(K, axis1=1, axis2=2)[4:], diag[4:])  # exp kernels: 1
    assert_kernel_close(np.diagonal(K, axis1=1, axis2=2), diag, rtol=1e-14)


def test_evaluate_equals_per_kernel_evaluation():
    g = rng(4)
    A, B = g.uniform(0, 2, size=(9, 4)), g.uniform(0, 2, size=(7, 4))
    pool = make_pool(ALL_KINDS)
    K = pool.evaluate(A, B)
    for k, spec in enumerate(pool):
        np.testing.assert_array_equal(K[k], spec.evaluate(A, B))


def test_parallel_and_serial_builds_agree():
    g = rng(5)
    A, B = g.uniform(0, 1, size=(300, 8)), g.uniform(0, 1, size=(120, 8))
    assert A.shape[0] * B.shape[0] >= _PARALLEL_MIN_WORK  # the whole block takes the parallel builds
    D, dot = np.empty((300, 120)), A @ B.T
    sq_a, sq_b = (A * A).sum(1), (B * B).sum(1)
    scales, slots = np.array([0.5, 2.0]), np.array([1, 0])
    degrees = np.array([1, 3])
    calls = {
        "_sqdist_from_dot": lambda f: f(dot, sq_a, sq_b, D.copy()),
        "_sqdist_direct": lambda f: f(A, B, D.copy()),
        "_l1_dist": lambda f: f(A, B, D.copy()),
        "_chi2_sum": lambda f: f(A, B, D.copy()),
        "_achi2_sum": lambda f: f(A, B, D.copy()),
        "_exp_neg_scaled": lambda f: f(dot, scales, slots, np.empty((2, 300, 120))),
        "_powers_from_dot": lambda f: f(dot, degrees, slots, np.empty((2, 300, 120))),
    }
    assert set(calls) == set(_numba.SERIAL)
    for name, call in calls.items():
        np.testing.assert_array_equal(call(getattr(_numba, name)), call(_numba.SERIAL[name]), err_msg=name)
    # Through the pool: one row takes the serial builds; distance-based kernels agree bit for bit
    # (dot-based ones may not, as BLAS sums a 1-row product in another order).
    pool = make_pool("gaussian:2^-2..2^1;laplacian:0.5,2;chi2:0.5,2")
    K = pool.evaluate(A, B, sqdist="direct")
    rows = np.concatenate([pool.evaluate(A[i : i + 1], B, sqdist="direct") for i in range(3)], axis=1)
    np.testing.assert_array_equal(K[:, :3], rows)


# ----------------------------------------------------------------------------- diag
def test_diag():
    X = np.array([[1.0, 2.0], [0.0, 0.0], [-3.0, 0.5]])
    sq = (X * X).sum(1)
    np.testing.assert_array_equal(Linear().diag(X), sq)
    np.testing.assert_allclose(Polynomial(3).diag(X), sq**3, rtol=1e-15)
    for spec in (Gaussian(0.1), Laplacian(2.0)):
        np.testing.assert_array_equal(spec.diag(X), np.ones(3))
    pool = make_pool("poly:2;gaussian:1;linear;laplacian:1")
    D = pool.evaluate_diag(X)
    assert D.shape == (4, 3)
    for k, spec in enumerate(pool):
        np.testing.assert_array_equal(D[k], spec.diag(X))
    out = np.empty((4, 3))
    assert pool.evaluate_diag(X, out=out) is out


def test_chi2_rules():
    # Terms with x + y = 0 contribute 0: only the second feature counts here.
    K = ChiSquare(2.0).evaluate(np.array([[0.0, 1.0]]), np.array([[0.0, 0.0]]))
    assert K[0, 0] == pytest.approx(math.exp(-2.0))
    np.testing.assert_array_equal(ChiSquare(1.0).diag(np.zeros((2, 3))), [1.0, 1.0])
    bad = np.array([[0.5, -0.25]])
    for call in (
        lambda: ChiSquare(1.0).evaluate(bad),
        lambda: make_pool("gaussian:1;chi2:0.5").evaluate(np.ones((1, 2)), bad),
        lambda: ChiSquare(1.0).diag(bad),
    ):
        with pytest.raises(ValueError) as info:
            call()
        msg = str(info.value)
        assert "chi2(gamma=" in msg and "non-negative" in msg and "MinMaxScaler" in msg
    # Negative values are fine for a pool without chi2.
    make_pool("gaussian:1").evaluate(bad)


# ----------------------------------------------------------------------------- low-level API
def test_from_products_matches_evaluate():
    g = rng(6)
    A, B = g.uniform(-1, 1, size=(12, 6)), g.uniform(-1, 1, size=(10, 6))
    pool = make_pool("omkc16")
    K = pool.from_products(A @ B.T, (A * A).sum(1), (B * B).sum(1))
    np.testing.assert_allclose(K, pool.evaluate(A, B), rtol=1e-12, atol=1e-14)
    # One point against a support set, as an online learner calls it.
    x = A[:1]
    k1 = pool.from_products(x @ B.T, (x * x).sum(1), (B * B).sum(1))
    np.testing.assert_allclose(k1[:, 0], K[:, 0], rtol=1e-12, atol=1e-14)
    # A dot-only pool ignores the norms.
    np.testing.assert_array_equal(make_pool("linear").from_products(A @ B.T, None, None)[0], A @ B.T)


def test_from_parts_reuses_products():
    g = rng(7)
    A, B = g.uniform(0, 1, size=(8, 3)), g.uniform(0, 1, size=(5, 3))
    pool = make_pool(ALL_KINDS)
    parts = pool.products(A, B)
    assert isinstance(parts, PairwiseParts) and parts.dot.shape == (8, 5)
    np.testing.assert_array_equal(pool.from_parts(parts), pool.evaluate(A, B))
    sub = make_pool("gaussian:2^-3..2^2")  # a different pool can reuse the same parts
    np.testing.assert_array_equal(sub.from_parts(parts), sub.evaluate(A, B))
    out = np.zeros((len(pool), 8, 5))
    assert pool.from_parts(parts, out=out) is out
    np.testing.assert_array_equal(out, pool.evaluate(A, B))


@pytest.mark.parametrize(
    "call, exc, needle",
    [
        (
            lambda p: p.from_products(np.ones((2, 2)), np.ones(2), np.ones(2)),
            ValueError,
            "laplacian(sigma=1)",
        ),
        (
            lambda p: p.from_parts(PairwiseParts(dot=np.ones((2, 2)))),
            ValueError,
            "parts.sqdist is missing",
        ),
        (
            lambda p: p.from_parts(PairwiseParts(dot=np.ones((2, 2)), sqdist=np.ones((2, 3)), l1=np.ones((2, 2)))),
            ValueError,
            "expected a 2-D",
        ),
        (lambda p: p.evaluate(np.ones((2, 2)), out=np.empty((4, 2, 2))), ValueError, "out must be"),
        (
            lambda p: p.evaluate(np.ones((2, 2)), out=np.empty((3, 2, 2), dtype=np.float32)),
            ValueError,
            "float64",
        ),
        (
            lambda p: p.evaluate(np.ones((2, 2)), out=np.empty((3, 2, 4))[:, :, ::2]),
            ValueError,
            "C-contiguous",
        ),
        (lambda p: p.evaluate(np.ones(3)), ValueError, "reshape(1, -1)"),
        (
            lambda p: p.evaluate(np.ones((2, 3)), np.ones((2, 4))),
            ValueError,
            "same number of features",
        ),
        (lambda p: p.evaluate(np.array([[1.0, np.nan]])), ValueError, "NaN"),
        (lambda p: p.evaluate(scipy.sparse.csr_matrix(np.eye(2))), TypeError, ".toarray()"),
        (lambda p: p.evaluate(np.ones((2, 2)), sqdist="exact"), ValueError, "'gemm' or 'direct'"),
    ],
)
def test_low_level_errors(call, exc, needle):
    pool = make_pool("linear;gaussian:1;laplacian:1")
    with pytest.raises(exc) as info:
        call(pool)
    assert needle in str(info.value)


def test_out_is_filled_in_place():
    X = rng(8).uniform(size=(4, 2))
    pool = make_pool("omkc16")
    out = np.full((16, 4, 3), np.nan)
    assert pool.evaluate(X, X[:3], out=out) is out
    np.testing.assert_array_equal(out, pool.evaluate(X, X[:3]))


def test_empty_blocks():
    pool = make_pool(ALL_KINDS)
    assert pool.evaluate(np.empty((0, 3)), np.ones((2, 3))).shape == (15, 0, 2)
    assert pool.evaluate_diag(np.empty((0, 3))).shape == (15, 0)


# ----------------------------------------------------------------------------- properties
bounded = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)
blocks = st.integers(1, 6).flatmap(
    lambda d: st.tuples(
        hnp.arrays(np.float64, st.tuples(st.integers(1, 7), st.just(d)), elements=bounded),
        hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.just(d)), elements=bounded),
    )
)
widths = st.lists(st.integers(-6, 4), min_size=1, max_size=5, unique=True).map(
    lambda es: make_pool([Gaussian(2.0**e) for e in es])
)


@settings(max_examples=40, deadline=None)
@given(blocks, widths)
def test_property_gaussian_pool(ab, pool):
    A, B = ab
    K = pool.evaluate(A, B)
    assert ((K >= 0.0) & (K <= 1.0)).all()
    G = pool.evaluate(A)
    np.testing.assert_array_equal(G, G.transpose(0, 2, 1))
    np.testing.assert_array_equal(np.diagonal(G, axis1=1, axis2=2), 1.0)
    for k, spec in enumerate(pool):
        np.testing.assert_array_equal(K[k], spec.evaluate(A, B))
        assert_kernel_close(K[k], naive.naive_kernel(spec, A, B), gemm_slack(spec, A, B))


spec_strategy = st.one_of(
    st.just(Linear()),
    st.integers(1, 6).map(Polynomial),
    st.floats(1e-3, 1e3).map(Gaussian),
    st.integers(-8, 8).map(lambda e: Gaussian(2.0**e)),
    st.floats(1e-3, 1e3).map(Laplacian),
    st.integers(-8, 8).map(lambda e: ChiSquare(2.0**e)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(spec_strategy, min_size=1, max_size=10, unique=True))
def test_property_spec_string_round_trip(specs):
    pool = KernelPool(specs)
    assert make_pool(pool.to_spec_string()) == pool
    assert make_pool(list(pool.names)) == pool
    assert pickle.loads(pickle.dumps(pool)) == pool


def test_docstring_examples_run():
    import doctest

    import omkl_dist.kernels as package
    from omkl_dist.kernels import gram, pool_text, pools, specs

    for module in (package, specs, gram, pool_text, pools):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_concurrent_threads_agree():
    """Dask's threaded workers call evaluate from several threads at once (nogil loops)."""
    from concurrent.futures import ThreadPoolExecutor

    g = rng(9)
    A, B = g.uniform(0, 1, size=(200, 6)), g.uniform(0, 1, size=(150, 6))
    pool = make_pool(ALL_KINDS)
    want = pool.evaluate(A, B)
    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(lambda _: pool.evaluate(A, B), range(8)))
    for got in results:
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- feature groups
VIEWS = "linear,poly:2,chi2,achi2,gaussian:2^-1..2^1 @ a=0:3; laplacian:1,poly:3 @ b=2,4:6; gaussian:1"


@pytest.mark.parametrize("same", [False, True])
def test_feature_group_kernels_match_naive_on_their_columns(same):
    g = rng(11)
    A = g.uniform(0, 1, size=(12, 7))
    B = None if same else g.uniform(0, 1, size=(9, 7))
    pool = make_pool(VIEWS)
    K = pool.evaluate(A, B)
    Bref = A if same else B
    for k, spec in enumerate(pool):
        assert_kernel_close(K[k], naive.naive_kernel(spec, A, Bref), gemm_slack(spec, A, Bref))
    np.testing.assert_allclose(
        pool.evaluate_diag(A), np.stack([np.diag(naive.naive_kernel(s, A, A)) for s in pool]), rtol=1e-13, atol=1e-13
    )


def test_feature_group_parts_serve_sub_pools():
    g = rng(12)
    A, B = g.uniform(0, 1, size=(8, 6)), g.uniform(0, 1, size=(5, 6))
    pool = make_pool(VIEWS)
    parts = pool.products(A, B)
    assert set(parts.views) == {(0, 1, 2), (2, 4, 5)}
    for k, spec in enumerate(pool):
        np.testing.assert_array_equal(KernelPool((spec,)).from_parts(parts)[0], pool.evaluate(A, B)[k])


def test_feature_group_names_and_resolution():
    pool = make_pool("chi2,linear @ hist; gaussian:2^0 @ 1:3")
    assert pool.names == ("chi2(gamma=1)@hist", "linear@hist", "gaussian(sigma=1)@1:3")
    assert pool.groups == {"hist": None}
    with pytest.raises(ValueError, match="feature group 'hist'.*feature_groups"):
        pool.evaluate(np.ones((2, 4)))
    with pytest.raises(ValueError, match="not among the data's feature groups"):
        pool.with_groups({"other": [0]})
    resolved = pool.with_groups({"hist": [0, 1]})
    assert resolved.to_spec_string() == "chi2:1@hist=0:2;linear@hist=0:2;gaussian:1@1:3"
    assert make_pool(resolved.to_spec_string()) == resolved
    assert parse_spec("linear@hist=0:2") == resolved[1]
    with pytest.raises(ValueError, match="sees column 5, but X has 4"):
        make_pool("linear@5").evaluate(np.ones((2, 4)))
    with pytest.raises(ValueError, match="empty"):
        make_pool("linear@3:3")
    with pytest.raises(ValueError, match="needs non-negative features"):
        make_pool("achi2@0:2").evaluate(-np.ones((2, 3)))
    from omkl_dist.scoring.program import compile_program

    assert compile_program(make_pool("linear@0:2")).direct  # the online scan sums it over its columns
    with pytest.raises(ValueError, match="feature group 'hist', whose columns are not known"):
        compile_program(make_pool("linear@hist"))


def test_a_kernel_beside_its_normalised_twin():
    """``poly:2;poly:2+norm`` is a valid pool: its diagonal once built the pool of the raw kernels, which
    held polynomial(p=2) twice and was refused."""
    X = rng(3).uniform(-1, 1, size=(4, 3))
    pool = make_pool("poly:2;poly:2+norm")
    np.testing.assert_allclose(pool.evaluate_diag(X), [np.einsum("ij,ij->i", X, X) ** 2, np.ones(4)], rtol=1e-15)
    np.testing.assert_allclose(np.diagonal(pool.evaluate(X), axis1=1, axis2=2), pool.evaluate_diag(X), rtol=1e-14)
