"""A training run into an artifact directory on object storage, killed inside its uploads.

    python tests/storage/remote_run.py URL OUT [--kill-at-put N] [--kill-before-marker N]
        [crash_run.py's flags]

It is tests/train/crash_run.py (a dropout MLP on MNIST, `resume()`, a checkpoint every 3
iterations, the final parameters and optimizer state written to OUT) with URL as its artifact
directory. `--kill-at-put N` SIGKILLs the process as its N-th object upload starts (an upload
sends a checkpoint's files concurrently: some may be in the store, others not);
`--kill-before-marker N` SIGKILLs it once the N-th checkpoint's files are in the store, right
before its `COMMIT` marker goes (a checkpoint whose marker never arrives).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.train import crash_run  # noqa: E402


def kill_at_put(count: int) -> None:
    import s3fs

    put_file, calls = s3fs.S3FileSystem._put_file, {"n": 0}

    async def putting(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == count:
            os.kill(os.getpid(), signal.SIGKILL)
        return await put_file(self, *args, **kwargs)

    s3fs.S3FileSystem._put_file = putting


def kill_before_marker(count: int) -> None:
    from burnish.storage.lock import ObjectLock

    check, calls = ObjectLock.check, {"n": 0}

    def checking(self):
        calls["n"] += 1
        if calls["n"] == count:
            os.kill(os.getpid(), signal.SIGKILL)
        return check(self)

    ObjectLock.check = checking


if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--kill-at-put", type=int, default=0)
    parser.add_argument("--kill-before-marker", type=int, default=0)
    ours, rest = parser.parse_known_args()
    if ours.kill_at_put:
        kill_at_put(ours.kill_at_put)
    if ours.kill_before_marker:
        kill_before_marker(ours.kill_before_marker)
    sys.argv = [sys.argv[0], *rest]
    crash_run.main()
