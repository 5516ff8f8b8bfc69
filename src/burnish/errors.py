"""The package's exception types, one per subsystem, all catchable as `BurnishError`."""

__all__ = [
    "ArtifactDirError",
    "BurnishError",
    "CheckpointError",
    "ConfigError",
    "DatasetError",
    "RecordError",
    "RunLockedError",
]


class BurnishError(Exception):
    """Base class of every error burnish raises on purpose."""


class ConfigError(BurnishError, ValueError):
    """A config could not be built or loaded: names the field, expected and received."""


class DatasetError(BurnishError, RuntimeError):
    """A dataset file is missing, corrupt or could not be downloaded."""


class RecordError(BurnishError, ValueError):
    """A record file is invalid, hostile, or does not match the module it is loaded into."""


class CheckpointError(BurnishError, RuntimeError):
    """A checkpoint is missing, incomplete or corrupt."""


class RunLockedError(BurnishError, RuntimeError):
    """An artifact directory is being written by another run (see `burnish.run_lock`)."""


class ArtifactDirError(BurnishError, ValueError):
    """A run's artifact directory cannot be used: it is a file, not writable, or its disk is
    full (see `burnish.train.loop.artifact_dir`)."""
