"""Scaler: scikit-learn parity on real data, streaming merge, serialisation, immutability, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omkl_dist.preprocessing.scaler import _STATE_ARRAYS, METHODS, Scaler


@pytest.fixture(scope="module")
def australian(data_dir):
    from sklearn.datasets import load_svmlight_file

    X, _ = load_svmlight_file(str(data_dir / "australian" / "australian.libsvm.gz"))
    return X.toarray()


def _split(X):
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(X))
    cut = int(0.7 * len(X))
    return X[idx[:cut]], X[idx[cut:]]


@pytest.mark.data
@pytest.mark.parametrize("feature_range", [(0.0, 1.0), (-1.0, 1.0)])
def test_minmax_matches_sklearn(australian, feature_range):
    from sklearn.preprocessing import MinMaxScaler

    train, test = _split(australian)
    ours = Scaler("minmax", feature_range=feature_range).fit(train)
    ref = MinMaxScaler(feature_range=feature_range).fit(train)
    np.testing.assert_allclose(ours.min_, ref.data_min_, rtol=0, atol=0)
    np.testing.assert_allclose(ours.max_, ref.data_max_, rtol=0, atol=0)
    np.testing.assert_allclose(ours.transform(train), ref.transform(train), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.transform(test), ref.transform(test), rtol=1e-12, atol=1e-12)
    Z = ours.transform(train)
    np.testing.assert_allclose(Z.min(axis=0), feature_range[0], atol=1e-12)
    np.testing.assert_allclose(Z.max(axis=0), feature_range[1], atol=1e-12)


@pytest.mark.data
def test_standard_matches_sklearn(australian):
    from sklearn.preprocessing import StandardScaler

    train, test = _split(australian)
    ours = Scaler("standard").fit(train)
    ref = StandardScaler().fit(train)
    np.testing.assert_allclose(ours.mean_, ref.mean_, rtol=1e-12)
    np.testing.assert_allclose(ours.var_, ref.var_, rtol=1e-12)
    np.testing.assert_allclose(ours.scale_, ref.scale_, rtol=1e-12)
    np.testing.assert_allclose(ours.transform(test), ref.transform(test), rtol=1e-10, atol=1e-12)


@pytest.mark.data
@pytest.mark.parametrize("method", ["minmax", "standard"])
def test_blockwise_equals_at_once_on_real_data(australian, method):
    whole = Scaler(method).fit(australian)
    parts = Scaler(method)
    for block in np.array_split(australian, [1, 2, 50, 51, 300, 689]):  # includes 1-row blocks
        parts.partial_fit(block)
    assert parts.n_seen_ == whole.n_seen_ == len(australian)
    np.testing.assert_allclose(parts.transform(australian), whole.transform(australian), rtol=1e-12, atol=1e-12)


def test_constant_columns_map_to_zero():
    X = np.array([[1.0, 7.0, 0.0], [2.0, 7.0, 0.0], [4.0, 7.0, 0.0]])
    later = np.array([[3.0, 8.0, 1.0]])
    for method, feature_range in [("minmax", (0.0, 1.0)), ("minmax", (-1.0, 1.0)), ("standard", (0, 1))]:
        s = Scaler(method, feature_range=feature_range).fit(X)
        np.testing.assert_array_equal(s.transform(X)[:, 1:], 0.0)
        # Later values of a column constant in the fit are shifted, not scaled.
        np.testing.assert_array_equal(s.transform(later)[0, 1:], [1.0, 1.0])
        np.testing.assert_array_equal(s.scale_[1:], [1.0, 1.0])


def test_none_is_a_float64_copy():
    X = np.arange(6, dtype=np.int32).reshape(3, 2)
    s = Scaler().fit(X)
    Z = s.transform(X)
    assert Z.dtype == np.float64 and s.n_seen_ == 3 and s.n_features_in_ == 2
    np.testing.assert_array_equal(Z, X)
    F = np.ones((2, 2))
    assert s.transform(F) is not F


@pytest.mark.parametrize("method", METHODS)
def test_transform_never_mutates_and_returns_float64(method):
    rng = np.random.default_rng(1)
    for X in (
        rng.normal(size=(40, 3)),
        rng.normal(size=(40, 3)).astype(np.float32),
        np.asfortranarray(rng.normal(size=(40, 3))),
    ):
        before = X.copy()
        s = Scaler(method).fit(X)
        s.partial_fit(X)
        Z = s.transform(X)
        np.testing.assert_array_equal(X, before)
        assert X.dtype == before.dtype
        assert Z.dtype == np.float64 and not np.shares_memory(Z, X)


@pytest.mark.parametrize("method", METHODS)
def test_to_dict_from_dict_round_trip(method):
    rng = np.random.default_rng(2)
    X = rng.normal(3.0, 5.0, size=(200, 4))
    s = Scaler(method, feature_range=(-1, 1)).fit(X)
    d = s.to_dict()
    for key, value in d.items():
        assert isinstance(value, (str, int, float, bool, list, np.ndarray)), (key, type(value))
    back = Scaler.from_dict(d)
    np.testing.assert_array_equal(back.transform(X), s.transform(X))
    # Through JSON (arrays as lists), as a model store without zarr would do.
    text = json.dumps({k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in d.items()})
    via_json = Scaler.from_dict(json.loads(text))
    np.testing.assert_array_equal(via_json.transform(X), s.transform(X))
    assert (via_json.method, tuple(via_json.feature_range), via_json.n_seen_) == (method, (-1.0, 1.0), 200)
    # The restored statistics keep accumulating exactly like the original.
    more = rng.normal(size=(30, 4))
    np.testing.assert_array_equal(back.partial_fit(more).transform(X), s.partial_fit(more).transform(X))
    # to_dict hands out copies: mutating them does not touch the scaler.
    for name in ("min_", "mean_"):
        if name in d:
            d[name][:] = 0.0
            assert not np.array_equal(getattr(s, name), 0.0)


def test_unfitted_and_frozen_round_trip():
    s = Scaler.from_dict(Scaler("standard").to_dict())
    assert s.method == "standard" and not hasattr(s, "n_seen_")
    f = Scaler("minmax").fit_prefix([np.ones((3, 2)), np.zeros((3, 2))], 5)
    g = Scaler.from_dict(f.to_dict())
    assert g.frozen_
    with pytest.raises(ValueError, match="frozen"):
        g.partial_fit(np.ones((1, 2)))


def test_fit_prefix_uses_only_the_prefix():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1_000, 3))
    y = np.ones(1_000)
    blocks = ((X[i : i + 128], y[i : i + 128]) for i in range(0, 1_000, 128))
    s = Scaler("standard").fit_prefix(blocks, 300)
    ref = Scaler("standard").fit(X[:300])
    np.testing.assert_allclose(s.mean_, ref.mean_, rtol=1e-12)
    np.testing.assert_allclose(s.var_, ref.var_, rtol=1e-12)
    assert s.n_seen_ == 300 and s.frozen_
    # Stopped right after the block holding row 300 (rows 256..383): the next block starts at 384.
    np.testing.assert_array_equal(next(blocks)[0], X[384:512])
    with pytest.raises(ValueError, match="frozen"):
        s.partial_fit(X[300:])
    s.fit(X)  # fit starts over and unfreezes
    assert s.n_seen_ == 1_000 and not getattr(s, "frozen_", False)


def test_fit_prefix_errors():
    with pytest.raises(ValueError, match=r"stream ended after 6 rows, but n_rows=10"):
        Scaler("minmax").fit_prefix([np.ones((6, 2))], 10)
    with pytest.raises(ValueError, match=r"n_rows must be an integer >= 1, got 0"):
        Scaler("minmax").fit_prefix([np.ones((6, 2))], 0)


def test_errors():
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match=r"not fitted yet.*before transform"):
        Scaler("minmax").transform(X)
    with pytest.raises(ValueError, match=r"method must be one of \['none', 'minmax', 'standard'\], got 'zscore'"):
        Scaler("zscore").fit(X)
    with pytest.raises(ValueError, match=r"feature_range must satisfy lo < hi"):
        Scaler("minmax", feature_range=(1, 1)).fit(X)
    s = Scaler("standard").fit(X)
    with pytest.raises(ValueError, match=r"X has 2 features, but this Scaler was fitted with 3 features"):
        s.transform(np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"X has 4 features, but this Scaler was fitted with 3 features"):
        s.partial_fit(np.ones((4, 4)))
    bad = np.ones((5, 3))
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"transform: X contains nan at row 3, column 2"):
        s.transform(bad)
    bad[3, 2] = -np.inf
    with pytest.raises(ValueError, match=r"fit.*X contains -inf at row 3, column 2"):
        Scaler("minmax").fit(bad)
    # Rows are numbered within the stream so far.
    with pytest.raises(ValueError, match=r"X contains -inf at row 7, column 2"):
        Scaler("standard").fit(np.ones((4, 3))).partial_fit(bad)
    with pytest.raises(ValueError, match=r"expected a 2-D array"):
        s.transform(np.ones(3))
    with pytest.raises(ValueError, match=r"not a serialised Scaler"):
        Scaler.from_dict({"method": "minmax"})
    d = s.to_dict()
    d["mean_"] = d["mean_"][:2]
    with pytest.raises(ValueError, match=r"'mean_' must be 3 finite values"):
        Scaler.from_dict(d)


def test_sparse_input_fits_like_dense_and_transforms_only_when_zeros_stay_zero():
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    X = sp.random(400, 30, density=0.1, format="csr", random_state=4)
    X.data -= 0.2  # negative values too: minima below 0
    dense = X.toarray()
    for method in ("minmax", "standard"):
        a, b = Scaler(method).fit(dense), Scaler(method).fit(sp.csc_matrix(X))
        for name in _STATE_ARRAYS[method]:
            np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-12, atol=1e-12)
        with pytest.raises(ValueError, match=r"would densify a sparse X .*--scaling none"):
            b.transform(X)
    positive = abs(X)
    s = Scaler("minmax").fit(positive)
    out = s.transform(positive)
    assert sp.issparse(out) and out.format == "csr" and out.nnz == positive.nnz
    np.testing.assert_array_equal(out.toarray(), s.transform(positive.toarray()))
    assert sp.issparse(Scaler("none").fit(X).transform(X)) and Scaler("none").fit(X).transform(X) is not X
    blocks = [(X[i : i + 37], None) for i in range(0, 400, 37)]
    prefix = Scaler("minmax").fit_prefix(blocks, 300)
    np.testing.assert_array_equal(prefix.min_, dense[:300].min(axis=0))
    bad = X.copy()
    bad.data[rng.integers(len(bad.data))] = np.nan
    with pytest.raises(ValueError, match=r"X contains nan at row \d+, column \d+"):
        Scaler("minmax").fit(bad)


def test_init_stores_params_only():
    s = Scaler("whatever", feature_range="nonsense")  # validated at fit time, like scikit-learn
    assert vars(s) == {"method": "whatever", "feature_range": "nonsense"}


_blocks = st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=8).flatmap(
    lambda sizes: st.tuples(
        st.just(sizes),
        st.integers(min_value=1, max_value=4),
        st.integers(min_value=0, max_value=2**32 - 1),
        st.floats(min_value=-1e6, max_value=1e6),
        st.floats(min_value=1e-3, max_value=1e3),
    )
)


@settings(max_examples=60, deadline=None)
@given(_blocks)
def test_blockwise_merge_property(case):
    sizes, d, seed, loc, spread = case
    rng = np.random.default_rng(seed)
    X = loc + spread * rng.standard_normal((sum(sizes), d))
    n, eps = len(X), np.finfo(np.float64).eps
    for method in ("minmax", "standard"):
        whole = Scaler(method).fit(X)
        parts = Scaler(method)
        for block in np.split(X, np.cumsum(sizes)[:-1]):
            parts.partial_fit(block)
        assert parts.n_seen_ == whole.n_seen_ == n
        if method == "minmax":
            np.testing.assert_array_equal(parts.min_, whole.min_)
            np.testing.assert_array_equal(parts.max_, whole.max_)
        else:
            # Rounding is relative to |x| ~ |loc|, so the achievable agreement of m2 (~ n spread^2)
            # degrades with |loc| / spread: each deviation carries ~eps |loc|. For well-scaled data
            # (|loc| ~ spread) this is the ~1e-12 relative agreement the merge promises.
            np.testing.assert_allclose(parts.mean_, whole.mean_, rtol=1e-12, atol=8 * eps * (abs(loc) + spread))
            np.testing.assert_allclose(
                parts.m2_, whole.m2_, rtol=1e-12, atol=16 * eps * n * spread * (abs(loc) + spread)
            )


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=60), min_size=2, max_size=10),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_blockwise_merge_well_scaled_to_1e12(sizes, seed):
    X = np.random.default_rng(seed).normal(2.0, 3.0, size=(sum(sizes), 3))
    whole = Scaler("standard").fit(X)
    parts = Scaler("standard")
    for block in np.split(X, np.cumsum(sizes)[:-1]):
        parts.partial_fit(block)
    np.testing.assert_allclose(parts.mean_, whole.mean_, rtol=1e-12)
    np.testing.assert_allclose(parts.var_, whole.var_, rtol=1e-12)
    np.testing.assert_allclose(parts.transform(X), whole.transform(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["standard", "minmax"])
def test_fit_prefix_gives_the_same_bits_for_any_block_size(method):
    """A job (blocks of its round size) and a cluster run (blocks of 4,096) fit the scaler on the
    same prefix: the statistics must not depend on how the stream is cut."""
    X = np.random.default_rng(3).normal(loc=5.0, scale=3.0, size=(10_000, 4))
    fitted = [
        Scaler(method).fit_prefix([X[lo : lo + size] for lo in range(0, len(X), size)], 9_000)
        for size in (7, 1024, 4096, 10_000)
    ]
    for other in fitted[1:]:
        assert other.transform(X).tobytes() == fitted[0].transform(X).tobytes()
