"""Generated hostile kernel specs, LIBSVM indices and generator sizes (hypothesis).

Every generated case must end either in a result or in the package's own error -- a ``ValueError``
naming the spec, parameter or size for the parser, the estimators and the generators, a
``DataError`` for a file -- never a numpy or numba traceback, a segfault, minutes of work or a
huge allocation. The counts are printed at the end of the run (conftest.py).
"""

from __future__ import annotations

import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
from bad_input_cases import count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omkl_dist.algorithms import OMKC
from omkl_dist.kernels import make_pool
from omkl_dist.storage import DataError, read_dataset
from omkl_dist.storage.synth import synthesize
from omkl_dist.storage.synth_sparse import write_sparse_libsvm

SETTINGS = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
WIDTH = 4
X = np.random.default_rng(1).normal(size=(24, WIDTH))
Y = np.where(X[:, 0] - X[:, 2] > 0, 1, -1)

# ------------------------------------------------------------------ kernel spec strings
_KIND = st.sampled_from(
    ["linear", "poly", "polynomial", "gaussian", "rbf", "laplacian", "chi2", "achi2", "gausian", ""]
)
_NUMBER = st.one_of(
    st.sampled_from(["1", "0.5", "3", "0", "-1", "1e-320", "1e-200", "1e200", "1e308", "1e400", "nan", "inf", "-inf"]),
    st.integers(-3000, 3000).map(lambda e: f"2^{e}"),
    st.sampled_from(["2^99999999999999999999", "99999999999999999999", "1000000000", "1.5", ""]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
_RANGE = st.one_of(
    st.tuples(st.integers(-2000, 2000), st.integers(-2000, 2000)).map(lambda ab: f"2^{ab[0]}..2^{ab[1]}"),
    st.tuples(st.integers(-10, 10**6), st.integers(-10, 10**6)).map(lambda ab: f"{ab[0]}..{ab[1]}"),
)
_COLUMNS = st.one_of(
    st.integers(0, 2 * WIDTH).map(str),  # inside or just beyond the width
    st.tuples(st.integers(0, 2 * WIDTH), st.integers(0, 2 * WIDTH)).map(lambda ab: f"{ab[0]}:{ab[1]}"),
    st.integers(0, 10**12).map(lambda c: f"{c}:{c + 1}"),  # far beyond, or beyond any data
    st.integers(0, 10**9).map(lambda n: f"0:{n}"),  # huge ranges
    st.sampled_from(["", "fourier", "g=0:2", "0:2,1:3", "-1", "a:b", "3:1"]),
)


@st.composite
def kernel_item(draw):
    kind = draw(_KIND)
    values = draw(st.lists(st.one_of(_NUMBER, _RANGE), max_size=3))
    text = kind + (":" + ",".join(values) if values else "")
    if draw(st.booleans()):
        text = f"{kind}({draw(_NUMBER)})"
    if draw(st.integers(0, 3)) == 0:
        text += "+norm"
    if draw(st.booleans()):
        text += " @ " + draw(_COLUMNS)
    return text


kernel_spec = st.one_of(
    st.lists(kernel_item(), min_size=0, max_size=4).map(";".join),
    st.sampled_from(["", " ", ";", " ; ", "omkc16", "omkc16;;linear", "linear@", "@0:2", "gaussian:" + "1," * 2000]),
)


def _refused_cleanly(call, limit: int = 128 * 2**20) -> None:
    """``call()`` returns, or raises the package's ValueError, within ``limit`` bytes allocated."""
    tracemalloc.start()
    try:
        call()
    except ValueError as exc:
        assert str(exc) and "Traceback" not in str(exc)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < limit


@settings(SETTINGS, max_examples=400)
@given(spec=kernel_spec)
def test_generated_kernel_specs_parse_or_are_refused(spec):
    count("kernel specs")
    _refused_cleanly(lambda: make_pool(spec))


@settings(SETTINGS, max_examples=120)
@given(spec=kernel_spec)
def test_generated_kernel_specs_learn_or_are_refused(spec):
    count("kernel specs")

    def fit_and_predict():
        model = OMKC(kernels=spec, block_size=8).fit(X, Y)
        assert np.isfinite(model.decision_function(X[:3])).all()

    _refused_cleanly(fit_and_predict)


# ------------------------------------------------------------------ index and size fields
_INDEX = st.one_of(
    st.integers(-3, 12),
    st.sampled_from([0, 2**31 - 2, 2**31 - 1, 2**31, 2**63, 10**8, 10**20]),
    st.integers(13, 10**9),
)


@st.composite
def libsvm_text(draw):
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        indices = draw(st.lists(_INDEX, min_size=0, max_size=4))
        tokens = [f"{i}:{draw(st.sampled_from(['1', '0.5', '-2', '1e308', 'x']))}" for i in indices]
        rows.append(" ".join([draw(st.sampled_from(["1", "-1", "+1"])), *tokens]))
    return "\n".join(rows) + "\n"


@settings(SETTINGS, max_examples=150)
@given(text=libsvm_text(), n_features=st.one_of(st.none(), st.integers(1, 12), st.just(10**8)))
def test_generated_libsvm_indices_read_or_are_refused(text, n_features):
    count("index and size fields")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gen.svm"
        path.write_text(text)
        tracemalloc.start()
        try:
            data = read_dataset(path, fmt="libsvm", n_features=n_features)
            width = data.X.shape[1]
            assert data.X.shape[0] >= 1 and width >= 1
            if n_features is not None:
                assert width == n_features
        except DataError as exc:
            assert str(path) in str(exc) and "Fix:" in str(exc)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert peak < 256 * 2**20


_TINY = st.integers(1, 40)
_BAD_ROWS = st.sampled_from([-2, 0, 1.5, True, "10", 10**12, 2**63])  # refused (10**12 rows: over 1 TiB)
_BAD_FEATURES = st.sampled_from([-1, 0, 2.0, False, 2**16 + 1, 10**9, 2**63])


@settings(SETTINGS, max_examples=80)
@given(
    rows=st.one_of(_TINY, _BAD_ROWS),
    features=st.one_of(_TINY, _BAD_FEATURES),
    chunk_rows=st.one_of(st.integers(1, 64), st.sampled_from([0, -1, 10**9])),
)
def test_generated_synth_sizes_write_or_are_refused(rows, features, chunk_rows):
    count("index and size fields")
    # tiny streams (any positive chunk size: a chunk holds at most the stream) are written; any hostile
    # size must be refused
    writable = all(type(v) is int and 1 <= v <= 40 for v in (rows, features)) and chunk_rows >= 1
    with tempfile.TemporaryDirectory() as tmp:
        if writable:
            synthesize(Path(tmp) / "s", rows=rows, features=features, chunk_rows=chunk_rows)
        else:
            _refused_cleanly(lambda: _must_refuse(Path(tmp), rows, features, chunk_rows))


def _must_refuse(tmp: Path, rows, features, chunk_rows) -> None:
    synthesize(tmp / "s", rows=rows, features=features, chunk_rows=chunk_rows)
    raise AssertionError(f"synthesize wrote rows={rows!r}, features={features!r}, chunk_rows={chunk_rows!r}")


@settings(SETTINGS, max_examples=30)
@given(
    features=st.one_of(st.integers(50, 1000), _BAD_FEATURES, st.just(2**25 + 1)),
    density=st.one_of(st.floats(0.0, 1.0), st.sampled_from([-0.5, 2.0, float("nan"), 1e-300])),
)
def test_generated_sparse_synth_sizes_write_or_are_refused(features, density):
    count("index and size fields")
    with tempfile.TemporaryDirectory() as tmp:
        write = lambda: write_sparse_libsvm(Path(tmp) / "w.svm", rows=8, features=features, density=density)  # noqa: E731
        _refused_cleanly(write, limit=384 * 2**20)  # its 8,192-row pilot of up to 512 per row
