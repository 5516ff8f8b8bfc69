"""`with_listener`: a `TrainingListener` is called at the run's moments with frozen events
carrying values already read back; it can stop the run; a stateful one resumes exactly (also
after SIGKILL); under two Gloo ranks only rank 0 calls it unless it asks for every rank."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
import torch

import burnish as bn
from burnish.optim import SgdConfig
from burnish.record import DefaultRecorder
from burnish.train import (
    Learner,
    LearnerBuilder,
    RegressionOutput,
    SupervisedTraining,
    TrainingListener,
    TrainOutput,
)
from burnish.train.loop.result import training_model
from burnish.train.metric import LossMetric
from burnish.train.renderer import MetricsRenderer, NullRenderer

from tests.helpers import iteration_lines
from tests.train.helpers import JournalListener

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TRAIN_SIZES = [4, 4, 4, 4, 3]  # 5 training iterations per epoch
VALID_SIZES = [4, 2]  # 2 validation iterations


class Regression(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 1)

    def _output(self, batch) -> RegressionOutput:
        inputs, targets = batch
        output = self.linear(inputs)
        return RegressionOutput(torch.nn.functional.mse_loss(output, targets), output, targets)

    def train_step(self, batch) -> TrainOutput:
        item = self._output(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> RegressionOutput:
        return self._output(batch)


def data(sizes: list[int], seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, 3, generator=gen), torch.randn(n, 1, generator=gen)) for n in sizes]


class DueEvery(MetricsRenderer):
    """Due at every `every`-th call of `due()`: the processor reads metrics back then."""

    def __init__(self, every: int) -> None:
        self.every, self.calls = every, 0
        self.ends: list[tuple[str, int, dict[str, float]]] = []

    def start(self, num_epochs, interrupter):
        pass

    def due(self):
        self.calls += 1
        return self.calls % self.every == 0

    def render(self, snapshot):
        pass

    def end_epoch(self, split, epoch, values):
        self.ends.append((str(split), epoch, dict(values)))

    def close(self):
        pass


class Recorder(TrainingListener):
    """Keeps every event it gets, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.committed: list[bool] = []  # whether each announced checkpoint was on disk

    def on_fit_start(self, event):
        self.events.append(("fit_start", event))

    def on_iteration_end(self, event):
        self.events.append(("iteration_end", event))

    def on_epoch_end(self, event):
        self.events.append(("epoch_end", event))

    def on_validation_end(self, event):
        self.events.append(("validation_end", event))

    def on_checkpoint(self, event):
        self.events.append(("checkpoint", event))
        self.committed.append((event.path / "COMMIT").is_file())

    def on_fit_end(self, event):
        self.events.append(("fit_end", event))

    def of(self, kind: str) -> list:
        return [event for name, event in self.events if name == kind]


def builder(directory: Path, renderer: MetricsRenderer | None = None, epochs: int = 2):
    return (
        LearnerBuilder(directory)
        .metrics(LossMetric())
        .renderer(renderer or NullRenderer())
        .with_file_checkpointer(DefaultRecorder())
        .num_epochs(epochs)
    )


def fit(b: LearnerBuilder, seed: int = 1):
    bn.seed(seed)
    learner = b.build(Regression(), SgdConfig().init(), 0.05)
    return learner.fit(data(TRAIN_SIZES, 1), data(VALID_SIZES, 2))


def log_values(directory: Path, split: str, epoch: int) -> list[float]:
    lines = iteration_lines(directory / split / f"epoch-{epoch}" / "Loss.log")
    return [float(line.split(",")[0]) for line in lines]


def test_events_in_order_with_the_values_already_read_back(tmp_path) -> None:
    recorder, renderer = Recorder(), DueEvery(3)
    result = fit(builder(tmp_path, renderer).checkpoint_every(2).with_listener(recorder))
    kinds = [name for name, _ in recorder.events]
    # A checkpoint is announced once committed: written in the background, it is when the
    # loop next waits for the writer (the next checkpoint, or the end of the run).
    epoch = (
        ["iteration_end"] * 2 + ["iteration_end"] * 2 + ["checkpoint"]
        + ["iteration_end", "epoch_end"] + ["iteration_end"] * 2
        + ["validation_end", "checkpoint"]
    )  # fmt: skip
    first, second = epoch, ["iteration_end"] * 2 + ["checkpoint"] + epoch[2:]
    assert kinds == ["fit_start", *first, *second, "checkpoint", "fit_end"]

    start = recorder.of("fit_start")[0]
    assert (start.epoch, start.iteration, start.step, start.num_epochs) == (1, 0, 0, 2)
    assert start.resumed is False
    iterations = recorder.of("iteration_end")
    train = [e for e in iterations if e.split == "train"]
    assert [(e.epoch, e.iteration, e.step) for e in train] == [
        (epoch, i, 5 * (epoch - 1) + i) for epoch in (1, 2) for i in range(1, 6)
    ]
    assert all(e.lr == 0.05 for e in train)
    assert all(e.lr is None for e in iterations if e.split == "valid")
    # Values only where the processor read back (every 3rd `due()` call), equal to the logs.
    read_back = [e for e in iterations if e.values is not None]
    assert 0 < len(read_back) < len(iterations)
    for event in read_back:
        logged = log_values(tmp_path, event.split, event.epoch)[event.iteration - 1]
        assert dict(event.values) == {"Loss": logged}
    # Epoch values: what the renderer (and the summary) got.
    ends = [("train", e.epoch, dict(e.values)) for e in recorder.of("epoch_end")]
    ends += [("valid", e.epoch, dict(e.values)) for e in recorder.of("validation_end")]
    assert sorted(ends) == sorted(renderer.ends)
    assert [e.iteration for e in recorder.of("validation_end")] == [5, 5]
    checkpoints = recorder.of("checkpoint")
    assert [(c.epoch, c.iteration) for c in checkpoints] == [
        (1, 2), (1, 4), (1, None), (2, 2), (2, 4), (2, None)
    ]  # fmt: skip
    assert [c.step for c in checkpoints] == [2, 4, 5, 7, 9, 10]  # when each was taken
    assert recorder.committed == [True] * 6
    assert checkpoints[-1].path == tmp_path / "checkpoint" / "epoch-2"
    assert checkpoints[-1].path.is_dir()
    end = recorder.of("fit_end")[0]
    assert (end.epochs_completed, end.interrupted, end.stopped_early) == (2, False, False)
    assert end.model is training_model(result.model)  # the result is its `.valid()` twin


def test_events_are_read_only(tmp_path) -> None:
    recorder = Recorder()
    fit(builder(tmp_path, DueEvery(1), epochs=1).with_listener(recorder))
    event = recorder.of("iteration_end")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.epoch = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        event.values["Loss"] = 0.0  # type: ignore[index]
    with pytest.raises(TypeError):
        recorder.of("epoch_end")[0].values["Loss"] = 0.0


def test_without_a_read_back_the_iterations_come_without_values(tmp_path) -> None:
    recorder = Recorder()
    fit(builder(tmp_path, NullRenderer(), epochs=1).with_listener(recorder))
    iterations = recorder.of("iteration_end")
    assert len(iterations) == 7 and all(e.values is None for e in iterations)  # no extra sync


class StopAt(TrainingListener):
    def __init__(self, kind: str, epoch: int, iteration: int = 0) -> None:
        self.kind, self.epoch, self.iteration = kind, epoch, iteration
        self.seen: list[tuple[str, int, int]] = []

    def on_iteration_end(self, event):
        self.seen.append((str(event.split), event.epoch, event.iteration))
        if (self.kind, self.epoch, self.iteration) == (
            str(event.split),
            event.epoch,
            event.iteration,
        ):
            event.stop(f"asked at {self.kind} iteration {event.iteration}")

    def on_validation_end(self, event):
        if self.kind == "validation_end" and event.epoch == self.epoch:
            event.stop("validation loss is low enough")


def test_a_listener_stops_the_run_with_a_checkpoint_then_resume_continues(tmp_path) -> None:
    stopper = StopAt("train", epoch=1, iteration=3)
    result = fit(builder(tmp_path).with_listener(stopper))
    assert result.interrupted and result.epochs_completed == 0
    assert stopper.seen[-1] == ("train", 1, 3)
    assert (tmp_path / "checkpoint" / "epoch-1-iteration-3").is_dir()
    resumed = Recorder()
    fit(builder(tmp_path).resume().with_listener(resumed))
    start = resumed.of("fit_start")[0]
    assert start.resumed and (start.epoch, start.iteration, start.step) == (1, 3, 3)
    assert resumed.of("iteration_end")[0].iteration == 4


def test_a_custom_stop_rule_at_validation_ends_after_that_epoch(tmp_path) -> None:
    stopper = StopAt("validation_end", epoch=1)
    result = fit(builder(tmp_path, epochs=3).with_listener(stopper))
    assert result.interrupted and result.epochs_completed == 1
    assert all(epoch == 1 for _, epoch, _ in stopper.seen)  # no iteration of epoch 2 ran
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == ["epoch-1"]


def _journal_of_a_run(directory: Path, stops: list[tuple[str, int, int]]) -> JournalListener:
    """Run to the end, stopped (and resumed) at each of `stops`; the final listener."""
    for kind, epoch, iteration in stops:
        journal = JournalListener()
        stopper = StopAt(kind, epoch, iteration)
        fit(builder(directory, epochs=3).resume().with_listener(journal).with_listener(stopper))
    journal = JournalListener()
    fit(builder(directory, epochs=3).resume().with_listener(journal))
    return journal


def test_a_stateful_listener_resumes_exactly(tmp_path) -> None:
    reference = _journal_of_a_run(tmp_path / "reference", [])
    assert len(reference.iterations) == 3 * (5 + 2) and len(reference.epochs) == 6
    # Stopped mid-train, then in the middle of a validation (redone on resume, so the journal
    # must not keep its first half), then at a validation's end.
    stops = [("train", 1, 2), ("valid", 2, 1), ("validation_end", 2, 0)]
    resumed = _journal_of_a_run(tmp_path / "resumed", stops)
    assert resumed.to_record() == reference.to_record()


def test_a_listener_with_a_record_of_another_run_starts_afresh(tmp_path, caplog) -> None:
    fit(builder(tmp_path, epochs=1).with_listener(JournalListener()).with_listener(Recorder()))

    class Other(JournalListener):
        pass

    other = Other()
    with caplog.at_level("WARNING", logger="burnish.train"):
        fit(builder(tmp_path, epochs=2).resume().with_listener(other))
    assert "no state for listener 0 (Other; found: JournalListener)" in caplog.text
    assert [row[1] for row in other.iterations] == [2] * 7  # only what it saw itself


def test_supervised_training_takes_listeners_too(tmp_path) -> None:
    recorder = Recorder()
    training = (
        SupervisedTraining(tmp_path, data(TRAIN_SIZES, 1), data(VALID_SIZES, 2))
        .metrics(LossMetric())
        .renderer(NullRenderer())
        .with_listener(recorder)
    )
    training.launch(Learner(Regression(), SgdConfig().init(), 0.05))
    assert [name for name, _ in recorder.events][-3:] == [
        "iteration_end",
        "validation_end",
        "fit_end",
    ]


def test_bad_listeners_are_refused_with_the_fix() -> None:
    class Half(TrainingListener):
        def to_record(self):
            return {}

    with pytest.raises(TypeError, match=r"TrainingListener\. Received: 'print'.*Subclass"):
        LearnerBuilder("unused").with_listener("print")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Half has `to_record` but no `load_record`.*Add"):
        LearnerBuilder("unused").with_listener(Half())


# -- a stateful listener across SIGKILLs ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_stateful_listener_resumes_exactly_after_sigkill(tmp_path) -> None:
    from tests.train.test_crash_resume import assert_same_run, resume_until_done, run

    reference = tmp_path / "reference"
    assert run(reference / "artifacts", reference / "final.pt", "--listener", "--epochs", "2") == 0
    rng = random.Random(5)
    kills: list = [["--kill-at-io", str(rng.randint(1, 150))] for _ in range(3)]
    kills.insert(1, ["--kill-in-valid"])
    flags = ("--listener", "--epochs", "2")
    killed = resume_until_done(tmp_path / "artifacts", tmp_path / "final.pt", kills, *flags)
    assert killed >= 3
    assert_same_run(
        reference / "artifacts",
        reference / "final.pt",
        tmp_path / "artifacts",
        tmp_path / "final.pt",
    )
    expected = torch.load(reference / "final.pt")["listener"]
    actual = torch.load(tmp_path / "final.pt")["listener"]
    assert len(expected["iterations"]) == 2 * (30 + 3)
    assert actual == expected


# -- under two Gloo ranks ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_rank_zero_calls_listeners_unless_they_ask_for_every_rank(tmp_path) -> None:
    from tests.train.test_distributed import check, torchrun

    # Batches of 4 on each rank: 32 training iterations per epoch, read back every 16.
    out = str(tmp_path / "final.pt")
    check(torchrun(str(tmp_path / "artifacts"), out, "--listeners", "--batch-size", "4"))
    artifacts = tmp_path / "artifacts"
    assert not (artifacts / "listener-main-rank1.json").exists()
    main = json.loads((artifacts / "listener-main-rank0.json").read_text())
    every = [json.loads((artifacts / f"listener-all-rank{r}.json").read_text()) for r in (0, 1)]
    # Both ranks saw the same moments, with the same (reduced) values read back.
    for seen in every:
        assert seen["iterations"] == main["iterations"] and seen["epochs"] == main["epochs"]
    train = [row for row in main["iterations"] if row[0] == "train"]
    assert len(train) == 2 * 32
    assert [row[2] for row in train if row[3] is not None] == [16, 32, 16, 32]
    names = ["Accuracy", "Loss", "Throughput", "MFU"]
    assert main["epochs"] == [
        ["train", 1, names], ["valid", 1, names[:2]], ["train", 2, names], ["valid", 2, names[:2]],
    ]  # fmt: skip
    assert main["checkpoints"] == every[0]["checkpoints"] == ["epoch-1", "epoch-2"]
    assert every[1]["checkpoints"] == []  # rank 0 writes the checkpoints
    # ThroughputMetric under ranks: the job's rate (world size x the mean rank), MFU per device.
    for epoch in (1, 2):
        rates = _column(artifacts / f"train/epoch-{epoch}/Throughput.log")
        mfu = _column(artifacts / f"train/epoch-{epoch}/MFU.log")
        assert len(rates) == 32 and rates[-1] > 0
        assert mfu == pytest.approx([100 * r / 2 * 1e6 / 1e9 for r in rates], rel=1e-9)


def _column(path: Path) -> list[float]:
    return [float(line.split(",")[0]) for line in iteration_lines(path)]


def test_a_stop_at_a_validation_inside_the_epoch_trains_no_further_batch(tmp_path) -> None:
    """`valid_every`: a listener's stop at a validation's end ends the run right there, at the
    validation's checkpoint, not one training iteration later; resume continues exactly."""

    class StopAtValidation(TrainingListener):
        def on_validation_end(self, event):
            event.stop("validation perplexity reached")

    recorder = Recorder()
    every = builder(tmp_path / "stopped", epochs=1).valid_every(2)
    result = fit(every.with_listener(StopAtValidation()).with_listener(recorder))
    assert result.interrupted and result.iterations == 2
    trained = [e.iteration for e in recorder.of("iteration_end") if e.split == "train"]
    assert trained == [1, 2]
    assert [p.name for p in (tmp_path / "stopped" / "checkpoint").iterdir()] == [
        "epoch-1-iteration-2"
    ]
    resumed = fit(builder(tmp_path / "stopped", epochs=1).valid_every(2).resume())
    reference = fit(builder(tmp_path / "reference", epochs=1).valid_every(2))
    assert resumed.iterations == reference.iterations == len(TRAIN_SIZES)
    for a, b in zip(resumed.model.parameters(), reference.model.parameters()):
        assert torch.equal(a, b)
