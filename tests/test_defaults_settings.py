"""The settings a job gets without asking (omkl_dist.defaults: the study's choice of scaling and
kernel normalisation), the papers' settings one flag away, both reported and stored with the
model; the scaler fitted on the stream's first rows and applied to later rows without NaN."""

from __future__ import annotations

import json

import numpy as np
import pytest

from omkl_dist.defaults import NORMALIZE_KERNELS, SCALE_ROWS, SCALING, resolve_settings
from omkl_dist.persistence import load_model
from omkl_dist.preprocessing import Scaler

from omkl_cli import last_json, omkl, omkl_here

# end to end through the `omkl` command (a Python process per call): the full suite only
pytestmark = pytest.mark.slow


def test_settings_resolve_the_studys_defaults_the_papers_or_what_was_asked():
    default = resolve_settings()
    assert (default.scaling, default.normalize_kernels, default.scale_rows, default.origin) == (
        SCALING,
        NORMALIZE_KERNELS,
        SCALE_ROWS,
        "defaults",
    )
    paper = resolve_settings(paper=True)
    assert (paper.scaling, paper.normalize_kernels, paper.origin) == ("none", False, "paper")
    assert resolve_settings(scaling="standard").origin == "given"
    assert resolve_settings(kernels_given=True).normalize_kernels is None  # a --kernels pool as written
    assert resolve_settings(kernels_given=True, normalize_kernels=True).normalize_kernels is True
    with pytest.raises(ValueError, match="--paper-settings means raw features"):
        resolve_settings(paper=True, scaling="minmax")
    assert "docs/defaults.md" in default.describe() and "--paper-settings" in paper.describe()


@pytest.fixture(scope="module")
def wide_scales(tmp_path_factory):
    """12,000 rows whose features span very different ranges; the last 2,000 rows go beyond the
    range of the first 10,000 (the scaler's window)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12_000, 4)) * [1, 100, 1e4, 0.01]
    X[10_000:] *= 3.0
    y = np.where(X[:, 0] + X[:, 1] / 100 > 0, 1, -1)
    path = tmp_path_factory.mktemp("settings") / "wide.csv"
    path.write_text("".join(f"{t}," + ",".join(f"{v:.12g}" for v in row) + "\n" for t, row in zip(y, X)))
    return path


def test_a_run_uses_the_defaults_and_says_so_and_the_model_keeps_them(wide_scales, tmp_path):
    report = last_json(
        omkl(
            "run",
            "spa",
            "--data",
            wide_scales,
            "--json",
            "--quiet",
            "--model-out",
            tmp_path / "m",
            "--trace-out",
            tmp_path / "t.json",
        )
    )
    settings = report["settings"]
    assert (settings["scaling"], settings["normalize_kernels"], settings["origin"]) == (
        SCALING,
        NORMALIZE_KERNELS,
        "defaults",
    )
    assert ("+norm" in report["params"]["kernels"]) == NORMALIZE_KERNELS and report["scaling"] == SCALING
    model = load_model(tmp_path / "m")
    assert model.job["settings"]["scaling"] == SCALING and model.scaler.method == SCALING
    assert model.scaler.n_seen_ == SCALE_ROWS  # fitted on the stream's first rows, not on the whole file
    assert all(spec.normalize == NORMALIZE_KERNELS for spec in model.estimator.kernel_pool_)
    text = omkl_here("run", "spa", "--data", wide_scales, "--quiet", "--trace-out", tmp_path / "t2.json").stdout
    assert "settings" in text and "docs/defaults.md" in text


def test_paper_settings_are_raw_features_and_unnormalised_kernels(wide_scales, tmp_path):
    common = [
        "--data",
        wide_scales,
        "--limit",
        3000,
        "--json",
        "--quiet",
        "--trace-out",
        tmp_path / "t.json",
        "--overwrite",
    ]
    paper = last_json(omkl_here("run", "omkc", *common, "--paper-settings"))
    assert paper["scaling"] == "none" and paper["settings"]["origin"] == "paper"
    assert "+norm" not in paper["params"]["kernels"]
    by_hand = last_json(omkl_here("run", "omkc", *common, "--scaling", "none", "--raw-kernels"))
    assert by_hand["mistakes"] == paper["mistakes"]  # the same job
    given = last_json(omkl_here("run", "omkc", *common, "--kernels", "gaussian:1;poly:2+norm"))
    assert given["params"]["kernels"] == "gaussian:1;poly:2+norm"  # a pool given is taken as written
    clash = omkl_here("run", "omkc", *common, "--paper-settings", "--scaling", "standard", check=False)
    assert clash.returncode == 2 and "--paper-settings means raw features" in clash.stderr


def test_the_scaler_passes_later_values_through_its_affine_map_never_nan():
    X = np.array([[0.0, 5.0, 1.0], [10.0, 5.0, 3.0]])
    scaler = Scaler("minmax").fit(X)
    later = np.array([[20.0, 7.0, -1.0], [-10.0, 5.0, 1e300]])
    Z = scaler.transform(later)
    assert np.isfinite(Z).all()
    np.testing.assert_array_equal(Z[:, 0], [2.0, -1.0])  # beyond the fitted range: passed through, not clipped
    np.testing.assert_array_equal(Z[:, 1], [2.0, 0.0])  # a column constant on the window: shifted, not scaled
    standard = Scaler("standard").fit(X).transform(later)
    assert np.isfinite(standard).all()


def test_retrain_and_the_study_report_record_the_settings(wide_scales, tmp_path):
    store = tmp_path / "store"
    first = last_json(
        omkl_here(
            "retrain",
            "--store",
            store,
            "--model",
            "m",
            "--data",
            wide_scales,
            "--label-column",
            "first",
            "--algo",
            "spa",
            "--quiet",
        )
    )
    assert first["status"] == "promoted"
    model_json = json.loads((store / "m" / "versions" / "1" / "model.json").read_text())
    assert model_json["provenance"]["lineage"]["scaling"] == SCALING
    assert ("+norm" in model_json["provenance"]["lineage"]["params"]["kernels"]) == NORMALIZE_KERNELS
