"""LearnerSummary: numbers equal the logs, Burn's table layout, discovery and errors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.train.logger import FileMetricLogger
from burnish.train.metric.base import NumericEntry
from burnish.train.report.summary import (
    LearnerSummary,
    MetricSummary,
    MetricSummaryEntry,
    SummaryMetrics,
)

# Per split, metric and epoch: the (value, batch size) lines of each iteration.
LOGS = {
    "train": {
        "Loss": [
            [(3.0, 32), (2.0, 32), (1.0, 16)],
            [(1.5, 32), (1.0, 48)],
            [(0.01, 32), (0.0, 32)],
        ],
        "Accuracy": [[(40.0, 32), (60.0, 32)], [(75.5, 80)], [(70.0, 40), (81.0, 40)]],
    },
    "valid": {
        "Loss": [[(3.0, 10)], [(2.0, 10)], [(2.0, 10)]],
        "Accuracy": [[(50.0, 10)], [(75.5, 10)], [(70.0, 10)]],
    },
}


def weighted_mean(points):
    return sum(value * count for value, count in points) / sum(count for _, count in points)


@pytest.fixture
def artifact_dir(tmp_path):
    for split, metrics in LOGS.items():
        logger = FileMetricLogger(tmp_path / split)
        for epoch in (1, 2, 3):
            for name, epochs in metrics.items():
                logger.log(name, epoch, [NumericEntry(v, c) for v, c in epochs[epoch - 1]])
            logger.end_epoch(epoch)
    logger = FileMetricLogger(tmp_path / "train")
    logger.log("Status", 1, ["warming up"])  # a text metric: not in the table
    logger.close()
    return tmp_path


def test_numbers_equal_the_logs(artifact_dir):
    summary = LearnerSummary.from_dir(artifact_dir, ["Loss", "Accuracy"])
    assert summary.epochs == 3
    for split, summaries in (("train", summary.metrics.train), ("valid", summary.metrics.valid)):
        assert [metric.name for metric in summaries] == ["Loss", "Accuracy"]
        for metric in summaries:
            expected = [weighted_mean(points) for points in LOGS[split][metric.name]]
            assert [entry.step for entry in metric.entries] == [1, 2, 3]
            assert [entry.value for entry in metric.entries] == pytest.approx(expected, abs=1e-12)
    train_loss = summary.metrics.train[0]
    assert train_loss.min == MetricSummaryEntry(3, pytest.approx(0.005))
    assert train_loss.max.step == 1


def test_table_matches_burns_layout(artifact_dir):
    summary = LearnerSummary.from_dir(artifact_dir, ["Accuracy", "Loss"])
    assert str(summary) == (
        "======================== Learner Summary ========================\n"
        "Total Epochs: 3\n"
        "\n"
        "\n"
        "| Split | Metric   | Min.     | Epoch    | Max.     | Epoch    |\n"
        "|-------|----------|----------|----------|----------|----------|\n"
        "| Train | Accuracy | 50.000   | 1        | 75.500   | 3        |\n"
        "| Train | Loss     | 5.000e-3 | 3        | 2.200    | 1        |\n"
        "| Valid | Accuracy | 50.000   | 1        | 75.500   | 2        |\n"
        "| Valid | Loss     | 2.000    | 2        | 3.000    | 1        |\n"
    )


def test_with_model_prints_the_model_above_the_table(artifact_dir):
    summary = LearnerSummary.from_dir(artifact_dir, ["Loss"]).with_model("Model {\n  linear\n}")
    text = str(summary)
    assert text.startswith("=" * 24 + " Learner Summary " + "=" * 24 + "\nModel:\nModel {\n")
    assert "}\nTotal Epochs: 3\n" in text
    assert summary.model is not None and LearnerSummary.from_dir(artifact_dir).model is None


def test_metrics_default_to_every_numeric_log_sorted(artifact_dir):
    summary = LearnerSummary.from_dir(artifact_dir)
    assert [m.name for m in summary.metrics.train] == ["Accuracy", "Loss"]
    with pytest.raises(ValueError, match=r"Status\.log is not a numeric entry"):
        LearnerSummary.from_dir(artifact_dir, ["Status"])


def test_burns_plain_value_logs(tmp_path):
    # Burn's test_summary_should_be_collected: lines without a count weigh 1.
    (tmp_path / "train" / "epoch-1").mkdir(parents=True)
    (tmp_path / "valid" / "epoch-1").mkdir(parents=True)
    (tmp_path / "train" / "epoch-1" / "Loss.log").write_text("1.0\n2.0\n")
    (tmp_path / "valid" / "epoch-1" / "Loss.log").write_text("1.0\n")
    summary = LearnerSummary.from_dir(tmp_path, ["Loss"])
    assert summary.metrics.train[0].entries == [MetricSummaryEntry(1, 1.5)]
    assert summary.metrics.valid[0].entries == [MetricSummaryEntry(1, 1.0)]


def test_empty_logs_give_an_empty_table(tmp_path):
    (tmp_path / "train" / "epoch-1").mkdir(parents=True)
    summary = LearnerSummary.from_dir(tmp_path, ["Loss"])
    assert summary.epochs == 1
    assert summary.metrics.train == [] and summary.metrics.valid == []
    assert str(summary).endswith("|-------|--------|----------|----------|----------|----------|\n")


def test_min_takes_the_first_tie_max_the_last_and_nan_is_highest():
    metric = MetricSummary("Loss", [MetricSummaryEntry(1, 2.0), MetricSummaryEntry(2, 1.0)])
    metric.entries.extend([MetricSummaryEntry(3, 1.0), MetricSummaryEntry(4, 2.0)])
    assert (metric.min.step, metric.max.step) == (2, 4)
    metric.entries.append(MetricSummaryEntry(5, float("nan")))
    assert metric.max.step == 5 and metric.min.step == 2


def test_missing_directories_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="Artifact directory does not exist"):
        LearnerSummary.from_dir(tmp_path / "nope", ["Loss"])
    with pytest.raises(FileNotFoundError, match="No training, validation or test artifacts found"):
        LearnerSummary.from_dir(tmp_path, ["Loss"])


def table_lines(summary):
    return [line for line in str(summary).splitlines() if line.startswith("|")]


def bars(line):
    return [i for i, char in enumerate(line) if char == "|"]


def test_a_negative_value_keeps_a_space_before_its_bar():
    # A user trial's `| -1.031e-1| 1 |`: the sign made the value fill its 9 characters.
    metric = MetricSummary("Loss", [MetricSummaryEntry(1, -0.1031), MetricSummaryEntry(2, 0.5)])
    lines = table_lines(LearnerSummary(2, SummaryMetrics([metric], [])))
    assert lines[2] == "| Train | Loss   | -1.031e-1 | 1        | 0.500    | 2        |"
    assert len({len(line) for line in lines}) == 1 and len({tuple(bars(s)) for s in lines}) == 1


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e-300, max_value=1e-300),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0, 1e308, -1e308, 5e-324]),
)
metrics = st.lists(
    st.lists(values, min_size=1, max_size=4).map(
        lambda vs: MetricSummary("M", [MetricSummaryEntry(i + 1, v) for i, v in enumerate(vs)])
    ),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(train=metrics, valid=metrics, test=metrics, epochs=st.integers(0, 10**12))
def test_every_row_has_the_same_width_and_the_bars_align(train, valid, test, epochs):
    if train:  # an epoch number wider than the Epoch column
        train[0] = MetricSummary("Loss", [*train[0].entries, MetricSummaryEntry(epochs, 1.0)])
    summary = LearnerSummary(epochs, SummaryMetrics(train, valid, {"mnist": test}))
    lines = table_lines(summary)
    assert len(lines) == 2 + len(train) + len(valid) + len(test)
    assert {tuple(bars(line)) for line in lines} == {tuple(bars(lines[0]))}
    assert len(bars(lines[0])) == 7
    for line in lines[2:]:  # a space on each side of every cell
        cells = line.split("|")[1:-1]
        assert all(cell.startswith(" ") and cell.endswith(" ") for cell in cells), line
