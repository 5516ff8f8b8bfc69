"""Shared pieces of the learner tests: a tiny model, MNIST subset loaders, a builder."""

from __future__ import annotations

import torch
from torch import nn

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.nn.loss import CrossEntropyLossConfig
from burnish.train import ClassificationOutput, LearnerBuilder, TrainingListener, TrainOutput
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.helpers import MnistBatcher, mnist


class Mlp(bn.Module):
    """Small enough to train in milliseconds; optional dropout to exercise the RNG."""

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(28 * 28, 32)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(32, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.linear1(images.flatten(1)))
        return self.linear2(self.dropout(x))

    def forward_classification(self, batch) -> ClassificationOutput:
        output = self.forward(batch.images)
        loss = CrossEntropyLossConfig().init(output.device).forward(output, batch.targets)
        return ClassificationOutput(loss, output, batch.targets)

    def train_step(self, batch) -> TrainOutput:
        item = self.forward_classification(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> ClassificationOutput:
        return self.forward_classification(batch)


def loaders(
    batch_size: int = 64,
    train_items: int = 640,
    valid_items: int = 256,
    seed: int = 3,
    workers: int = 0,
):
    """A shuffled train loader and an ordered valid loader over MNIST subsets."""
    train = PartialDataset(mnist("train"), 0, train_items)
    valid = PartialDataset(mnist("test"), 0, valid_items)

    def loader():
        return DataLoaderBuilder(MnistBatcher()).batch_size(batch_size).num_workers(workers)

    return loader().shuffle(seed).build(train), loader().build(valid)


def builder(artifact_dir, epochs: int = 2, recorder=None) -> LearnerBuilder:
    result = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(epochs)
    )
    if recorder is not None:
        result = result.with_file_checkpointer(recorder)
    return result


class HeldWrites:
    """Holds each background checkpoint write until the loop next waits for the writer.

    The slowest disk there is: the loop runs on to its next save (or the end of `fit`) while
    every write is pending. `patch` installs the hooks: `monkeypatch.setattr`, or `setattr`
    in a subprocess.

    Attributes:
        writer_threads: the name of the thread each held write ran on.
    """

    GUARD_S = 60.0  # a held write gives up waiting after this long (a failure, never the path)

    def __init__(self, patch=setattr) -> None:
        import threading

        from burnish.train.checkpoint.async_writer import AsyncCheckpointer

        self.release: threading.Event | None = None
        self.writer_threads: list[str] = []
        submit, finish = AsyncCheckpointer.submit, AsyncCheckpointer.finish
        held = self

        def holding_submit(self, label, write):
            release = threading.Event()

            def write_when_released():
                held.writer_threads.append(threading.current_thread().name)
                release.wait(held.GUARD_S)
                write()

            submit(self, label, write_when_released)  # waits for (and releases) the last one
            held.release = release

        def releasing_finish(self):
            if held.release is not None:
                held.release.set()
            return finish(self)

        patch(AsyncCheckpointer, "submit", holding_submit)
        patch(AsyncCheckpointer, "finish", releasing_finish)


class JournalListener(TrainingListener):
    """A checkpointed listener: the journal of every iteration and epoch it was told of.

    Its state is what it saw, so a run resumed after a crash must end with the journal of an
    uninterrupted run (iterations redone after the checkpoint are seen once, with the state).
    """

    def __init__(self) -> None:
        self.iterations: list[list] = []  # [split, epoch, iteration, step]
        self.epochs: list[list] = []  # [split, epoch, {name: value}]
        self.fit_starts = 0

    def on_fit_start(self, event) -> None:
        self.fit_starts += 1  # not in the record: one per process

    def on_iteration_end(self, event) -> None:
        self.iterations.append([str(event.split), event.epoch, event.iteration, event.step])

    def on_epoch_end(self, event) -> None:
        self.epochs.append(["train", event.epoch, dict(event.values)])

    def on_validation_end(self, event) -> None:
        self.epochs.append(["valid", event.epoch, dict(event.values)])

    def to_record(self) -> dict:
        return {"iterations": self.iterations, "epochs": self.epochs}

    def load_record(self, record: dict) -> None:
        self.iterations = [list(row) for row in record["iterations"]]
        self.epochs = [list(row) for row in record["epochs"]]
