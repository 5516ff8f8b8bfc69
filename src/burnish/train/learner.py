"""The training loop (Burn's `Learner`): a few small named steps; see README.md for the order.

Per epoch: the train split (one lr step, one `train_step`, one optimizer step per iteration),
then validation on `model.valid()` under no autograd, then the epoch checkpoint, then early
stopping. Epochs are 1-based.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from burnish.module import valid
from burnish.optim import GradientsAccumulator, GradientsParams
from burnish.train.batch_check import check_batch_device
from burnish.train.compile import compiled_forward
from burnish.train.distributed import DistributedContext, SilentRenderer, all_reduce_mean
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.metric.base import MetricMetadata, Progress
from burnish.train.options import LearnerOptions
from burnish.train.processor import MetricsProcessor, SplitMetrics
from burnish.train.renderer.base import TrainingProgress
from burnish.train.result import TrainingResult
from burnish.train.state import DONE, TRAIN, VALID, LearnerState, Position, loader_record

__all__ = ["Learner"]

log = logging.getLogger("burnish.train")


class Learner(LearnerState):
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
        self.position = Position()
        self.accumulator = GradientsAccumulator()
        self.accumulated = 0
        self.processor: MetricsProcessor | None = None
        self._loader_records: dict[str, Any] = {}
        self._valid_start: Any = None
        self._valid_model: nn.Module | None = None
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
            if self.position.phase == TRAIN and not self._train_epoch(train, epoch):
                result.interrupted = True
                break
            if not self._valid_epoch(valid_loader, epoch):
                result.interrupted = True
                break
            self._save_epoch_checkpoint(epoch)
            result.epochs_completed = epoch
            self.position = Position(epoch + 1)
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
            self._loader_records[TRAIN] = loader_record(loader)
        self.model.train()
        lr_scheduler = self.lr_scheduler
        every = self.options.checkpoint_every
        sizes = _epoch_sizes(loader)
        start = self.position.iteration
        for iteration, batch in enumerate(_iterate(loader, start), start + 1):
            if iteration == 1:
                check_batch_device(batch, self.model)
            lr = lr_scheduler.step()
            output = self.model.train_step(batch)
            self._optimize(output, lr)
            self.position.iteration = iteration
            metadata = self._metadata(sizes, epoch, iteration, lr)
            self.processor.process(TRAIN, output.item, *metadata)
            if self._stop_requested(iteration):
                self._save_iteration_checkpoint()
                return False
            if every and iteration % every == 0:
                self._save_iteration_checkpoint()
        self.processor.end_epoch(TRAIN, epoch)
        self.position.phase = VALID
        return True

    def _valid_epoch(self, loader: Any, epoch: int) -> bool:
        """Run validation on `model.valid()`; False if interrupted (the epoch is redone)."""
        self._loader_records[VALID] = loader_record(loader)
        self._valid_start = self.processor.splits[VALID].logger.positions(epoch)
        model = self._valid_model
        sizes = _epoch_sizes(loader)
        with torch.no_grad():
            for iteration, batch in enumerate(_iterate(loader, 0), 1):
                item = model.valid_step(batch)
                metadata = self._metadata(sizes, epoch, iteration, None)
                self.processor.process(VALID, item, *metadata)
                if self._stop_requested(iteration):
                    self._discard_valid_epoch()
                    self._save_iteration_checkpoint()
                    return False
        self.processor.end_epoch(VALID, epoch)
        self.position.phase = DONE
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

    def _metadata(self, sizes: tuple[int, int], epoch: int, iteration: int, lr: float | None):
        items_total, batch_size = sizes
        items = min(iteration * batch_size, items_total)
        epochs = self.options.num_epochs
        metadata = MetricMetadata(Progress(items, items_total), epoch, epochs, iteration, lr)
        return metadata, TrainingProgress(epoch, epochs, iteration, items, items_total)

    def _should_stop_early(self, epoch: int) -> bool:
        strategy = self.options.early_stopping
        if strategy is None:
            return False
        stop = self.context.agree(strategy.should_stop(epoch, self.options.store()))
        if stop:
            log.info("Early stopping after epoch %d.", epoch)
        return stop

    def _discard_valid_epoch(self) -> None:
        """Forget an interrupted validation: it is run again in full on resume."""
        self.processor.clear(VALID)
        self.processor.splits[VALID].logger.truncate_to(self._valid_start)

    # -- set-up ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        options = self.options
        if self.context.is_main:
            options.artifact_dir.mkdir(parents=True, exist_ok=True)
        else:  # only rank 0 writes files and draws; the others keep the same logs in memory
            options.loggers = {s: InMemoryMetricLogger() for s in (TRAIN, VALID)}
            options.renderer, options.application_logger = SilentRenderer(), None
        self.processor = MetricsProcessor(
            [
                SplitMetrics(TRAIN, options.metrics[TRAIN], options.loggers[TRAIN]),
                SplitMetrics(VALID, options.metrics[VALID], options.loggers[VALID]),
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
            self._valid_model = valid(self.model)  # shares storage: one twin for the run
            stack.enter_context(compiled_forward([self.model, self._valid_model], options.compile))
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


def _to_device(loader: Any, device: torch.device) -> Any:
    return loader.to_device(device) if hasattr(loader, "to_device") else loader


def _epoch_sizes(loader: Any) -> tuple[int, int]:
    """(items per epoch, items per batch) of a burnish or torch data loader."""
    if hasattr(loader, "num_items"):
        items = loader.num_items()
    else:
        dataset = getattr(loader, "dataset", None)
        items = len(dataset) if dataset is not None else len(loader)
    size = getattr(loader, "batch_size", None)
    if not (isinstance(size, int) and size > 0):
        size = max(1, -(-items // max(len(loader), 1)))
    return items, size


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
