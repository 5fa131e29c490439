"""Generated streams: determinism, metadata, label-noise rate, balance, nonlinearity, errors, atomicity."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

from omkl_dist.storage import synth
from omkl_dist.storage.layout import open_features, read_labels, read_meta
from omkl_dist.storage.synth import clean_labels, generator_params, iter_blocks, score, synthesize


def _load(path):
    return open_features(path)[:], read_labels(path)


@pytest.fixture(scope="module")
def stream_20k(tmp_path_factory):
    """One 20,000 x 6 stream written with an odd chunking, shared by the statistical tests."""
    out = tmp_path_factory.mktemp("synth") / "s20k"
    meta = synthesize(out, rows=20_000, features=6, seed=11, noise=0.1, chunk_rows=3_001)
    X, y = _load(out)
    return out, meta, X, y


def test_same_seed_identical_and_chunking_irrelevant(tmp_path):
    # 70,000 rows span two generation blocks, so block boundaries and rechunking are exercised.
    kw = dict(rows=70_000, features=4, seed=5, noise=0.2)
    a = synthesize(tmp_path / "a", chunk_rows=65_536, **kw)
    b = synthesize(tmp_path / "b", chunk_rows=999, **kw)
    c = synthesize(tmp_path / "c", chunk_rows=70_000, **kw)
    Xa, ya = _load(tmp_path / "a")
    for name in ("b", "c"):
        X, y = _load(tmp_path / name)
        np.testing.assert_array_equal(X, Xa)
        np.testing.assert_array_equal(y, ya)
    assert a["sha256"] == b["sha256"] == c["sha256"]
    assert open_features(tmp_path / "b").chunks == (999, 4)
    # And the in-memory stream is the same data.
    Xm = np.concatenate([X for X, _ in iter_blocks(**kw)])
    np.testing.assert_array_equal(Xm, Xa)


def test_different_seed_differs_and_prefix_property(tmp_path):
    X1 = np.concatenate([X for X, _ in iter_blocks(rows=500, features=3, seed=1)])
    X2 = np.concatenate([X for X, _ in iter_blocks(rows=500, features=3, seed=2)])
    assert not np.array_equal(X1, X2)
    assert generator_params(1, 3)["projection"] != generator_params(2, 3)["projection"]
    # A shorter stream is a prefix of a longer one (independent streams per block and purpose).
    long = list(iter_blocks(rows=66_000, features=3, seed=1, noise=0.3))
    short = list(iter_blocks(rows=300, features=3, seed=1, noise=0.3))
    np.testing.assert_array_equal(short[0][0], long[0][0][:300])
    np.testing.assert_array_equal(short[0][1], long[0][1][:300])


def test_meta_contents_and_sha(tmp_path):
    out = tmp_path / "m"
    meta = synthesize(out, rows=1_000, features=5, seed=3, noise=0.05, chunk_rows=256, dtype="float32")
    on_disk = read_meta(out)
    assert on_disk == json.loads(json.dumps(meta))
    assert meta["kind"] == "synth"
    assert meta["source"] == "synth:seed=3,rows=1000,features=5,noise=0.05"
    assert meta["label_map"] == [["-1", -1], ["1", 1]]
    assert meta["n_classes"] == 2 and meta["n_rows"] == 1_000 and meta["n_features"] == 5
    assert meta["dtype"] == "float32" and meta["chunk_rows"] == 256
    assert meta["bayes_error"] == 0.05
    X, y = _load(out)
    assert X.dtype == np.float32 and y.dtype == np.int64
    assert set(np.unique(y)) <= {-1, 1}
    assert meta["class_counts"] == {"-1": int((y == -1).sum()), "1": int((y == 1).sum())}
    gen = on_disk["generator"]
    assert gen["name"] == synth.GENERATOR_NAME
    assert (gen["seed"], gen["features"], gen["noise"], gen["latent_dim"]) == (3, 5, 0.05, 3)
    assert gen == json.loads(json.dumps(generator_params(3, 5, 0.05)))
    # The digest is over row records: features (stored dtype, little endian) then the int64 label.
    rec = np.empty(len(y), dtype=[("x", "<f4", (5,)), ("y", "<i8")])
    rec["x"], rec["y"] = X, y
    assert meta["sha256"] == hashlib.sha256(rec.tobytes()).hexdigest()


def test_generator_from_meta_reproduces_clean_labels(stream_20k):
    _, meta, X, _ = stream_20k
    # JSON round-trips the float64 parameters exactly, so the stored generator gives the same g.
    g_meta = score(X, meta["generator"])
    g_fresh = score(X, generator_params(11, 6, 0.1))
    np.testing.assert_array_equal(g_meta, g_fresh)
    P = np.asarray(meta["generator"]["projection"])
    np.testing.assert_allclose(P @ P.T, np.eye(3), atol=1e-12)


def test_bayes_error_estimate_matches_noise(stream_20k):
    _, meta, X, y = stream_20k
    n, eta = len(y), meta["bayes_error"]
    flipped = float(np.mean(y != clean_labels(X, meta["generator"])))
    sd = math.sqrt(eta * (1 - eta) / n)
    assert abs(flipped - eta) < 4 * sd, (flipped, eta, sd)


def test_noise_zero_means_clean_labels():
    X, y = next(iter_blocks(rows=2_000, features=3, seed=4, noise=0.0))
    np.testing.assert_array_equal(y, clean_labels(X, generator_params(4, 3)))


def test_classes_roughly_balanced(stream_20k):
    _, meta, X, y = stream_20k
    n = len(y)
    frac_pos = meta["class_counts"]["1"] / n
    # Offset is a pilot median: P(clean = +1) = 1/2 up to ~0.002; flips keep it near 1/2.
    assert abs(frac_pos - 0.5) < 4 * math.sqrt(0.25 / n) + 0.01
    assert abs(float(np.mean(clean_labels(X, meta["generator"]) == 1)) - 0.5) < 0.03


@pytest.mark.parametrize("features", [1, 2, 40])
def test_balanced_for_other_widths(features):
    X, y = next(iter_blocks(rows=8_000, features=features, seed=2, noise=0.0))
    assert abs(float(np.mean(y == 1)) - 0.5) < 0.04
    assert X.shape == (8_000, features)


def test_rbf_kernel_beats_linear(stream_20k):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    _, meta, X, y = stream_20k
    Xtr, ytr = X[:5_000], y[:5_000]
    Xte, yte = X[10_000:14_000], y[10_000:14_000]
    linear = LogisticRegression().fit(Xtr, ytr).score(Xte, yte)
    rbf = SVC(C=10.0, gamma="scale").fit(Xtr, ytr).score(Xte, yte)
    bayes_acc = 1 - meta["bayes_error"]
    # g is even in x, so a half-space is near chance; the Gaussian kernel learns it.
    assert linear < 0.6, linear
    assert rbf > linear + 0.2, (rbf, linear)
    assert rbf <= bayes_acc + 0.03  # sanity: no one beats the Bayes classifier beyond sampling error


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rows=0), r"rows must be an integer >= 1, got 0"),
        (dict(rows=10.0), r"rows must be an integer >= 1, got 10.0"),
        (dict(features=0), r"features must be an integer from 1 to 65,536, got 0"),
        (dict(noise=0.5), r"noise must be a float in \[0, 0.5\).*got 0.5"),
        (dict(noise=-0.1), r"noise must be a float in \[0, 0.5\).*got -0.1"),
        (dict(noise=float("nan")), r"noise must be a float in \[0, 0.5\).*got nan"),
        (dict(seed=-1), r"seed must be an integer >= 0, got -1"),
        (dict(chunk_rows=0), r"chunk_rows must be an integer >= 1, got 0"),
        (dict(dtype="int8"), r"dtype must be one of \('float64', 'float32'\), got 'int8'"),
    ],
)
def test_bad_parameters(tmp_path, kwargs, match):
    args = dict(rows=10, features=2) | kwargs
    with pytest.raises(ValueError, match=match):
        synthesize(tmp_path / "bad", **args)
    assert list(tmp_path.iterdir()) == []  # validated before anything is created


def test_existing_out_refused_and_untouched(tmp_path):
    out = tmp_path / "d"
    first = synthesize(out, rows=100, features=2, seed=0)
    with pytest.raises(FileExistsError, match="already exists"):
        synthesize(out, rows=50, features=3, seed=1)
    assert read_meta(out)["sha256"] == first["sha256"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no temp dir left behind
    second = synthesize(out, rows=50, features=3, seed=1, overwrite=True)
    assert read_meta(out)["sha256"] == second["sha256"] and read_meta(out)["n_rows"] == 50
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_failure_midway_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "f"
    calls = {"n": 0}
    real = synth.clean_labels

    def failing(X, generator):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk on fire")
        return real(X, generator)

    monkeypatch.setattr(synth, "clean_labels", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        synthesize(out, rows=2_000, features=2_000, seed=0, chunk_rows=100)  # block_rows = 1048
    assert calls["n"] == 2
    assert list(tmp_path.iterdir()) == []
