"""One `Learner.fit`: the run-time parts built for it, and the loop over its epochs.

Per epoch: the train split (one lr step, one `train_step`, one optimizer step per iteration),
then validation on `model.valid()` under no autograd, then early stopping's decision, then the
epoch checkpoint, which records the state after every decision of the epoch (and, for the last
epoch, how the run ended). Epochs are 1-based. See README.md for the order of events. A step
budget (budget.py) can cut the last epoch short; validations inside an epoch (mid_epoch.py)
take the same decisions as the epoch's own.
"""

from __future__ import annotations

import enum
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from burnish.module import valid
from burnish.train.checkpoint.file import CheckpointId
from burnish.train.checkpoint.learning import LearningCheckpointer
from burnish.train.checkpoint.rng import restore_rng, rng_state
from burnish.train.checkpoint.run_end import Resumed, RunEnd
from burnish.train.components.ema import ModelEma
from burnish.train.components.ema_validation import EmaValidation
from burnish.train.components.listeners import Listeners
from burnish.train.components.mid_epoch import MidEpochValidation
from burnish.train.components.non_finite import NonFiniteWatch
from burnish.train.components.preemption import PreemptionSettings, PreemptionWatch
from burnish.train.components.step_budget import StepBudget
from burnish.train.components.tracking import Tracking, branch_name, final_model_file, run_settings
from burnish.train.loop.accumulation import Accumulation
from burnish.train.loop.batch_check import model_device
from burnish.train.loop.compile import (
    CompiledTrainStep,
    check_compiled_step,
)
from burnish.train.loop.data_adapter import DataAdapter, no_batch_in_epoch
from burnish.train.loop.eager_step import EagerTrainStep
from burnish.train.loop.evaluation_loop import evaluate, stop_requested
from burnish.train.loop.position import Phase, Position
from burnish.train.loop.precision import MixedPrecision, warn_emulated_bf16
from burnish.train.loop.result import TrainingResult
from burnish.train.loop.session import run_session
from burnish.train.loop.state import TrainingState
from burnish.train.loop.step_check import (
    check_first_batch,
    check_model_device,
    check_optimizer,
)
from burnish.train.metric.base import MetricMetadata
from burnish.train.metric.store import MetricStore
from burnish.train.parallel.distributed import DistributedContext
from burnish.train.parallel.fsdp import shard_model
from burnish.train.parallel.grad_sync import GradientSync
from burnish.train.renderer.base import MetricsRenderer, TrainingProgress
from burnish.train.report.announce import Announcer
from burnish.train.report.processor import MetricsProcessor, SplitMetrics
from burnish.train.report.summary import learner_summary
from burnish.train.split import TRAINING_SPLITS, Split

if TYPE_CHECKING:
    from burnish.optim import Optimizer
    from burnish.train.logger import MetricLogger
    from burnish.train.loop.learner import Learner
    from burnish.train.step import ValidStep

__all__ = ["Run"]

log = logging.getLogger("burnish.train")


class _Trained(enum.Enum):
    """How a train split ended: trained to its end (or the budget's), interrupted, or stopped
    by early stopping at a validation inside it."""

    DONE = "done"
    INTERRUPTED = "interrupted"
    STOPPED = "stopped"


class Run:
    """One `fit` of `learner`: the run-time parts built for it, and the loop over its epochs."""

    def __init__(
        self, learner: Learner, context: DistributedContext, loaders: dict[Split, Any]
    ) -> None:
        options = learner.options
        self.options = options
        self.context = context
        self.sharded = options.parallelism.kind == "fsdp" and context.enabled
        model = self._place(learner.model())
        loggers, self.renderer = self._outputs()
        self.tracking: Tracking | None = None
        if options.tracking.trackers and context.is_main:
            validations = self._validations if options.validation.every is not None else None
            self.tracking = Tracking.for_run(self.renderer, options, self._where, validations)
            self.renderer = self.tracking
        self.precision = _mixed_precision(options.precision.autocast, model)
        self.announce = Announcer(self.renderer)  # one line each: console and experiment.log
        self.non_finite = NonFiniteWatch(
            options.optimization.on_non_finite,
            scaled=self.precision is not None and self.precision.scaler is not None,
            say=self.announce.warning if context.is_main else None,
            metrics=options.metrics[Split.TRAIN],
        )
        self.processor = MetricsProcessor(
            [SplitMetrics(s, list(options.metrics[s]), loggers[s]) for s in TRAINING_SPLITS],
            self.renderer,
            reduce=context.reducer(),
            iterations=self.tracking.iterations if self.tracking is not None else None,
            rank=context.rank,
            non_finite=self.non_finite,
        )
        self.store = MetricStore(loggers)
        self.budget = StepBudget(
            options.stopping.num_epochs,
            options.stopping.max_iterations,
            options.optimization.grads_accumulation,
        )
        self.num_epochs = options.stopping.num_epochs or 1  # the run's last epoch: set by `fit`
        self.mid_epoch = MidEpochValidation(options.validation.every, _file_directory(loggers))
        self.listeners = Listeners(options.listeners, options.stopping.interrupter, context.is_main)
        self.ema = (
            ModelEma(model, options.optimization.ema)
            if options.optimization.ema is not None
            else None
        )
        self.state = TrainingState(
            model=model,
            optim=learner.optim,
            lr_scheduler=learner.lr_scheduler,
            loaders={  # validation counts each item once: no padding
                split: context.place_loader(loader, pad=split is Split.TRAIN)
                for split, loader in loaders.items()
            },
            processor=self.processor,
            accumulation=Accumulation(
                options.optimization.grads_accumulation, options.optimization.lr_step
            ),
            early_stopping=options.stopping.early_stopping,
            world_size=context.world_size,
            sharded=self.sharded,
            scaler=self.precision.scaler if self.precision is not None else None,
            listeners=self.listeners,
            ema=self.ema,
        )
        self.listeners.bind(self.state)
        self.checkpointer = LearningCheckpointer(
            options.checkpointing.checkpointer,
            options.checkpointing.kept(),
            options.checkpointing.resume_from,
            is_main=context.is_main,
            before_save=self.tracking.flush if self.tracking is not None else None,
            after_save=self.listeners.checkpoint,
            announce=self.announce,
            artifact_dir=options.artifact_dir,
        )
        self.valid_model = self._valid_model(model)
        self.grad_sync = (
            GradientSync(
                context.world_size, overlap=(options.optimization.grads_accumulation or 1) == 1
            )
            if context.enabled and not self.sharded  # FSDP reduce-scatters in backward
            else None
        )
        self.compiled_step = self._compiled_step(model, learner.optim)
        self.eager_step = EagerTrainStep(
            self.state, self.precision, self.grad_sync, self.non_finite, self.ema
        )
        settings = options.stopping.preemption or PreemptionSettings()
        self.preemption = PreemptionWatch(settings, options.stopping.interrupter)

    def _place(self, model: nn.Module) -> nn.Module:
        """On the run's device, with rank 0's parameters, sharded under FSDP."""
        if self.context.device is not None:
            model.to(self.context.device)
        self.context.broadcast_module(model)
        if self.sharded:  # after the broadcast: every rank shards the same parameters
            options = self.options
            model = shard_model(model, options.parallelism.shard_policy, options.precision.autocast)
        return model

    def _valid_model(self, model: nn.Module) -> nn.Module | EmaValidation:
        """What validation runs: the inference twin (it shares storage: one for the run), or
        with `with_ema` the average's (and the model's too, with `validate="both"`). FSDP's
        hooks belong to the sharded model itself, so under FSDP it is validated, in eval mode."""
        if self.sharded:
            return model
        settings = self.options.optimization.ema
        if self.ema is None or settings is None or settings.validate == "model":
            return valid(model)
        raw = valid(model) if settings.validate == "both" else None
        return EmaValidation(valid(self.ema.module), raw)

    def _compiled_step(self, model: nn.Module, optim: Optimizer) -> CompiledTrainStep | None:
        """With `compile(step=True)`: train_step and the optimizer step as one graph."""
        options = self.options
        if not options.compilation.whole_step or options.compilation.kwargs is None:
            return None
        check_compiled_step(
            optim,
            grads_accumulation=options.optimization.grads_accumulation,
            mixed_precision=options.precision.autocast,
            strategy=options.parallelism.kind,
            world_size=self.context.world_size,
        )
        return CompiledTrainStep(model, optim, options.compilation.kwargs, self.precision)

    def fit(self) -> TrainingResult:
        with run_session(self):
            if self.context.is_main:
                self.announce.run_start(self.options)
                warn_emulated_bf16(self.precision, self.announce.warning)  # once per run
            options = self.options
            resumed = self.checkpointer.restore(
                self.state, self.context.device, self.context.barrier,
                over=lambda r: r.is_over(
                    options.stopping.num_epochs, options.stopping.max_iterations
                ),
                validation_next=lambda: self._validation_due(
                    self.state.position.iteration, self.state.loaders[Split.TRAIN].num_batches()
                ),
            )  # fmt: skip
            if resumed is not None:
                resumed.check_epochs(options.stopping.num_epochs)
            if resumed is not None and resumed.is_over(
                options.stopping.num_epochs, options.stopping.max_iterations
            ):
                return self._already_complete(resumed)
            self.preemption.before_training(self.context)  # a signal in set-up: nothing written
            batches = self.state.loaders[Split.TRAIN].num_batches()
            self.num_epochs = self.budget.epochs(self.state, batches)
            self.mid_epoch.restore(self.state.validations)
            self.renderer.start(self.num_epochs, self.options.stopping.interrupter)
            if self.context.is_main:
                self._show_model()
            if self.tracking is not None:
                settings = run_settings(self.options, self.context, self.state)
                position = self.state.position if resumed is not None else None
                self.tracking.start_run(
                    self.options.artifact_dir, self.options.tracking.config, settings, position,
                    branch=branch_name(self.checkpointer.start),
                )  # fmt: skip
            self.listeners.fit_start(self.num_epochs, resumed=resumed is not None)
            result = self._epochs()
            self.checkpointer.wait()  # written in the background: every one committed now
            self.listeners.fit_end(result)
            self._preempted(result)  # raises `Preempted` if a signal stopped the run
            if self.tracking is not None and not (result.interrupted or result.stopped_non_finite):
                summary = learner_summary(self.options, result.epochs_completed, result.validations)
                model = final_model_file(self.options.checkpointing.checkpointer)
                self.tracking.finish(None if summary is None else str(summary), model)
            return result

    def _preempted(self, result: TrainingResult) -> None:
        """If a preemption signal stopped the run: say where, requeue if asked, and raise."""
        position, checkpointer = self.state.position, self.options.checkpointing.checkpointer
        where = self.mid_epoch.where(position)  # or in a validation inside the epoch
        checkpoint = None
        if checkpointer is not None:
            point = CheckpointId(position.epoch, position.iteration)
            checkpoint = checkpointer.directory / point.name
        self.preemption.finish(result, self.context, checkpoint, self.announce, where)

    def _already_complete(self, resumed: Resumed) -> TrainingResult:
        """A resumed run that had ended: nothing to train; what the ended run returned."""
        self.announce.info(resumed.describe())
        return TrainingResult(
            self.state.model,
            epochs_completed=resumed.epochs_completed,
            stopped_early=resumed.stopped_early,
            artifact_dir=self.options.artifact_dir,
            ema=self.ema.module if self.ema is not None else None,
            iterations=self.state.optimizer_steps,
            validations=self.state.validations,
        )

    def _show_model(self) -> None:
        """The model summary in the experiment log and the dashboard."""
        from burnish.module_summary import ModelSummary

        summary = ModelSummary.from_module(self.state.model)
        log.info("Model summary:\n%s", str(summary).rstrip("\n"))
        self.renderer.model_summary(summary)

    def _where(self) -> tuple[int, float | None]:
        return self.state.step, self.state.lr

    def _validations(self) -> int:
        return self.state.validations

    # -- the loop --------------------------------------------------------------------------

    def _epochs(self) -> TrainingResult:
        state, num_epochs = self.state, self.num_epochs
        completed = state.position.epoch - 1  # a resumed run counts the epochs done before
        artifact_dir = self.options.artifact_dir
        result = TrainingResult(state.model, epochs_completed=completed, artifact_dir=artifact_dir)
        interrupter = self.options.stopping.interrupter
        while state.position.epoch <= num_epochs:
            epoch = state.position.epoch
            trained = _Trained.DONE
            if state.position.phase is Phase.TRAIN:
                trained = self._train_epoch(epoch)
            if trained is _Trained.INTERRUPTED:
                self._ended_in_training(result)
                break
            if trained is _Trained.DONE and not self._valid_epoch(epoch):
                result.interrupted = True
                break
            end = self._close_epoch(epoch) if trained is _Trained.DONE else RunEnd(epoch, True)
            result.epochs_completed = epoch
            state.position = Position(epoch + 1)
            if end is not None:
                result.stopped_early = end.stopped_early
                break
            if self._stop_after_epoch(epoch):  # e.g. asked by a listener at validation's end
                result.interrupted = True
                break
        if interrupter.should_stop():
            log.info("Training interrupted: %s", interrupter.get_message() or "Reason unknown")
        result.model = state.model
        result.ema = self.ema.module if self.ema is not None else None
        result.iterations, result.validations = state.optimizer_steps, state.validations
        return result

    def _ended_in_training(self, result: TrainingResult) -> None:
        """The train split ended early: interrupted, or stopped by a non-finite value."""
        if not self.non_finite.stop_requested:
            result.interrupted = True
            return
        result.stopped_non_finite = True
        self.checkpointer.wait()  # the message names the last checkpoint: committed by now
        if self.context.is_main:
            self.announce.warning(
                self.non_finite.stop_message(self.options.checkpointing.checkpointer)
            )

    def _close_epoch(self, epoch: int) -> RunEnd | None:
        """Early stopping's decision on the epoch's validation, then the epoch checkpoint,
        which records the end of the run if it ends here."""
        state = self.state
        validating = Split.VALID in state.loaders  # without validation (train_only.py):
        number = state.validations if validating else epoch  # numbered by epoch
        stop = self._should_stop_early(number)  # before the checkpoint records it
        end = RunEnd.after(epoch, self.num_epochs, stop, self.budget.spent(state))
        point = self.mid_epoch.checkpoint(state, epoch_end=True)
        self.checkpointer.save_epoch(number, state, self.store, end, point)
        return end

    def _train_epoch(self, epoch: int) -> _Trained:
        """Run the train split from the current position, with the validations inside it;
        INTERRUPTED also when a non-finite value stops the run (`on_non_finite("stop")`)."""
        state, loader = self.state, self.state.loaders[Split.TRAIN]
        if state.position.iteration == 0:
            state.start_epoch(Split.TRAIN)
        self.renderer.start_split(Split.TRAIN)  # its line times the whole epoch
        state.model.train()
        every = self.options.checkpointing.every
        start, length = state.position.iteration, loader.num_batches()
        if self._validation_due(start, length):  # a stop or crash came between its step and it
            trained = self._validate_inside(epoch)
            if trained is not _Trained.DONE:
                return trained
        batches = self.budget.batches(state, loader.iterate(start))
        iteration = start
        for iteration, batch in enumerate(batches, start + 1):
            first = iteration == start + 1  # the boundary checks: once per epoch
            if first:
                self._check_first(batch, loader)
            lr = state.accumulation.lr(state.lr_scheduler, state.lr)
            state.lr = lr
            state.step += 1
            if self.grad_sync is not None:  # the backward pass launches the all-reduces
                self.grad_sync.prepare(state.model)
            if self.compiled_step is not None:  # train_step and the optimizer step, one graph
                item = self.compiled_step(batch, lr)
                if self.ema is not None:
                    self.ema.update(state.model)
            else:
                item = self.eager_step(batch, lr, first)
            state.optimizer_steps += state.accumulation.stepped
            state.position.iteration = iteration
            metadata, progress = self._metadata(loader, iteration, lr)
            values = self.processor.process(Split.TRAIN, item, metadata, progress)
            self.listeners.iteration_end(Split.TRAIN, metadata, values)
            if self.non_finite.stop_requested:  # seen at this read-back: no checkpoint
                return _Trained.INTERRUPTED
            if self._stop_requested(iteration):
                self._save_iteration()
                return _Trained.INTERRUPTED
            if every and iteration % every == 0 and not self._save_iteration():
                return _Trained.INTERRUPTED
            if self._validation_due(iteration, length):
                trained = self._validate_inside(epoch)
                if trained is not _Trained.DONE:
                    return trained
                if self._stop_requested(iteration):  # e.g. a listener at the validation's end:
                    return _Trained.INTERRUPTED  # its checkpoint is this point's, no batch more
        if iteration == 0 and not self.budget.spent(state):  # its len() was not true
            raise no_batch_in_epoch(loader, Split.TRAIN)
        self.listeners.epoch_end(epoch, self.processor.end_epoch(Split.TRAIN, epoch))
        if self.non_finite.stop_requested:
            return _Trained.INTERRUPTED
        state.position.phase = Phase.VALID
        if Split.VALID in state.loaders:  # a checkpoint from here on redoes this validation
            state.start_epoch(Split.VALID)  # from here: not from the last one's start
        if self.context.enabled and self.context.any_rank(
            self.options.stopping.interrupter.should_stop()
        ):
            # Several ranks agree every `sync_every` iterations, which a short epoch never
            # reaches: without this, `q` or Ctrl-C would never stop such a run.
            self.checkpointer.save_iteration(state)
            return _Trained.INTERRUPTED
        return _Trained.DONE

    def _validation_due(self, iteration: int, length: int) -> bool:
        """Whether a validation inside the epoch (of `length` iterations) follows `iteration`."""
        ends = iteration >= length or self.budget.spent(self.state)  # its own validation follows
        return self.mid_epoch.due(self.state, iteration, last_iteration=ends)

    def _validate_inside(self, epoch: int) -> _Trained:
        """A validation inside the epoch, then early stopping's and the checkpointing
        strategy's decisions; when early stopping ends the run there, the epoch ends there."""
        state = self.state
        self.processor.hand_over(Split.TRAIN, epoch)  # the points so far, then the validation's
        if self.non_finite.stop_requested:  # seen at this read-back: no validation, no checkpoint
            return _Trained.INTERRUPTED
        with self.mid_epoch.isolated(state):
            validated = self._validate(epoch_end=False)
        if not validated:  # the resumed run redoes it from the same generators and batches
            state.restart_epoch(Split.VALID)
            self.checkpointer.save_iteration(state)
            return _Trained.INTERRUPTED
        number = state.validations
        if not self._should_stop_early(number):
            point = self.mid_epoch.checkpoint(state, epoch_end=False)
            self.checkpointer.save_epoch(number, state, self.store, None, point)
            return _Trained.DONE
        self.processor.end_epoch(Split.TRAIN, epoch)
        state.position.phase = Phase.DONE
        point = self.mid_epoch.checkpoint(state, epoch_end=True)
        self.checkpointer.save_epoch(number, state, self.store, RunEnd(epoch, True), point)
        return _Trained.STOPPED

    def _save_iteration(self) -> bool:
        """A mid-epoch checkpoint. With on_non_finite("stop") everything pending is read back
        first, and a non-finite value there writes none (False): the last committed
        checkpoint keeps finite weights."""
        if self.non_finite.mode == "stop":
            self.processor.flush(self.state.position.epoch)  # a collective with several ranks
            if self.non_finite.stop_requested:
                return False
        self.checkpointer.save_iteration(self.state)
        return True

    def _valid_epoch(self, epoch: int) -> bool:
        """The epoch's own validation; False if interrupted (it is redone on resume, from the
        random generators' states it began with)."""
        if Split.VALID not in self.state.loaders:  # a fit without validation (train_only.py)
            self.state.position.phase = Phase.DONE
            return True
        began = rng_state()
        if not self._validate(epoch_end=True):
            restore_rng(began)
            self.checkpointer.save_iteration(self.state)
            return False
        self.state.position.phase = Phase.DONE
        return True

    def _validate(self, epoch_end: bool) -> bool:
        """Run the next validation (N: the valid split's epoch N) on `model.valid()`; False if
        interrupted (its lines are dropped: it is redone in full)."""
        state, loader = self.state, self.state.loaders[Split.VALID]
        number = state.validations + 1
        state.start_epoch(Split.VALID)
        self.renderer.start_split(Split.VALID)
        self.listeners.validation_start()
        if self.sharded:
            state.model.eval()
        logger = self.processor.splits[Split.VALID].logger
        start = logger.positions(number)
        model: ValidStep = self.valid_model  # type: ignore[assignment]  # checked at fit
        precision = self.precision.valid() if self.precision else None

        def process(item: Any, iteration: int) -> None:
            metadata, progress = self._metadata(loader, iteration, log_epoch=number)
            values = self.processor.process(Split.VALID, item, metadata, progress)
            self.listeners.iteration_end(Split.VALID, metadata, values)

        _, interrupted = evaluate(
            loader,
            model.valid_step,
            state.model,
            Split.VALID,
            process,
            self._stop_requested,
            precision=precision,
        )
        if interrupted:  # forget it: redone in full on resume
            self.processor.clear(Split.VALID)
            logger.truncate_to(start)
            self.listeners.validation_interrupted()
            return False
        state.validations, state.validated_at = number, state.optimizer_steps
        values = self.processor.end_epoch(Split.VALID, number, shown_epoch=state.position.epoch)
        self.listeners.validation_end(state.position.epoch, values)
        self.mid_epoch.record(state, epoch_end)
        return True

    def _check_first(self, batch: Any, loader: DataAdapter) -> None:
        """What reaches the train loop at its first iteration: batch, parameters, optimizer."""
        state = self.state
        check_first_batch(batch, loader, state.model, Split.TRAIN)
        check_model_device(state.model, self.context.device)
        check_optimizer(state.optim, state.model)

    def _stop_requested(self, iteration: int) -> bool:
        """Whether to stop after this iteration (evaluation_loop.py's rule)."""
        interrupter = self.options.stopping.interrupter
        return stop_requested(interrupter, self.context, iteration, self.processor.sync_every)

    def _stop_after_epoch(self, epoch: int) -> bool:
        """Whether a stop was asked for by the end of `epoch` (now checkpointed), e.g. by a
        listener at validation's end; not after the last epoch. Rank 0 decides for all."""
        if epoch >= self.num_epochs:
            return False
        return stop_requested(self.options.stopping.interrupter, self.context)

    def _metadata(
        self,
        loader: DataAdapter,
        iteration: int,
        lr: float | None = None,
        log_epoch: int | None = None,
    ) -> tuple[MetricMetadata, TrainingProgress]:
        """The metrics' metadata (its epoch: the log's, `log_epoch` or the position's) and the
        renderer's progress (the training epoch)."""
        epoch, epochs = self.state.position.epoch, self.num_epochs
        progress = loader.progress(iteration)
        metadata = MetricMetadata(progress, log_epoch or epoch, epochs, iteration, lr)
        items, total = progress.items_processed, progress.items_total
        return metadata, TrainingProgress(epoch, epochs, iteration, items, total)

    def _should_stop_early(self, validation: int) -> bool:
        """Early stopping's decision after validation N (epoch N, without `valid_every`)."""
        strategy = self.options.stopping.early_stopping
        if strategy is None:
            return False
        stop = self.context.agree(strategy.should_stop(validation, self.store))
        if stop:
            what = "validation" if self.options.validation.every else "epoch"
            log.info("Early stopping after %s %d.", what, validation)
        return stop

    # -- set-up ----------------------------------------------------------------------------

    def _outputs(self) -> tuple[dict[Split, MetricLogger], MetricsRenderer]:
        """Loggers and renderer: rank 0 writes and draws; the others log in memory, silently."""
        from burnish.train.logger import FileMetricLogger, InMemoryMetricLogger
        from burnish.train.renderer import NullRenderer, default_renderer

        options = self.options
        if not self.context.is_main:
            return {s: InMemoryMetricLogger() for s in TRAINING_SPLITS}, NullRenderer()
        loggers = options.logging.loggers or {
            s: FileMetricLogger(options.artifact_dir / s) for s in TRAINING_SPLITS
        }
        return dict(loggers), options.logging.renderer or default_renderer()


def _file_directory(loggers: dict[Split, MetricLogger]) -> Path | None:
    """The valid split's log directory, if its logs are files (`validations.json` goes there)."""
    from burnish.train.logger import FileMetricLogger

    logger = loggers[Split.VALID]
    return logger.directory if isinstance(logger, FileMetricLogger) else None


def _mixed_precision(dtype: torch.dtype | None, model: nn.Module) -> MixedPrecision | None:
    return MixedPrecision(dtype, model_device(model)) if dtype is not None else None
