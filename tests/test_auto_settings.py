"""``scaling="auto"`` (``--scaling auto``): the candidate settings raced on the stream's head, the choice
recorded in the job and the model, the same in this process, on a cluster and after a resume
(which takes the recorded choice and races nothing), an explicit setting or ``--paper-settings``
racing nothing."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest

from omkl_dist.defaults import CANDIDATES, RACE_ROWS, Settings, resolve_settings
from omkl_dist.job import DataWindow, EngineOptions, Job
from omkl_dist.runner import LocalRunner

ROWS, RACE, BLOCK = 1200, 400, 100
PARAMS = {"kernels": "gaussian:0.5,2;polynomial:2"}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    from omkl_dist.storage.synth import synthesize

    out = tmp_path_factory.mktemp("auto") / "synth"
    synthesize(out, rows=ROWS, features=5, seed=4, chunk_rows=600)
    return out


@pytest.fixture(scope="module")
def zero_one_stored(tmp_path_factory):
    """An ingested stream of 6 indicator features (the defaults' 0/1 rule fires on it)."""
    from omkl_dist.storage import ingest

    X = np.random.default_rng(5).integers(0, 2, size=(ROWS, 6))
    y = np.where(X[:, 0] + X[:, 3] >= 1, 1, -1)
    folder = tmp_path_factory.mktemp("zero-one")
    (folder / "ind.csv").write_text("".join(f"{t}," + ",".join(map(str, row)) + "\n" for t, row in zip(y, X)))
    ingest(folder / "ind.csv", folder / "ind", chunk_rows=600)
    return folder / "ind"


def _job(stored, algo="spa", settings=None, params=PARAMS) -> Job:
    settings = settings or resolve_settings(scaling="auto", race_rows=RACE)
    return Job.build(algo, dict(params), data=DataWindow(str(stored)), seed=2, block_size=BLOCK, settings=settings)


def _arrays(model) -> dict:
    return model.to_state()[0]


def _assert_same_model(model, reference) -> None:
    arrays, expected = _arrays(model), _arrays(reference)
    assert sorted(arrays) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(arrays[name], value, err_msg=name)


def test_auto_is_asked_for_and_a_request_until_raced():
    assert not resolve_settings().is_auto and resolve_settings().scaling == "standard"  # the default: fixed
    auto = resolve_settings(scaling="auto")
    assert auto.is_auto and auto.candidates == CANDIDATES[:1] + ("standard+raw",) + CANDIDATES[2:3] + (
        "minmax+raw",
        "none+norm",
        "none+raw",
    )
    assert auto.race_rows == RACE_ROWS and auto.origin == "given"
    # the kernels given or their normalisation asked for: only the scalings race
    assert resolve_settings(scaling="auto", kernels_given=True).candidates == ("standard", "minmax", "none")
    raw = resolve_settings(scaling="auto", normalize_kernels=False)
    assert raw.candidates == ("standard", "minmax", "none") and raw.candidate("minmax").normalize_kernels is False
    # an explicit scaling or the papers' settings: fixed, as before
    assert not resolve_settings(scaling="minmax").is_auto and resolve_settings(scaling="minmax").normalize_kernels
    assert resolve_settings(paper=True) == Settings("none", False, auto.scale_rows, "paper")
    # the fewest mistakes win; a tie goes to the earlier candidate
    chosen = auto.chosen([9, 7, 7, 8, 20, 21], 400)
    assert (chosen.scaling, chosen.normalize_kernels, chosen.origin) == ("standard", False, "auto")
    assert chosen.race == (9, 7, 7, 8, 20, 21) and chosen.settles(auto) and not chosen.settles(raw)
    assert "auto chose standard+raw: 7 vs 7 (minmax+norm), 8 (minmax+raw)" in chosen.describe()
    # the sparse rule: no scaling that would densify the rows
    assert auto.for_sparse_rows().candidates == ("none+norm", "none+raw")


def test_papers_settings_keep_the_papers_spa_and_the_defaults_their_own():
    paper = Job.build("spa", {}, data=DataWindow("x"), settings=resolve_settings(paper=True))
    default = Job.build("spa", {}, data=DataWindow("x"))
    given = Job.build("spa", {"hedge_loss": "hinge"}, data=DataWindow("x"))
    assert "hedge_loss" not in paper.params and default.params["hedge_loss"] == "mistake"
    assert given.params["hedge_loss"] == "hinge"


def test_the_race_is_recorded_and_the_run_is_the_chosen_settings_run(stored, tmp_path):
    from omkl_dist.persistence import load_model, save_model

    result = LocalRunner().fit(_job(stored), str(stored))
    settings = result.job.settings
    assert settings.origin == "auto" and len(settings.race) == 6 and settings.race_rows == RACE
    assert min(settings.race) == settings.race[settings.candidates.index(_label(settings))]
    assert result.scaler.method == settings.scaling
    # a job document and a saved model keep the choice and every candidate's mistakes
    assert Job.from_dict(json.loads(json.dumps(result.job.to_dict()))) == result.job
    save_model(result.as_model(), tmp_path / "m")
    assert load_model(tmp_path / "m").job["settings"]["race"] == list(settings.race)
    # deterministic, and the very model of the chosen settings fixed
    again = LocalRunner().fit(_job(stored), str(stored))
    assert again.job == result.job
    fixed = settings.candidate(_label(settings))
    _assert_same_model(LocalRunner().fit(_job(stored, settings=fixed), str(stored)).model, result.model)


def _label(settings: Settings) -> str:
    kernels = {True: "+norm", False: "+raw"}[settings.normalize_kernels]
    return settings.scaling + kernels


def test_a_data_file_is_parsed_once_for_the_race_and_the_run(tmp_path, monkeypatch):
    import omkl_dist.storage.job_data as job_data

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) * [1, 10, 100, 0.1]
    path = tmp_path / "d.csv"
    path.write_text("".join(f"{1 if x[0] > 0 else -1}," + ",".join(f"{v:.6g}" for v in x) + "\n" for x in X))
    parsed = []
    read = job_data.read_dataset
    monkeypatch.setattr(job_data, "read_dataset", lambda *a, **k: parsed.append(a) or read(*a, **k))
    result = LocalRunner().fit(_job(path), str(path))
    assert result.job.settings.race and len(parsed) == 1


def test_an_explicit_setting_races_nothing(stored):
    result = LocalRunner().fit(_job(stored, settings=resolve_settings(scaling="minmax")), str(stored))
    assert result.job.settings.race == () and result.job.settings.candidates == ()
    assert result.scaler.method == "minmax" and result.job.settings.origin == "given"


@pytest.mark.cluster
def test_a_cluster_chooses_the_same_and_a_resume_keeps_the_choice(stored, zero_one_stored, tmp_path, monkeypatch):
    """The race, and the defaults' 0/1 rule (tests/test_zero_one_rule.py), on one cluster."""
    from distributed import Client, LocalCluster

    import omkl_dist.distributed.runner as dask_runner

    local = LocalRunner().fit(_job(stored), str(stored))
    zero_one = replace(_job(zero_one_stored, settings=resolve_settings()), engine=EngineOptions(checkpoint_every=2))
    local_zero_one = LocalRunner().fit(zero_one, str(zero_one_stored))
    assert local_zero_one.job.settings.origin == "defaults-zero-one"
    ckpt = tmp_path / "ckpt"
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster) as client,
    ):
        job = replace(_job(stored), engine=EngineOptions(checkpoint_every=2))
        first = dask_runner.DaskRunner(client, checkpoint_dir=ckpt).fit(job, str(stored))
        assert first.job.settings == local.job.settings and first.job.settings.race
        _assert_same_model(first.model, local.model)
        for later in sorted(ckpt.glob("ckpt-*"))[1:]:  # as if the job had died at its first checkpoint
            shutil.rmtree(later)

        def no_race(*_args):
            raise AssertionError("a resume raced again")

        # the 0/1 rule: decided on a worker as in this process, recorded, and a resume checks nothing again
        rule = tmp_path / "rule"
        first_rule = dask_runner.DaskRunner(client, checkpoint_dir=rule).fit(zero_one, str(zero_one_stored))
        assert first_rule.job.settings == local_zero_one.job.settings and first_rule.scaler.method == "none"
        _assert_same_model(first_rule.model, local_zero_one.model)
        for later in sorted(rule.glob("ckpt-*"))[1:]:
            shutil.rmtree(later)

        monkeypatch.setattr(dask_runner, "race_task", no_race)
        monkeypatch.setattr(dask_runner, "fit_head_task", no_race)
        resumed = dask_runner.DaskRunner(client, checkpoint_dir=ckpt, resume=True).fit(job, str(stored))
        resumed_rule = dask_runner.DaskRunner(client, checkpoint_dir=rule, resume=True)
        resumed_rule = resumed_rule.fit(zero_one, str(zero_one_stored))
    assert resumed.accounting.resumed_from > 0 and resumed.job.settings == local.job.settings
    _assert_same_model(resumed.model, local.model)
    assert resumed_rule.accounting.resumed_from > 0 and resumed_rule.job.settings == local_zero_one.job.settings
    _assert_same_model(resumed_rule.model, local_zero_one.model)


def test_the_command_line_prints_the_choice_and_paper_settings_race_nothing(stored, tmp_path):
    from click.testing import CliRunner

    from omkl_dist.pipelines.cli import main

    common = ["run", "spa", "--data", str(stored), "--kernels", PARAMS["kernels"], "--quiet", "--limit", "600"]
    auto = [*common, "--scaling", "auto", "--trace-out", str(tmp_path / "t.json")]
    ran = CliRunner().invoke(main, auto, catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    assert "auto chose" in ran.output and "race" in ran.output
    paper = [*common, "--paper-settings", "--json", "--trace-out", str(tmp_path / "p.json")]
    ran = CliRunner().invoke(main, paper, catch_exceptions=False)
    report = json.loads(ran.output.strip().splitlines()[-1])
    assert report["settings"]["origin"] == "paper" and "race" not in report["settings"]
    assert report["params"]["hedge_loss"] == "hinge"


def test_the_race_is_evaluated_offline_on_whole_stream_records():
    from omkl_dist.pipelines.studies.defaults_race import gap, race_choice, race_markdown, streams

    def record(combination, head, total):  # a whole-stream run of 10,000 rows
        scaling, _, norm = combination.partition("+")
        return {
            "algorithm": "spa",
            "dataset": "d",
            "permutation": 0,
            "settings": {},
            "max_rows": None,
            "scaling": scaling,
            "kernels": "norm" if norm else "raw",
            "n": 10_000,
            "mistakes": total,
            "mistake_rate": total / 10_000,
            "prefix_mistakes": [[1_000, head // 2], [5_000, head], [10_000, total]],
        }

    # standard+norm leads on the head but not on the whole stream; minmax+norm ties it at 1,000 rows
    heads = dict(zip(CANDIDATES, (100, 120, 100, 130, 300, 310)))
    totals = dict(zip(CANDIDATES, (900, 700, 650, 800, 2000, 2100)))
    rows = streams([record(c, heads[c], totals[c]) for c in CANDIDATES])
    ((key, row),) = rows.items()
    assert key == ("spa", "default", "d", 0)
    assert race_choice(row, 1_000) == race_choice(row, 5_000) == "standard+norm"  # the tie: the earlier
    assert race_choice(row, 10_000) == "minmax+norm" and race_choice(row, 2_000) is None
    assert gap(row, "standard+norm") == pytest.approx(2.5)
    text = "\n".join(race_markdown([record(c, heads[c], totals[c]) for c in CANDIDATES], heads=(1_000, 10_000)))
    assert "| 10,000 | 1 | 1 | 0.00 |" in text and "| spa | default | d | standard+norm | 9.00 % |" in text
