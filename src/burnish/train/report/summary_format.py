"""How the LearnerSummary writes a metric's value, in its text table and its HTML table alike."""

from __future__ import annotations

import math

__all__ = ["format_value"]


def format_value(value: float) -> str:
    """Burn's `fmt_val`: `{:<9.3}`, or `{:<9.3e}` below 1e-2 (Rust's float formatting).

    Example:
        >>> format_value(0.25), format_value(0.001234), format_value(float("nan"))
        ('0.250    ', '1.234e-3 ', 'NaN      ')
    """
    if math.isnan(value):
        text = "NaN"
    elif math.isinf(value):
        text = "inf" if value > 0 else "-inf"
    elif value < 1e-2:
        mantissa, exponent = f"{value:.3e}".split("e")
        text = f"{mantissa}e{int(exponent)}"
    else:
        text = f"{value:.3f}"
    return f"{text:<9}"
