"""`burnish report` draws a validation's per-batch values where the validation ran (its
epoch's end, or its place inside the epoch), not across the epoch before it from 0; the run
lock's file stays in the directory and out of the page's file list."""

from __future__ import annotations

import shutil

import pytest

from burnish.cli.report import collect_run
from burnish.run_lock import LOCK_NAME

from tests.cli.test_report import render
from tests.cli.tiny_run import EPOCHS, train_run


def loss_curves(directory):
    report = collect_run(directory)
    return report, next(curves for curves in report.curves if curves.name == "Loss")


def test_validation_batches_stand_at_their_epochs_end(run_dir):
    _, loss = loss_curves(run_dir)
    valid_x = [x for x, _ in loss.iterations["valid"]]
    train_x = [x for x, _ in loss.iterations["train"]]
    assert len(valid_x) > EPOCHS  # several batches a validation
    assert set(valid_x) == set(range(1, EPOCHS + 1))  # each validation at its epoch's end
    assert min(train_x) < 1  # training's batches still spread over their epoch
    assert [x for x, _ in loss.means["valid"]] == list(range(1, EPOCHS + 1))


def test_validations_inside_epochs_stand_where_they_ran(tmp_path):
    directory = train_run(tmp_path / "long", valid_every=3, max_iterations=20)
    _, loss = loss_curves(directory)
    places = [x for x, _ in loss.means["valid"]]
    assert places == [0.375, 0.75, 1.0, 1.125, 1.5, 1.875, 2.0, 2.5, 3.0]
    batches = len(loss.iterations["valid"]) // len(places)
    assert [x for x, _ in loss.iterations["valid"]] == [p for p in places for _ in range(batches)]


def test_the_lock_file_is_left_in_place_and_out_of_the_files(run_dir, tmp_path):
    run = shutil.copytree(run_dir, tmp_path / "run")
    assert (run / LOCK_NAME).is_file()  # kept: deleting a flock'd file lets two writers in
    report, _ = loss_curves(run)
    names = [name for name, _ in report.files]
    assert LOCK_NAME not in names and "experiment.log" in names


def test_the_page_shows_validation_at_epoch_ends(run_dir, tmp_path, chromium_binary):
    from tests.cli.helpers import burnish

    output = tmp_path / "report.html"
    assert burnish("report", run_dir, "-o", output).returncode == 0
    assert LOCK_NAME not in output.read_text()
    messages, screenshot = render(chromium_binary, output, tmp_path / "report.png")
    assert messages == [] and screenshot.stat().st_size > 0


def write_run(directory, train_batches, validations, valid_batches=3):
    """A run dir as burnish writes it: `train/epoch-E/Loss.log` with one line per train batch
    (`train_batches[E - 1]` of them), `valid/epoch-N/Loss.log` per validation and
    `valid/validations.json` saying where each validation ran."""
    from burnish.train.logger.validations import ValidationPoint, write_validations

    for epoch, batches in enumerate(train_batches, 1):
        lines = "".join(f"{1.0 / (epoch + k)!r},32\n" for k in range(batches))
        (directory / "train" / f"epoch-{epoch}").mkdir(parents=True)
        (directory / "train" / f"epoch-{epoch}" / "Loss.log").write_text(lines)
    points = []
    for number, (epoch, iteration, epoch_end) in enumerate(validations, 1):
        (directory / "valid" / f"epoch-{number}").mkdir(parents=True)
        lines = "".join(f"{0.5 + k / 10!r},32\n" for k in range(valid_batches))
        (directory / "valid" / f"epoch-{number}" / "Loss.log").write_text(lines)
        points.append(ValidationPoint(number, epoch, iteration, iteration, epoch_end))
    write_validations(directory / "valid", points)
    return directory


def assert_places(loss, expected):
    """The valid means and every valid batch stand at `expected`; each is where training
    stood then on the train curve."""
    assert [x for x, _ in loss.means["valid"]] == pytest.approx(expected, abs=1e-12)
    valid_x = [x for x, _ in loss.iterations["valid"]]
    assert valid_x == pytest.approx([x for x in expected for _ in range(3)], abs=1e-12)


def test_validations_of_an_interrupted_epoch_stand_at_their_share_of_its_logged_batches(
    tmp_path,
):
    # Ctrl-C after 272 logged train batches of epoch 1; validations after batches 100, 200.
    directory = write_run(tmp_path / "run", [272], [(1, 100, False), (1, 200, False)])
    _, loss = loss_curves(directory)
    assert_places(loss, [100 / 272, 200 / 272])
    train_x = [x for x, _ in loss.iterations["train"]]
    assert len(train_x) == 272 and train_x[-1] == pytest.approx(1.0)
    assert train_x[99] == pytest.approx(100 / 272) and train_x[199] == pytest.approx(200 / 272)


def test_an_ended_epoch_keeps_its_length_and_the_interrupted_one_after_it_its_logs(tmp_path):
    # Epoch 1: 300 batches, validated at 150 and at its end; epoch 2 stopped after 120
    # logged batches, validated at 100 of them.
    validations = [(1, 150, False), (1, 300, True), (2, 100, False)]
    directory = write_run(tmp_path / "run", [300, 120], validations)
    _, loss = loss_curves(directory)
    assert_places(loss, [0.5, 1.0, 1 + 100 / 120])
    train_x = [x for x, _ in loss.iterations["train"]]
    assert train_x[-1] == pytest.approx(2.0) and train_x[300 + 99] == pytest.approx(1 + 100 / 120)
