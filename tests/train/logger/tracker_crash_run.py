"""The interrupted session of the tracker crash test, run as a subprocess that SIGKILLs itself.

python tests/train/logger/tracker_crash_run.py ARTIFACT_DIR csv,tensorboard,mlflow,wandb
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.train.logger.tracker_schedule import crash_after_epoch_2  # noqa: E402

if __name__ == "__main__":
    crash_after_epoch_2(Path(sys.argv[1]), sys.argv[2].split(","))
