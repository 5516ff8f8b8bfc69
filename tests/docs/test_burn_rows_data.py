"""docs/burn.md, Data: the rows that say "same", each run as a Burn user writes it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import (
    ComposedDataset,
    InMemDataset,
    Mapper,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    SqliteDataset,
    SqliteDatasetStorage,
    SqliteDatasetWriter,
    WindowsDataset,
)
from burnish.data.dataset.vision import ImageFolderDataset, MnistDataset, MnistItem
from burnish.data.dataset.vision.annotation import BoundingBoxes, Label, MultiLabel

from tests.docs.burn_rows import row
from tests.helpers import MnistBatcher, mnist


@row("MnistDataset::train() / ::test()")
def test_mnist_dataset_train_and_test():
    train, test = MnistDataset.train(), MnistDataset.test()
    assert (train.len(), test.len()) == (60_000, 10_000)  # MNIST's splits, as Burn's
    assert train.get(60_000) is None  # Burn's `get` past the end is `None`
    labels = np.array([test.get(i).label for i in range(0, 10_000, 97)])
    assert set(labels.tolist()) == set(range(10))


@row("MnistItem { image: [[f32; 28]; 28], label: u8 }")
def test_mnist_item_is_raw_float_pixels_and_a_label():
    item = mnist("train").get(0)
    assert isinstance(item, MnistItem)
    assert item.image.shape == (28, 28) and item.image.dtype == np.float32
    # Burn's item holds the raw pixel values as f32 (0..=255), not normalised ones.
    assert item.image.min() == 0.0 and item.image.max() == 255.0
    assert np.array_equal(item.image, np.round(item.image))
    assert isinstance(item.label, int) and 0 <= item.label <= 9


class IndexBatcher(Batcher):
    """Batches of the items' labels (a deterministic batcher)."""

    def batch(self, items, device):
        return torch.tensor([item.label for item in items], device=device)


@row("DataLoaderBuilder::new(batcher).batch_size(64).shuffle(42).num_workers(4).build(dataset)")
def test_dataloader_builder_chain():
    dataset = PartialDataset(mnist("train"), 0, 300)
    loader = (
        DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).num_workers(4).build(dataset)
    )
    batches = list(loader.iter())
    assert [len(b.targets) for b in batches] == [64, 64, 64, 64, 44]  # the last one smaller
    assert batches[0].images.shape == (64, 28, 28)
    seen = torch.cat([b.targets for b in batches])
    in_order = torch.tensor([dataset.get(i).label for i in range(300)])
    assert not torch.equal(seen, in_order)  # shuffled ...
    assert torch.equal(seen.sort().values, in_order.sort().values)  # ... every item once
    # The same seed gives the same batches, with workers or without.
    again = (
        DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).num_workers(0).build(dataset)
    )
    for ours, theirs in zip(batches, again.iter()):
        assert torch.equal(ours.targets, theirs.targets)
        assert torch.equal(ours.images, theirs.images)
    other = DataLoaderBuilder(IndexBatcher()).batch_size(64).shuffle(7).build(dataset)
    assert not torch.equal(torch.cat(list(other.iter())), seen)  # another seed, another order


@row("dataloader.iter()")
def test_dataloader_iter_is_one_epoch_reshuffled_each_time():
    dataset = PartialDataset(mnist("test"), 0, 100)
    loader = DataLoaderBuilder(IndexBatcher()).batch_size(32).shuffle(1).build(dataset)
    assert len(loader) == 4 and loader.num_items() == 100
    first = torch.cat([batch for batch in loader.iter()])
    second = torch.cat(list(iter(loader)))
    assert len(first) == len(second) == 100
    assert torch.equal(first.sort().values, second.sort().values)
    # Burn's shuffling loader forks its RNG at each `iter()`: each epoch has its own order.
    assert not torch.equal(first, second)


@dataclass
class Pair:
    x: int
    y: float


class Double(Mapper):
    def map(self, item):
        return item * 2


@row(
    "InMemDataset, MapperDataset, PartialDataset, ShuffledDataset, SamplerDataset, "
    "ComposedDataset, WindowsDataset, SelectionDataset"
)
def test_dataset_transforms_keep_burns_semantics():
    dataset = InMemDataset(list(range(10)))
    assert dataset.len() == 10 and dataset.get(3) == 3 and dataset.get(10) is None
    assert [MapperDataset(dataset, Double()).get(i) for i in range(3)] == [0, 2, 4]
    partial = PartialDataset(dataset, 2, 5)
    assert partial.len() == 3 and [partial.get(i) for i in range(3)] == [2, 3, 4]
    shuffled = ShuffledDataset(dataset, 42)
    order = [shuffled.get(i) for i in range(10)]
    assert sorted(order) == list(range(10)) and order != list(range(10))
    assert order == [ShuffledDataset(dataset, 42).get(i) for i in range(10)]  # seeded
    sampled = SamplerDataset(dataset, 25)  # Burn's `new`: with replacement, any size
    assert sampled.len() == 25 and sampled.is_with_replacement()
    assert all(0 <= sampled.get(i) < 10 for i in range(25))
    composed = ComposedDataset([dataset, InMemDataset([100, 101])])
    assert composed.len() == 12 and composed.get(10) == 100 and composed.get(12) is None
    windows = WindowsDataset(dataset, 3)
    assert windows.len() == 8 and windows.get(0) == [0, 1, 2] and windows.get(7) == [7, 8, 9]
    assert windows.get(8) is None
    selection = SelectionDataset.from_indices_checked(dataset, [9, 0, 4])
    assert selection.len() == 3 and [selection.get(i) for i in range(3)] == [9, 0, 4]


def _png(path, value, size=(4, 3)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size[1], size[0], 3), value, dtype=np.uint8)).save(path)
    return path


@row(
    "ImageFolderDataset::new_classification(root), new_classification_with(..), "
    "new_classification_with_items(..), new_multilabel_classification_with_items(..), "
    "new_segmentation_with_items(..), new_coco_detection(..)"
)
def test_image_folder_dataset_constructors(tmp_path):
    red = _png(tmp_path / "red" / "a.png", 200)
    orange = _png(tmp_path / "orange" / "b.png", 100)
    _png(tmp_path / "orange" / "c.jpg", 50)
    dataset = ImageFolderDataset.new_classification(tmp_path)
    assert dataset.len() == 3 and dataset.classes == ["orange", "red"]  # sorted, as Burn's
    item = dataset.get(0)  # items sorted by path
    assert item.annotation == Label(0) and item.image.shape == (3, 4, 3)
    assert (item.image_width, item.image_height) == (4, 3) and int(item.image[0, 0, 0]) == 100
    assert ImageFolderDataset.new_classification_with(tmp_path, ["png"]).len() == 2
    with_items = ImageFolderDataset.new_classification_with_items(
        [(red, "red"), (orange, "orange")], ["red", "orange"]
    )
    assert with_items.get(0).annotation == Label(0) and with_items.get(1).annotation == Label(1)
    multi = ImageFolderDataset.new_multilabel_classification_with_items(
        [(red, ["orange", "red"])], ["red", "orange"]
    )
    assert multi.get(0).annotation == MultiLabel([1, 0])
    mask = tmp_path / "mask.png"
    Image.fromarray(np.array([[0, 1, 1, 0]] * 3, dtype=np.uint8)).save(mask)
    segmentation = ImageFolderDataset.new_segmentation_with_items([(red, mask)], ["bg", "fg"])
    assert np.asarray(segmentation.get(0).annotation.mask).reshape(3, 4)[0].tolist() == [0, 1, 1, 0]
    coco = tmp_path / "coco.json"
    coco.write_text(
        json.dumps(
            {
                "categories": [{"id": 7, "name": "dot"}],
                "images": [{"id": 1, "file_name": "a.png", "width": 4, "height": 3}],
                "annotations": [{"id": 1, "image_id": 1, "category_id": 7, "bbox": [1, 0, 2, 2]}],
            }
        )
    )
    detection = ImageFolderDataset.new_coco_detection(coco, tmp_path / "red")
    boxes = detection.get(0).annotation
    assert isinstance(boxes, BoundingBoxes) and [b.label for b in boxes.boxes] == [7]
    assert list(boxes.boxes[0].coords) == [1.0, 0.0, 2.0, 2.0]


@row("SqliteDatasetWriter::new(path, overwrite), .write(split, &item), .set_completed()")
def test_sqlite_dataset_writer(tmp_path):
    path = tmp_path / "pairs.db"
    writer = SqliteDatasetWriter.new(path, True)
    assert [writer.write("train", Pair(i, i / 2)) for i in range(3)] == [0, 1, 2]
    writer.write("test", Pair(9, 9.5))
    assert not path.exists()  # written beside it until completed
    writer.set_completed()
    assert writer.is_completed and path.exists()
    train = SqliteDataset.from_db_file(path, "train", item_type=Pair)
    assert train.len() == 3 and train.get(2) == Pair(2, 1.0)
    assert SqliteDataset.from_db_file(path, "test", item_type=Pair).get(0) == Pair(9, 9.5)


@row("SqliteDatasetStorage::from_name(n).with_base_dir(d).writer(o) / .reader(split)")
def test_sqlite_dataset_storage(tmp_path):
    storage = SqliteDatasetStorage.from_name("pairs").with_base_dir(tmp_path)
    writer = storage.writer(True)
    writer.write("train", Pair(1, 0.25))
    writer.set_completed()
    assert storage.db_file() == tmp_path / "pairs.db" and storage.exists()
    reader = storage.reader("train", Pair)
    assert reader.len() == 1 and reader.get(0) == Pair(1, 0.25)
