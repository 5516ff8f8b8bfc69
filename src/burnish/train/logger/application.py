"""The experiment log (`<artifact_dir>/experiment.log`): Burn's `ApplicationLoggerInstaller`."""

from __future__ import annotations

import logging
import os
import sys
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType

__all__ = ["ApplicationLoggerInstaller", "FileApplicationLoggerInstaller"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_LOCK = threading.Lock()
_INSTALLED: dict[Path, _Installation] = {}  # resolved path -> what install() changed
_PACKAGE_LEVEL_SET = False  # whether install() raised the `burnish` logger from NOTSET to INFO


class ApplicationLoggerInstaller(ABC):
    """Sets up where the application's log records go for the length of a training run."""

    @abstractmethod
    def install(self) -> None:
        """Start sending log records to the destination (idempotent)."""

    @abstractmethod
    def uninstall(self) -> None:
        """Undo `install` (a no-op when not installed)."""


class _Installation:
    """The handler one installer added and the global settings it changed, to undo them."""

    def __init__(self, handler: logging.Handler, hook: _ExceptHook) -> None:
        self.handler = handler
        self.hook = hook


class FileApplicationLoggerInstaller(ApplicationLoggerInstaller):
    """Write INFO and above log records to a file, as Burn writes `experiment.log`.

    `install()` adds a `logging.FileHandler` (append mode, level INFO) to the root logger, so
    records from every library at or above its logger's level land in the file; the `burnish`
    logger is set to INFO when it has no level, so the training loop's INFO records do too. An
    uncaught exception is logged to the file (Burn's panic hook) before the usual traceback.
    Installing the same path twice adds nothing; `uninstall()` restores everything.

    Example:
        >>> installer = FileApplicationLoggerInstaller("artifacts/experiment.log")
        >>> installer.install()
        >>> logging.getLogger("burnish.train").info("epoch 1 done")
        >>> installer.uninstall()

    Args:
        path: The log file; its directory is created on `install()`.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    @property
    def installed(self) -> bool:
        """Whether a handler for this path is installed."""
        return self._key() in _INSTALLED

    def _key(self) -> Path:
        return self.path.expanduser().resolve()

    def install(self) -> None:
        """Add the file handler (no-op if this path's handler is already installed).

        Raises:
            ValueError: if `path` is an existing directory.
        """
        global _PACKAGE_LEVEL_SET
        key = self._key()
        if key.is_dir():
            raise ValueError(
                f"`path` must be a file, not a directory. Received: path='{self.path}'. "
                "Pass e.g. '<artifact_dir>/experiment.log'."
            )
        with _LOCK:
            if key in _INSTALLED:
                return
            key.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(key, mode="a", encoding="utf-8")
            handler.setLevel(logging.INFO)
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
            logging.getLogger().addHandler(handler)
            package = logging.getLogger("burnish")
            if package.level == logging.NOTSET:
                package.setLevel(logging.INFO)
                _PACKAGE_LEVEL_SET = True
            hook = _ExceptHook(handler, key)
            hook.previous = sys.excepthook
            sys.excepthook = hook
            _INSTALLED[key] = _Installation(handler, hook)

    def uninstall(self) -> None:
        """Remove the file handler and restore what `install` changed (no-op if not installed)."""
        global _PACKAGE_LEVEL_SET
        with _LOCK:
            installation = _INSTALLED.pop(self._key(), None)
            if installation is None:
                return
            logging.getLogger().removeHandler(installation.handler)
            installation.handler.close()
            if _PACKAGE_LEVEL_SET and not _INSTALLED:
                logging.getLogger("burnish").setLevel(logging.NOTSET)
                _PACKAGE_LEVEL_SET = False
            if sys.excepthook is installation.hook:
                sys.excepthook = installation.hook.previous
            else:  # another hook was installed on top: make ours a pass-through
                installation.hook.handler = None

    def __enter__(self) -> FileApplicationLoggerInstaller:
        self.install()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()


class _ExceptHook:
    """Log an uncaught exception to the experiment log, then defer to the previous hook."""

    def __init__(self, handler: logging.Handler, path: Path) -> None:
        self.handler: logging.Handler | None = handler
        self.path = path
        self.previous = sys.__excepthook__

    def __call__(
        self, kind: type[BaseException], value: BaseException, traceback: TracebackType | None
    ) -> None:
        if self.handler is not None and not issubclass(kind, KeyboardInterrupt):
            record = logging.LogRecord(
                "burnish",
                logging.ERROR,
                __file__,
                0,
                "Uncaught exception",
                None,
                (kind, value, traceback),
            )
            self.handler.handle(record)
            print(
                f"=== ERROR ===\nA fatal error happened; the experiment log is at '{self.path}'."
                "\n=============",
                file=sys.stderr,
            )
        self.previous(kind, value, traceback)
