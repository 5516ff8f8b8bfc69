"""examples/lr_finder.py, run short: the guide's learner finds a rate, writes lr_finder.json,
then trains at the suggestion and at the guide's rate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from burnish.tune import LR_FINDER_FILE, LrFinderResult

from examples.lr_finder import ARTIFACT_DIR, main

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_example_suggests_a_rate_and_compares_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default --artifact-dir, relative to where it runs
    found = main(["--iterations", "30", "--workers", "0", "--compare-epochs", "1",
                  "--limit", "640"])  # fmt: skip
    artifact_dir = tmp_path / "artifacts" / "lr-finder"
    saved = LrFinderResult.load(artifact_dir / LR_FINDER_FILE)
    assert saved.num_iterations == 30 and saved.lrs[0] == 1e-8
    assert found["suggestion"] == saved.suggestion() and found["suggestion"] > 0
    assert 0 <= found["at_guide_lr"] <= 100 and 0 <= found["at_suggestion"] <= 100
    out = capsys.readouterr().out
    assert "burnish report artifacts/lr-finder" in out and "Valid accuracy after 1 epoch" in out
    assert (tmp_path / "artifacts" / "lr-finder-at_suggestion" / "checkpoint" / "epoch-1").is_dir()


def test_the_docs_and_the_example_use_one_directory():
    # A user trial ran the page's `burnish report artifacts/lr-finder` after the example,
    # which wrote artifacts/lr_finder.
    page = (REPO / "docs" / "lr-finder.md").read_text()
    example = (REPO / "examples" / "lr_finder.py").read_text()
    for text in (page, example):
        found = set(re.findall(r"artifacts/lr[-_ ]?finder", text, flags=re.IGNORECASE))
        assert found == {ARTIFACT_DIR}, found
