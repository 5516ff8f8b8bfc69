"""`LearnerBuilder`: Burn's builder for the training loop, method for method (the settings
live in `TrainingBuilder`; this adds `build`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from burnish.train.settings.builder import TrainingBuilder

if TYPE_CHECKING:
    from torch import nn

    from burnish.lr_scheduler import LrScheduler
    from burnish.optim import Optimizer
    from burnish.train.loop.learner import Learner

__all__ = ["LearnerBuilder"]


class LearnerBuilder(TrainingBuilder):
    """Configures and builds a `Learner`; every method returns a new builder
    and leaves this one as it was.

    The methods are Burn's `LearnerBuilder`'s (metrics, epochs, devices, checkpoints,
    early stopping, renderer, loggers) plus burnish's (see `TrainingBuilder`, which holds
    them all: `SupervisedTraining` has the same ones). Settings are checked when given or at
    `build`; nothing runs until `Learner.fit`.

    Args:
        artifact_dir: where `experiment.log`, metric logs (`train/`, `valid/`) and
            `checkpoint/` are written.

    Example:
        `model` has `train_step(batch) -> TrainOutput` and `valid_step(batch)` (see the
        guide's basic workflow); the data loaders come from `DataLoaderBuilder`:

        >>> from burnish.optim import AdamConfig
        >>> from burnish.record import CompactRecorder
        >>> from burnish.train import LearnerBuilder
        >>> from burnish.train.metric import AccuracyMetric, LossMetric
        >>> learner = (
        ...     LearnerBuilder("artifacts/mnist")
        ...     .metric_train_numeric(AccuracyMetric())
        ...     .metric_valid_numeric(AccuracyMetric())
        ...     .metric_train_numeric(LossMetric())
        ...     .metric_valid_numeric(LossMetric())
        ...     .with_file_checkpointer(CompactRecorder())
        ...     .devices(["cuda"])
        ...     .num_epochs(10)
        ...     .summary()
        ...     .build(model, AdamConfig().init(), 1e-4)
        ... )  # doctest: +SKIP
        >>> result = learner.fit(dataloader_train, dataloader_valid)  # doctest: +SKIP
        >>> result.model.save_file("artifacts/mnist/model", CompactRecorder())  # doctest: +SKIP
    """

    # -- build -----------------------------------------------------------------------------

    def build(
        self,
        model: nn.Module,
        optim: Optimizer,
        lr_scheduler: LrScheduler | float | Any,
        dataloader_train: Any = None,
        dataloader_valid: Any = None,
    ) -> Learner:
        """Create the `Learner`.

        Args:
            model: the model to train; it implements `TrainStep` and `ValidStep`.
            optim: its optimizer, e.g. `AdamConfig().init()`.
            lr_scheduler: a scheduler, a scheduler config, or a float (a constant rate).
            dataloader_train: the training data, if not given to `fit`.
            dataloader_valid: the validation data, if not given to `fit`.

        Raises:
            ValueError: when the configuration cannot work (see the message for the fix), e.g.
                a device of `.devices(...)` that this machine does not have.
        """
        from burnish.lr_scheduler import as_scheduler
        from burnish.train.loop.learner import Learner

        if self._settings.parallelism.custom is not None:
            raise ValueError(
                "A custom training strategy (`TrainingStrategy.custom`) runs through "
                "`SupervisedTraining(...).launch(Learner(model, optim, lr))`, not "
                "`LearnerBuilder.build`. Use SupervisedTraining, or an ExecutionStrategy here."
            )
        options = self._learner_options(optim)
        return Learner(
            model, optim, as_scheduler(lr_scheduler), options, dataloader_train, dataloader_valid
        )
