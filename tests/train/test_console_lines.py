"""The console tells what matters, one line each, and `experiment.log` says the same: the
artifact directory, the experiment log, the resume point, skipped and removed checkpoints."""

from __future__ import annotations

import io

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import Interrupter
from burnish.train.checkpoint import CheckpointId
from burnish.train.checkpoint.learning import resume_line
from burnish.train.loop.position import Phase, Position
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders


def train(artifact_dir, epochs, console=None, configure=None, batch_size=64):
    bn.seed(2)
    b = builder(artifact_dir, epochs, DefaultRecorder())
    if console is not None:
        b = b.renderer(CliMetricsRenderer(file=console))
    if configure is not None:
        b = configure(b)
    learner = b.build(Mlp(), AdamConfig().init(), 1e-3)
    return learner.fit(*loaders(batch_size=batch_size, train_items=128, valid_items=64))


def lines_with(text: str, lines: list[str]) -> list[str]:
    return [line for line in lines if text in line]


def run_log(artifact_dir) -> list[str]:
    """The lines of `experiment.log` written by the last run (after its last `Artifact` line)."""
    lines = (artifact_dir / "experiment.log").read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if "Artifact directory:" in line]
    return lines[starts[-1] :]


def test_a_resume_says_what_it_skipped_removed_and_resumed_from(tmp_path):
    train(tmp_path, epochs=2)
    model = next((tmp_path / "checkpoint" / "epoch-2").glob("model.*"))
    model.write_bytes(b"not a record")
    (tmp_path / "checkpoint" / ".tmp-epoch-3-1234").mkdir()  # a crash's half-written one
    console = io.StringIO()
    result = train(tmp_path, epochs=3, console=console, configure=lambda b: b.resume())
    assert result.epochs_completed == 3
    shown, logged = console.getvalue().splitlines(), run_log(tmp_path)
    expected = {
        f"Artifact directory: {tmp_path}": f"Artifact directory: {tmp_path} (",
        "Experiment log: ": f"Experiment log: {tmp_path / 'experiment.log'}",
        "Removed incomplete checkpoints": "left by a crash: .tmp-epoch-3-1234",
        "Skipping checkpoint epoch-2": "is corrupt",
        "Resumed from checkpoint": (
            "Resumed from checkpoint epoch-1, iteration 2: training continues with epoch 2."
        ),
    }
    for key, text in expected.items():
        [on_console] = lines_with(key, shown)  # one line each
        [in_log] = lines_with(key, logged)
        assert text in on_console and text in in_log, (on_console, in_log)
        assert in_log.endswith(on_console.removeprefix("Warning: "))  # the same words
    start = shown.index("Training for 3 epochs.")
    assert shown.index(lines_with("Resumed from", shown)[0]) < start  # before the progress
    assert lines_with("Skipping checkpoint", shown)[0].startswith("Warning: ")


def test_a_mid_epoch_resume_names_its_iteration(tmp_path):
    interrupter = Interrupter()

    class StopAfterThree(Mlp):
        steps = 0

        def train_step(self, batch):
            StopAfterThree.steps += 1
            if StopAfterThree.steps == 3:
                interrupter.stop("test")
            return super().train_step(batch)

    bn.seed(2)
    learner = (
        builder(tmp_path, 2, DefaultRecorder())
        .renderer(CliMetricsRenderer(file=io.StringIO()))
        .with_interrupter(interrupter)
        .build(StopAfterThree(), AdamConfig().init(), 1e-3)
    )
    train_loader, valid_loader = loaders(batch_size=16, train_items=128, valid_items=64)
    assert learner.fit(train_loader, valid_loader).interrupted
    console = io.StringIO()
    train(tmp_path, epochs=2, console=console, configure=lambda b: b.resume(), batch_size=16)
    [line] = lines_with("Resumed from", console.getvalue().splitlines())
    assert line == (
        "Resumed from checkpoint epoch-1-iteration-3, iteration 3: training continues in "
        "epoch 1 after iteration 3."
    )


def test_a_fresh_run_says_where_it_writes_and_nothing_about_resuming(tmp_path):
    console = io.StringIO()
    train(tmp_path / "run", epochs=1, console=console)
    shown = console.getvalue().splitlines()
    directory = tmp_path / "run"
    assert shown[:2] == [
        f"Artifact directory: {directory} (metric logs in train/ and valid/, checkpoints in "
        "checkpoint/)",
        f"Experiment log: {directory / 'experiment.log'}",
    ]
    assert not lines_with("Resumed", shown) and not lines_with("Warning", shown)


def test_the_resume_line_of_each_phase():
    assert resume_line(CheckpointId(2), 40, Position(3)) == (
        "Resumed from checkpoint epoch-2, iteration 40: training continues with epoch 3."
    )
    assert resume_line(CheckpointId(3, 5), 45, Position(3, 5)) == (
        "Resumed from checkpoint epoch-3-iteration-5, iteration 45: training continues in "
        "epoch 3 after iteration 5."
    )
    assert resume_line(CheckpointId(3, 20), 60, Position(3, 20, Phase.VALID)) == (
        "Resumed from checkpoint epoch-3-iteration-20, iteration 60: epoch 3's validation "
        "runs next."
    )


def test_the_resume_line_says_a_cut_short_validation_inside_the_epoch_runs_first():
    assert resume_line(CheckpointId(2, 2), 12, Position(2, 2), validating=True) == (
        "Resumed from checkpoint epoch-2-iteration-2, iteration 12: the validation after "
        "iteration 2 of epoch 2, cut short, runs again next; then training continues."
    )


def test_resuming_a_finished_run_says_once_that_it_is_complete(tmp_path):
    """A 4-epoch run resumed with `num_epochs(4)`: one line says it is complete; no resume
    line promises an epoch 5 (issue 40's trial)."""
    train(tmp_path, epochs=4)
    console = io.StringIO()
    result = train(tmp_path, epochs=4, console=console, configure=lambda b: b.resume())
    assert result.epochs_completed == 4
    for lines in (console.getvalue().splitlines(), run_log(tmp_path)):
        [complete] = lines_with("complete", lines)
        assert "Training is already complete: 4 epochs" in complete
        assert complete.endswith(f"Its final checkpoint is {tmp_path / 'checkpoint' / 'epoch-4'}.")
        assert not lines_with("epoch 5", lines) and not lines_with("training continues", lines)
        assert not lines_with("Resumed from", lines)
