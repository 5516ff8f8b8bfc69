"""Decoding image files with Pillow, as Burn's `image` crate does for `ImageFolderDataset`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from burnish.errors import DatasetError

__all__ = ["SUPPORTED_FILES", "ImageLoaderError", "check_extension", "read_image", "read_mask"]

SUPPORTED_FILES = ("bmp", "jpg", "jpeg", "png")  # Burn's list, matched case-insensitively

# Pillow modes that Burn's decoder hands over as 8-bit RGB(A) or grey.
_CONVERT = {"1": "L", "PA": "RGBA", "CMYK": "RGB", "YCbCr": "RGB", "LAB": "RGB", "HSV": "RGB"}
_SIXTEEN_BIT = {"I;16", "I;16B", "I;16L", "I;16N"}


class ImageLoaderError(DatasetError):
    """An image dataset could not be built or an image read (Burn: `ImageLoaderError`)."""


def check_extension(extension: str) -> str:
    """`extension` (no dot), if it is one of `SUPPORTED_FILES` (any case).

    Raises:
        ImageLoaderError: if it is not (Burn: `InvalidFileExtensionError`).
    """
    if extension.lower() not in SUPPORTED_FILES:
        raise ImageLoaderError(
            f"Invalid file extension: {extension!r}. Image datasets read "
            f"{', '.join(SUPPORTED_FILES)} files (any case); convert the images to one of those."
        )
    return extension


def check_image_path(path: str | os.PathLike) -> Path:
    """`path` as a `Path`, if its extension is supported."""
    path = Path(path)
    if not path.suffix:
        raise ImageLoaderError(
            f"Image file {str(path)!r} has no extension; expected one of "
            f"{', '.join(SUPPORTED_FILES)}."
        )
    check_extension(path.suffix[1:])
    return path


def read_image(path: str | os.PathLike) -> np.ndarray:
    """The pixels of an image file, `[height, width, channels]`.

    Grey images have 1 channel, grey + alpha 2, colour 3 and colour + alpha 4; 8-bit files give
    uint8, 16-bit grey files uint16 and float files float32. Palette images are expanded to RGB
    (RGBA with transparency), as Burn's decoder does.

    Raises:
        ImageLoaderError: if the file is missing or not an image Pillow can decode.
    """
    with _open(path) as image:
        image = _normalise_mode(image, path)
        pixels = np.asarray(image)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    return pixels


def read_mask(path: str | os.PathLike) -> np.ndarray:
    """A segmentation mask file as int64 class indices `[height, width]`.

    Colour masks keep their first channel (Burn assumes all channels equal). A palette mask
    gives its palette indices (Burn's decoder would expand the palette first).

    Raises:
        ImageLoaderError: if the file cannot be decoded.
    """
    with _open(path) as image:
        if image.mode not in ("P", "PA"):
            image = _normalise_mode(image, path)
        pixels = np.asarray(image)
    if pixels.ndim == 3:
        pixels = pixels[:, :, 0]
    return pixels.astype(np.int64)


def _open(path: str | os.PathLike) -> Any:
    """The decoded Pillow image (fully loaded), or a clear error."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ImportError(
            "Image datasets decode files with Pillow: install it (pip install pillow), or "
            "decode the images yourself into an `InMemDataset`."
        ) from None
    try:
        image = Image.open(path)
        image.load()
    except FileNotFoundError:
        raise ImageLoaderError(f"Image {os.fspath(path)!r} not found.") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
        raise ImageLoaderError(
            f"Could not decode image {os.fspath(path)!r}: {error}. The file is corrupt or not "
            f"a {', '.join(SUPPORTED_FILES)} image; replace or remove it."
        ) from None
    return image


def _normalise_mode(image: Any, path: str | os.PathLike) -> Any:
    """The image in a mode NumPy maps to Burn's colour types."""
    mode = image.mode
    if mode == "P":
        return image.convert("RGBA" if "transparency" in image.info else "RGB")
    if mode in _CONVERT:
        return image.convert(_CONVERT[mode])
    if mode in _SIXTEEN_BIT:
        return _as_uint16(np.asarray(image), path)
    if mode == "I":  # 16-bit PNGs on older Pillow
        return _as_uint16(np.asarray(image), path)
    if mode in ("L", "LA", "RGB", "RGBA", "F"):
        return image
    raise ImageLoaderError(
        f"Image {os.fspath(path)!r} has colour mode {mode!r}, which image datasets do not "
        "read. Save it as 8-bit grey, RGB or RGBA, or 16-bit grey."
    )


def _as_uint16(pixels: np.ndarray, path: str | os.PathLike) -> np.ndarray:
    if pixels.size and (pixels.min() < 0 or pixels.max() > 65535):
        raise ImageLoaderError(
            f"Image {os.fspath(path)!r} holds values outside [0, 65535]; expected a 16-bit image."
        )
    return pixels.astype(np.uint16)
