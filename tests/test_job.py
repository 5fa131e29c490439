"""The job record (:class:`omkl_dist.job.Job`), the in-process runner and the per-algorithm command
options, on small generated data."""

from __future__ import annotations

import json
import pickle
from dataclasses import FrozenInstanceError

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.algorithms import OMKC
from omkl_dist.algorithms.registry import ALGORITHMS
from omkl_dist.defaults import BLOCK_SIZE, resolve_settings
from omkl_dist.evaluation import progressive_score
from omkl_dist.job import JOB_FIELDS, DataWindow, Job
from omkl_dist.pipelines.cli import main
from omkl_dist.pipelines.commands.run import run
from omkl_dist.pipelines.commands.submit import submit
from omkl_dist.runner import LocalRunner
from omkl_dist.storage import DataError, open_stream
from omkl_dist.storage.synth import synthesize


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("job") / "small"
    synthesize(path, rows=300, features=3, seed=4, noise=0.05, chunk_rows=128)
    return path


def test_a_job_is_its_json_document_and_immutable():
    job = Job.build("spa", {"eta": 0.2, "delta": None}, data=DataWindow("d", stop=100), seed=3)
    document = job.to_dict()
    assert Job.from_dict(json.loads(json.dumps(document))) == job == pickle.loads(pickle.dumps(job))
    assert document["params"]["eta"] == 0.2 and "delta" not in document["params"]  # given ones only
    assert document["block_size"] == BLOCK_SIZE and document["settings"]["origin"] == "defaults"
    assert "+norm" in document["params"]["kernels"]  # the default pool, normalised as the settings say
    with pytest.raises(FrozenInstanceError):
        job.seed = 4
    with pytest.raises(TypeError):
        job.params["eta"] = 1.0


def test_a_damaged_job_document_is_refused():
    document = Job.build("omkc", {}, data=DataWindow("d")).to_dict()
    for key, value in (("block_size", 0), ("algorithm", "nope"), ("seed", True)):
        with pytest.raises(DataError, match=key):
            Job.from_dict({**document, key: value}, path="job.json")


def test_job_parameters_are_the_estimators():
    with pytest.raises(ValueError, match=r"\['beta'\] do not apply to perceptron"):
        Job.build("perceptron", {"beta": 0.5}, data=DataWindow("d"))
    with pytest.raises(ValueError, match="the job's own fields"):
        Job("omkc", {"block_size": 64}, DataWindow("d"))


def test_the_local_runner_of_an_estimators_job_is_its_partial_fit(small):
    estimator = OMKC(kernels="gaussian:0.5,2", update="S", random_state=1)
    job = Job.from_estimator(estimator, small, permute=False)
    result = LocalRunner().fit(job, small)
    reference = estimator.set_params()
    stream = open_stream(small, block_size=reference.feed_rows())
    progressive_score(reference, stream, classes=[-1, 1])
    arrays, _ = result.model.to_state()
    for name, value in reference.to_state()[0].items():
        np.testing.assert_array_equal(arrays[name], value, err_msg=name)
    assert result.accounting.rows == 300 and result.accounting.mistakes == reference.mistakes_
    assert result.job.label_map == (("-1", -1), ("1", 1)) and result.trace["summary"]["n"] == 300


def test_a_window_and_a_warm_start_continue_the_same_model(small):
    """Rows 0:170 then 170:300 from the first model's state: the model of one pass over 0:300."""
    job = Job.build(
        "omkc",
        {"kernels": "gaussian:1;poly:2"},
        data=DataWindow(str(small), permute=False),
        settings=resolve_settings(scaling="none"),  # (a scaler fitted on the head would differ)
    )
    whole = LocalRunner().fit(job, small)
    head = LocalRunner().fit(_window(job, small, 0, 170), small)
    tail = LocalRunner().fit(_window(job, small, 170, 300), small, start_from=(head.model, head.scaler))
    assert tail.accounting.rows == 130 and tail.model.n_samples_seen_ == 300
    for name, value in whole.model.to_state()[0].items():
        np.testing.assert_array_equal(tail.model.to_state()[0][name], value, err_msg=name)


def _window(job, small, start, stop):
    from dataclasses import replace

    return replace(job, data=DataWindow(str(small), start=start, stop=stop, permute=False))


@pytest.mark.parametrize("group", [run, submit], ids=["run", "submit"])
def test_each_algorithm_command_takes_exactly_its_estimators_parameters(group):
    shared = {p.name for p in group.commands["omkc"].params} - (set(OMKC().get_params()) - set(JOB_FIELDS))
    for algo, cls in ALGORITHMS.items():
        names = {p.name for p in group.commands[algo].params} - shared
        assert names == set(cls().get_params()) - set(JOB_FIELDS), algo


def test_per_algorithm_help_gives_the_ranges():
    listing = CliRunner().invoke(main, ["run", "--help"]).output
    assert all(algo in listing for algo in ALGORITHMS)
    spa = " ".join(CliRunner().invoke(main, ["run", "spa", "--help"]).output.split())  # (unwrapped)
    assert "--hedge-loss [hinge|mistake]" in spa and "Hedge discount per unit of loss" in spa
    omkc = " ".join(CliRunner().invoke(main, ["run", "omkc", "--help"]).output.split())
    assert "Hedge discount" in omkc and "a float in (0, 1)" in omkc and "--hedge-loss" not in omkc
