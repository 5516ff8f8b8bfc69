"""`SupervisedTraining`: Burn main's way to configure and launch a training (2026).

Burn main moved the settings out of the learner: `SupervisedTraining::new(dir, train, valid)`
collects them, `Learner::new(model, optim, lr_scheduler)` holds what is trained, and
`launch(learner)` runs it. Both this and `LearnerBuilder` take their settings from
`TrainingBuilder`: the same options, the same loop, the same artifacts.

Example:
    >>> training = (
    ...     SupervisedTraining("artifacts/mnist", dataloader_train, dataloader_valid)
    ...     .metrics(AccuracyMetric(), LossMetric())
    ...     .with_file_checkpointer(CompactRecorder())
    ...     .num_epochs(10)
    ...     .summary()
    ... )  # doctest: +SKIP
    >>> result = training.launch(Learner(model, AdamConfig().init(), 1e-4))  # doctest: +SKIP
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from burnish.train.settings.builder import TrainingBuilder

if TYPE_CHECKING:
    from burnish.train.loop.learner import Learner
    from burnish.train.loop.result import TrainingResult

__all__ = ["SupervisedTraining"]


class SupervisedTraining(TrainingBuilder):
    """Configures a supervised training on its data loaders; `launch` runs a `Learner`.

    Every setting method of `LearnerBuilder` is here under the same name (they are written
    once, in `TrainingBuilder`), so `.metrics(...)`, `.num_epochs(n)`,
    `.with_file_checkpointer(recorder)`, `.resume()`, `.mixed_precision("bf16")`, ... work
    alike on both.

    Args:
        artifact_dir: where `experiment.log`, metric logs (`train/`, `valid/`) and
            `checkpoint/` are written.
        dataloader_train: the training data (a burnish or torch data loader).
        dataloader_valid: the validation data; None (left out): train without validation,
            an addition to Burn, whose `SupervisedTraining::new` takes both (train_only.py).
        storage_options: for an artifact directory on object storage (a URL), the fsspec
            options of its protocol; default: read from the environment.
    """

    def __init__(
        self,
        artifact_dir: str | os.PathLike,
        dataloader_train: Any,
        dataloader_valid: Any = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(artifact_dir, storage_options)
        if dataloader_train is None:
            raise ValueError(
                "`SupervisedTraining(artifact_dir, dataloader_train, dataloader_valid)` needs "
                "a train data loader. Received: dataloader_train=None."
            )
        self._loaders = (dataloader_train, dataloader_valid)
        self._launches: list[int] = []  # one entry per launch (Burn's `launch(self)` is once)

    def launch(self, learner: Learner) -> TrainingResult:
        """Train `learner` with these settings; returns the model and how the run ended.

        The same as `LearnerBuilder(...).build(model, optim, lr).fit(train, valid)` with the
        same settings. A learner is launched once. Burn's `launch(self)` consumes the
        settings; burnish's may launch again (a new learner, a new run), and a second launch
        that does not `resume()` warns: it trains from epoch 1 into the same directory,
        replacing the first run's metric logs and checkpoints.

        Args:
            learner: `Learner(model, optim, lr_scheduler)`.

        Raises:
            TypeError: if `learner` is not a `Learner`.
            RuntimeError: if the learner was already trained, or built by `LearnerBuilder`.
            ValueError: when the settings cannot work (see the message for the fix).
        """
        from burnish.train.loop.learner import Learner

        if not isinstance(learner, Learner):
            raise TypeError(
                "`launch` takes a `Learner(model, optim, lr_scheduler)`. Received: "
                f"{type(learner).__name__}."
            )
        options = self._learner_options(learner.optim)
        learner = learner._launched_with(options)
        if self._launches and options.checkpointing.resume_from is None:
            warnings.warn(
                f"This SupervisedTraining already launched a run in '{options.artifact_dir}'; "
                "this launch starts a new run from epoch 1 there, replacing that run's metric "
                "logs and checkpoints. Add `.resume()` to continue it, or give another "
                "artifact directory to keep it.",
                stacklevel=2,
            )
        self._launches.append(len(self._launches) + 1)
        if self._settings.parallelism.custom is not None:  # Burn's TrainingStrategy::Custom
            return self._settings.parallelism.custom.train(learner, *self._loaders)
        return learner.fit(*self._loaders)
