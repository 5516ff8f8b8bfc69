"""One `Learner.fit`: the run-time parts built for it, and the loop over its epochs.

Per epoch: the train split (one lr step, one `train_step`, one optimizer step per iteration),
then validation on `model.valid()` under no autograd, then the components' decision to stop
(early stopping), then the epoch checkpoint, which records the state after every decision of
the epoch (and, for the last epoch, how the run ended). Epochs are 1-based. The loop's features
are its components (components/): it tells them its events and asks them its decisions (a step
budget ending the run, a validation due inside the epoch, a halt) and names none of them. See
README.md for the order of events.
"""

from __future__ import annotations

import enum
import logging
from typing import TYPE_CHECKING, Any

from torch import nn

from burnish.module import valid
from burnish.train.checkpoint.learning import LearningCheckpointer
from burnish.train.checkpoint.rng import restore_rng, rng_state
from burnish.train.checkpoint.run_end import Resumed, RunEnd
from burnish.train.components.registry import components_for
from burnish.train.loop.accumulation import Accumulation
from burnish.train.loop.data_adapter import DataAdapter, no_batch_in_epoch
from burnish.train.loop.eager_step import EagerTrainStep
from burnish.train.loop.evaluation_loop import evaluate, stop_requested
from burnish.train.loop.position import Phase, Position
from burnish.train.loop.precision import warn_emulated_bf16
from burnish.train.loop.result import TrainingResult
from burnish.train.loop.run_parts import compiled_step, mixed_precision, outputs, place_model
from burnish.train.loop.session import run_session
from burnish.train.loop.state import TrainingState
from burnish.train.loop.step_check import check_first_batch, check_model_device, check_optimizer
from burnish.train.metric.base import MetricMetadata
from burnish.train.metric.store import MetricStore
from burnish.train.parallel.distributed import DistributedContext
from burnish.train.parallel.grad_sync import GradientSync
from burnish.train.renderer.base import TrainingProgress
from burnish.train.report.announce import Announcer
from burnish.train.report.processor import MetricsProcessor, SplitMetrics
from burnish.train.report.watcher import Watcher
from burnish.train.split import TRAINING_SPLITS, Split

if TYPE_CHECKING:
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
    """One `fit` of `learner`: the run-time parts built for it, and the loop over its epochs.

    The loop's features are its `components` (components/registry.py): it tells them its events
    and asks them its decisions, and names none of them.
    """

    def __init__(
        self, learner: Learner, context: DistributedContext, loaders: dict[Split, Any]
    ) -> None:
        options = learner.options
        self.options = options
        self.context = context
        self.sharded = options.parallelism.kind == "fsdp" and context.enabled
        model = place_model(learner.model(), options, context, self.sharded)
        loggers, self.renderer = outputs(options, context)
        self.precision = mixed_precision(options.precision.autocast, model)
        self.announce = Announcer(self.renderer)  # one line each: console and experiment.log
        scaled = self.precision is not None and self.precision.scaler is not None
        self.components = components_for(
            options, context, model, scaled=scaled, announce=self.announce, loggers=loggers
        )
        self.processor = MetricsProcessor(
            [SplitMetrics(s, list(options.metrics[s]), loggers[s]) for s in TRAINING_SPLITS],
            self.renderer,
            reduce=context.reducer(),
            rank=context.rank,
            watchers=[part for part in self.components if isinstance(part, Watcher)],
        )
        self.store = MetricStore(loggers)
        self.num_epochs = options.stopping.num_epochs or 1  # the run's last epoch: set by `fit`
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
            world_size=context.world_size,
            sharded=self.sharded,
            scaler=self.precision.scaler if self.precision is not None else None,
            components=self.components,
        )
        self.checkpointer = LearningCheckpointer(
            options.checkpointing.checkpointer,
            options.checkpointing.kept(),
            options.checkpointing.resume_from,
            is_main=context.is_main,
            before_save=self.components.before_checkpoint,
            after_save=self.components.checkpoint,
            announce=self.announce,
            artifact_dir=options.artifact_dir,
        )
        self.grad_sync = (
            GradientSync(
                context.world_size, overlap=(options.optimization.grads_accumulation or 1) == 1
            )
            if context.enabled and not self.sharded  # FSDP reduce-scatters in backward
            else None
        )
        self.compiled_step = compiled_step(
            model, learner.optim, options, context, self.precision, self.announce.warning
        )
        self.eager_step = EagerTrainStep(
            self.state, self.precision, self.grad_sync, self.components
        )
        self.components.bind(self)
        self.valid_model = self._valid_model(model)

    def _valid_model(self, model: nn.Module) -> Any:
        """What validation runs: the inference twin (it shares storage: one for the run), or
        what a component gives instead (`with_ema`: the average's). FSDP's hooks belong to the
        sharded model itself, so under FSDP it is validated, in eval mode."""
        if self.sharded:
            return model
        instead = self.components.valid_model(model)
        return instead if instead is not None else valid(model)

    def fit(self) -> TrainingResult:
        with run_session(self):
            if self.context.is_main:
                self.announce.run_start(self.options)
                warn_emulated_bf16(self.precision, self.announce.warning)  # once per run
            stopping = self.options.stopping
            resumed = self.checkpointer.restore(
                self.state, self.context.device, self.context.barrier,
                over=lambda r: r.is_over(stopping.num_epochs, stopping.max_iterations),
                validation_next=lambda: self._validation_due(
                    self.state.position.iteration, self.state.loaders[Split.TRAIN].num_batches()
                ),
            )  # fmt: skip
            if resumed is not None:
                resumed.check_epochs(stopping.num_epochs)
            if resumed is not None and resumed.is_over(
                stopping.num_epochs, stopping.max_iterations
            ):
                return self._already_complete(resumed)
            batches = self.state.loaders[Split.TRAIN].num_batches()
            self.num_epochs = self.components.epochs(self.num_epochs, batches)
            self.renderer.start(self.num_epochs, stopping.interrupter)
            if self.context.is_main:
                self._show_model()
            self.components.fit_start(resumed=resumed is not None)
            result = self._epochs()
            self.checkpointer.wait()  # written in the background: every one committed now
            self.components.result(result)
            self.components.fit_end(result)  # e.g. preemption raises `Preempted` here
            return result

    def _already_complete(self, resumed: Resumed) -> TrainingResult:
        """A resumed run that had ended: nothing to train; what the ended run returned."""
        self.announce.info(resumed.describe())
        result = TrainingResult(
            self.state.model,
            epochs_completed=resumed.epochs_completed,
            stopped_early=resumed.stopped_early,
            artifact_dir=self.options.artifact_dir,
            iterations=self.state.optimizer_steps,
            validations=self.state.validations,
        )
        self.components.result(result)
        return result

    def _show_model(self) -> None:
        """The model summary in the experiment log and the dashboard."""
        from burnish.module_summary import ModelSummary

        summary = ModelSummary.from_module(self.state.model)
        log.info("Model summary:\n%s", str(summary).rstrip("\n"))
        self.renderer.model_summary(summary)

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
                result.stopped_non_finite = self.components.halted()
                result.interrupted = not result.stopped_non_finite
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
        result.iterations, result.validations = state.optimizer_steps, state.validations
        return result

    def _close_epoch(self, epoch: int) -> RunEnd | None:
        """The components' decision on the epoch's validation (early stopping), then the epoch
        checkpoint, which records the end of the run if it ends here."""
        state = self.state
        validating = Split.VALID in state.loaders  # without validation (train_only.py):
        number = state.validations if validating else epoch  # numbered by epoch
        stop = self.components.should_stop(number)  # before the checkpoint records it
        end = RunEnd.after(epoch, self.num_epochs, stop, self.components.spent())
        point = self.components.checkpoint_point(epoch_end=True)
        self.checkpointer.save_epoch(number, state, self.store, end, point)
        return end

    def _train_epoch(self, epoch: int) -> _Trained:
        """Run the train split from the current position, with the validations inside it;
        INTERRUPTED also when a component halts the run (`on_non_finite("stop")`)."""
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
        batches = self.components.batches(loader.iterate(start))
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
                self.components.after_optimizer_step(state.model, None)
            else:
                item = self.eager_step(batch, lr, first)
            state.optimizer_steps += state.accumulation.stepped
            state.position.iteration = iteration
            metadata, progress = self._metadata(loader, iteration, lr)
            values = self.processor.process(Split.TRAIN, item, metadata, progress)
            self.components.iteration_end(Split.TRAIN, metadata, values)
            if self.components.halted():  # seen at this read-back: no checkpoint
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
        if iteration == 0 and not self.components.spent():  # its len() was not true
            raise no_batch_in_epoch(loader, Split.TRAIN)
        self._end_split(Split.TRAIN, epoch)
        if self.components.halted():
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

    def _end_split(
        self, split: Split, epoch: int, shown_epoch: int | None = None
    ) -> dict[str, float]:
        """Close `split`'s epoch: its values read back, the components told (values they log
        join them), the logs closed."""
        return self.processor.end_epoch(
            split, epoch, shown_epoch,
            closing=lambda values: self.components.split_end(split, epoch, values),
        )  # fmt: skip

    def _validation_due(self, iteration: int, length: int) -> bool:
        """Whether a validation inside the epoch (of `length` iterations) follows `iteration`."""
        ends = iteration >= length or self.components.spent()  # its own validation follows
        return self.components.validation_due(iteration, last_iteration=ends)

    def _validate_inside(self, epoch: int) -> _Trained:
        """A validation inside the epoch, then the components' decisions (early stopping) and
        the checkpointing strategy's; when the run stops there, the epoch ends there."""
        state = self.state
        self.processor.hand_over(Split.TRAIN, epoch)  # the points so far, then the validation's
        if self.components.halted():  # seen at this read-back: no validation, no checkpoint
            return _Trained.INTERRUPTED
        if not self._validate(epoch_end=False):  # redone on resume, same generators, batches
            state.restart_epoch(Split.VALID)
            self.checkpointer.save_iteration(state)
            return _Trained.INTERRUPTED
        number = state.validations
        if not self.components.should_stop(number):
            point = self.components.checkpoint_point(epoch_end=False)
            self.checkpointer.save_epoch(number, state, self.store, None, point)
            return _Trained.DONE
        self._end_split(Split.TRAIN, epoch)
        state.position.phase = Phase.DONE
        point = self.components.checkpoint_point(epoch_end=True)
        self.checkpointer.save_epoch(number, state, self.store, RunEnd(epoch, True), point)
        return _Trained.STOPPED

    def _save_iteration(self) -> bool:
        """A mid-epoch checkpoint, unless a component forbids one now (False): with
        on_non_finite("stop"), a non-finite value read back just before; the last committed
        checkpoint keeps finite weights."""
        if not self.components.may_checkpoint():
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
        self.components.validation_start(epoch_end)
        state.start_epoch(Split.VALID)
        self.renderer.start_split(Split.VALID)
        if self.sharded:
            state.model.eval()
        logger = self.processor.splits[Split.VALID].logger
        start = logger.positions(number)
        model: ValidStep = self.valid_model
        precision = self.precision.valid() if self.precision else None

        def process(item: Any, iteration: int) -> None:
            metadata, progress = self._metadata(loader, iteration, log_epoch=number)
            values = self.processor.process(Split.VALID, item, metadata, progress)
            self.components.iteration_end(Split.VALID, metadata, values)

        _, interrupted = evaluate(
            loader, model.valid_step, state.model, Split.VALID, process, self._stop_requested,
            precision=precision,
        )  # fmt: skip
        if interrupted:  # forget it: redone in full on resume
            self.processor.clear(Split.VALID)
            logger.truncate_to(start)
            self.components.validation_interrupted()
            return False
        state.validations, state.validated_at = number, state.optimizer_steps
        self._end_split(Split.VALID, number, shown_epoch=state.position.epoch)
        self.components.validation_end(epoch_end)
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
