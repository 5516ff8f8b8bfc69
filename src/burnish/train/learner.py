"""Burn's `Learner`: trains a model that implements `train_step`/`valid_step`.

Each `fit` builds a `Run` (run.py), the loop over the epochs; see README.md for the order of
events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import nn

from burnish.train.distributed import DistributedContext
from burnish.train.run import Run, learner_summary
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.lr_scheduler import LrScheduler
    from burnish.optim import Optimizer
    from burnish.train.options import LearnerOptions
    from burnish.train.result import TrainingResult
    from burnish.train.summary import LearnerSummary

__all__ = ["Learner"]


class Learner:
    """Trains a model that implements `train_step`/`valid_step`. Built by `LearnerBuilder`.

    Args:
        model: the model; it implements `TrainStep` and `ValidStep`.
        optim: its optimizer.
        lr_scheduler: its learning-rate scheduler.
        options: everything else the builder collected.
        dataloader_train: the training data, if not given to `fit`.
        dataloader_valid: the validation data, if not given to `fit`.
    """

    def __init__(
        self,
        model: nn.Module,
        optim: Optimizer,
        lr_scheduler: LrScheduler,
        options: LearnerOptions,
        dataloader_train: Any = None,
        dataloader_valid: Any = None,
    ) -> None:
        self.model = model
        self.optim = optim
        self.lr_scheduler = lr_scheduler
        self.options = options
        self.dataloaders = (dataloader_train, dataloader_valid)

    def fit(self, dataloader_train: Any = None, dataloader_valid: Any = None) -> TrainingResult:
        """Train for the configured epochs; returns the model and how the run ended.

        Example:
            >>> result = learner.fit(dataloader_train, dataloader_valid)  # doctest: +SKIP
            >>> result.model.save_file("artifacts/model", CompactRecorder())  # doctest: +SKIP

        Args:
            dataloader_train: the training data (a burnish or torch data loader); default the
                one given to `LearnerBuilder.build`.
            dataloader_valid: the validation data, likewise.

        Raises:
            ValueError: if a data loader is missing.
            TypeError: if the model lacks `train_step` or `valid_step`.
            CheckpointError: if a requested checkpoint cannot be loaded.
        """
        _check_model(self.model)
        train = dataloader_train if dataloader_train is not None else self.dataloaders[0]
        valid_loader = dataloader_valid if dataloader_valid is not None else self.dataloaders[1]
        if train is None or valid_loader is None:
            raise ValueError(
                "`fit` needs a train and a valid data loader. Pass them to "
                "`learner.fit(dataloader_train, dataloader_valid)` or to `LearnerBuilder.build`."
            )
        self.dataloaders = (train, valid_loader)
        context = DistributedContext.detect(self.options.device)
        run = Run(self, context, {Split.TRAIN: train, Split.VALID: valid_loader})
        result = run.fit()
        self.model = result.model
        if self.options.summary and context.is_main:
            result.summary = self._summary()
            if result.summary is not None:
                print(result.summary)
        return result

    def _summary(self) -> LearnerSummary | None:
        return learner_summary(self.options)


def _check_model(model: nn.Module) -> None:
    for method in ("train_step", "valid_step"):
        if not callable(getattr(model, method, None)):
            raise TypeError(
                f"The model {type(model).__name__} has no `{method}(batch)` method. "
                "Implement `train_step` (returning TrainOutput) and `valid_step` "
                "(returning the metrics' item) on the model to train it with a Learner."
            )
