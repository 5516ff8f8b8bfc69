"""examples/lr_finder.py, run short: the guide's learner finds a rate, writes lr_finder.json,
then trains at the suggestion and at the guide's rate."""

from __future__ import annotations

import pytest

from burnish.tune import LR_FINDER_FILE, LrFinderResult

from examples.lr_finder import main

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_example_suggests_a_rate_and_compares_it(tmp_path, capsys):
    artifact_dir = tmp_path / "lr_finder"
    found = main(["--iterations", "30", "--workers", "0", "--artifact-dir", str(artifact_dir),
                  "--compare-epochs", "1", "--limit", "640"])  # fmt: skip
    saved = LrFinderResult.load(artifact_dir / LR_FINDER_FILE)
    assert saved.num_iterations == 30 and saved.lrs[0] == 1e-8
    assert found["suggestion"] == saved.suggestion() and found["suggestion"] > 0
    assert 0 <= found["at_guide_lr"] <= 100 and 0 <= found["at_suggestion"] <= 100
    out = capsys.readouterr().out
    assert f"burnish report {artifact_dir}" in out and "Valid accuracy after 1 epoch" in out
    assert (tmp_path / "lr_finder-at_suggestion" / "checkpoint" / "epoch-1").is_dir()
