"""Image items and their annotations (Burn: `ImageDatasetItem`, `Annotation`, `BoundingBox`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Annotation",
    "BoundingBox",
    "BoundingBoxes",
    "ImageDatasetItem",
    "Label",
    "MultiLabel",
    "SegmentationMask",
]


class Annotation:
    """What an image is labelled with (Burn: the `Annotation` enum).

    One subclass per Burn variant, also reachable as attributes so a Burn user writes
    `Annotation.Label(0)` for `Annotation::Label(0)`:

    - `Label(label)`: one class index (image classification);
    - `MultiLabel(labels)`: several class indices (multi-label classification);
    - `BoundingBoxes(boxes)`: objects' `BoundingBox`es (object detection);
    - `SegmentationMask(mask)`: a class index per pixel (segmentation).
    """

    __slots__ = ()


@dataclass
class Label(Annotation):
    """One image-level class index (Burn: `Annotation::Label`)."""

    label: int


@dataclass
class MultiLabel(Annotation):
    """Several image-level class indices, in the order given (Burn: `Annotation::MultiLabel`)."""

    labels: list[int]


@dataclass
class BoundingBox:
    """An object's box and class (Burn: `BoundingBox`).

    Attributes:
        coords: `(x_min, y_min, width, height)` in pixels, as float32 values (Burn: `[f32; 4]`).
        label: the object's class id.
    """

    coords: tuple[float, float, float, float]
    label: int


@dataclass
class BoundingBoxes(Annotation):
    """The boxes of an image's objects, possibly none (Burn: `Annotation::BoundingBoxes`)."""

    boxes: list[BoundingBox]


@dataclass(eq=False)
class SegmentationMask(Annotation):
    """A class index per pixel (Burn: `Annotation::SegmentationMask(SegmentationMask)`).

    Attributes:
        mask: int64 array `[height, width]`; `mask.ravel()` is Burn's flat `Vec<usize>`.
    """

    mask: np.ndarray

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SegmentationMask):
            return NotImplemented
        return np.array_equal(self.mask, other.mask)

    __hash__ = None  # type: ignore[assignment]


@dataclass(eq=False)
class ImageDatasetItem:
    """One image, its size, annotation and file (Burn: `ImageDatasetItem`).

    Attributes:
        image: the pixels, `[height, width, channels]` (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA)
            of dtype uint8, uint16 (16-bit files) or float32, as decoded; `image.ravel()` is
            Burn's packed `PixelData` buffer.
        image_width: the image's width in pixels.
        image_height: the image's height in pixels.
        annotation: its `Annotation`.
        image_path: the file it was read from.
    """

    image: np.ndarray
    image_width: int
    image_height: int
    annotation: Annotation
    image_path: str

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ImageDatasetItem):
            return NotImplemented
        return (
            np.array_equal(self.image, other.image)
            and self.image.dtype == other.image.dtype
            and (self.image_width, self.image_height) == (other.image_width, other.image_height)
            and self.annotation == other.annotation
            and self.image_path == other.image_path
        )

    __hash__ = None  # type: ignore[assignment]


# Burn spells the variants `Annotation::Label` etc.: the same names as attributes.
Annotation.Label = Label  # type: ignore[attr-defined]
Annotation.MultiLabel = MultiLabel  # type: ignore[attr-defined]
Annotation.BoundingBoxes = BoundingBoxes  # type: ignore[attr-defined]
Annotation.SegmentationMask = SegmentationMask  # type: ignore[attr-defined]
