"""The training loop (Burn's `Learner`): a few small named steps; see README.md for the order.

Per epoch: the train split (one lr step, one `train_step`, one optimizer step per iteration),
then validation on `model.valid()` under no autograd, then the epoch checkpoint, then early
stopping. Epochs are 1-based.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from burnish.module import into_record, load_record, valid
from burnish.optim import GradientsAccumulator, GradientsParams
from burnish.train.checkpoint.file import CheckpointId
from burnish.train.distributed import DistributedContext, SilentRenderer, all_reduce_mean
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.metric.base import MetricMetadata, Progress
from burnish.train.options import LearnerOptions
from burnish.train.processor import MetricsProcessor, SplitMetrics
from burnish.train.renderer.base import TrainingProgress
from burnish.train.result import TrainingResult
from burnish.train.resume import ResumePoint, find_resume_point
from burnish.train.rng import load_rng_record, rng_record

__all__ = ["Learner"]

log = logging.getLogger("burnish.train")

_TRAIN, _VALID = "train", "valid"


@dataclasses.dataclass
class _Position:
    """Where the loop is: `phase` is "train" (after `iteration`), "valid" or "done"."""

    epoch: int = 1
    iteration: int = 0
    phase: str = _TRAIN


class Learner:
    """Trains a model that implements `train_step`/`valid_step`. Built by `LearnerBuilder`."""

    def __init__(
        self,
        model: nn.Module,
        optim: Any,
        lr_scheduler: Any,
        options: LearnerOptions,
        dataloader_train: Any = None,
        dataloader_valid: Any = None,
    ) -> None:
        self.model = model
        self.optim = optim
        self.lr_scheduler = lr_scheduler
        self.options = options
        self.dataloaders = (dataloader_train, dataloader_valid)
        self.position = _Position()
        self.accumulator = GradientsAccumulator()
        self.accumulated = 0
        self.processor: MetricsProcessor | None = None
        self._loader_records: dict[str, Any] = {}
        self._valid_start: Any = None
        self.context = DistributedContext()

    # -- public ----------------------------------------------------------------------------

    def fit(self, dataloader_train: Any = None, dataloader_valid: Any = None) -> TrainingResult:
        """Train for the configured epochs; returns the model and how the run ended.

        Raises:
            ValueError: if a data loader is missing, or the model lacks `train_step`.
            CheckpointError: if a requested checkpoint cannot be loaded.
        """
        self.context = DistributedContext.detect(_first(self.options.devices))
        train, valid_loader = self._dataloaders(dataloader_train, dataloader_valid)
        self._check_model()
        self._place_model()
        with self._session():
            self._restore()
            result = self._run(train, valid_loader)
        if self.options.summary and self.context.is_main:
            result.summary = self._summary()
            if result.summary is not None:
                print(result.summary)
        return result

    # -- the loop --------------------------------------------------------------------------

    def _run(self, train: Any, valid_loader: Any) -> TrainingResult:
        result = TrainingResult(self.model, artifact_dir=self.options.artifact_dir)
        interrupter = self.options.interrupter
        while self.position.epoch <= self.options.num_epochs:
            epoch = self.position.epoch
            if self.position.phase == _TRAIN and not self._train_epoch(train, epoch):
                result.interrupted = True
                break
            if not self._valid_epoch(valid_loader, epoch):
                result.interrupted = True
                break
            self._save_epoch_checkpoint(epoch)
            result.epochs_completed = epoch
            self.position = _Position(epoch + 1)
            if self._should_stop_early(epoch):
                result.stopped_early = True
                break
        if interrupter.should_stop():
            log.info("Training interrupted: %s", interrupter.reason)
        result.model = self.model
        return result

    def _train_epoch(self, loader: Any, epoch: int) -> bool:
        """Run the train split from the current position; False if interrupted."""
        if self.position.iteration == 0:
            self._loader_records[_TRAIN] = _loader_record(loader)
        self.model.train()
        lr_scheduler = self.lr_scheduler
        every = self.options.checkpoint_every
        total = len(loader)
        start = self.position.iteration
        for iteration, batch in enumerate(_iterate(loader, start), start + 1):
            if iteration == 1:
                _check_batch_device(batch, self.model)
            lr = lr_scheduler.step()
            output = self.model.train_step(batch)
            self._optimize(output, lr)
            self.position.iteration = iteration
            metadata = self._metadata(loader, epoch, iteration, total, lr)
            self.processor.process(_TRAIN, output.item, *metadata)
            if self._stop_requested(iteration):
                self._save_iteration_checkpoint()
                return False
            if every and iteration % every == 0:
                self._save_iteration_checkpoint()
        self.processor.end_epoch(_TRAIN, epoch)
        self.position.phase = _VALID
        return True

    def _valid_epoch(self, loader: Any, epoch: int) -> bool:
        """Run validation on `model.valid()`; False if interrupted (the epoch is redone)."""
        self._loader_records[_VALID] = _loader_record(loader)
        self._valid_start = self.processor.splits[_VALID].logger.positions(epoch)
        model = valid(self.model)
        total = len(loader)
        with torch.no_grad():
            for iteration, batch in enumerate(_iterate(loader, 0), 1):
                item = model.valid_step(batch)
                metadata = self._metadata(loader, epoch, iteration, total, None)
                self.processor.process(_VALID, item, *metadata)
                if self._stop_requested(iteration):
                    self._discard_valid_epoch()
                    self._save_iteration_checkpoint()
                    return False
        self.processor.end_epoch(_VALID, epoch)
        self.position.phase = "done"
        return True

    def _optimize(self, output: Any, lr: float) -> None:
        grads = output.grads
        if not isinstance(grads, GradientsParams):
            grads = GradientsParams.from_grads(grads, self.model)
        accumulation = self.options.grads_accumulation
        if accumulation is not None:  # sum n iterations' gradients, then step once
            self.accumulator.accumulate(self.model, grads)
            self.accumulated += 1
            if self.accumulated < accumulation:
                return
            grads, self.accumulated = self.accumulator.grads(), 0
        if self.context.enabled:  # only optimizer steps communicate
            all_reduce_mean([grad for _, grad in grads.items()], self.context.world_size)
        self.model = self.optim.step(lr, self.model, grads)

    def _stop_requested(self, iteration: int) -> bool:
        """Whether to stop after this iteration; with several ranks, rank 0 decides for all."""
        stop = self.options.interrupter.should_stop()
        if not self.context.enabled:
            return stop
        return iteration % self.processor.sync_every == 0 and self.context.agree(stop)

    def _metadata(self, loader: Any, epoch: int, iteration: int, total: int, lr: float | None):
        items_total = _num_items(loader)
        items = min(iteration * _batch_size(loader, items_total, total), items_total)
        metadata = MetricMetadata(
            Progress(items, items_total), epoch, self.options.num_epochs, iteration, lr
        )
        progress = TrainingProgress(epoch, self.options.num_epochs, iteration, items, items_total)
        return metadata, progress

    def _should_stop_early(self, epoch: int) -> bool:
        strategy = self.options.early_stopping
        if strategy is None:
            return False
        stop = self.context.agree(strategy.should_stop(epoch, self.options.store()))
        if stop:
            log.info("Early stopping after epoch %d.", epoch)
        return stop

    # -- checkpoints -----------------------------------------------------------------------

    def _state_record(self) -> dict[str, Any]:
        """Everything besides model/optim/scheduler needed to continue exactly from here."""
        self.processor.flush(self.position.epoch)
        return {
            "position": dataclasses.asdict(self.position),
            "loaders": {
                "start": dict(self._loader_records),
                "now": {s: _loader_record(d) for s, d in zip((_TRAIN, _VALID), self.dataloaders)},
            },
            "rng": rng_record(),
            "metrics": self.processor.to_record(),
            "loggers": {
                split: state.logger.positions(self._log_epoch(split))
                for split, state in self.processor.splits.items()
            },
            "early_stopping": _record_of(self.options.early_stopping),
            "checkpointing_strategy": _record_of(self.options.checkpointing_strategy),
            "accumulator": self.accumulator.to_record() if self.accumulated else None,
            "accumulated": self.accumulated,
            "world_size": self.context.world_size,
        }

    def _log_epoch(self, split: str) -> int:
        """The epoch a split's log continues with: the next one once the split has ended."""
        ended = {_TRAIN: (_VALID, "done"), _VALID: ("done",)}[split]
        return self.position.epoch + (self.position.phase in ended)

    def _records(self) -> dict[str, Any]:
        return {
            "model": into_record(self.model),
            "optim": self.optim.to_record(),
            "scheduler": self.lr_scheduler.to_record(),
            "learner": self._state_record(),
        }

    def _save_iteration_checkpoint(self) -> None:
        checkpointer = self.options.checkpointer
        if checkpointer is None:
            return
        self.processor.flush(self.position.epoch)  # a collective with several ranks
        if not self.context.is_main:
            return
        point = CheckpointId(self.position.epoch, self.position.iteration)
        checkpointer.save(point, self._records())
        for older in checkpointer.committed():
            if older.iteration is not None and older.sort_key() < point.sort_key():
                checkpointer.delete(older)

    def _save_epoch_checkpoint(self, epoch: int) -> None:
        checkpointer = self.options.checkpointer
        if checkpointer is None:
            return
        actions = self.options.checkpointing_strategy.checkpointing(epoch, self.options.store())
        self.processor.flush(self.position.epoch)
        if not self.context.is_main:
            return
        if any(action.is_save for action in actions):  # save first: never zero checkpoints
            checkpointer.save(CheckpointId(epoch), self._records())
        for action in actions:
            if action.is_delete:
                checkpointer.delete(CheckpointId(action.epoch))
        for older in checkpointer.committed():  # mid-epoch checkpoints are superseded
            if older.iteration is not None and older.epoch <= epoch:
                checkpointer.delete(older)

    def _restore(self) -> None:
        point = find_resume_point(
            self.options, clean=self.context.is_main, wait=self.context.barrier
        )
        if point is None:
            return
        self._load_point(point)
        log.info("Resumed from checkpoint %s.", point.checkpoint.name)

    def _load_point(self, point: ResumePoint) -> None:
        records = point.records
        device = _model_device(self.model)
        load_record(self.model, records["model"])
        self.model.to(device)
        self.optim.load_record(records["optim"])
        self.lr_scheduler.load_record(records["scheduler"])
        state = records["learner"]
        self.position = _Position(**state["position"])
        self._restore_loaders(state["loaders"])
        if self.position.phase == "done":  # an epoch checkpoint: start the next epoch
            self.position = _Position(self.position.epoch + 1)
        load_rng_record(state["rng"])
        self.processor.load_record(state["metrics"])
        self._restore_logs(state["loggers"])
        for name in ("early_stopping", "checkpointing_strategy"):
            part = getattr(self.options, name)
            if part is not None and state[name] is not None:
                part.load_record(state[name])
        self.accumulated = state["accumulated"]
        if state["accumulator"] is not None:
            self.accumulator.load_record(state["accumulator"], self.model)

    def _restore_loaders(self, records: dict[str, Any]) -> None:
        """A split still running restarts from its epoch-start state, else from 'now'."""
        self._loader_records = dict(records["start"])
        running = {_TRAIN: self.position.phase == _TRAIN, _VALID: self.position.phase == _VALID}
        for split, loader in zip((_TRAIN, _VALID), self.dataloaders):
            record = records["start" if running[split] else "now"].get(split)
            if record is not None and not running[split]:
                record = {"epoch": record["epoch"]}  # a finished epoch: any world size
            if record is not None:
                loader.load_record(record)

    def _restore_logs(self, positions: dict[str, Any]) -> None:
        """Drop log lines written after the checkpoint (the loggers remove later epochs too)."""
        for split, state in self.processor.splits.items():
            state.logger.truncate_to(positions[split])

    def _discard_valid_epoch(self) -> None:
        """Forget an interrupted validation: it is run again in full on resume."""
        self.processor.clear(_VALID)
        self.processor.splits[_VALID].logger.truncate_to(self._valid_start)

    # -- set-up ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        options = self.options
        if self.context.is_main:
            options.artifact_dir.mkdir(parents=True, exist_ok=True)
        else:  # only rank 0 writes files and draws; the others keep the same logs in memory
            options.loggers = {s: InMemoryMetricLogger() for s in (_TRAIN, _VALID)}
            options.renderer, options.application_logger = SilentRenderer(), None
        self.processor = MetricsProcessor(
            [
                SplitMetrics(_TRAIN, options.metrics[_TRAIN], options.loggers[_TRAIN]),
                SplitMetrics(_VALID, options.metrics[_VALID], options.loggers[_VALID]),
            ],
            options.renderer,
            reduce=self.context.reducer(),
        )
        with contextlib.ExitStack() as stack:
            if options.application_logger is not None:
                options.application_logger.install()
                stack.callback(options.application_logger.uninstall)
            if self.context.enabled:
                log.info(
                    "Distributed training: rank %d of %d on %s; rank 0 writes logs and "
                    "checkpoints.",
                    self.context.rank,
                    self.context.world_size,
                    self.context.device,
                )
            stack.enter_context(options.interrupter.catch_sigint())
            stack.enter_context(_deterministic(options.deterministic))
            options.renderer.start(options.num_epochs, options.interrupter)
            stack.callback(options.renderer.close)
            stack.callback(self._close_loggers)
            yield

    def _close_loggers(self) -> None:
        for state in self.processor.splits.values():
            state.logger.flush()

    def _dataloaders(self, train: Any, valid_loader: Any) -> tuple[Any, Any]:
        train = train if train is not None else self.dataloaders[0]
        valid_loader = valid_loader if valid_loader is not None else self.dataloaders[1]
        if train is None or valid_loader is None:
            raise ValueError(
                "`fit` needs a train and a valid data loader. Pass them to "
                "`learner.fit(dataloader_train, dataloader_valid)` or to `LearnerBuilder.build`."
            )
        device = self.context.device
        if device is not None:
            train, valid_loader = (_to_device(d, device) for d in (train, valid_loader))
        if self.context.enabled:
            train, valid_loader = (self.context.shard(d) for d in (train, valid_loader))
        self.dataloaders = (train, valid_loader)
        return train, valid_loader

    def _place_model(self) -> None:
        """Under torch.distributed: the rank's device, and rank 0's initial parameters."""
        if self.context.enabled:
            self.model.to(self.context.device)
            self.context.broadcast_module(self.model)

    def _check_model(self) -> None:
        for method in ("train_step", "valid_step"):
            if not callable(getattr(self.model, method, None)):
                raise TypeError(
                    f"The model {type(self.model).__name__} has no `{method}(batch)` method. "
                    "Implement `train_step` (returning TrainOutput) and `valid_step` "
                    "(returning the metrics' item) on the model to train it with a Learner."
                )

    def _summary(self) -> Any:
        from burnish.train.summary import LearnerSummary

        names = {m.name for split in self.options.metrics.values() for m in split}
        if not names:
            return None
        return LearnerSummary.from_dir(self.options.artifact_dir, sorted(names))


# -- helpers ---------------------------------------------------------------------------------


def _first(devices: list[torch.device]) -> torch.device | None:
    return devices[0] if devices else None


def _iterate(loader: Any, skip: int):
    if skip and hasattr(loader, "iter"):
        return loader.iter(skip=skip)
    if hasattr(loader, "iter"):
        return loader.iter()
    iterator = iter(loader)
    for _ in range(skip):
        next(iterator)
    return iterator


def _loader_record(loader: Any) -> Any:
    return loader.to_record() if hasattr(loader, "to_record") else None


def _to_device(loader: Any, device: torch.device) -> Any:
    return loader.to_device(device) if hasattr(loader, "to_device") else loader


def _num_items(loader: Any) -> int:
    if hasattr(loader, "num_items"):
        return loader.num_items()
    dataset = getattr(loader, "dataset", None)
    return len(dataset) if dataset is not None else len(loader)


def _batch_size(loader: Any, items_total: int, num_batches: int) -> int:
    size = getattr(loader, "batch_size", None)
    if isinstance(size, int) and size > 0:
        return size
    return max(1, -(-items_total // max(num_batches, 1)))


def _model_device(model: nn.Module) -> torch.device:
    for tensor in model.parameters():
        return tensor.device
    return torch.device("cpu")


def _first_tensor(value: Any, name: str = "batch") -> tuple[str, torch.Tensor] | None:
    if isinstance(value, torch.Tensor):
        return name, value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = list(enumerate(value))
    else:
        items = list(getattr(value, "__dict__", {}).items())
    for key, inner in items:
        found = _first_tensor(inner, f"{name}.{key}")
        if found is not None:
            return found
    return None


def _check_batch_device(batch: Any, model: nn.Module) -> None:
    found = _first_tensor(batch)
    expected = _model_device(model)
    if found is None or found[1].device == expected:
        return
    name, tensor = found
    raise ValueError(
        f"`{name}` is on device {tensor.device} but the model is on {expected}. Build the data "
        f"loader with `.set_device({str(expected)!r})`, or move the model with "
        "`model.to_device(...)`, or pass `.devices([...])` to the LearnerBuilder."
    )


def _record_of(part: Any) -> Any:
    return part.to_record() if part is not None and hasattr(part, "to_record") else None


@contextlib.contextmanager
def _deterministic(enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    previous = torch.are_deterministic_algorithms_enabled()
    benchmark = torch.backends.cudnn.benchmark
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)
        torch.backends.cudnn.benchmark = benchmark
