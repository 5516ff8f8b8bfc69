"""Neural-network helpers the training seeds use (Burn's `burn::nn`): losses."""

from burnish.nn import loss
from burnish.nn.loss import (
    BinaryCrossEntropyLoss,
    BinaryCrossEntropyLossConfig,
    CrossEntropyLoss,
    CrossEntropyLossConfig,
    HuberLoss,
    HuberLossConfig,
    MseLoss,
    Reduction,
)

__all__ = [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "HuberLoss",
    "HuberLossConfig",
    "MseLoss",
    "Reduction",
    "loss",
]
