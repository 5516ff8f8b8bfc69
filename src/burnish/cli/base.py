"""What the commands share: the error they raise for bad input, and how sizes are written."""

from __future__ import annotations

from burnish.errors import BurnishError

__all__ = ["CommandError", "format_bytes"]


class CommandError(BurnishError):
    """Bad input to a command; its message is the line printed on stderr."""


def format_bytes(size: int) -> str:
    """`size` in B, KiB, MiB or GiB, e.g. `"12.3 KiB"`."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
