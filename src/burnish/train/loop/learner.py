"""Burn's `Learner`: trains a model that implements `train_step`/`valid_step`.

`fit` builds a `Run` (run.py), the loop over the epochs; see README.md for the order of
events. As in Burn, where `Learner::fit` takes `self`, `fit` consumes the learner: it runs once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import nn

from burnish.train.loop.artifact_dir import prepare_artifact_dir
from burnish.train.loop.data_adapter import check_has_batches
from burnish.train.loop.learner_steps import LearnerSteps
from burnish.train.loop.result import inference_model, training_model
from burnish.train.loop.run import Run
from burnish.train.loop.step_check import check_model_steps
from burnish.train.loop.train_only import train_only_options
from burnish.train.parallel.distributed import DistributedContext
from burnish.train.renderer.notebook import show_summary
from burnish.train.report.summary import learner_summary
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.lr_scheduler import LrScheduler
    from burnish.optim import Optimizer
    from burnish.train.loop.result import TrainingResult
    from burnish.train.settings.options import LearnerOptions
    from burnish.tune.lr_finder_result import LrFinderResult

__all__ = ["Learner"]


class Learner(LearnerSteps):
    """Trains a model that implements `train_step`/`valid_step`.

    Two ways to make one, as in Burn: `LearnerBuilder(...).build(model, optim, lr)` (the
    book's form), or `Learner(model, optim, lr_scheduler)` handed to
    `SupervisedTraining(...).launch(learner)` (Burn main's `Learner::new`), which brings the
    settings.

    A learner is fit once (Burn's `fit` consumes it): a second `fit` raises. To continue a
    run, build a new learner with `resume()`; to train again from scratch, build a new one.

    For a loop of your own, it has Burn main's methods (learner_steps.py): `fork(device)`,
    `model()`, `lr_step()`, `lr_current()`, `train_step(item)`, `optimizer_step(grads)`,
    `optimizer_step_multi(grads)`, `load_model`, `load_optim`, `load_scheduler`.

    Example:
        >>> learner = Learner(model, AdamConfig().init(), 1e-3)  # doctest: +SKIP
        >>> result = training.launch(learner)  # doctest: +SKIP

    Args:
        model: the model; it implements `TrainStep` and `ValidStep`.
        optim: its optimizer.
        lr_scheduler: its learning-rate scheduler, a scheduler config, or a float (a
            constant rate).
        options: everything else a builder collected; None until `SupervisedTraining.launch`
            brings them.
        dataloader_train: the training data, if not given to `fit`.
        dataloader_valid: the validation data, if not given to `fit` (neither: no validation).
    """

    def __init__(
        self,
        model: nn.Module,
        optim: Optimizer,
        lr_scheduler: LrScheduler | float | Any,
        options: LearnerOptions | None = None,
        dataloader_train: Any = None,
        dataloader_valid: Any = None,
    ) -> None:
        from burnish.lr_scheduler import as_scheduler

        self._model = training_model(model)  # fit's result given back: the model it trained
        self.optim = optim
        self.lr_scheduler = as_scheduler(lr_scheduler)
        self._options = options
        self.dataloaders = (dataloader_train, dataloader_valid)
        self._fitted = False

    def fit(self, dataloader_train: Any = None, dataloader_valid: Any = None) -> TrainingResult:
        """Train for the configured epochs; returns the model and how the run ended.

        `result.model` is the model of the last epoch trained, for inference, as Burn main's
        `LearningResult` gives it (`model.valid()`): eval mode, no autograd, the trained
        parameters' storage shared. `learner.model()` is the trained model itself, in training
        mode; a new learner given `result.model` trains that one. With a
        `MetricCheckpointingStrategy`, the best epoch's model is in its checkpoint. `fit` runs
        once per learner. A run that did not finish also returns normally, saying why:
        `result.interrupted` (Ctrl-C, `q`) or `result.stopped_non_finite`
        (`on_non_finite("stop")`); a script should check them and exit non-zero, or a cluster
        reads the job as a success (a preemption signal raises `Preempted` instead).

        Example:
            >>> result = learner.fit(dataloader_train, dataloader_valid)  # doctest: +SKIP
            >>> if result.interrupted or result.stopped_non_finite:  # doctest: +SKIP
            ...     sys.exit("training did not finish: see the message above")
            >>> result.model.save_file("artifacts/model", CompactRecorder())  # doctest: +SKIP

        Args:
            dataloader_train: the training data (a burnish or torch data loader); default the
                one given to `LearnerBuilder.build`.
            dataloader_valid: the validation data, likewise; None (here and at `build`):
                train without validation (no `valid/` logs; the settings that need
                validation are refused, see train_only.py).

        Raises:
            RuntimeError: if `fit` was already called on this learner.
            ValueError: if the train data loader is missing, a data loader yields no
                batches, or a setting needs the validation left out.
            TypeError: if the model lacks `train_step` or `valid_step`.
            CheckpointError: if a requested checkpoint cannot be loaded.
            ArtifactDirError: if the artifact directory is a file, is not writable or is on
                a full disk (before anything trains).
        """
        self._check_not_fitted()
        options = self.options
        train = dataloader_train if dataloader_train is not None else self.dataloaders[0]
        valid_loader = dataloader_valid if dataloader_valid is not None else self.dataloaders[1]
        if train is None:
            raise ValueError(
                "`fit` needs a train data loader. Pass it to `learner.fit(dataloader_train, "
                "dataloader_valid)` or to `LearnerBuilder.build`."
            )
        check_has_batches(train, "train")  # before anything is written; len() only
        loaders = {Split.TRAIN: train}
        if valid_loader is None:  # a fit without validation (train_only.py)
            self._options = options = train_only_options(options)
        else:
            check_has_batches(valid_loader, "valid")
            loaders[Split.VALID] = valid_loader
        check_model_steps(self._model, validating=valid_loader is not None)
        self.dataloaders = (train, valid_loader)
        self._fitted = True  # from here on the model and optimizer may have changed
        context = DistributedContext.detect(options.parallelism.device)
        prepare_artifact_dir(options.artifact_dir, context)  # before anything is written
        run = Run(self, context, loaders)
        result = run.fit()
        self._model = result.model
        result.model = inference_model(result.model, sharded=run.sharded)  # Burn: `.valid()`
        result.renderer = run.renderer
        result.checkpointer = options.checkpointing.checkpointer  # for `result.best_model()`
        result.checkpointing_strategy = options.checkpointing.kept()
        if options.logging.summary and context.is_main:
            logged = run.processor.logged_names()  # listeners' `event.log` values
            result.summary = learner_summary(
                options, result.epochs_completed, result.validations, logged
            )
            if result.summary is not None:
                show_summary(result.summary)  # a table in a notebook
        return result

    def lr_find(
        self,
        dataloader_train: Any = None,
        *,
        min_lr: float = 1e-8,
        max_lr: float = 1.0,
        num_iterations: int = 100,
        early_stop_threshold: float | None = 4.0,
        beta: float = 0.98,
    ) -> LrFinderResult:
        """The learning-rate range test on this learner's model and optimizer
        (`burnish.tune.lr_find`): train one batch per rate from `min_lr` to `max_lr`
        (exponential), then put the model, optimizer and generators back exactly.

        The result is also written to `lr_finder.json` in the artifact directory (a learner
        built by `LearnerBuilder`), where `burnish report` plots it. See docs/lr-finder.md.

        Example:
            >>> result = learner.lr_find(dataloader_train)  # doctest: +SKIP
            >>> lr = result.suggestion()  # doctest: +SKIP

        Args:
            dataloader_train: the train data; default the one given to `build`.
            min_lr: the first rate. max_lr: the last. num_iterations: the rates tried.
            early_stop_threshold: stop once the smoothed loss exceeds this many times its
                best (None: only a non-finite loss stops it).
            beta: the loss smoothing, in `[0, 1)`.
        """
        from burnish.tune.lr_finder import lr_find

        options = self._options
        return lr_find(
            self._model, self.optim,
            dataloader_train if dataloader_train is not None else self.dataloaders[0],
            min_lr=min_lr, max_lr=max_lr, num_iterations=num_iterations,
            early_stop_threshold=early_stop_threshold, beta=beta,
            device=options.parallelism.device if options is not None else None,
            artifact_dir=options.artifact_dir if options is not None else None,
        )  # fmt: skip

    @property
    def options(self) -> LearnerOptions:
        """The settings of the run (from `LearnerBuilder.build` or `SupervisedTraining`).

        Raises:
            RuntimeError: for a learner made with `Learner(model, optim, lr_scheduler)` that
                no `SupervisedTraining` launched yet.
        """
        if self._options is None:
            raise RuntimeError(
                "This Learner has no training settings: a `Learner(model, optim, lr_scheduler)` "
                "is trained by `SupervisedTraining(artifact_dir, dataloader_train, "
                "dataloader_valid).launch(learner)`. Or build it with "
                "`LearnerBuilder(artifact_dir).build(model, optim, lr_scheduler)` and call `fit`."
            )
        return self._options

    def _check_not_fitted(self) -> None:
        if self._fitted:
            raise RuntimeError(
                "`fit` was already called on this Learner; a learner trains once (Burn's "
                "`Learner::fit` consumes it). A second `fit` would train the trained model "
                "again, count epochs from 1 again and overwrite the first run's logs. Build a "
                "new learner with `LearnerBuilder(...).build(...)`: add `.resume()` to continue "
                "the run from its checkpoints, or use a fresh model (and another artifact "
                "directory) to train again."
            )

    def _launched_with(self, options: LearnerOptions) -> Learner:
        """Take the settings `SupervisedTraining.launch` brings (a learner runs with one set)."""
        self._check_not_fitted()
        if self._options is not None and self._options is not options:
            raise RuntimeError(
                "This Learner was built by `LearnerBuilder.build`, which gave it its settings; "
                "call `learner.fit(...)`, or launch a `Learner(model, optim, lr_scheduler)` "
                "with `SupervisedTraining`."
            )
        self._options = options
        return self
