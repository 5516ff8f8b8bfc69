"""`ImageFolderDataset` (Burn: `ImageFolderDataset`): images on disk, decoded on access."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from burnish.data.dataset.base import Dataset
from burnish.data.dataset.vision.annotation import (
    Annotation,
    BoundingBoxes,
    ImageDatasetItem,
    Label,
    MultiLabel,
    SegmentationMask,
)
from burnish.data.dataset.vision.coco import read_coco
from burnish.data.dataset.vision.image_file import (
    SUPPORTED_FILES,
    ImageLoaderError,
    check_extension,
    check_image_path,
    read_image,
    read_mask,
)

__all__ = ["ImageFolderDataset"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class _RawItem:
    """An image file and its annotation before decoding (Burn: `ImageDatasetItemRaw`)."""

    image_path: Path
    annotation: Annotation | Path  # a Path: a segmentation mask file, read with the image


class ImageFolderDataset(Dataset[ImageDatasetItem]):
    """Images read from disk when accessed, with their annotations (Burn: `ImageFolderDataset`).

    Build one with a constructor: `new_classification(root)` (a folder per class),
    `new_classification_with(root, extensions)`, `new_classification_with_items(items,
    classes)`, `new_multilabel_classification_with_items`, `new_segmentation_with_items`,
    `new_coco_detection(annotations_json, images_path)`. Files are decoded with Pillow on
    every `get` (see `ImageDatasetItem` for the pixel layout); bmp, jpg, jpeg and png files are
    read, as in Burn.

    Differences from Burn: a folder without any image raises `ImageLoaderError` (Burn gives an
    empty dataset); a label missing from `classes` and an unreadable image raise
    `ImageLoaderError` naming the file (Burn panics); `get` out of range returns `None` like
    every burnish dataset.

    Example:
        >>> dataset = ImageFolderDataset.new_classification("flowers")  # flowers/<class>/*.jpg
        >>> item = dataset.get(0)
        >>> item.image.shape, item.annotation, dataset.classes
        ((64, 64, 3), Label(label=0), ['daisy', 'rose'])
    """

    def __init__(self, items: Sequence[_RawItem], classes: dict[str, int]) -> None:
        """Use a `new_...` constructor; this one takes already checked items."""
        self._items = list(items)
        self.class_ids = dict(classes)

    @property
    def classes(self) -> list[str]:
        """The class names, in the order of their ids."""
        return sorted(self.class_ids, key=self.class_ids.__getitem__)

    # -- Constructors (Burn's names) -----------------------------------------------------------

    @classmethod
    def new_classification(cls, root: PathLike) -> ImageFolderDataset:
        """Image classification from a folder per class: `root/<class>/<image>` (any depth
        below `root`; an image's class is the name of the folder holding it). Classes are
        numbered in sorted order of their names, items in sorted order of their paths.

        Raises:
            ImageLoaderError: if `root` is not a folder or holds no bmp, jpg, jpeg or png image.
        """
        return cls.new_classification_with(root, SUPPORTED_FILES)

    @classmethod
    def new_classification_with(
        cls, root: PathLike, extensions: Iterable[str]
    ) -> ImageFolderDataset:
        """Like `new_classification`, reading only the files with one of `extensions` (no dot,
        any case), e.g. `["jpg"]`.

        Raises:
            ImageLoaderError: if an extension is not bmp, jpg, jpeg or png, `root` is not a
                folder, or it holds no image with these extensions.
        """
        wanted = {check_extension(extension).lower() for extension in extensions}
        paths = _find_images(Path(root), wanted)
        class_ids = _class_ids(sorted({path.parent.name for path in paths}))
        items = [_RawItem(path, Label(class_ids[path.parent.name])) for path in paths]
        return cls(items, class_ids)

    @classmethod
    def new_classification_with_items(
        cls, items: Iterable[tuple[PathLike, str]], classes: Sequence[str]
    ) -> ImageFolderDataset:
        """Image classification from `(image path, class name)` pairs; class `classes[i]` is
        label `i`.

        Raises:
            ImageLoaderError: if a file's extension is not supported or a class name is not in
                `classes`.
        """
        class_ids = _class_ids(classes)
        raw = [
            _RawItem(check_image_path(path), Label(_class_id(class_ids, label, path)))
            for path, label in items
        ]
        return cls(raw, class_ids)

    @classmethod
    def new_multilabel_classification_with_items(
        cls, items: Iterable[tuple[PathLike, Sequence[str]]], classes: Sequence[str]
    ) -> ImageFolderDataset:
        """Multi-label classification from `(image path, class names)` pairs.

        Raises:
            ImageLoaderError: as `new_classification_with_items`.
        """
        class_ids = _class_ids(classes)
        raw = [
            _RawItem(
                check_image_path(path),
                MultiLabel([_class_id(class_ids, label, path) for label in labels]),
            )
            for path, labels in items
        ]
        return cls(raw, class_ids)

    @classmethod
    def new_segmentation_with_items(
        cls, items: Iterable[tuple[PathLike, PathLike]], classes: Sequence[str]
    ) -> ImageFolderDataset:
        """Segmentation from `(image path, mask path)` pairs: each mask pixel's value is the
        class index of the image pixel (colour masks: the first channel).

        Raises:
            ImageLoaderError: if an image's extension is not supported.
        """
        raw = [_RawItem(check_image_path(image), Path(mask)) for image, mask in items]
        return cls(raw, _class_ids(classes))

    @classmethod
    def new_coco_detection(
        cls, annotations_json: PathLike, images_path: PathLike
    ) -> ImageFolderDataset:
        """Object detection from a COCO annotations file (e.g. `instances_train2017.json`) and
        the folder of its images; each item's annotation is its `BoundingBoxes` (`coords`
        `(x_min, y_min, width, height)`, `label` the COCO category id).

        Raises:
            ImageLoaderError: if the file is unreadable or malformed, holds no category,
                annotation or image, or an image it names is missing.
        """
        classes, images = read_coco(annotations_json, images_path)
        return cls([_RawItem(path, BoundingBoxes(boxes)) for path, boxes in images], classes)

    # -- Dataset -------------------------------------------------------------------------------

    def get(self, index: int) -> ImageDatasetItem | None:
        """Item `index`, decoded from its file now, or `None` if out of range.

        Raises:
            ImageLoaderError: if the image (or its mask) cannot be decoded.
        """
        if not 0 <= index < len(self._items):
            return None
        raw = self._items[index]
        image = read_image(raw.image_path)
        annotation = raw.annotation
        if isinstance(annotation, Path):
            annotation = SegmentationMask(read_mask(annotation))
        height, width = image.shape[:2]
        return ImageDatasetItem(image, width, height, annotation, str(raw.image_path))

    def __len__(self) -> int:
        return len(self._items)

    def image_paths(self) -> list[str]:
        """The image files, in item order (nothing is decoded)."""
        return [str(item.image_path) for item in self._items]


def _find_images(root: Path, extensions: set[str]) -> list[Path]:
    """The files below `root` (links followed) with one of `extensions`, sorted by path."""
    if not root.is_dir():
        raise ImageLoaderError(
            f"Image folder {str(root)!r} does not exist or is not a folder. Pass the folder "
            "that holds one sub-folder of images per class."
        )
    found = [
        Path(folder) / name
        for folder, _, names in os.walk(root, followlinks=True)
        for name in names
        if Path(name).suffix[1:].lower() in extensions
    ]
    if not found:
        raise ImageLoaderError(
            f"Image folder {str(root)!r} holds no image with extension "
            f"{', '.join(sorted(extensions))}. Put the images in one sub-folder per class "
            "(root/<class>/<image>)."
        )
    return sorted(found)


def _class_ids(classes: Sequence[str]) -> dict[str, int]:
    if isinstance(classes, str):
        raise TypeError(
            f"`classes` must be a sequence of class names. Received the string {classes!r}; "
            "pass a list, e.g. ['cat', 'dog']."
        )
    return {name: index for index, name in enumerate(classes)}


def _class_id(class_ids: dict[str, int], label: str, path: PathLike) -> int:
    if label not in class_ids:
        raise ImageLoaderError(
            f"Image {os.fspath(path)!r} has class {label!r}, which is not in `classes` "
            f"{list(class_ids)}. Add it to `classes`."
        )
    return class_ids[label]
