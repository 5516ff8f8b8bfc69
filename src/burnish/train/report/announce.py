"""What a run tells its user, one line each, on the console and in the experiment log.

The artifact directory in use, where the logs are, the checkpoint a run resumed from, the
checkpoints a resume skipped or removed and why: each is one line in `experiment.log` (a log
record of `burnish.train`) and the same line on the console, through the renderer's `message`
(printed plainly before the dashboard starts; the dashboard shows one that comes while it runs
and prints it again when it closes).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.train.renderer.base import MetricsRenderer
    from burnish.train.settings.options import LearnerOptions

__all__ = ["Announcer"]

log = logging.getLogger("burnish.train")


class Announcer:
    """Says one line to the experiment log and, with a renderer, on the console.

    Args:
        renderer: where the console lines go (`MetricsRenderer.message`); None: the log only.
        logger: where the log records go.
    """

    def __init__(
        self, renderer: MetricsRenderer | None = None, logger: logging.Logger = log
    ) -> None:
        self.renderer = renderer
        self.logger = logger

    def info(self, text: str) -> None:
        """Tell `text`: an INFO record, and the line on the console."""
        self.logger.info("%s", text)
        if self.renderer is not None:
            self.renderer.message(text)

    def warning(self, text: str) -> None:
        """Warn with `text`: a WARNING record, and `Warning: <text>` on the console."""
        self.logger.warning("%s", text)
        if self.renderer is not None:
            self.renderer.message(f"Warning: {text}")

    def run_start(self, options: LearnerOptions) -> None:
        """Where the run writes: the artifact directory, and the experiment log if any."""
        directory = options.artifact_dir.absolute()
        parts = []
        if options.logging.loggers is None:
            valid = " and valid/" if options.metrics.get(Split.VALID) else ""  # train_only.py
            parts.append(f"metric logs in train/{valid}")
        if options.checkpointing.checkpointer is not None:
            checkpoints = options.checkpointing.checkpointer.directory.absolute()
            if checkpoints.is_relative_to(directory):
                checkpoints = checkpoints.relative_to(directory)
            parts.append(f"checkpoints in {checkpoints}/")
        where = f" ({', '.join(parts)})" if parts else ""
        storage = options.storage
        if storage is None:
            self.info(f"Artifact directory: {directory}{where}")
        else:
            self.info(f"Artifact directory: {storage.url}, staged in {directory}{where}")
            for line in storage.pulled.describe(storage.url, directory) if storage.pulled else ():
                (self.warning if line.startswith("Ignoring") else self.info)(line)
        log_file = getattr(options.logging.application_logger, "path", None)
        if log_file is not None:
            self.info(f"Experiment log: {log_file.absolute()}")
