"""Shape checks and names shared by the vision metrics."""

from __future__ import annotations

import dataclasses

import torch

__all__ = ["ImagePairs", "check_images", "rust_float"]


@dataclasses.dataclass
class ImagePairs:
    """Predicted and reference images (or masks) of one shape, `[N, C, ...]`: what PSNR,
    SSIM and Dice read (each metric has its own input type of these fields, as Burn).

    Attributes:
        outputs: predicted images `[N, C, H, W]` (Dice: 0/1 masks `[B, C, ...]`).
        targets: reference images of the same shape.
    """

    outputs: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of images."""
        return self.outputs.shape[0]


def check_images(metric: str, outputs: torch.Tensor, targets: torch.Tensor) -> None:
    """Outputs and targets must be floating `[N, C, H, W]` images of one shape.

    Raises:
        ValueError: naming `metric`, what it received and the fix.
    """
    if outputs.ndim != 4 or outputs.shape != targets.shape:
        raise ValueError(
            f"{metric} expects outputs and targets of one shape [N, C, H, W]. Received: "
            f"outputs {list(outputs.shape)}, targets {list(targets.shape)}. Add the missing "
            "batch or channel dimension (`unsqueeze`)."
        )
    if not (outputs.is_floating_point() and targets.is_floating_point()):
        raise ValueError(
            f"{metric} expects floating-point images. Received: outputs {outputs.dtype}, "
            f"targets {targets.dtype}. Convert them with `.float()`."
        )


def rust_float(value: float) -> str:
    """`value` as Rust's `{}` prints an f64: `1` for 1.0, `1.5` for 1.5."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text
