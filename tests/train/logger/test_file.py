"""FileMetricLogger: Burn's layout, batched writes, read-back and exact resume."""

import pytest
import torch

from burnish.errors import CheckpointError
from burnish.train.logger import FileMetricLogger, metric_file_stem
from burnish.train.metric.base import MetricEntry, NumericEntry


def lines(path):
    return path.read_text().splitlines()


def test_layout_one_line_per_entry_and_sanitised_names(tmp_path):
    logger = FileMetricLogger(tmp_path / "train")
    logger.log("Loss", 1, [NumericEntry(0.5, 32), NumericEntry(0.25, 16)])
    logger.log("Top-5 Accuracy", 1, [NumericEntry(torch.tensor(87.5), 32)])
    logger.log("CPU Memory", 1, [MetricEntry("CPU Memory", "1 GB", "1.5")])
    logger.end_epoch(1)
    logger.log("Loss", 2, [NumericEntry(0.125, 32)])
    logger.end_epoch(2)

    epoch_1 = tmp_path / "train" / "epoch-1"
    assert sorted(p.name for p in epoch_1.iterdir()) == [
        "CPU_Memory.log",
        "Loss.log",
        "Top-5_Accuracy.log",
    ]
    assert lines(epoch_1 / "Loss.log") == ["0.5,32", "0.25,16"]
    assert lines(epoch_1 / "Top-5_Accuracy.log") == ["87.5,32"]
    assert lines(epoch_1 / "CPU_Memory.log") == ["1.5"]
    assert lines(tmp_path / "train" / "epoch-2" / "Loss.log") == ["0.125,32"]
    assert logger.epochs() == 2
    # Listed by the names they were logged under, not by their file names.
    assert logger.metric_names() == ["CPU Memory", "Loss", "Top-5 Accuracy"]
    assert FileMetricLogger(tmp_path / "train").metric_names() == logger.metric_names()


def test_file_stem_replaces_spaces_and_path_characters():
    assert metric_file_stem("Top-5 Accuracy @ 1") == "Top-5_Accuracy_@_1"
    assert metric_file_stem("loss/train: a") == "loss_train__a"
    with pytest.raises(ValueError, match="non-empty string"):
        metric_file_stem("..")


def test_lines_stay_in_memory_until_a_batch_is_full(tmp_path):
    logger = FileMetricLogger(tmp_path, max_buffered_lines=4)
    path = tmp_path / "epoch-1" / "Loss.log"
    for _ in range(3):
        logger.log("Loss", 1, [NumericEntry(1.0, 2)])
    assert path.read_text() == ""  # nothing written per iteration
    logger.log("Loss", 1, [NumericEntry(2.0, 2)])
    logger.flush()
    assert lines(path) == ["1,2"] * 3 + ["2,2"]  # Rust writes 1.0 as `1`
    logger.log("Loss", 1, [NumericEntry(3.0, 2)])
    logger.close()
    assert lines(path)[-1] == "3,2"


def test_read_numeric_sees_buffered_lines_and_missing_is_empty(tmp_path):
    logger = FileMetricLogger(tmp_path)
    logger.log("Loss", 1, [NumericEntry(0.5, 3), NumericEntry(1.5, 1)])
    assert logger.read_numeric("Loss", 1) == [NumericEntry(0.5, 3), NumericEntry(1.5, 1)]
    assert logger.read_numeric("Loss", 2) == []
    assert logger.read_numeric("Accuracy", 1) == []


def test_read_numeric_of_a_text_metric_names_the_file_and_line(tmp_path):
    logger = FileMetricLogger(tmp_path)
    logger.log("Status", 1, ["fine"])
    with pytest.raises(ValueError, match=r"Line 1 of .*Status\.log is not a numeric entry"):
        logger.read_numeric("Status", 1)


def test_a_text_entry_with_line_breaks_stays_one_line(tmp_path):
    """Line counts are the logs' positions for resume: one entry must be one line."""
    logger = FileMetricLogger(tmp_path)
    logger.log("Status", 1, [MetricEntry("Status", "a\nb", "a\r\nb"), "c\rd"])
    logger.close()
    assert (tmp_path / "epoch-1" / "Status.log").read_text() == "a b\nc d\n"
    assert logger.positions(1)["lines"] == {"Status": 2}


def test_a_new_run_replaces_stale_files_and_later_logs_append(tmp_path):
    old = FileMetricLogger(tmp_path)
    old.log("Loss", 1, [NumericEntry(9.0, 1)] * 5)
    old.end_epoch(1)
    new = FileMetricLogger(tmp_path)
    new.log("Loss", 1, [NumericEntry(1.0, 1)])
    new.close()
    new.log("Loss", 1, [NumericEntry(2.0, 1)])  # same epoch after close: appends
    new.end_epoch(1)
    assert lines(tmp_path / "epoch-1" / "Loss.log") == ["1,1", "2,1"]


def test_unterminated_last_line_is_ignored(tmp_path):
    (tmp_path / "epoch-1").mkdir()
    (tmp_path / "epoch-1" / "Loss.log").write_text("1.0,2\n3.0,2\n4.")
    assert FileMetricLogger(tmp_path).read_numeric("Loss", 1) == [
        NumericEntry(1.0, 2),
        NumericEntry(3.0, 2),
    ]


def run(directory, iterations, crash_at=None, positions=None):
    """Log two metrics over two epochs of `iterations` iterations; optionally stop early."""
    logger = FileMetricLogger(directory, max_buffered_lines=3)
    saved = None
    start = (1, 0)
    if positions is not None:
        logger.truncate_to(positions)
        start = (positions["epoch"], positions["lines"].get("Loss", 0))
    for epoch in (1, 2):
        for iteration in range(iterations):
            if (epoch, iteration) < start:
                continue
            if (epoch, iteration) == crash_at:
                saved = logger.positions()
            logger.log("Loss", epoch, [NumericEntry(epoch + iteration / 10, 4)])
            if iteration % 2 == 0:
                logger.log("Accuracy", epoch, [NumericEntry(float(iteration), 4)])
        logger.end_epoch(epoch)
    return saved


@pytest.mark.parametrize("crash_epoch", [1, 2])
def test_resume_after_crash_gives_the_uninterrupted_logs(tmp_path, crash_epoch):
    run(tmp_path / "reference", 7)
    # The crashed run checkpoints at iteration 4 then keeps logging (into the next epoch too)
    # before it dies; everything after the checkpoint must disappear on resume.
    crashed = tmp_path / "crashed"
    positions = run(crashed, 7, crash_at=(crash_epoch, 4))
    assert positions == {"epoch": crash_epoch, "lines": {"Loss": 4, "Accuracy": 2}}
    run(crashed, 7, positions=positions)
    for path in sorted((tmp_path / "reference").rglob("*.log")):
        twin = crashed / path.relative_to(tmp_path / "reference")
        assert twin.read_bytes() == path.read_bytes(), twin
    assert sorted(p.relative_to(crashed) for p in crashed.rglob("*")) == sorted(
        p.relative_to(tmp_path / "reference") for p in (tmp_path / "reference").rglob("*")
    )


def test_truncate_to_removes_unlisted_metrics_and_later_epochs(tmp_path):
    logger = FileMetricLogger(tmp_path)
    logger.log("Loss", 1, [NumericEntry(1.0, 1)] * 2)
    positions = logger.positions()
    logger.log("Loss", 1, [NumericEntry(2.0, 1)])
    logger.log("Accuracy", 1, [NumericEntry(2.0, 1)])
    logger.end_epoch(1)
    logger.log("Loss", 2, [NumericEntry(3.0, 1)])
    logger.flush()
    # Writes a SIGKILL cut short (atomic_open's temp files), in the epoch and a later one; a
    # user's own hidden file is not burnish's to delete.
    (tmp_path / "epoch-1" / ".aggregates.json.0123456789ab.tmp").write_text("{")
    (tmp_path / "epoch-2" / ".aggregates.json.ba9876543210.tmp").write_text("{")
    (tmp_path / "epoch-1" / ".notes.tmp").write_text("mine")

    logger.truncate_to(positions)
    assert sorted(p.name for p in (tmp_path / "epoch-1").iterdir()) == [".notes.tmp", "Loss.log"]
    assert not (tmp_path / "epoch-2").exists()
    assert lines(tmp_path / "epoch-1" / "Loss.log") == ["1,1"] * 2
    logger.log("Loss", 1, [NumericEntry(5.0, 1)])
    assert logger.positions() == {"epoch": 1, "lines": {"Loss": 3}}


def test_positions_after_end_epoch_point_at_the_next_epoch(tmp_path):
    logger = FileMetricLogger(tmp_path)
    logger.log("Loss", 1, [NumericEntry(1.0, 1)])
    logger.end_epoch(1)
    assert logger.positions() == {"epoch": 2, "lines": {}}


def test_truncate_to_more_lines_than_on_disk_is_a_checkpoint_error(tmp_path):
    logger = FileMetricLogger(tmp_path)
    logger.log("Loss", 1, [NumericEntry(1.0, 1)])
    logger.close()
    with pytest.raises(
        CheckpointError, match=r"has 1 complete lines but the checkpoint says it had 5"
    ):
        FileMetricLogger(tmp_path).truncate_to({"epoch": 1, "lines": {"Loss": 5}})
    with pytest.raises(CheckpointError, match=r"Accuracy\.log is missing"):
        FileMetricLogger(tmp_path).truncate_to({"epoch": 1, "lines": {"Accuracy": 2}})


def test_bad_input_is_rejected_with_clear_messages(tmp_path):
    logger = FileMetricLogger(tmp_path)
    with pytest.raises(ValueError, match=r"`epoch` must be an int >= 1.*Received: 0"):
        logger.log("Loss", 0, [NumericEntry(1.0, 1)])
    with pytest.raises(ValueError, match=r"`max_buffered_lines` must be an int >= 1"):
        FileMetricLogger(tmp_path, max_buffered_lines=0)
    logger.log("a b", 1, ["1.0"])
    with pytest.raises(ValueError, match=r"'a b' and 'a_b' would both be logged to `a_b.log`"):
        logger.log("a_b", 1, ["1.0"])
    with pytest.raises(ValueError, match="must be the record returned by `positions"):
        logger.truncate_to({"lines": {}})
    with pytest.raises(ValueError, match=r"positions\['lines'\]\['Loss'\]` must be an int >= 0"):
        logger.truncate_to({"epoch": 1, "lines": {"Loss": -1}})
