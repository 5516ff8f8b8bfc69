"""`burnish summary DIR`, through the console script and `python -m burnish`."""

import shutil

import pytest

from burnish.train import LearnerSummary

from tests.cli.helpers import burnish


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_summary_prints_the_learner_summary_of_a_run(run_dir, module):
    result = burnish("summary", run_dir, module=module)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == str(LearnerSummary.from_dir(run_dir))
    assert "Total Epochs: 3" in result.stdout
    for split in ("Train", "Valid"):
        for metric in ("Accuracy", "Loss"):
            assert f"| {split} | {metric}" in result.stdout


def test_summary_of_an_interrupted_run(run_dir, tmp_path):
    """Killed mid-epoch 3: no valid logs for it, a train log cut in the middle of a line, and
    no aggregates for train epoch 3 (they are written when an epoch ends): its value is the
    count-weighted mean of the complete lines."""
    run = shutil.copytree(run_dir, tmp_path / "run")
    shutil.rmtree(run / "valid" / "epoch-3")
    (run / "train" / "epoch-3" / "aggregates.json").unlink()
    log = run / "train" / "epoch-3" / "Loss.log"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text(lines[0] + lines[1] + lines[2][:5])  # the third write was cut short
    result = burnish("summary", run)
    assert result.returncode == 0, result.stderr
    assert result.stdout == str(LearnerSummary.from_dir(run))
    summary = LearnerSummary.from_dir(run)
    train_loss = next(m for m in summary.metrics.train if m.name == "Loss")
    assert [entry.step for entry in train_loss.entries] == [1, 2, 3]
    first_two = [float(line.split(",")[0]) for line in lines[:2]]
    assert train_loss.entries[-1].value == pytest.approx(sum(first_two) / 2)
    valid_loss = next(m for m in summary.metrics.valid if m.name == "Loss")
    assert [entry.step for entry in valid_loss.entries] == [1, 2]
