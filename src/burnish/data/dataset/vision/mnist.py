"""MNIST (Burn: `MnistDataset`): 70,000 handwritten digits, 28x28 grey levels, held in NumPy."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from burnish.data.dataset.base import Dataset
from burnish.data.dataset.download import RemoteFile, cache_dir, fetch_file, mirrors_from_env
from burnish.data.dataset.vision.idx import parse_idx
from burnish.errors import DatasetError

__all__ = ["MnistDataset", "MnistItem"]

WIDTH = HEIGHT = 28


@dataclass(eq=False)
class MnistItem:
    """One image and its label (Burn: `MnistItem`).

    Attributes:
        image: float32 array `[28, 28]` of grey levels in `[0, 255]`.
        label: the class, 0-9.

    A *stacked* item (from `MnistDataset.get_stacked`, the loader's fast path) holds a batch:
    `image` is `[B, 28, 28]` float32 and `label` an int64 array `[B]`.
    """

    image: np.ndarray
    label: Any

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MnistItem):
            return NotImplemented
        return np.array_equal(self.image, other.image) and np.array_equal(self.label, other.label)

    __hash__ = None  # type: ignore[assignment]


class MnistDataset(Dataset[MnistItem]):
    """The MNIST train (60,000) or test (10,000) split, in memory.

    Files are looked up, in order, in: `root=`, `$BURNISH_DATASETS/mnist`, the user cache
    (`$XDG_CACHE_HOME/burnish/datasets/mnist`, default `~/.cache/...`); if missing they are
    downloaded from the first working mirror (`mirrors=`, else `$BURNISH_MNIST_MIRRORS`, URLs
    separated by commas or spaces, else the usual public mirrors) into the cache. Every file is
    verified by the sha256 of its decompressed IDX bytes.

    Images are stored once as a read-only `uint8` array `[N, 28, 28]` (`images`) and labels as
    int64 `[N]` (`labels`), so a batch is one vectorised gather (`get_stacked`).

    Example:
        >>> train = MnistDataset.train()
        >>> len(train), train.get(0).image.shape, train.get(0).label
        (60000, (28, 28), 5)
    """

    NAME: ClassVar[str] = "mnist"
    MIRRORS_ENV: ClassVar[str] = "BURNISH_MNIST_MIRRORS"
    MIRRORS: ClassVar[tuple[str, ...]] = (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
    )
    SYSTEM_DIRS: ClassVar[tuple[str, ...]] = ()
    FILES: ClassVar[dict[str, tuple[RemoteFile, RemoteFile]]] = {
        "train": (
            RemoteFile(
                "train-images-idx3-ubyte",
                "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
            ),
            RemoteFile(
                "train-labels-idx1-ubyte",
                "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
            ),
        ),
        "test": (
            RemoteFile(
                "t10k-images-idx3-ubyte",
                "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
            ),
            RemoteFile(
                "t10k-labels-idx1-ubyte",
                "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
            ),
        ),
    }

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        """Wrap arrays already in memory: `images` uint8 `[N, 28, 28]`, `labels` int `[N]`.

        Raises:
            ValueError: if the shapes do not match.
        """
        images, labels = np.asarray(images), np.asarray(labels)
        if (
            images.ndim != 3
            or images.shape[1:] != (HEIGHT, WIDTH)
            or labels.shape != (len(images),)
        ):
            raise ValueError(
                "`images` must be [N, 28, 28] and `labels` [N]. "
                f"Received: images {images.shape}, labels {labels.shape}."
            )
        self.images = images
        self.labels = labels.astype(np.int64)

    @classmethod
    def train(
        cls, root: str | os.PathLike | None = None, mirrors: list[str] | None = None
    ) -> MnistDataset:
        """The training split (60,000 items). See the class docstring for `root` and `mirrors`."""
        return cls.new("train", root, mirrors)

    @classmethod
    def test(
        cls, root: str | os.PathLike | None = None, mirrors: list[str] | None = None
    ) -> MnistDataset:
        """The test split (10,000 items). See the class docstring for `root` and `mirrors`."""
        return cls.new("test", root, mirrors)

    @classmethod
    def new(
        cls, split: str, root: str | os.PathLike | None = None, mirrors: list[str] | None = None
    ) -> MnistDataset:
        """The `"train"` or `"test"` split.

        Raises:
            ValueError: if `split` is not `"train"` or `"test"`.
            DatasetError: if a file is corrupt or cannot be found nor downloaded.
        """
        if split not in cls.FILES:
            raise ValueError(f"`split` must be 'train' or 'test'. Received: split={split!r}.")
        cache = cache_dir(cls.NAME)
        if mirrors is None:
            mirrors = mirrors_from_env(cls.MIRRORS_ENV, cls.MIRRORS)
        images_file, labels_file = cls.FILES[split]
        folders = cls.search_dirs(root)
        images = parse_idx(fetch_file(images_file, folders, cache, mirrors), images_file.name)
        labels = parse_idx(fetch_file(labels_file, folders, cache, mirrors), labels_file.name)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise DatasetError(
                f"{cls.NAME} {split}: images {images.shape} and labels {labels.shape} do not "
                "match; expected [N, 28, 28] and [N]."
            )
        return cls(images, labels)

    @classmethod
    def search_dirs(cls, root: str | os.PathLike | None = None) -> list[Path]:
        """The folders searched for the files, in order (the cache included)."""
        folders = [Path(root)] if root is not None else []
        if os.environ.get("BURNISH_DATASETS"):
            folders.append(Path(os.environ["BURNISH_DATASETS"]) / cls.NAME)
        folders.append(cache_dir(cls.NAME))
        folders.extend(Path(folder) for folder in cls.SYSTEM_DIRS)
        return folders

    def get(self, index: int) -> MnistItem | None:
        """Image `index` (float32 pixels in `[0, 255]`) and its label, or `None` if out of range."""
        if not 0 <= index < len(self.labels):
            return None
        return MnistItem(self.images[index].astype(np.float32), int(self.labels[index]))

    def __len__(self) -> int:
        return len(self.labels)

    def get_stacked(self, indices: np.ndarray) -> MnistItem:
        """A batch gathered in one indexing: image float32 `[B, 28, 28]`, label int64 `[B]`."""
        return MnistItem(self.images[indices].astype(np.float32), self.labels[indices])
