"""URLs as artifact directories: which strings are URLs, the Path that merged one, and the
staging directory each URL gets."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnish.storage.url import check_not_collapsed, is_url, normalized, staging_dir


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("s3://bucket/run", True),
        ("gs://bucket/a/b", True),
        ("memory://x", True),
        ("file:///tmp/run", False),  # a local path
        ("artifacts/run", False),
        ("/abs/run", False),
        ("C:\\runs\\x", False),
        ("s3:/bucket/run", False),  # what Path("s3://bucket/run") became
        (Path("s3://bucket/run"), False),  # a Path is never a URL
    ],
)
def test_which_locations_are_urls(location, expected):
    assert is_url(location) is expected


def test_a_path_that_merged_a_url_is_refused_naming_the_url():
    with pytest.raises(ValueError, match=r"'s3://bucket/run'.*LearnerBuilder\('s3://bucket/run'\)"):
        check_not_collapsed(Path("s3://bucket/run"))
    check_not_collapsed(Path("runs/s3:/x"))  # a folder named s3: deeper down is a folder
    check_not_collapsed(Path("C:/runs"))  # a drive letter is not a protocol
    check_not_collapsed("s3://bucket/run")  # the URL itself is fine


def test_trailing_slashes_name_the_same_run_and_an_empty_url_is_refused():
    assert normalized("s3://bucket/run///") == "s3://bucket/run"
    assert staging_dir("s3://bucket/run/", "/r") == staging_dir("s3://bucket/run", "/r")
    assert staging_dir("s3://bucket/run", "/r") != staging_dir("s3://bucket/run2", "/r")
    with pytest.raises(ValueError, match="names no bucket"):
        normalized("s3://")


def test_the_staging_directory_is_under_burnish_staging_and_hides_credentials(monkeypatch):
    monkeypatch.setenv("BURNISH_STAGING", "/tmp/staging-root")
    path = staging_dir("https://user:secret@host.example/runs/mnist")
    assert path.parent == Path("/tmp/staging-root")
    assert "secret" not in path.name and "user" not in path.name
    assert path.name.startswith("host.example-runs-mnist-")
    monkeypatch.delenv("BURNISH_STAGING")
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/cache-root")
    assert staging_dir("s3://b/r").parent == Path("/tmp/cache-root/burnish/staging")


@given(st.text(max_size=200))
def test_any_string_is_sorted_without_crashing(text):
    """Empty, odd and huge strings: a URL or not, and a staging name of one path component."""
    if is_url(text):
        try:
            path = staging_dir(text, "/root")
        except ValueError:  # names no bucket
            return
        assert path.parent == Path("/root") and "/" not in path.name and path.name
    else:
        try:
            check_not_collapsed(text)
        except ValueError as error:
            assert "://" in str(error)
