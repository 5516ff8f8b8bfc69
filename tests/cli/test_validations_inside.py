"""`burnish summary` and `burnish report` of a run that validated inside its epochs
(`valid_every`): the valid split's epochs are validations, each placed where it was taken."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.cli.run_data import _validation_places, collect_run
from burnish.train import LearnerSummary
from burnish.train.logger.validations import (
    ValidationPoint,
    read_validations,
    write_validations,
)

from tests.cli.helpers import burnish
from tests.cli.tiny_run import train_run

# 8 iterations an epoch, a validation every 3 steps, 20 steps: epoch 3 is cut after 4.
PLACES = [0.375, 0.75, 1.0, 1.125, 1.5, 1.875, 2.0, 2.5, 3.0]


@pytest.fixture(scope="module")
def long_run_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cli") / "long"
    return train_run(directory, valid_every=3, max_iterations=20)


def test_summary_counts_epochs_for_train_and_validations_for_valid(long_run_dir):
    result = burnish("summary", long_run_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == str(LearnerSummary.from_dir(long_run_dir))
    assert "Total Epochs: 3\nValidations: 9 (the Epoch of a Valid row: its number)\n" in (
        result.stdout
    )
    summary = LearnerSummary.from_dir(long_run_dir)
    valid_loss = next(m for m in summary.metrics.valid if m.name == "Loss")
    train_loss = next(m for m in summary.metrics.train if m.name == "Loss")
    assert [e.step for e in valid_loss.entries] == list(range(1, 10))
    assert [e.step for e in train_loss.entries] == [1, 2, 3]


def test_report_places_each_validation_where_it_was_taken(long_run_dir, tmp_path):
    report = collect_run(long_run_dir)
    loss = next(curves for curves in report.curves if curves.name == "Loss")
    assert [x for x, _ in loss.means["valid"]] == PLACES
    assert [x for x, _ in loss.means["train"]] == [1.0, 2.0, 3.0]
    assert loss.last == {"train": "epoch 3", "valid": "validation 9"}
    valid_x = [x for x, _ in loss.iterations["valid"]]
    assert len(valid_x) == 9 * 3  # 96 items in batches of 32, per validation
    assert valid_x == sorted(valid_x) and valid_x[0] > 0 and valid_x[-1] == 3.0
    output = tmp_path / "report.html"
    result = burnish("report", long_run_dir, "-o", output)
    assert result.returncode == 0, result.stderr
    assert "(validation 9)" in output.read_text()


def test_a_damaged_validations_file_is_said_and_read_around(long_run_dir, tmp_path, caplog):
    import shutil

    run = shutil.copytree(long_run_dir, tmp_path / "run")
    (run / "valid" / "validations.json").write_text("{not json")
    summary = LearnerSummary.from_dir(run)
    assert summary.validations is None and summary.epochs == 9  # valid/epoch-N read as epochs
    assert "validations.json is not a validations file" in caplog.text
    assert burnish("report", run, "-o", tmp_path / "page.html").returncode == 0


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)
FIELDS = ["validation", "epoch", "iteration", "optimizer_steps", "epoch_end"]


@settings(max_examples=150, deadline=None)
@given(document=JSON | st.fixed_dictionaries({"validations": st.lists(JSON, max_size=3)}))
def test_any_json_is_read_as_validations_or_refused_by_name(tmp_path_factory, document):
    directory = tmp_path_factory.mktemp("validations")
    (directory / "validations.json").write_text(json.dumps(document))
    try:
        points = read_validations(directory)
    except ValueError as error:
        assert "validations.json is not a validations file" in str(error)
    else:
        assert isinstance(points, list)


POINTS = st.lists(
    st.builds(
        ValidationPoint,
        st.integers(0, 2**63 - 1),
        st.integers(0, 2**63 - 1),
        st.integers(0, 2**63 - 1),
        st.integers(0, 2**63 - 1),
        st.booleans(),
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(points=POINTS)
def test_any_validations_get_finite_places(tmp_path_factory, points):
    directory = tmp_path_factory.mktemp("valid")
    write_validations(directory, points)
    assert read_validations(directory) == points  # the file round-trips

    class Summary:
        validations = len(points)

    places = _validation_places(directory, Summary())
    assert places is not None
    assert all(math.isfinite(x) for x in places.values())
