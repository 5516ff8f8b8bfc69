"""`ImageFolderDataset` on real PNG, JPEG and BMP files written by Pillow (Burn's tests)."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset.vision import (
    Annotation,
    BoundingBox,
    BoundingBoxes,
    ImageFolderDataset,
    ImageLoaderError,
    Label,
    MultiLabel,
    SegmentationMask,
)


@pytest.fixture
def image_folder(tmp_path):
    """Burn's `tests/data/image_folder`: orange/dot.jpg, red/dot.JPG, red/dot.png, 1x1 pixels."""
    (tmp_path / "orange").mkdir()
    (tmp_path / "red").mkdir()
    Image.new("RGB", (1, 1), (255, 128, 0)).save(tmp_path / "orange" / "dot.jpg")
    Image.new("RGB", (1, 1), (255, 0, 0)).save(tmp_path / "red" / "dot.JPG", format="JPEG")
    Image.new("RGB", (1, 1), (255, 0, 0)).save(tmp_path / "red" / "dot.png")
    (tmp_path / "red" / "notes.txt").write_text("not an image")
    return tmp_path


def test_classification_from_folders_like_burn(image_folder):
    dataset = ImageFolderDataset.new_classification(image_folder)
    assert len(dataset) == 3
    assert [dataset.get(i).annotation for i in range(3)] == [Label(0), Label(1), Label(1)]
    assert dataset.get(3) is None
    assert dataset.classes == ["orange", "red"]
    item = dataset.get(2)
    assert item.image_path == str(image_folder / "red" / "dot.png")
    assert (item.image_width, item.image_height) == (1, 1)
    assert item.image.dtype == np.uint8 and item.image.tolist() == [[[255, 0, 0]]]
    assert Annotation.Label is Label and isinstance(item.annotation, Annotation)


def test_filtered_by_extension_any_case(image_folder):
    dataset = ImageFolderDataset.new_classification_with(image_folder, ["jpg"])
    assert len(dataset) == 2
    assert [dataset.get(i).annotation for i in range(2)] == [Label(0), Label(1)]
    assert ImageFolderDataset.new_classification_with(image_folder, ["PNG"]).image_paths() == [
        str(image_folder / "red" / "dot.png")
    ]


def test_pixels_shape_and_dtype_follow_the_file(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    pixels = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    Image.fromarray(pixels, "RGB").save(folder / "a_rgb.png")
    Image.fromarray(np.full((5, 7, 4), 9, np.uint8), "RGBA").save(folder / "b_rgba.png")
    Image.fromarray(np.full((5, 7), 200, np.uint8), "L").save(folder / "c_grey.bmp")
    Image.fromarray(np.full((5, 7), 40000, np.uint16)).save(folder / "d_grey16.png")
    palette = Image.new("P", (7, 5), 1)
    palette.putpalette([0, 0, 0, 10, 20, 30] + [0] * 762)
    palette.save(folder / "e_palette.png")
    dataset = ImageFolderDataset.new_classification(tmp_path)
    rgb, rgba, grey, grey16, expanded = (dataset.get(i).image for i in range(5))
    assert np.array_equal(rgb, pixels)
    assert rgba.shape == (5, 7, 4) and grey.shape == (5, 7, 1) and grey[0, 0, 0] == 200
    assert grey16.dtype == np.uint16 and grey16.shape == (5, 7, 1) and grey16.max() == 40000
    assert expanded.shape == (5, 7, 3) and expanded[0, 0].tolist() == [10, 20, 30]
    assert dataset.get(0).image_width == 7 and dataset.get(0).image_height == 5


def test_items_labels_and_multilabels_like_burn(image_folder):
    items = [
        (image_folder / "orange" / "dot.jpg", "orange"),
        (image_folder / "red" / "dot.JPG", "red"),
        (image_folder / "red" / "dot.png", "red"),
    ]
    dataset = ImageFolderDataset.new_classification_with_items(items, ["orange", "red"])
    assert [dataset.get(i).annotation for i in range(3)] == [Label(0), Label(1), Label(1)]
    assert all(dataset.get(i).image.shape == (1, 1, 3) for i in range(3))
    multi = ImageFolderDataset.new_multilabel_classification_with_items(
        [(path, ["dot", label]) for path, label in items], ["dot", "orange", "red"]
    )
    assert [multi.get(i).annotation for i in range(3)] == [
        MultiLabel([0, 1]),
        MultiLabel([0, 2]),
        MultiLabel([0, 2]),
    ]


def test_segmentation_masks_give_class_indices(tmp_path):
    checkerboard = (np.indices((8, 8)).sum(axis=0) % 2 + 1).astype(np.uint8)
    Image.new("RGB", (8, 8)).save(tmp_path / "image.png")
    Image.fromarray(checkerboard, "L").save(tmp_path / "mask_grey.png")
    Image.fromarray(np.stack([checkerboard] * 3, axis=-1), "RGB").save(tmp_path / "mask_rgb.png")
    dataset = ImageFolderDataset.new_segmentation_with_items(
        [(tmp_path / "image.png", tmp_path / name) for name in ("mask_grey.png", "mask_rgb.png")],
        ["foo", "bar", "baz"],
    )
    for index in range(2):
        annotation = dataset.get(index).annotation
        assert annotation == SegmentationMask(checkerboard.astype(np.int64))
        assert annotation.mask.dtype == np.int64
        assert annotation.mask.ravel()[:4].tolist() == [1, 2, 1, 2]  # Burn's flat pattern


def test_coco_detection(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for name in ("two.jpg", "one.jpg", "none.jpg"):
        Image.new("RGB", (32, 32)).save(images / name)
    coco = {
        "categories": [{"id": 0, "name": "dot"}, {"id": 1, "name": "triangle"}],
        "images": [
            {"id": 1, "file_name": "two.jpg"},
            {"id": 2, "file_name": "one.jpg"},
            {"id": 3, "file_name": "none.jpg"},
        ],
        "annotations": [
            {"image_id": 1, "category_id": 0, "bbox": [3.125172, 18.090784, 10.96011, 10.74]},
            {"image_id": 1, "category_id": 1, "bbox": [15, 3, 12, 11, 99]},
            {"image_id": 2, "category_id": 0, "bbox": [10.07978, 9.595598, 10.96011, 11.3]},
        ],
    }
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    dataset = ImageFolderDataset.new_coco_detection(tmp_path / "coco.json", images)
    assert len(dataset) == 3 and dataset.class_ids == {"dot": 0, "triangle": 1}
    two = dataset.get(0).annotation
    assert isinstance(two, BoundingBoxes) and len(two.boxes) == 2
    assert two.boxes[0] == BoundingBox(
        tuple(np.float32([3.125172, 18.090784, 10.96011, 10.74]).tolist()), 0
    )
    assert two.boxes[1] == BoundingBox((15.0, 3.0, 12.0, 11.0), 1)
    assert dataset.get(2).annotation == BoundingBoxes([])


def test_a_loader_batches_image_items(image_folder):
    class Pixels(Batcher):
        def batch(self, items, device):
            return np.stack([item.image for item in items]), [item.annotation for item in items]

    loader = (
        DataLoaderBuilder(Pixels())
        .batch_size(2)
        .build(ImageFolderDataset.new_classification(image_folder))
    )
    batches = list(loader.iter())
    assert [images.shape for images, _ in batches] == [(2, 1, 1, 3), (1, 1, 1, 3)]


# -- Errors ------------------------------------------------------------------------------------


def test_empty_or_missing_folder_is_a_clear_error(tmp_path):
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "readme.txt").write_text("no images")
    with pytest.raises(ImageLoaderError, match=r"holds no image with extension bmp, jpeg"):
        ImageFolderDataset.new_classification(tmp_path)
    with pytest.raises(ImageLoaderError, match=r"does not exist or is not a folder"):
        ImageFolderDataset.new_classification(tmp_path / "missing")


def test_unknown_extension_is_refused_like_burn(image_folder):
    with pytest.raises(ImageLoaderError, match=r"Invalid file extension: 'ico'.*bmp, jpg"):
        ImageFolderDataset.new_classification_with(image_folder, ["ico"])
    with pytest.raises(ImageLoaderError, match=r"Invalid file extension: 'gif'"):
        ImageFolderDataset.new_classification_with_items([("a/b.gif", "x")], ["x"])
    with pytest.raises(ImageLoaderError, match=r"has no extension"):
        ImageFolderDataset.new_classification_with_items([("a/b", "x")], ["x"])


def test_unreadable_image_names_the_file(tmp_path):
    (tmp_path / "cats").mkdir()
    broken = tmp_path / "cats" / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n but then garbage")
    dataset = ImageFolderDataset.new_classification(tmp_path)
    with pytest.raises(ImageLoaderError, match=r"Could not decode image .*broken.png"):
        dataset.get(0)
    broken.unlink()
    with pytest.raises(ImageLoaderError, match=r"Image .*broken.png' not found"):
        dataset.get(0)


def test_a_label_missing_from_classes_is_named(image_folder):
    with pytest.raises(ImageLoaderError, match=r"class 'red', which is not in `classes`"):
        ImageFolderDataset.new_classification_with_items(
            [(image_folder / "red" / "dot.png", "red")], ["orange"]
        )
    with pytest.raises(TypeError, match=r"sequence of class names"):
        ImageFolderDataset.new_classification_with_items([], "red")


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("not json", "Failed to parse annotations"),
        ({"categories": [], "images": [], "annotations": []}, "No classes found"),
        ({"categories": [{"id": 0, "name": ""}]}, "Invalid class name"),
        ({"categories": [{"id": 0, "name": "a"}]}, "no annotations found"),
        (
            {
                "categories": [{"id": 0, "name": "a"}],
                "annotations": [{"image_id": 1, "category_id": 0, "bbox": [1, 2]}],
            },
            "not enough bounding box coordinates in annotation for image 1",
        ),
        (
            {
                "categories": [{"id": 0, "name": "a"}],
                "annotations": [{"image_id": 1, "category_id": 0, "bbox": [1, 2, 3, 4]}],
                "images": [{"id": 1, "file_name": "missing.jpg"}],
            },
            r"missing.jpg' not found",
        ),
    ],
)
def test_bad_coco_files_are_named(tmp_path, document, message):
    path = tmp_path / "coco.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    with pytest.raises(ImageLoaderError, match=message):
        ImageFolderDataset.new_coco_detection(path, tmp_path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)
coco_like = st.fixed_dictionaries(
    {},
    optional={
        "categories": st.lists(
            st.fixed_dictionaries({}, optional={"id": json_values, "name": json_values})
            | json_values,
            max_size=3,
        ),
        "annotations": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "image_id": st.integers(-1, 2) | json_values,
                    "category_id": st.integers(-1, 2) | json_values,
                    "bbox": st.lists(st.floats() | st.integers() | json_values, max_size=5),
                },
            ),
            max_size=3,
        ),
        "images": st.lists(
            st.fixed_dictionaries(
                {}, optional={"id": st.integers(-1, 2), "file_name": st.just("a.png") | json_values}
            ),
            max_size=3,
        ),
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=coco_like | json_values)
def test_any_coco_json_builds_a_dataset_or_raises_image_loader_error(tmp_path, document):
    Image.new("RGB", (2, 2)).save(tmp_path / "a.png")
    path = tmp_path / "coco.json"
    path.write_text(json.dumps(document))
    try:
        dataset = ImageFolderDataset.new_coco_detection(path, tmp_path)
    except ImageLoaderError:
        return
    for item in dataset:
        assert isinstance(item.annotation, BoundingBoxes)
