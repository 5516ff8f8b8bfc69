"""A run in an artifact directory the test made unusable, as a subprocess (another user, a
file size limit, a mount namespace with a full or read-only tmpfs).

    python tests/train/artifact_dir_run.py ARTIFACT_DIR

It fits a tiny model on in-memory batches (no dataset files: the process may run as a user
that cannot read them). It prints `ArtifactDirError: <message>` and exits 3 when the learner
refuses the directory, prints `trained N` and exits 0 when it trains; the batches count the
train steps, so `trained 0` never appears: a refusal comes before any step.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import burnish as bn  # noqa: E402
from burnish.optim import SgdConfig  # noqa: E402
from burnish.train import LearnerBuilder, RegressionOutput, TrainOutput  # noqa: E402
from burnish.train.renderer import CliMetricsRenderer  # noqa: E402


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 1)
        self.steps = 0

    def valid_step(self, batch):
        output = self.linear(batch)
        return RegressionOutput(output.square().mean(), output, output.detach())

    def train_step(self, batch):
        self.steps += 1
        item = self.valid_step(batch)
        return TrainOutput(self, bn.backward(item.loss), item)


def main() -> int:
    model = Tiny()
    learner = (
        LearnerBuilder(sys.argv[1])
        .renderer(CliMetricsRenderer())
        .num_epochs(1)
        .build(model, SgdConfig().init(), 0.1)
    )
    batches = [torch.ones(4, 2)] * 2
    try:
        learner.fit(batches, batches)
    except bn.ArtifactDirError as error:
        print(f"ArtifactDirError: {error}", flush=True)
        return 3 if model.steps == 0 else 4
    print(f"trained {model.steps}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
