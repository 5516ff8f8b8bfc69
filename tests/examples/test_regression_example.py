"""The regression example: a user-defined metric through the Learner, on real data."""

from __future__ import annotations

import pytest

from burnish.train import LearnerSummary

from examples.regression.__main__ import main
from tests.helpers import iteration_lines

# One intra-op thread: two per test worker oversubscribe the cores (fp16's emulated kernels
# took 10.6 s of CPU with two, 7.1 s with one; the same numbers).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _epoch_values(summary, split, name):
    metric = next(m for m in getattr(summary.metrics, split) if m.name == name)
    return [entry.value for entry in metric.entries]


def test_user_metric_is_logged_and_the_model_learns(tmp_path):
    result = main(["--epochs", "30", "--artifact-dir", str(tmp_path)])
    assert result.epochs_completed == 30
    summary = LearnerSummary.from_dir(tmp_path)
    mae = _epoch_values(summary, "valid", "MeanAbsoluteError")
    assert len(mae) == 30
    # Predicting the training mean gives a MAE of about 60 on this data; the MLP does better.
    assert mae[-1] < 50.0 < mae[0] or mae[-1] < 0.8 * mae[0]
    lines = iteration_lines(tmp_path / "valid" / "epoch-30" / "MeanAbsoluteError.log")
    assert [int(line.split(",")[1]) for line in lines] == [32, 32, 25]  # 89 validation patients
