"""Torch's exporters talk: progress lines, warnings about optional packages and their own
deprecations, the partial graph of a failed trace on stderr. An export through burnish says
one result, or raises one error holding torch's (its cause: `--debug` prints it)."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator

__all__ = ["quiet_exporter"]

_LOGGERS = ("torch.onnx", "torch.export", "torch._export", "torch.fx.experimental.symbolic_shapes")


@contextlib.contextmanager
def quiet_exporter() -> Iterator[None]:
    """Within the block: what Python code prints on stdout and stderr dropped, the exporters'
    loggers at ERROR, FutureWarnings and DeprecationWarnings ignored (errors still raise)."""
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
