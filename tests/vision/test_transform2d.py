"""Burn's `burn::vision::Transform2D`: Burn's own unit tests (crates/burn-vision/src/transform/
transform2d.rs) with their numbers, hand-computed rotations, and the MNIST example's
`mangle_image_batch` ported name by name on real MNIST."""

from __future__ import annotations

import random
from math import pi

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.vision import GridSamplePaddingMode, Transform2D

from tests.helpers import mnist

IMAGE = [[[[1.0, 2.0], [3.0, 4.0]]]]
FRAC_PI_2, FRAC_PI_3, FRAC_PI_4 = pi / 2, pi / 3, pi / 4


def check(t, image, expected):
    torch.testing.assert_close(t.transform(torch.tensor(image)), torch.tensor(expected))


def test_transform_identity_translation():
    check(
        Transform2D.translation(0.0, 0.0),
        [[[[1.0, 0.0], [0.0, 2.0]]]],
        [[[[1.0, 0.0], [0.0, 2.0]]]],
    )


def test_transform_translation():
    check(Transform2D.translation(1.0, 1.0), IMAGE, [[[[2.5, 3.0], [3.5, 4.0]]]])


def test_transform_rotation_90_degrees():
    check(Transform2D.rotation(FRAC_PI_2, 0.0, 0.0), IMAGE, [[[[2.0, 4.0], [1.0, 3.0]]]])


def test_transform_rotation_around_corner():
    check(Transform2D.rotation(FRAC_PI_2, 1.0, -1.0), IMAGE, [[[[2.0, 2.0], [1.0, 1.0]]]])


def test_transform_scale():
    check(Transform2D.scale(0.5, 0.5, 0.0, 0.0), IMAGE, [[[[1.75, 2.25], [2.75, 3.25]]]])


def test_transform_scale_around_corner():
    check(Transform2D.scale(0.5, 0.5, 1.0, -1.0), IMAGE, [[[[1.5, 2.0], [2.5, 3.0]]]])


def test_transform_combined():
    t = Transform2D.composed(
        [Transform2D.translation(0.2, -0.5), Transform2D.rotation(FRAC_PI_3, 0.0, 0.0)]
    )
    check(t, IMAGE, [[[[1.7830127, 2.8660254], [1.1339746, 3.2830124]]]])


@pytest.mark.parametrize("quarter_turns", [1, 2, 3, 4])
def test_quarter_turns_of_a_known_image_are_exact_pixel_rotations(quarter_turns):
    image = torch.arange(25.0).reshape(1, 1, 5, 5)
    rotated = Transform2D.rotation(quarter_turns * FRAC_PI_2, 0.0, 0.0).transform(image)
    # The output pixel (x, y) reads the input at R(theta) (x, y): by hand, a quarter turn of
    # the grid the other way round from the matrix, i.e. torch.rot90 with k = quarter_turns.
    torch.testing.assert_close(rotated, torch.rot90(image, quarter_turns, dims=(2, 3)))


def test_a_rotation_about_the_centre_keeps_the_centre_pixel_and_the_mass_of_a_disc():
    y, x = torch.meshgrid(torch.linspace(-1, 1, 21), torch.linspace(-1, 1, 21), indexing="ij")
    disc = ((x**2 + y**2) < 0.5).float().reshape(1, 1, 21, 21)
    rotated = Transform2D.rotation(0.3, 0.0, 0.0).with_padding_mode("zeros").transform(disc)
    assert rotated[0, 0, 10, 10] == 1.0
    assert abs(rotated.sum().item() - disc.sum().item()) < 0.05 * disc.sum().item()


def test_padding_modes_and_a_bad_one():
    t = Transform2D.translation(5.0, 0.0)  # reads more than a pixel beyond the right edge
    image = torch.tensor(IMAGE)
    assert t.with_padding_mode(GridSamplePaddingMode.Zeros).transform(image).abs().sum() == 0
    torch.testing.assert_close(t.transform(image), torch.tensor([[[[2.0, 2.0], [4.0, 4.0]]]]))
    with pytest.raises(ValueError, match=r"`padding_mode` must be .*Received: 'mirror'"):
        t.with_padding_mode("mirror")


def test_images_of_the_wrong_shape_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"Received: \(28, 28\)\. Add the missing dimensions"):
        Transform2D.identity().transform(torch.zeros(28, 28))


def mangle_image_batch(transforms, images):
    """examples/mnist/src/data.rs's `mangle_image_batch`, line by line (Python's `random`
    for Rust's `rng.random_range`)."""
    rng = random.Random(0)
    transforms = [
        {
            "Translate": lambda: Transform2D.translation(
                rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)
            ),
            "Shear": lambda: Transform2D.shear(
                rng.uniform(-0.6, 0.6), rng.uniform(-0.6, 0.6), 0.0, 0.0
            ),
            "Scale": lambda: Transform2D.scale(
                rng.uniform(0.6, 1.5), rng.uniform(0.6, 1.5), 0.0, 0.0
            ),
            "Rotation": lambda: Transform2D.rotation(rng.uniform(-FRAC_PI_4, FRAC_PI_4), 0.0, 0.0),
        }[transform]()
        for transform in transforms
    ]
    [batch_size, height, width] = images.shape
    return (
        Transform2D.composed(transforms)
        .transform(images.reshape(batch_size, 1, height, width))
        .reshape(batch_size, height, width)
    )


def test_the_mnist_examples_mangle_image_batch_on_real_digits():
    images = torch.stack([torch.from_numpy(mnist("test").get(i).image) for i in range(8)])
    mangled = mangle_image_batch(["Translate", "Shear", "Scale", "Rotation"], images)
    assert mangled.shape == images.shape
    assert torch.isfinite(mangled).all()
    assert not torch.allclose(mangled, images)  # the digits moved
    assert mangled.min() >= images.min() - 1e-4 and mangled.max() <= images.max() + 1e-4


finite = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=50, deadline=None)
@given(finite, finite, finite, st.sampled_from(list(GridSamplePaddingMode)))
def test_any_parameters_give_an_image_of_the_same_shape(a, b, c, mode):
    image = torch.rand(2, 1, 4, 3)
    for t in (Transform2D.rotation(a, b, c), Transform2D.scale(a, b, c, 0.0),
              Transform2D.shear(a, b, c, c), Transform2D.translation(a, b)):  # fmt: skip
        assert t.with_padding_mode(mode).transform(image).shape == image.shape
