"""Fixtures of the tracker tests: W&B offline under the test's directory, an empty MLflow store."""

import pytest

from tests.train.logger import tracker_schedule as schedule


@pytest.fixture
def wandb_home(tmp_path, monkeypatch):
    home = tmp_path / "wandb-home"
    for key, value in schedule.wandb_env(home).items():
        monkeypatch.setenv(key, value)
    return home


@pytest.fixture(scope="session")
def mlflow_db(tmp_path_factory):
    """An empty MLflow SQLite store, made once: creating its schema takes MLflow seconds."""
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path
