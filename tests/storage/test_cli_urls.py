"""`burnish summary`, `report` and `inspect` read a run (or a record) at a URL: moto's S3
server on 127.0.0.1 holds a real run, uploaded by a `Mirror` as a training run uploads it."""

from __future__ import annotations

import pytest

from burnish.storage import Mirror, ObjectStore

from tests.cli.helpers import assert_one_line_error, burnish
from tests.cli.tiny_run import train_run


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """A finished run (logs, checkpoints, config.json, model.mpk) in a local directory."""
    return train_run(tmp_path_factory.mktemp("cli-url") / "run")


@pytest.fixture
def url(local_run, bucket) -> str:
    """The run, uploaded to `s3://<bucket>/runs/run`."""
    url = f"s3://{bucket}/runs/run"
    Mirror(ObjectStore(url), local_run).sync()
    return url


def test_summary_of_a_url_is_the_summary_of_the_run(url, local_run):
    remote, local = burnish("summary", url), burnish("summary", local_run)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout and "Learner Summary" in remote.stdout


def test_report_of_a_url_is_written_here_with_its_checkpoints(url, local_run, tmp_path):
    result = burnish("report", url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "report.html").read_text()
    committed = sorted(p.name for p in (local_run / "checkpoint").iterdir())
    assert committed and all(name in page for name in committed)
    assert "<svg" in page and "hidden_size" in page  # the curves and config.json


def test_inspect_of_a_url_is_the_inspection_of_the_file(url, local_run):
    remote, local = (
        burnish("inspect", f"{url}/model.mpk"),
        burnish("inspect", local_run / "model.mpk"),
    )
    assert remote.returncode == 0, remote.stderr
    drop_path = lambda text: text.splitlines()[1:]  # noqa: E731 (the first line names the file)
    assert drop_path(remote.stdout) == drop_path(local.stdout)


def test_a_url_without_a_run_or_file_is_one_clear_line(bucket, s3_env):
    assert_one_line_error(
        burnish("summary", f"s3://{bucket}/nothing"),
        f"No run at s3://{bucket}/nothing: nothing is stored under that path",
        f"the bucket '{bucket}' exists",
    )
    assert_one_line_error(burnish("inspect", f"s3://{bucket}/x/model.mpk"), "does not exist")


def test_a_missing_path_in_a_bucket_named_bucket_is_no_run_not_a_missing_bucket(s3_env):
    """A bucket whose name holds the word "bucket" once made a missing path read as a missing
    bucket; the bucket itself is asked now."""
    bucket = s3_env.new_bucket("my-bucket")
    missing = burnish("summary", f"s3://{bucket}/runs/nothere")
    assert_one_line_error(missing, f"No run at s3://{bucket}/runs/nothere", "exists")
    assert "does not exist" not in missing.stderr
    assert_one_line_error(
        burnish("summary", f"s3://no-such-{bucket}/runs/nothere"),
        f"s3://no-such-{bucket}/runs/nothere",
        "the bucket does not exist",
    )


def test_wrong_credentials_are_one_clear_line(url, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    assert_one_line_error(burnish("summary", url), "refused the credentials")
