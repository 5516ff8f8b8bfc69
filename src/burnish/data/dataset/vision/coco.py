"""Reading COCO detection annotations (Burn: `ImageFolderDataset::new_coco_detection`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from burnish.data.dataset.vision.annotation import BoundingBox
from burnish.data.dataset.vision.image_file import ImageLoaderError

__all__ = ["read_coco"]

BBOX_MIN_NUM_VALUES = 4


def read_coco(
    annotations_json: str | os.PathLike, images_path: str | os.PathLike
) -> tuple[dict[str, int], list[tuple[Path, list[BoundingBox]]]]:
    """The classes (name -> id) and the images with their boxes, in the file's image order.

    Raises:
        ImageLoaderError: if the file cannot be read or parsed, holds no class, no annotation
            or no image, or an image file is missing (Burn's checks).
    """
    try:
        with open(annotations_json, encoding="utf-8") as file:
            document = json.load(file)
    except OSError as error:
        raise ImageLoaderError(f"Failed to open annotations: {error}") from None
    except json.JSONDecodeError as error:
        raise ImageLoaderError(
            f"Failed to parse annotations {os.fspath(annotations_json)!r}: {error}"
        ) from None
    if not isinstance(document, dict):
        raise _parsing(f"expected a JSON object, received {type(document).__name__}")
    classes = _classes(document)
    boxes = _boxes(document)
    return classes, _images(document, boxes, Path(images_path))


def _parsing(message: str) -> ImageLoaderError:
    return ImageLoaderError(f"Parsing error: {message} (COCO annotations file).")


def _unsigned(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _classes(document: dict[str, Any]) -> dict[str, int]:
    classes = {}
    for category in _array(document, "categories"):
        if not isinstance(category, dict) or not _unsigned(category.get("id")):
            raise _parsing(f"Invalid class ID in category {category!r}")
        name = category.get("name")
        if not isinstance(name, str) or not name:
            raise _parsing(f"Invalid class name in category {category!r}")
        classes[name] = category["id"]
    if not classes:
        raise _parsing("No classes found in annotations")
    return classes


def _boxes(document: dict[str, Any]) -> dict[int, list[BoundingBox]]:
    boxes: dict[int, list[BoundingBox]] = {}
    for annotation in _array(document, "annotations"):
        if not isinstance(annotation, dict) or not _unsigned(annotation.get("image_id")):
            raise _parsing(f"Invalid image ID in annotation {annotation!r}")
        if not _unsigned(annotation.get("category_id")):
            raise _parsing(f"Invalid class ID in annotation {annotation!r}")
        coords = annotation.get("bbox")
        if not isinstance(coords, list):
            raise _parsing(f"missing bbox array in annotation {annotation!r}")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in coords):
            raise _parsing(f"invalid bbox value in annotation {annotation!r}")
        image_id = annotation["image_id"]
        if len(coords) < BBOX_MIN_NUM_VALUES:
            raise _parsing(
                f"not enough bounding box coordinates in annotation for image {image_id}"
            )
        x, y, width, height = (float(v) for v in np.asarray(coords[:4], dtype=np.float32))
        box = BoundingBox((x, y, width, height), annotation["category_id"])
        boxes.setdefault(image_id, []).append(box)
    if not boxes:
        raise _parsing("no annotations found")
    return boxes


def _images(
    document: dict[str, Any], boxes: dict[int, list[BoundingBox]], images_path: Path
) -> list[tuple[Path, list[BoundingBox]]]:
    images = []
    for image in _array(document, "images"):
        if not isinstance(image, dict) or not _unsigned(image.get("id")):
            raise _parsing(f"Invalid image ID in image list: {image!r}")
        file_name = image.get("file_name")
        if not isinstance(file_name, str):
            raise _parsing(f"Invalid file name in image list: {image!r}")
        path = images_path / file_name
        if not path.exists():
            raise ImageLoaderError(f"Image {str(path)!r} not found (COCO image {image['id']}).")
        images.append((path, boxes.pop(image["id"], [])))
    if not images:
        raise _parsing("No images found in annotations")
    return images


def _array(document: dict[str, Any], key: str) -> list[Any]:
    value = document.get(key)
    return value if isinstance(value, list) else []
