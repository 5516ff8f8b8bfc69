"""How close an exported file's outputs are to the model's: the largest difference, against a
tolerance scaled by the outputs' size (no exact float comparison: the runtimes reduce in
another order)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils import _pytree

__all__ = ["Difference", "Tolerance", "default_tolerance", "difference", "output_leaves"]


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Outputs agree when `|exported - model| <= atol + rtol * max|model|` everywhere (the
    max over each output's finite values)."""

    rtol: float
    atol: float

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value >= 0 or value == float("inf"):
                raise ValueError(
                    f"`{name}` must be a finite number >= 0. Received: {name}={value!r}."
                )


# float32 on a GPU may run convolutions and matmuls in TF32 (10 mantissa bits): 1e-3.
_RTOL = {torch.float16: 1e-2, torch.bfloat16: 5e-2}


def default_tolerance(outputs: Sequence[torch.Tensor]) -> Tolerance:
    """1e-3 relative (and 1e-5 absolute) for float32/float64 outputs, 1e-2 for float16 and
    5e-2 for bfloat16: the loosest of the outputs' dtypes."""
    rtol = max((_RTOL.get(t.dtype, 1e-3) for t in outputs if t.is_floating_point()), default=0.0)
    return Tolerance(rtol=rtol, atol=1e-5 if rtol else 0.0)


@dataclasses.dataclass(frozen=True)
class Difference:
    """The largest `|exported - model|` over all outputs (`inf` where one is NaN or inf and
    the other is not), what was allowed there, and the first output that broke it (None: all
    within)."""

    largest: float
    allowed: float
    mismatch: str | None = None


def output_leaves(outputs: Any) -> list[torch.Tensor]:
    """The tensors of a forward's output (a tensor, or tuples, lists and dicts of them) in the
    order the exporters flatten them.

    Raises:
        TypeError: for an output holding something else than tensors.
    """
    leaves = _pytree.tree_leaves(outputs)
    wrong = [type(leaf).__name__ for leaf in leaves if not isinstance(leaf, torch.Tensor)]
    if wrong or not leaves:
        raise TypeError(
            "The model's forward must return a tensor, or tuples, lists or dicts of tensors, "
            f"to be exported. Received: {type(outputs).__name__}"
            + (f" holding {', '.join(sorted(set(wrong)))}." if wrong else " with no tensor.")
        )
    return leaves


def difference(
    expected: Sequence[torch.Tensor], actual: Sequence[torch.Tensor], tolerance: Tolerance
) -> Difference:
    """Compare the exported outputs `actual` with the model's `expected`, output by output.

    Integer and bool outputs must be equal; float ones within `tolerance`. NaN where the model
    has NaN, and the same infinity where it has one, count as equal.
    """
    if len(expected) != len(actual):
        return Difference(
            float("inf"), 0.0, f"{len(actual)} outputs where the model returns {len(expected)}"
        )
    largest, allowed, mismatch = 0.0, 0.0, None
    for index, (want, got) in enumerate(zip(expected, actual)):
        want = want.detach().cpu()
        got = torch.as_tensor(got).detach().cpu()
        if want.shape != got.shape:
            found = f"shape {tuple(got.shape)} where the model's is {tuple(want.shape)}"
            return Difference(float("inf"), allowed, f"output {index}: {found}")
        gap, limit = _gap(want, got, tolerance)
        largest, allowed = max(largest, gap), max(allowed, limit)
        if gap > limit and mismatch is None:
            mismatch = f"output {index} differs by up to {gap:.3g} (allowed {limit:.3g})"
    return Difference(largest, allowed, mismatch)


def _gap(want: torch.Tensor, got: torch.Tensor, tolerance: Tolerance) -> tuple[float, float]:
    """The largest difference of one output, and the largest allowed."""
    if want.numel() == 0:
        return 0.0, 0.0
    if want.is_complex():
        want, got = torch.view_as_real(want), torch.view_as_real(got.to(want.dtype))
    if not want.is_floating_point():
        return (0.0 if torch.equal(want, got.to(want.dtype)) else float("inf")), 0.0
    want, got = want.double(), got.double()
    inf = float("inf")
    same = (want == got) | (torch.isnan(want) & torch.isnan(got))  # equal infinities too
    gap = torch.where(same, 0.0, (want - got).abs().nan_to_num(nan=inf, posinf=inf))
    finite = want[torch.isfinite(want)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    return float(gap.max()), tolerance.atol + tolerance.rtol * scale
