"""Numbers in Burn's metric logs: how Rust writes and reads an `f64`.

Burn's `NumericEntry::serialize` writes a value with Rust's `Display` (`v.to_string()`): the
shortest digits that read back to the same `f64`, never in scientific notation (`1e-5` is
`0.00001`, `1e20` is `100000000000000000000`), no `.0` on whole numbers (`32.0` is `32`), and
`NaN`, `inf`, `-inf` for the non-finite values. Python's `repr` has the same shortest digits,
so the two differ only in layout. Both Rust's `str::parse::<f64>` and Python's `float` read
either form (and `nan`/`inf` in any case), so Burn reads burnish's logs and the other way round.

Nothing here imports torch.
"""

from __future__ import annotations

import decimal
import math

__all__ = ["FINAL_TAG", "display_f64"]

FINAL_TAG = "final"
"""The second field of Burn's epoch-final line, `"{value},final"` (`NumericEntry::Final`)."""


def display_f64(value: float) -> str:
    """`value` as Rust's `Display` for `f64` writes it (`value.to_string()` in Burn).

    Example:
        >>> [display_f64(v) for v in (0.5, 32.0, 1e-5, -0.0, float("nan"), float("-inf"))]
        ['0.5', '32', '0.00001', '-0', 'NaN', '-inf']

    Args:
        value: Any float.

    Returns:
        The shortest round-trip digits in positional notation.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    if "e" in text:  # Python switches to scientific notation below 1e-4 and from 1e16
        return format(decimal.Decimal(text).normalize(), "f")
    return text[:-2] if text.endswith(".0") else text
