"""Vision datasets: MNIST, Fashion-MNIST and image folders."""

from burnish.data.dataset.vision.annotation import (
    Annotation,
    BoundingBox,
    BoundingBoxes,
    ImageDatasetItem,
    Label,
    MultiLabel,
    SegmentationMask,
)
from burnish.data.dataset.vision.fashion_mnist import FashionMnistDataset
from burnish.data.dataset.vision.image_file import SUPPORTED_FILES, ImageLoaderError
from burnish.data.dataset.vision.image_folder import ImageFolderDataset
from burnish.data.dataset.vision.mnist import MnistDataset, MnistItem

__all__ = [
    "SUPPORTED_FILES",
    "Annotation",
    "BoundingBox",
    "BoundingBoxes",
    "FashionMnistDataset",
    "ImageDatasetItem",
    "ImageFolderDataset",
    "ImageLoaderError",
    "Label",
    "MnistDataset",
    "MnistItem",
    "MultiLabel",
    "SegmentationMask",
]
