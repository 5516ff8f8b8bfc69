"""`TrainingBuilder`: every setting of a training run, held once for both of Burn's entry
points, `LearnerBuilder` (learner_builder.py, the book's `build`) and `SupervisedTraining`
(supervised.py, Burn main's `launch`).

The settings are one `LearnerOptions` value of frozen groups (options.py, settings/); the
setters, grouped by concern in settings/*_setters.py, each replace a field of it, and the
build resolves it (settings/resolve.py). A new setting is a field of its group and a setter."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.backend import check_device
from burnish.storage.url import check_not_collapsed, is_url
from burnish.train.settings.checkpoint_setters import CheckpointSetters
from burnish.train.settings.compute_setters import ComputeSetters
from burnish.train.settings.logs import LoggingOptions
from burnish.train.settings.loop_setters import LoopSetters
from burnish.train.settings.metric_setters import MetricSetters
from burnish.train.settings.options import LearnerOptions
from burnish.train.settings.output_setters import OutputSetters
from burnish.train.settings.resolve import resolved

if TYPE_CHECKING:
    from burnish.optim import Optimizer
    from burnish.storage import RemoteArtifactDir

__all__ = ["TrainingBuilder"]


class TrainingBuilder(MetricSetters, LoopSetters, ComputeSetters, CheckpointSetters, OutputSetters):
    """The settings `LearnerBuilder` and `SupervisedTraining` share, written once.

    Every method returns a new builder and leaves this one as it was (Burn's builders are
    consumed by each call), so one builder can seed several runs. The methods are Burn's
    (metrics, epochs, devices, checkpoints, early stopping, renderer, loggers), plus
    burnish's `resume`, `checkpoint_every`, `deterministic`, `mixed_precision`, `compile`,
    `strategy`, `log_to`, `log_every`, `max_iterations` and `valid_every`. Settings are
    checked when given or when the learner is built; nothing runs until training starts.

    Args:
        artifact_dir: where `experiment.log`, metric logs (`train/`, `valid/`) and
            `checkpoint/` are written: a local directory, or a URL of object storage
            (`"s3://bucket/run"`, any fsspec protocol), written through a local staging
            directory and uploaded as the run goes (docs/object-storage.md).
        storage_options: for a URL, the fsspec options of its protocol (`key`, `secret`,
            `endpoint_url`, ...); default: read from the environment (for S3, boto's
            `AWS_*` variables).

    Raises:
        ValueError: for a `pathlib.Path` that was a URL (`Path("s3://b/r")` is `s3:/b/r`),
            or `storage_options` with a local directory.
        StorageError: for a URL whose protocol's library is not installed.
    """

    def __init__(
        self, artifact_dir: str | os.PathLike, storage_options: Mapping[str, Any] | None = None
    ) -> None:
        from burnish.train.logger import FileApplicationLoggerInstaller

        storage = remote_artifact_dir(artifact_dir, storage_options)
        directory = storage.staging if storage is not None else Path(artifact_dir)
        experiment_log = FileApplicationLoggerInstaller(directory / "experiment.log")
        self._settings = LearnerOptions(
            directory, logging=LoggingOptions(application_logger=experiment_log), storage=storage
        )

    def _learner_options(self, optim: Optimizer) -> LearnerOptions:
        """The settings as `LearnerOptions`, checked against this machine and `optim`."""
        options = self._options()
        if options.parallelism.device is not None:
            check_device(options.parallelism.device)
        if options.compilation.whole_step:
            from burnish.train.loop.compile import check_compiled_step

            check_compiled_step(
                optim,
                grads_accumulation=options.optimization.grads_accumulation,
                mixed_precision=options.precision.autocast,
                strategy=options.parallelism.kind,
                world_size=int(os.environ.get("WORLD_SIZE", "1")),
            )
        return options

    def _options(self) -> LearnerOptions:
        """The settings resolved for a run (settings/resolve.py), not checked against a device."""
        return resolved(self._settings)


def remote_artifact_dir(
    artifact_dir: str | os.PathLike, storage_options: Mapping[str, Any] | None
) -> RemoteArtifactDir | None:
    """The object storage an artifact directory names (a URL), None for a local directory."""
    if not is_url(artifact_dir):
        check_not_collapsed(artifact_dir)
        if storage_options is not None:
            raise ValueError(
                "`storage_options` are for an artifact directory on object storage (a URL such "
                f"as 's3://bucket/run'). Received the local directory {str(artifact_dir)!r}: "
                "leave `storage_options` out, or pass a URL."
            )
        return None
    from burnish.storage import RemoteArtifactDir

    return RemoteArtifactDir(str(artifact_dir), storage_options)
