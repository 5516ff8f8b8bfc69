"""Shape checks and names shared by the vision metrics."""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

__all__ = ["ImagePairs", "check_images", "gaussian_blur", "gaussian_window", "rust_float"]


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


def gaussian_window(
    size: int, sigma: float, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """The normalised 1D Gaussian window of `size` taps centred on `size // 2`."""
    offsets = torch.arange(size, dtype=dtype, device=device) - size // 2
    kernel = torch.exp(-(offsets**2) / (2.0 * sigma**2))
    return kernel / kernel.sum()


def gaussian_blur(
    images: torch.Tensor, kernel: torch.Tensor, reflect: bool = False
) -> torch.Tensor:
    """Separable blur of each channel of `images` `[N, C, H, W]` by the 1D `kernel`, to the
    same size: zero padded (Burn's SSIM) or reflect padded (`reflect`, Burn's MS-SSIM)."""
    channels, size = images.shape[1], kernel.shape[0]
    pad = size // 2
    horizontal = kernel.reshape(1, 1, 1, size).expand(channels, 1, 1, size)
    vertical = kernel.reshape(1, 1, size, 1).expand(channels, 1, size, 1)
    if reflect:
        padded = F.pad(images, (pad, pad, pad, pad), mode="reflect") if pad else images
        return F.conv2d(F.conv2d(padded, horizontal, groups=channels), vertical, groups=channels)
    blurred = F.conv2d(images, horizontal, padding=(0, pad), groups=channels)
    return F.conv2d(blurred, vertical, padding=(pad, 0), groups=channels)
