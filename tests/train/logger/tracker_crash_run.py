"""The interrupted session of the tracker crash tests, run as a subprocess that SIGKILLs itself.

python tests/train/logger/tracker_crash_run.py ARTIFACT_DIR csv,tensorboard,mlflow,wandb [MODE]

MODE `after-epoch-2` (the default): killed in epoch 4, a checkpoint after epoch 2;
`at-checkpoint:N`: killed right after the checkpoint of epoch N is flushed.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.train.logger.tracker_schedule import crash_after_epoch_2, crash_at_checkpoint  # noqa: E402

if __name__ == "__main__":
    mode = sys.argv[3] if len(sys.argv) > 3 else "after-epoch-2"
    if mode.startswith("at-checkpoint:"):
        crash_at_checkpoint(Path(sys.argv[1]), sys.argv[2].split(","), int(mode.split(":")[1]))
    else:
        crash_after_epoch_2(Path(sys.argv[1]), sys.argv[2].split(","))
