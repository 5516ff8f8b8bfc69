"""Shared argument checks for the schedulers (Burn's `init` errors, as exceptions)."""

from __future__ import annotations

from burnish.errors import ConfigError


def check_initial_lr(initial_lr: float) -> None:
    """Burn requires `initial_lr` in (0, 1] for linear, exponential and cosine schedules."""
    if not 0.0 < initial_lr <= 1.0:
        raise ConfigError(
            "Initial learning rate must be greater than 0 and at most 1. Received: "
            f"initial_lr={initial_lr!r}."
        )


def check_positive_int(name: str, value: int, what: str) -> None:
    """`value` must be an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what} must be at least 1. Received: {name}={value!r}.")
