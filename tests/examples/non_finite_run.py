"""A script written from docs/long-runs.md ("Stopping"): the loss goes NaN at one step under
`on_non_finite("stop")`, and the script ends as the examples do (`exit_if_interrupted`).

    python tests/examples/non_finite_run.py ARTIFACT_DIR NAN_AT
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))

import burnish as bn  # noqa: E402
from burnish.optim import AdamConfig  # noqa: E402
from burnish.record import CompactRecorder  # noqa: E402
from burnish.train import TrainOutput  # noqa: E402

from examples.interrupted import exit_if_interrupted  # noqa: E402
from tests.train.helpers import Mlp, builder, loaders  # noqa: E402


class NanAt(Mlp):
    """The docs' model: its loss is NaN at one training step."""

    def __init__(self, nan_at: int) -> None:
        super().__init__()
        self.nan_at, self.steps = nan_at, 0

    def train_step(self, batch) -> TrainOutput:
        self.steps += 1
        item = self.forward_classification(batch)
        if self.steps == self.nan_at:
            item.loss = item.loss * float("nan")
        return TrainOutput(self, bn.backward(item.loss), item)


def main() -> None:
    artifact_dir, nan_at = sys.argv[1], int(sys.argv[2])
    bn.seed(3)
    learner = (
        builder(artifact_dir, epochs=2, recorder=CompactRecorder())
        .checkpoint_every(2)
        .on_non_finite("stop")
        .build(NanAt(nan_at), AdamConfig().init(), 1e-3)
    )
    result = learner.fit(*loaders(batch_size=64, train_items=256, valid_items=64))
    exit_if_interrupted(result, "no model was saved", resume=f"the same script ({artifact_dir})")
    result.model.save_file(Path(artifact_dir) / "model", CompactRecorder())
    print("saved the model")


if __name__ == "__main__":
    main()
