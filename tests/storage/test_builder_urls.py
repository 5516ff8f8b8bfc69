"""What the builders do with a URL, before any server is involved: the staging directory as
the run's directory, a Path that merged a URL refused, options that need a URL, a protocol
whose library is missing, and an Evaluator given a URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from burnish.errors import ArtifactDirError
from burnish.storage import RemoteArtifactDir, StorageError, staging_dir
from burnish.train import LearnerBuilder
from burnish.train.loop.artifact_dir import check_artifact_dir


def test_a_url_runs_in_its_staging_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("BURNISH_STAGING", str(tmp_path))
    options = LearnerBuilder("s3://bucket/run/")._options()
    assert isinstance(options.storage, RemoteArtifactDir)
    assert options.storage.url == "s3://bucket/run"
    assert (
        options.artifact_dir == staging_dir("s3://bucket/run")
        and options.artifact_dir.parent == tmp_path
    )
    assert options.logging.application_logger.path == options.artifact_dir / "experiment.log"
    assert LearnerBuilder(tmp_path / "local")._options().storage is None


def test_a_path_that_merged_a_url_is_refused():
    with pytest.raises(ValueError, match=r"LearnerBuilder\('s3://bucket/run'\)"):
        LearnerBuilder(Path("s3://bucket/run"))


def test_storage_options_need_a_url(tmp_path):
    with pytest.raises(
        ValueError, match="`storage_options` are for an artifact directory on object"
    ):
        LearnerBuilder(tmp_path, storage_options={"key": "x"})


def test_an_unknown_protocol_fails_when_the_builder_is_made():
    with pytest.raises(StorageError, match="fsspec knows no protocol 'nosuchproto'"):
        LearnerBuilder("nosuchproto://bucket/run")


def test_a_url_where_only_a_local_directory_works_is_refused():
    with pytest.raises(
        ArtifactDirError, match="is a URL: only `LearnerBuilder` and `SupervisedTraining`"
    ):
        check_artifact_dir("s3://bucket/eval")
    with pytest.raises(ArtifactDirError, match="looks like the URL 's3://bucket/eval'"):
        check_artifact_dir(Path("s3://bucket/eval"))
