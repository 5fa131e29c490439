"""The experiment a run is logged to (``omkl_dist.mlflow.tracking.experiment_id``) when creating it
fails: made meanwhile by another job, or its answer lost on a dropped connection (seen in CI: the
tracking server closed the connection after a lookup, before the create's answer). A stand-in client
replays MLflow's answers."""

import pytest
from mlflow.exceptions import MlflowException

from omkl_dist.mlflow.tracking import experiment_id


class Experiment:
    def __init__(self, experiment_id):
        self.experiment_id = experiment_id


class Client:
    """``create_experiment`` fails ``failures`` times (``made``: after making the experiment, as when
    only the answer was lost or another job made it), then succeeds."""

    def __init__(self, failures: int, made: bool):
        self.failures, self.made, self.experiments = failures, made, {}

    def get_experiment_by_name(self, name):
        return Experiment(self.experiments[name]) if name in self.experiments else None

    def create_experiment(self, name):
        if self.failures:
            self.failures -= 1
            if self.made:
                self.experiments[name] = "7"
            raise MlflowException("API request to http://127.0.0.1/api/2.0/mlflow/experiments/create failed")
        self.experiments[name] = "8"
        return "8"


def test_an_experiment_made_meanwhile_is_found():
    assert experiment_id(Client(failures=1, made=True), "omkl-dist") == "7"


def test_a_create_whose_connection_dropped_is_tried_again():
    assert experiment_id(Client(failures=1, made=False), "omkl-dist") == "8"


def test_a_create_that_keeps_failing_raises_mlflows_error_not_ours():
    with pytest.raises(MlflowException, match="experiments/create failed"):
        experiment_id(Client(failures=2, made=False), "omkl-dist")


def test_an_existing_experiment_is_not_made_again():
    client = Client(failures=5, made=False)
    client.experiments["omkl-dist"] = "3"
    assert experiment_id(client, "omkl-dist") == "3"
