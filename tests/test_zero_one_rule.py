"""The default's 0/1 rule: when no scaling was chosen and every feature value of the rows the scaler
is fitted on (the stream's head) is 0 or 1, the features stay unscaled (the kernels normalised as
by default), decided by one function for both runners (``omkl_dist.preprocessing.fit_head``),
recorded in the job and the model and printed in the report; an explicit ``--scaling``, the papers'
settings and an automatic setting untouched. The cluster and resume case is in
``test_auto_settings.py`` (one cluster for both)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from omkl_dist.defaults import resolve_settings
from omkl_dist.job import DataWindow, Job
from omkl_dist.preprocessing import Scaler, fit_head
from omkl_dist.runner import LocalRunner

PARAMS = {"kernels": "gaussian:0.5,2;polynomial:2"}


def _zero_one(rows: int, features: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, size=(rows, features)).astype(np.float64)


@pytest.fixture(scope="module")
def zero_one_file(tmp_path_factory):
    """600 rows of 6 indicator features (a9a-like), labelled by two of them, as a CSV file."""
    X = _zero_one(600, 6, seed=1)
    y = np.where(X[:, 0] + X[:, 3] >= 1, 1, -1)
    path = tmp_path_factory.mktemp("zero-one") / "ind.csv"
    path.write_text("".join(f"{t}," + ",".join(f"{v:g}" for v in row) + "\n" for t, row in zip(y, X)))
    return path


def test_the_rule_fires_on_a_zero_one_head_and_not_otherwise():
    default = resolve_settings()
    X = _zero_one(300, 4)
    settings, scaler = fit_head(default, X, 200)
    assert (settings.scaling, settings.normalize_kernels, settings.origin) == ("none", True, "defaults-zero-one")
    assert scaler.method == "none" and scaler.n_seen_ == 200
    assert "default: no feature scaling — every feature of the first 10,000 rows is 0 or 1" in settings.describe()
    # one value outside {0, 1} in the head: the defaults as they are; after the head: not looked at
    X[150, 2] = 0.5
    settings, scaler = fit_head(default, X, 200)
    assert settings == default and scaler.method == "standard"
    assert fit_head(default, X, 150)[0].origin == "defaults-zero-one"
    # a scaling asked for, the papers' settings, an automatic setting's candidate: untouched
    for asked in (resolve_settings(scaling="standard"), resolve_settings(paper=True)):
        assert fit_head(asked, _zero_one(50, 3), 50)[0] == asked
    auto = resolve_settings(scaling="auto")
    candidate = auto.candidate(auto.candidates[0])
    assert fit_head(candidate, _zero_one(50, 3), 50)[0] == candidate


def test_sparse_heads_are_checked_without_densifying():
    # 2**24 columns: densified, 60 rows would take 8 GB
    rng = np.random.default_rng(0)
    indices = np.sort(rng.choice(2**24, size=(60, 30), replace=False), axis=1).ravel()
    wide = sp.csr_matrix((np.ones(indices.size), indices, np.arange(0, indices.size + 1, 30)), shape=(60, 2**24))
    settings, scaler = fit_head(resolve_settings(), wide, 60)
    assert settings.origin == "defaults-zero-one" and scaler.method == "none"
    wide.data[0] = 3.0
    settings, scaler = fit_head(resolve_settings(), wide, 60)
    assert settings.origin == "defaults-sparse" and scaler.method == "none"  # unscaled: sparse rows


def test_blocks_give_the_scaler_an_array_head_would_stream_and_read_once():
    X = _zero_one(1000, 5, seed=2)
    X[900:, 1] = 7.0  # beyond the head
    blocks = [(X[lo : lo + 128], np.ones(128)) for lo in range(0, 1000, 128)]
    settings, scaler = fit_head(resolve_settings(), iter(blocks), 700)
    assert settings.origin == "defaults-zero-one"
    assert scaler.to_dict() == Scaler("none").fit_prefix(blocks, 700).to_dict()
    X[10, 4] = 0.25
    blocks = [(X[lo : lo + 100], np.ones(100)) for lo in range(0, 1000, 100)]
    settings, scaler = fit_head(resolve_settings(), iter(blocks), 700)
    expected = Scaler("standard").fit_prefix(blocks, 700)
    assert settings.origin == "defaults" and scaler.method == "standard"
    np.testing.assert_array_equal(scaler.mean_, expected.mean_)
    np.testing.assert_array_equal(scaler.m2_, expected.m2_)


@pytest.mark.parametrize("scaling", ["standard", "minmax"])
def test_a_head_in_memory_gets_the_scaler_its_blocks_get(scaling):
    """A file read into memory (`omkl run`) and its ingested copy streamed in blocks (a cluster's
    worker) fit the same scaler, bit for bit, frozen: a head over 4,096 rows fitted at once rounded
    its mean otherwise (cod-rna: `omkl run` and `omkl submit` models differed in the last bits)."""
    X = np.random.default_rng(5).normal(size=(9000, 4)) * 300.0 + 7.0
    asked = resolve_settings(scaling=scaling, kernels_given=True)
    _, in_memory = fit_head(asked, X, 8000)
    _, streamed = fit_head(asked, ((X[lo : lo + 1000], None) for lo in range(0, 9000, 1000)), 8000, sparse=False)
    assert in_memory.frozen_ and in_memory.n_seen_ == 8000
    expected = streamed.to_dict()
    for name, value in in_memory.to_dict().items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(expected[name]), err_msg=name)


def test_a_recorded_decision_settles_the_defaults_only():
    default, given = resolve_settings(), resolve_settings(scaling="standard")
    decided = default.for_zero_one_head()
    assert decided.settles(default) and default.settles(default) and default.for_sparse_rows().settles(default)
    assert not decided.settles(given) and not given.for_zero_one_head().settles(given)
    assert decided.for_zero_one_head() == decided  # the rule decides once


def test_a_run_records_the_rule_and_learns_the_unscaled_model(zero_one_file, tmp_path):
    from click.testing import CliRunner

    from omkl_dist.persistence import load_model, save_model
    from omkl_dist.pipelines.cli import main

    data = str(zero_one_file)
    job = Job.build("spa", dict(PARAMS), data=DataWindow(data), block_size=100)
    result = LocalRunner().fit(job, data)
    settings = result.job.settings
    assert (settings.scaling, settings.normalize_kernels, settings.origin) == ("none", True, "defaults-zero-one")
    assert result.scaler.method == "none" and result.advice == ()
    save_model(result.as_model(), tmp_path / "m")
    assert load_model(tmp_path / "m").job["settings"]["origin"] == "defaults-zero-one"
    assert Job.from_dict(json.loads(json.dumps(result.job.to_dict()))) == result.job
    # the model of the same job asked for unscaled features with normalised kernels, bit for bit
    asked = Job.build(
        "spa", dict(PARAMS), data=DataWindow(data), block_size=100, settings=resolve_settings(scaling="none")
    )
    same = LocalRunner().fit(asked, data)
    for name, value in same.model.to_state()[0].items():
        np.testing.assert_array_equal(result.model.to_state()[0][name], value, err_msg=name)
    # the report says why; --scaling standard is obeyed
    common = ["run", "spa", "--data", data, "--kernels", PARAMS["kernels"], "--block-size", "100"]
    ran = CliRunner().invoke(main, [*common, "--trace-out", str(tmp_path / "t.json")], catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    # a 600-row stream is read whole: the line says so rather than "the first 10,000 rows"
    assert "default: no feature scaling — every feature of all 600 rows is 0 or 1" in ran.output
    out = [*common, "--scaling", "standard", "--json", "--quiet", "--trace-out", str(tmp_path / "s.json")]
    ran = CliRunner().invoke(main, out, catch_exceptions=False)
    report = json.loads(ran.output.strip().splitlines()[-1])
    assert report["settings"]["scaling"] == "standard" and report["settings"]["origin"] == "given"
    assert report["settings"]["describe"].startswith("standard scaling fitted on all 600 rows")


def test_the_studys_report_compares_the_default_with_the_rule_to_the_best_of_six():
    from test_study_defaults import _record

    from omkl_dist.pipelines.studies.defaults_markdown import format_markdown
    from omkl_dist.pipelines.studies.defaults_plan import COMBINATIONS
    from omkl_dist.pipelines.studies.defaults_report import build_report

    six = dict.fromkeys(COMBINATIONS, 20.0)
    rates = {"ind": {**six, "none+norm": 10.0, "standard+norm": 14.0}, "real": {**six, "standard+norm": 9.0}}
    records = [{**_record("omkc-dd", d, c, r), "max_rows": None} for d, row in rates.items() for c, r in row.items()]
    with_rule = format_markdown(build_report(records, max_rows=None, zero_one=["ind"]))
    assert "| omkc-dd | ind | none+norm | 10.00 % | none+norm | 10.00 % | 0.00 |" in with_rule
    assert "| omkc-dd | real | standard+norm | 9.00 % | standard+norm | 9.00 % | 0.00 |" in with_rule
    assert "within 1 point of the best of the six on 2 of 2 rows" in with_rule
    without = format_markdown(build_report(records, max_rows=None, zero_one=[]))
    assert "| omkc-dd | ind | standard+norm | 14.00 % | none+norm | 10.00 % | 4.00 |" in without
    assert "on 1 of 2 rows" in without
