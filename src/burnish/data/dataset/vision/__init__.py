"""Vision datasets: MNIST and Fashion-MNIST."""

from burnish.data.dataset.vision.fashion_mnist import FashionMnistDataset
from burnish.data.dataset.vision.mnist import MnistDataset, MnistItem

__all__ = ["FashionMnistDataset", "MnistDataset", "MnistItem"]
