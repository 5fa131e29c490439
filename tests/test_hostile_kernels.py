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

from omkl_dist.algorithms import OKS, OM2, OMKC, SPA
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
@pytest.mark.parametrize("view", ["50:51", "0:1000", "3,4", "33554431"])
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


@pytest.mark.parametrize(
    "view, needle",
    [("0:1000", "sees column 999, but the data has 5 columns"), ("200000000:200000001", "column 200000000 is beyond")],
)
def test_the_command_line_refuses_a_view_beyond_the_columns(syn, tmp_path, view, needle):
    code, output = run_cli(
        "run", "omkc", "--quiet", "--data", str(syn), "--kernels", f"linear @ {view}",
        "--trace-out", str(tmp_path / "t.json"),
    )  # fmt: skip
    assert code == 2 and "error:" in output and needle in output, output


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


# ------------------------------------------------------------------ class 3: kernel parameters
@pytest.mark.parametrize(
    "spec, needle",
    [
        ("gaussian:1e-320", "sigma must be"),  # subnormal: 1/(2 sigma^2) overflows
        ("gaussian:1e-200", "sigma must be"),  # 2 sigma^2 underflows to 0
        ("gaussian:1e200", "sigma must be"),  # sigma^2 overflows (ERANGE)
        ("gaussian:2^2000", "2^2000"),  # beyond the float range
        ("gaussian:2^-5000", "2^-5000"),
        ("gaussian:2^1000..2^1100", "2^1000..2^1100"),
        ("gaussian:nan", "sigma must be"),
        ("gaussian:inf", "sigma must be"),
        ("laplacian:1e-320", "sigma must be"),
        ("chi2:1e308", "gamma must be"),
        ("chi2:0", "gamma must be"),
        ("poly:1000000000", "p must be"),
        ("poly:2^70", "p must be"),
        ("poly:999999999999999999..999999999999999999", "p must be"),
        ("polynomial(p=1e300)", "p must be"),
        ("rbf(2^-99999999999999999999)", "2^-99999999999999999999"),
    ],
)
def test_kernel_parameters_out_of_range_are_refused_at_parse_time(spec, needle):
    from omkl_dist.kernels import make_pool

    with pytest.raises(ValueError) as info:
        make_pool(spec)
    assert needle in str(info.value)


def test_the_parameter_bounds_are_inclusive():
    from omkl_dist.kernels import Gaussian, Laplacian, Polynomial, make_pool
    from omkl_dist.kernels.specs import MAX_DEGREE, MAX_SCALE, MIN_SCALE

    assert make_pool(f"gaussian:2^-64,2^64;poly:{MAX_DEGREE}") == make_pool(
        [Gaussian(MIN_SCALE), Gaussian(MAX_SCALE), Polynomial(MAX_DEGREE)]
    )
    for bad in (lambda: Gaussian(MIN_SCALE / 2), lambda: Laplacian(MAX_SCALE * 2), lambda: Polynomial(MAX_DEGREE + 1)):
        with pytest.raises(ValueError, match="must be"):
            bad()


# ------------------------------------------------------------------ class 2: unbounded work
@pytest.mark.parametrize(
    "spec, needle",
    [
        ("gaussian:2^-500000..2^500000", "1000001 kernels"),
        ("gaussian:" + ",".join(str(v) for v in range(1, 3000)), "at most 1024"),
        (";".join(f"gaussian:{v}" for v in range(1, 1100)), "at most 1024"),
        ("linear @ 0:300000000", "column"),
        ("linear @ 99999999999999999999999", "column"),
    ],
)
def test_huge_kernel_counts_and_views_are_refused_before_building_them(spec, needle):
    import tracemalloc

    from omkl_dist.kernels import make_pool

    tracemalloc.start()
    with pytest.raises(ValueError) as info:
        make_pool(spec)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert needle in str(info.value)
    assert peak < 64 * 2**20


def test_a_pool_of_too_many_spec_objects_is_refused():
    from omkl_dist.kernels import Gaussian, KernelPool

    with pytest.raises(ValueError, match="at most 1024"):
        KernelPool(Gaussian(1.0 + i / 4096) for i in range(1025))
    with pytest.raises(ValueError, match="column"):
        Gaussian(1.0, columns=range(10**12))


def test_an_empty_kernel_spec_on_the_command_line_is_an_error(syn, tmp_path):
    for option in ("--kernels", "--kernel"):
        algo = "perceptron" if option == "--kernel" else "omkc"
        code, output = run_cli(
            "run", algo, "--quiet", "--data", str(syn), option, " ", "--trace-out", str(tmp_path / "t.json")
        )
        assert code == 2 and "empty" in output and option in output, output


# ------------------------------------------------------------------ class 4: classes re-declared
@pytest.mark.parametrize("cls", [OMKC, OKS])
def test_partial_fit_refuses_classes_that_differ_from_the_first_call(cls):
    model = cls(kernels="linear").partial_fit(X4[:20], Y4[:20], classes=[-1, 1])
    with pytest.raises(ValueError, match="classes differs from the previous call"):
        model.partial_fit(X4[20:], Y4[20:], classes=[-1, 1, 2])
    model.partial_fit(X4[20:], Y4[20:], classes=[1, -1])  # the same classes, in any order
    assert model.n_samples_seen_ == 40


# ------------------------------------------------------------------ class 2: wide data
def _wide_libsvm(path, top=100_000_000):
    rows = [f"{1 if i % 2 else -1} {1 + i % 7}:0.5 {top - i}:1.0" for i in range(20)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_wide_sparse_dataset_runs_unscaled_in_memory_proportional_to_its_non_zeros(tmp_path):
    import tracemalloc

    from omkl_dist.storage import ingest

    ingest(_wide_libsvm(tmp_path / "wide.svm"), tmp_path / "wide")
    wide, trace = str(tmp_path / "wide"), str(tmp_path / "t")
    run = ("run", "omkc", "--quiet", "--overwrite", "--data", wide, "--trace-out", trace)
    tracemalloc.start()
    code, output = run_cli(*run, "--kernels", "linear,gaussian:1")  # sparse rows: unscaled by default
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert code == 0, output
    assert peak < 256 * 2**20  # 100,000,000 columns of per-column statistics took > 4 GiB
    code, output = run_cli(*run, "--scaling", "minmax")
    assert (
        code == 2 and "100,000,000 feature columns, more than the 33,554,432" in output and "--scaling none" in output
    )


def test_a_scaler_refuses_too_many_columns_before_allocating_and_the_estimators_do_not_care():
    import tracemalloc

    import scipy.sparse as sp

    from omkl_dist.preprocessing import Scaler

    X = sp.csr_matrix((np.ones(2), np.array([0, 5]), np.array([0, 1, 2])), shape=(2, 10**8))
    tracemalloc.start()
    for method in ("standard", "minmax"):
        with pytest.raises(ValueError, match="100,000,000 feature columns, more than the 33,554,432"):
            Scaler(method).fit(X)
    Scaler("none").fit(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 * 2**20


# ------------------------------------------------------------------ class 3: finite but huge features
def _huge_rows():
    X = RNG.normal(size=(30, 3))
    X[7, 1] = X[9, 1] = 1.5e308
    return X, np.where(X[:, 0] > 0, 1, -1)


@pytest.mark.parametrize("cls", [OMKC, OKS])
def test_features_too_large_to_square_are_named_not_called_nan(cls):
    X, y = _huge_rows()
    with pytest.raises(ValueError, match=r"too large to square.*row 7.*column 1.*1\.5e\+308.*minmax") as info:
        cls(kernels="gaussian:1").fit(X, y)
    assert "NaN" not in str(info.value)


def test_standard_scaling_of_features_too_large_to_square_says_so():
    from omkl_dist.preprocessing import Scaler

    X, _ = _huge_rows()
    with pytest.raises(ValueError, match=r"column 1 .*too large to standardise.*minmax"):
        Scaler("standard").fit(X)
    scaled = Scaler("minmax").fit_transform(X)  # the fix the message names
    assert np.isfinite(scaled).all() and scaled.max() <= 1.0 + 1e-12


def test_the_command_line_names_features_too_large_to_square(tmp_path):
    X, y = _huge_rows()
    source = tmp_path / "big.csv"
    source.write_text(
        "\n".join(",".join([str(label), *(repr(float(v)) for v in row)]) for label, row in zip(y, X)) + "\n"
    )
    for scaling in ("standard", "none"):
        code, output = run_cli(
            "run", "omkc", "--quiet", "--data", str(source), "--scaling", scaling,
            "--trace-out", str(tmp_path / "t.json"),
        )  # fmt: skip
        assert code == 2 and "too large to" in output and "minmax" in output and "NaN" not in output, output
