"""What a checkpoint holds: every part of a run that changes while it trains.

`TrainingState` is owned by the learner for one `fit` run. `LearningCheckpointer` records it and
restores it; each part records itself (`to_record`/`load_record`), so this file only says which
parts there are and how their records fit together.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from burnish.lr_scheduler.module_lr_scheduler import lr_from_record, lr_to_record
from burnish.module import into_record, load_record
from burnish.train.checkpoint.rng import load_rng_record, rng_record
from burnish.train.loop.position import Phase, Position
from burnish.train.split import TRAINING_SPLITS, Split

if TYPE_CHECKING:
    from torch import nn

    from burnish.lr_scheduler import LrScheduler
    from burnish.optim import GradScaler, Optimizer
    from burnish.train.components.dispatch import Components
    from burnish.train.loop.accumulation import Accumulation
    from burnish.train.loop.data_adapter import DataAdapter
    from burnish.train.report.processor import MetricsProcessor

__all__ = ["TrainingState"]


@dataclasses.dataclass
class TrainingState:
    """The run's changing parts; the learner's loop reads and advances them.

    Attributes:
        model: the model being trained (replaced by what `optim.step` returns).
        optim: its optimizer.
        lr_scheduler: its learning-rate scheduler.
        loaders: the data of each split.
        processor: the metrics, their loggers and the renderer.
        accumulation: gradients summed over iterations between optimizer steps.
        world_size: how many ranks train together.
        scaler: the float16 loss scaler, if any.
        components: the loop's components (components/), each recorded under its key (the
            listeners with `to_record`, early stopping, `with_ema`'s average as a file).
        sharded: whether the model is sharded with FSDP: records are then gathered whole
            (every rank takes part) and cut back into shards when loaded.
        position: where the loop is.
        epoch_start: each split's loader record at the start of its current epoch.
        step: training iterations since the run began (the trackers' global step).
        lr: the learning rate of the last training iteration.
        optimizer_steps: optimizer steps since the run began (`max_iterations`, `valid_every`).
        validations: validations done since the run began; validation N logs to
            `valid/epoch-N` (without `valid_every`, one per epoch: N is the epoch).
        validated_at: `optimizer_steps` at the last validation.
        changed: what `load_records` found changed since the checkpoint and applied from a
            clean state, one line each (the checkpointer says them).
    """

    model: nn.Module
    optim: Optimizer
    lr_scheduler: LrScheduler
    loaders: dict[Split, DataAdapter]
    processor: MetricsProcessor
    accumulation: Accumulation
    world_size: int = 1
    scaler: GradScaler | None = None
    components: Components | None = None
    sharded: bool = False
    position: Position = dataclasses.field(default_factory=Position)
    epoch_start: dict[Split, Any] = dataclasses.field(default_factory=dict)
    step: int = 0
    lr: float | None = None
    optimizer_steps: int = 0
    validations: int = 0
    validated_at: int = 0
    changed: list[str] = dataclasses.field(default_factory=list)

    def start_epoch(self, split: Split) -> None:
        """Remember `split`'s loader position at the start of its epoch."""
        self.epoch_start[split] = self.loaders[split].to_record()

    def restart_epoch(self, split: Split) -> None:
        """Put `split`'s loader back at the start of its epoch (a validation that is redone)."""
        record = self.epoch_start.get(split)
        if record is not None:
            self.loaders[split].load_record(record)

    def to_records(self) -> dict[str, Any]:
        """The checkpoint's files: `model`, `optim`, `scheduler` and `learner` records (and
        the components' own files, e.g. `ema` with an average).

        Pending metric entries must have been written first (`processor.flush`). When
        `sharded`, every rank must call it (ranks other than 0 get None for the tensors).
        """
        records = {
            "model": into_record(self.model),
            "optim": self.optim.to_record(),
            "scheduler": self.lr_scheduler.to_record(),
            "learner": self._loop_record(),
        }
        if self.components is not None:
            records.update(self.components.to_files())
        if self.sharded:
            from burnish.train.parallel.fsdp import gather_records

            records = gather_records(records)
        return records

    def load_records(self, records: dict[str, Any]) -> None:
        """Continue exactly from `to_records()` (the model keeps its device)."""
        if self.sharded:
            from burnish.train.parallel.fsdp import shard_records

            records = shard_records(records, self.model)
        device = next((p.device for p in self.model.parameters()), None)
        load_record(self.model, records["model"])
        if device is not None:
            self.model.to(device)
        if self.components is not None:
            self.components.load_files(records, self.changed)
        self.optim.load_record(records["optim"])
        self.lr_scheduler.load_record(records["scheduler"])
        loop = records["learner"]
        self.position = Position.from_record(loop["position"])
        self.step = loop.get("step", 0)
        self.lr = lr_from_record(loop.get("lr"), self.lr_scheduler)
        self._load_counts(loop)
        _check_validating(loop, Split.VALID in self.loaders)
        self._load_loaders(loop["loaders"])
        if self.position.phase is Phase.DONE:  # an epoch checkpoint: start the next epoch
            self.position = Position(self.position.epoch + 1)
        load_rng_record(loop["rng"])
        self.processor.load_record(loop["metrics"])
        self.accumulation.load_record(loop["accumulation"], self.model)
        if self.scaler is not None and loop.get("grad_scaler") is not None:
            self.scaler.load_record(loop["grad_scaler"])
        if self.components is not None:
            self.components.load_record(loop, self.changed)

    def log_epoch(self, split: Split) -> int:
        """The epoch `split`'s log continues with; the valid split's counts validations."""
        if split is Split.VALID:
            return self.validations + 1
        return self.position.log_epoch(split)

    def log_positions(self) -> dict[str, Any]:
        """Each split's committed log lines, as of the current position."""
        return {
            split.value: self.processor.splits[split].logger.positions(self.log_epoch(split))
            for split in TRAINING_SPLITS
        }

    def _loop_record(self) -> dict[str, Any]:
        parts = self.components.to_record() if self.components is not None else {}
        return parts | {
            "position": self.position.to_record(),
            "loaders": {
                "start": {s.value: r for s, r in self.epoch_start.items()},
                "now": {s.value: loader.to_record() for s, loader in self.loaders.items()},
            },
            "rng": rng_record(),
            "metrics": self.processor.to_record(),
            "loggers": self.log_positions(),
            "accumulation": self.accumulation.to_record(),
            "grad_scaler": _record_of(self.scaler),
            "world_size": self.world_size,
            "step": self.step,
            "lr": lr_to_record(self.lr),
            "optimizer_steps": self.optimizer_steps,
            "validations": self.validations,
            "validated_at": self.validated_at,
            "validating": Split.VALID in self.loaders,  # False: a fit without validation
        }

    def _load_counts(self, loop: dict[str, Any]) -> None:
        """The step and validation counts; a record from before them has one validation per
        epoch and an optimizer step per `accumulation.every` iterations."""
        done = self.position.phase is Phase.DONE
        steps = loop.get("optimizer_steps", self.step // (self.accumulation.every or 1))
        self.optimizer_steps = steps
        self.validations = loop.get("validations", self.position.epoch - 1 + done)
        self.validated_at = loop.get("validated_at", steps)

    def _load_loaders(self, records: dict[str, Any]) -> None:
        """Each loader from its records; a split still running goes on from the batch the
        loop resumes it at (training: the position's iteration; a validation: redone)."""
        self.epoch_start = {Split(s): r for s, r in records["start"].items()}
        for split, loader in self.loaders.items():  # without validation: no valid loader
            skip = None
            if self.position.running(split):
                skip = self.position.iteration if split is Split.TRAIN else 0
            start, now = records["start"].get(split.value), records["now"].get(split.value)
            loader.resume(start, now, skip)


def _check_validating(loop: dict[str, Any], validating: bool) -> None:
    """A run trained without validation continues without it: validated, its epoch
    checkpoints would be numbered by validations (train_only.py)."""
    if validating and not loop.get("validating", True):  # before the flag: validated
        from burnish.errors import ConfigError

        raise ConfigError(
            "This checkpoint is of a run trained without validation (`fit(dataloader_train)`), "
            "and this fit was given a validation data loader. Resume it without one, "
            "`learner.fit(dataloader_train)`, or start a new run in another artifact "
            "directory to validate."
        )


def _record_of(part: Any) -> Any:
    return part.to_record() if part is not None else None
