"""docs/burn.md's `burn::vision` rows, in Burn's idiom (the MNIST example's `mangle_image_batch`
and Burn's own unit tests are in tests/vision/test_transform2d.py)."""

from __future__ import annotations

from math import pi

import torch

from burnish.vision import Transform2D

from tests.docs.burn_rows import row


@row(
    "burn::vision::Transform2D (rotation, scale, translation, shear, composed, identity, "
    "with_padding_mode, transform(images))"
)
def test_transform2d_composes_burns_constructors():
    images = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    t = Transform2D.composed(
        [Transform2D.translation(0.2, -0.5), Transform2D.rotation(pi / 3, 0.0, 0.0)]
    )
    expected = torch.tensor([[[[1.7830127, 2.8660254], [1.1339746, 3.2830124]]]])  # Burn's test
    torch.testing.assert_close(t.with_padding_mode("border").transform(images), expected)
    torch.testing.assert_close(Transform2D.identity().transform(images), images)
    shear, scale = Transform2D.shear(0.0, 0.0, 0.0, 0.0), Transform2D.scale(1.0, 1.0, 0.0, 0.0)
    torch.testing.assert_close(Transform2D.composed([shear, scale]).transform(images), images)
