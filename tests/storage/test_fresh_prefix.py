"""The first run into a URL under which nothing is stored yet (moto's S3 server on 127.0.0.1,
IAM authentication on): an empty prefix is a fresh run's directory, whatever the bucket is
called; only a bucket that really is missing is reported as missing.

A user's `LearnerBuilder("s3://my-bucket/runs/fresh")` once failed with "the bucket does not
exist": the store's error named the path, the path held the word "bucket", and the word was
taken for the store's. No `config.save` into the prefix first: the run is the first writer.
"""

from __future__ import annotations

import pytest

from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.storage import ObjectStore, StorageError
from burnish.train import LearnerBuilder
from burnish.train.metric import LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.cli.tiny_run import Classifier, PairBatcher, _items


@pytest.fixture
def staging(tmp_path, monkeypatch):
    """This machine's staging area, empty."""
    monkeypatch.setenv("BURNISH_STAGING", str(tmp_path / "staging"))
    return tmp_path / "staging"


def fit(url: str):
    """One epoch of a tiny classifier into `url`, checkpointed at its end."""
    from burnish.data.dataloader import DataLoaderBuilder

    loader = DataLoaderBuilder(PairBatcher()).batch_size(32)
    learner = (
        LearnerBuilder(url)
        .metric_train_numeric(LossMetric())
        .with_file_checkpointer(DefaultRecorder())
        .resume()
        .num_epochs(1)
        .renderer(CliMetricsRenderer())
        .build(Classifier(8), AdamConfig().init(), 0.01)
    )
    return learner.fit(loader.build(_items(64, 1)), loader.build(_items(32, 2)))


@pytest.mark.parametrize("prefix", ["runs/fresh", "toplevel", ""])
@pytest.mark.parametrize("name", ["my-bucket", "empty-bucket", "run"])
def test_a_first_run_into_an_empty_prefix_trains_and_uploads(s3_env, staging, name, prefix):
    bucket = s3_env.new_bucket(name)
    url = f"s3://{bucket}/{prefix}".rstrip("/")
    ObjectStore(url).check()  # what `fit` asks first
    assert fit(url).epochs_completed == 1
    keys = s3_env.objects(bucket)
    root = f"{prefix}/" if prefix else ""
    assert f"{root}checkpoint/epoch-1/COMMIT" in keys
    assert f"Artifact directory: {url}".encode() in keys[f"{root}experiment.log"]
    assert f"{root}config.json" not in keys and f"{root}.burnish.lock" not in keys


@pytest.mark.parametrize("prefix", ["runs/fresh", ""])
def test_a_missing_bucket_is_named_and_nothing_trains(s3_env, staging, prefix):
    bucket = f"no-such-bucket-{s3_env.new_bucket('x')[2:]}"  # a name no bucket has
    url = f"s3://{bucket}/{prefix}".rstrip("/")
    message = rf"{url} \(list\) failed: the bucket does not exist \('{bucket}'\)\. Create it"
    with pytest.raises(StorageError, match=message):
        fit(url)
    assert not list((staging).glob("*/checkpoint"))  # stopped before training
    names = {b["Name"] for b in s3_env.client().list_buckets()["Buckets"]}
    assert bucket not in names  # and created nothing


def test_a_listing_error_that_names_the_word_bucket_is_not_a_missing_bucket(s3_env):
    """The bucket exists; any other failure keeps its own fix (here: the credentials)."""
    bucket = s3_env.new_bucket("my-bucket")
    store = ObjectStore(f"s3://{bucket}/runs/fresh", {"key": "AKIAWRONG", "secret": "wrong"})
    with pytest.raises(StorageError, match="refused the credentials") as raised:
        store.check()
    assert "bucket does not exist" not in str(raised.value)
