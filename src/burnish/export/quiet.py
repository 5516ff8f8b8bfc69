"""Torch's exporters talk: progress lines, warnings about optional packages and their own
deprecations. An export through burnish says one result instead."""

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
    """Within the block: the exporters' stdout dropped, their loggers at ERROR, their
    FutureWarnings and DeprecationWarnings ignored (errors still raise)."""
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
