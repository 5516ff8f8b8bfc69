"""MNIST and Fashion-MNIST from real files: shapes, labels, lookup order, corrupt copies."""

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

from burnish.data.dataset import PartialDataset
from burnish.data.dataset.download import cache_dir
from burnish.data.dataset.vision import FashionMnistDataset, MnistDataset, MnistItem
from burnish.errors import DatasetError

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture(scope="module")
def train():
    return MnistDataset.train()


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No dataset folder, an empty cache and no mirrors: only `root=` can provide files."""
    monkeypatch.setenv("BURNISH_DATASETS", str(tmp_path / "datasets"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("BURNISH_MNIST_MIRRORS", "http://127.0.0.1:9/")  # refused at once
    return tmp_path


def test_train_split(train):
    assert len(train) == 60000
    assert int((train.labels == 0).sum()) == 5923
    np.testing.assert_array_equal(np.bincount(train.labels)[:3], [5923, 6742, 5958])
    item = train.get(0)
    assert isinstance(item, MnistItem)
    assert item.image.shape == (28, 28) and item.image.dtype == np.float32
    assert item.label == 5 and isinstance(item.label, int)
    assert item.image.min() == 0.0 and item.image.max() == 255.0
    assert train.get(60000) is None
    with pytest.raises(IndexError, match=r"index 60000 for a dataset of 60000 items"):
        train[60000]


def test_test_split():
    test = MnistDataset.test()
    assert len(test) == 10000
    assert test.get(0).label == 7


def test_stacked_gather_equals_items(train):
    indices = np.array([5, 0, 59999, 5])
    stacked = train.get_stacked(indices)
    assert stacked.image.shape == (4, 28, 28) and stacked.image.dtype == np.float32
    assert stacked.label.dtype == np.int64
    for row, index in enumerate(indices):
        assert MnistItem(stacked.image[row], int(stacked.label[row])) == train.get(int(index))
    sliced = PartialDataset(train, 100, 200)
    assert sliced.get_stacked(np.array([1])) == MnistItem(
        train.get(101).image[None], np.array([train.get(101).label])
    )


def test_images_are_shared_read_only(train):
    assert train.images.dtype == np.uint8 and not train.images.flags.writeable
    item = train.get(0)
    item.image[0, 0] = 99.0  # the item is a copy
    assert train.images[0, 0, 0] == 0


def test_root_argument_is_searched_first_and_may_hold_uncompressed_files(isolated):
    root = isolated / "mine"
    root.mkdir()
    source = Path(__file__).resolve().parents[4] / "data" / "mnist"
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (root / name).write_bytes(gzip.decompress((source / f"{name}.gz").read_bytes()))
    assert len(MnistDataset.test(root=root)) == 10000


def test_search_order(isolated, monkeypatch):
    cache = isolated / "cache" / "burnish" / "datasets"
    assert MnistDataset.search_dirs("r") == [
        Path("r"),
        isolated / "datasets" / "mnist",
        cache / "mnist",
    ]
    assert FashionMnistDataset.search_dirs() == [
        isolated / "datasets" / "fashion-mnist",
        cache / "fashion-mnist",
        FASHION_DIR,
    ]
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir("mnist") == Path.home() / ".cache" / "burnish" / "datasets" / "mnist"


def test_corrupt_user_file_is_a_clear_error(isolated):
    root = isolated / "mine"
    root.mkdir()
    source = Path(__file__).resolve().parents[4] / "data" / "mnist"
    shutil.copy(source / "t10k-images-idx3-ubyte.gz", root)
    labels = bytearray(gzip.decompress((source / "t10k-labels-idx1-ubyte.gz").read_bytes()))
    labels[100] ^= 1
    (root / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(bytes(labels)))
    with pytest.raises(DatasetError, match=r"t10k-labels-idx1-ubyte.gz is corrupt: the sha256"):
        MnistDataset.test(root=root)
    half = (source / "t10k-images-idx3-ubyte.gz").read_bytes()[:5000]
    (root / "t10k-images-idx3-ubyte.gz").write_bytes(half)
    with pytest.raises(DatasetError, match=r"is corrupt or truncated.*Delete it"):
        MnistDataset.test(root=root)


def test_unknown_split():
    with pytest.raises(ValueError, match=r"`split` must be 'train' or 'test'.*'valid'"):
        MnistDataset.new("valid")


def test_wrapping_arrays_checks_shapes():
    with pytest.raises(ValueError, match=r"\[N, 28, 28\].*images \(2, 28\)"):
        MnistDataset(np.zeros((2, 28), np.uint8), np.zeros(2))


@pytest.mark.skipif(not FASHION_DIR.is_dir(), reason="dataset-fashion-mnist is not installed")
def test_fashion_mnist_from_the_debian_package(isolated):
    train = FashionMnistDataset.train()
    test = FashionMnistDataset.test()
    assert (len(train), len(test)) == (60000, 10000)
    np.testing.assert_array_equal(np.bincount(train.labels), [6000] * 10)
    np.testing.assert_array_equal(np.bincount(test.labels), [1000] * 10)
    item = train.get(0)
    assert item.image.shape == (28, 28) and item.image.dtype == np.float32
    assert item.label == 9  # Ankle boot
    assert FashionMnistDataset.CLASSES[item.label] == "Ankle boot"
