"""The Burn book's guide model: two convolutions, adaptive pooling, two linear layers."""

from __future__ import annotations

import torch
from torch import nn

import burnish as bn
from burnish.nn.loss import CrossEntropyLossConfig
from burnish.train import ClassificationOutput, TrainOutput


@bn.config
class ModelConfig:
    num_classes: int
    hidden_size: int
    dropout: float = 0.5

    def init(self, device: torch.device | str | None = None) -> Model:
        """Returns the initialized model."""
        return Model(self).to_device(device or "cpu")


class Model(bn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3)
        self.pool = nn.AdaptiveAvgPool2d((8, 8))
        self.dropout = nn.Dropout(config.dropout)
        self.linear1 = nn.Linear(16 * 8 * 8, config.hidden_size)
        self.linear2 = nn.Linear(config.hidden_size, config.num_classes)
        self.activation = nn.ReLU()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Images [batch_size, height, width] -> logits [batch_size, num_classes]."""
        batch_size, height, width = images.shape
        x = images.reshape(batch_size, 1, height, width)  # a channel at the second dimension
        x = self.dropout(self.conv1(x))
        x = self.activation(self.dropout(self.conv2(x)))
        x = self.pool(x).reshape(batch_size, 16 * 8 * 8)
        x = self.activation(self.dropout(self.linear1(x)))
        return self.linear2(x)

    def forward_classification(
        self, images: torch.Tensor, targets: torch.Tensor
    ) -> ClassificationOutput:
        output = self.forward(images)
        loss = CrossEntropyLossConfig().init(output.device).forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch) -> TrainOutput:
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> ClassificationOutput:
        return self.forward_classification(batch.images, batch.targets)
