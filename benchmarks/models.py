"""The models the benchmarks train beside the guide's MNIST model: the GPT of
`examples/language_model` at the size the benchmarks use (`gpt_config`), as a next-byte
classifier (`gpt`), and a ResNet-18 for 32x32 images (`resnet18`, no torchvision).

Shared by `benchmarks/device.py` and `benchmarks/language_model.py`; torch and the examples
are imported inside the functions, in the child processes that train.
"""

from __future__ import annotations

__all__ = ["gpt", "gpt_config", "resnet18"]


def gpt_config():
    """The GPT of the benchmarks: 4 pre-norm blocks, width 256, 8 heads, context 128."""
    from examples.language_model.model import GptConfig

    return GptConfig(context_length=128, d_model=256, num_layers=4, num_heads=8)


def resnet18(num_classes: int = 10):
    """ResNet-18 for 32x32 images (3x3 stem, no max-pool), with burnish's train/valid steps."""
    import torch
    from torch import nn

    import burnish as bn
    from burnish.nn.loss import CrossEntropyLossConfig
    from burnish.train import ClassificationOutput, TrainOutput

    class Block(nn.Module):
        def __init__(self, inputs: int, outputs: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(outputs)
            self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(outputs)
            self.shortcut = nn.Sequential()
            if stride != 1 or inputs != outputs:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs)
                )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))

    class ResNet18(bn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64))
            layers, inputs = [], 64
            for outputs, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [Block(inputs, outputs, stride), Block(outputs, outputs, 1)]
                inputs = outputs
            self.layers = nn.Sequential(*layers)
            self.head = nn.Linear(512, num_classes)
            self.loss = CrossEntropyLossConfig().init()

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x = self.layers(torch.relu(self.stem(images)))
            return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

        def forward_classification(self, batch) -> ClassificationOutput:
            output = self.forward(batch.images)
            return ClassificationOutput(self.loss(output, batch.targets), output, batch.targets)

        def train_step(self, batch) -> TrainOutput:
            item = self.forward_classification(batch)
            return TrainOutput(self, bn.backward(item.loss), item)

        def valid_step(self, batch) -> ClassificationOutput:
            return self.forward_classification(batch)

    return ResNet18()


def gpt():
    """The language-model example's GPT, as a classifier of the next byte: `forward` gives the
    logits of every position `[batch * length, 256]`, so the loops of this file train it as
    they train the image models (the batches' targets are flattened to match)."""
    import torch
    import torch.nn.functional as F

    import burnish as bn
    from burnish.train import ClassificationOutput, TrainOutput

    from examples.language_model.model import Gpt

    class NextByteGpt(Gpt):
        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            return super().forward(tokens).flatten(0, 1)

        def forward_classification(self, batch) -> ClassificationOutput:
            output = self.forward(batch.images)
            return ClassificationOutput(
                F.cross_entropy(output, batch.targets), output, batch.targets
            )

        def train_step(self, batch) -> TrainOutput:
            item = self.forward_classification(batch)
            return TrainOutput(self, bn.backward(item.loss), item)

        def valid_step(self, batch) -> ClassificationOutput:
            return self.forward_classification(batch)

    return NextByteGpt(gpt_config())


def learner_builder(artifact_dir, epochs: int = 1):
    """The Learner every benchmark times: train and valid Accuracy and Loss, file loggers, the
    CLI renderer (as the guide trains); callers add a checkpointer, devices, listeners."""
    from burnish.train import LearnerBuilder
    from burnish.train.metric import AccuracyMetric, LossMetric
    from burnish.train.renderer import CliMetricsRenderer

    return (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(epochs)
    )
