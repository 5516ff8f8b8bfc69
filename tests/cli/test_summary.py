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


def test_summary_names_metrics_as_the_live_summary_does(constant_lr_run_dir):
    """`Learning Rate` is logged to `Learning_Rate.log`; the table says `Learning Rate`."""
    assert (constant_lr_run_dir / "train" / "epoch-1" / "Learning_Rate.log").is_file()
    result = burnish("summary", constant_lr_run_dir)
    assert result.returncode == 0, result.stderr
    assert "| Train | Learning Rate | 0.100    | 1        | 0.100    |" in result.stdout
    assert "Learning_Rate" not in result.stdout


def test_a_damaged_line_in_an_older_runs_log_is_reported_not_dropped_silently(run_dir, tmp_path):
    """An epoch without aggregates (an older run) is read from its lines; a damaged line there
    leaves the metric out of the table, and says so (a trial saw the row vanish, exit 0)."""
    run = shutil.copytree(run_dir, tmp_path / "run")
    (run / "train" / "epoch-1" / "aggregates.json").unlink()
    log = run / "train" / "epoch-1" / "Loss.log"
    log.write_text(log.read_text() + "garbage\n")
    result = burnish("summary", run)
    assert result.returncode == 0, result.stderr
    assert "| Train | Loss" not in result.stdout and "| Valid | Loss" in result.stdout
    assert "train Loss is left out of the summary" in result.stderr
    assert "'garbage'" in result.stderr and "Loss.log" in result.stderr


def test_a_stray_epoch_0_directory_is_not_read(run_dir, tmp_path):
    """Epochs count from 1: `epoch-0` is someone else's directory (it failed the command)."""
    run = shutil.copytree(run_dir, tmp_path / "run")
    (run / "train" / "epoch-0").mkdir()
    (run / "train" / "epoch-0" / "Loss.log").write_text("1.0,1\n")
    result = burnish("summary", run)
    assert result.returncode == 0, result.stderr
    assert result.stdout == burnish("summary", run_dir).stdout


@pytest.mark.parametrize("command", ["summary", "report"])
def test_a_damaged_aggregates_file_is_reported_once(run_dir, tmp_path, command):
    run = shutil.copytree(run_dir, tmp_path / "run")
    (run / "valid" / "epoch-2" / "aggregates.json").write_text("{not json")
    result = burnish(command, run)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("is not a burnish epoch aggregates file") == 1, result.stderr
    if command == "summary":  # read around: the values come from the lines, as for old runs
        assert result.stdout == burnish("summary", run_dir).stdout
