"""Fashion-MNIST: 70,000 28x28 grey images of 10 clothing classes, a drop-in for MNIST."""

from __future__ import annotations

from typing import ClassVar

from burnish.data.dataset.download import RemoteFile
from burnish.data.dataset.vision.mnist import MnistDataset

__all__ = ["FashionMnistDataset"]


class FashionMnistDataset(MnistDataset):
    """Fashion-MNIST (Xiao et al., 2017), same layout and items (`MnistItem`) as MNIST.

    Files are looked up, in order, in: `root=`, `$BURNISH_DATASETS/fashion-mnist`, the user
    cache (`$XDG_CACHE_HOME/burnish/datasets/fashion-mnist`), `/usr/share/datasets/fashion-mnist`
    (Debian package `dataset-fashion-mnist`); else downloaded (`mirrors=`, else
    `$BURNISH_FASHION_MNIST_MIRRORS`, else the public mirrors) into the cache. Verified by the
    sha256 of the decompressed IDX bytes.

    Classes: 0 T-shirt/top, 1 Trouser, 2 Pullover, 3 Dress, 4 Coat, 5 Sandal, 6 Shirt,
    7 Sneaker, 8 Bag, 9 Ankle boot.
    """

    NAME: ClassVar[str] = "fashion-mnist"
    MIRRORS_ENV: ClassVar[str] = "BURNISH_FASHION_MNIST_MIRRORS"
    MIRRORS: ClassVar[tuple[str, ...]] = (
        "https://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
    )
    SYSTEM_DIRS: ClassVar[tuple[str, ...]] = ("/usr/share/datasets/fashion-mnist",)
    FILES: ClassVar[dict[str, tuple[RemoteFile, RemoteFile]]] = {
        "train": (
            RemoteFile(
                "train-images-idx3-ubyte",
                "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
            ),
            RemoteFile(
                "train-labels-idx1-ubyte",
                "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
            ),
        ),
        "test": (
            RemoteFile(
                "t10k-images-idx3-ubyte",
                "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
            ),
            RemoteFile(
                "t10k-labels-idx1-ubyte",
                "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
            ),
        ),
    }

    CLASSES: ClassVar[tuple[str, ...]] = (
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    )  # fmt: skip
