"""`burnish report` draws a validation's per-batch values where the validation ran (its
epoch's end, or its place inside the epoch), not across the epoch before it from 0; the run
lock's file stays in the directory and out of the page's file list."""

from __future__ import annotations

import shutil

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
