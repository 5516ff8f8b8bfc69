"""Burn's `burn::vision` image operations (`Transform2D`)."""

from burnish.vision.transform2d import GridSamplePaddingMode, Transform2D

__all__ = ["GridSamplePaddingMode", "Transform2D"]
