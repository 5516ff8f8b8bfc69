"""An artifact directory on object storage: what it costs a run, and how fast it moves bytes.

An S3 server runs on 127.0.0.1 in a process of its own (moto's server mode, a dev dependency;
it keeps objects in memory, in Python: a slow S3, never a fast one). Three measures:

  loop        the guide's MNIST model (2,000 items, batch 64, 2 epochs, `checkpoint_every(8)`,
              `DefaultRecorder`: ~9 checkpoints of ~6.5 MB), `fit` into a local directory vs
              `s3://`, alternating, each run a process of its own: `fit`'s time, and the
              time its loop waited for the checkpoint writer (`stall_s`: at each save and at
              the end); for s3, what the uploads sent, how long they took on the writer's
              thread (`sync_s`) and the CPU seconds the server used meanwhile
  fresh       `resume()` of the finished run on a fresh machine (an empty staging directory):
              the pull of its committed checkpoints and logs, and the whole `fit` call
  throughput  one checkpoint of `--megabytes` MB (4 files of random bytes): `Mirror.sync` to
              the server, then `pull` into an empty directory

    .venv/bin/python -m benchmarks.object_storage [--runs 3] [--megabytes 256]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks import harness

_SERVER = (
    "import sys; from moto.server import ThreadedMotoServer as S; s = S('127.0.0.1', 0, False); "
    "s.start(); print(s.get_host_and_port()[1], flush=True); sys.stdin.read()"
)


def child(where: str, url: str, staging: str) -> dict:
    """One `fit` (`where`: local, s3, fresh) and what it measured."""
    import torch

    import burnish as bn
    from burnish.data.dataloader import DataLoaderBuilder
    from burnish.data.dataset import PartialDataset
    from burnish.data.dataset.vision import MnistDataset
    from burnish.optim import AdamConfig
    from burnish.record import DefaultRecorder
    from burnish.train import LearnerBuilder
    from burnish.train.metric import AccuracyMetric, LossMetric

    from examples.mnist.data import MnistBatcher
    from examples.mnist.model import ModelConfig

    os.environ["BURNISH_STAGING"] = staging
    stall = _time_waits()
    opening = _time_storage() if where != "local" else {}
    torch.set_num_threads(1)
    bn.seed(5)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(64)
    train = loader.shuffle(5).build(PartialDataset(MnistDataset.train(), 0, 2000))
    valid = loader.build(PartialDataset(MnistDataset.test(), 0, 500))
    learner = (
        LearnerBuilder(url if where != "local" else staging)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(AccuracyMetric())
        .with_file_checkpointer(DefaultRecorder())
        .checkpoint_every(8)
        .num_epochs(2)
        .resume()
        .build(ModelConfig(10, 512).init(), AdamConfig().init(), 1e-3)
    )
    start = time.perf_counter()
    learner.fit(train, valid)
    result = {"fit_s": time.perf_counter() - start, "stall_s": stall["s"], **opening}
    storage = getattr(learner.options, "storage", None)
    if storage is not None and storage.stats is not None:
        stats, pulled = storage.stats, storage.pulled
        result.update(
            uploaded_mb=stats.bytes / 1e6,
            uploaded_files=stats.files,
            syncs=stats.syncs,
            sync_s=stats.seconds,
            pulled_mb=pulled.downloaded[1] / 1e6 if pulled else 0.0,
            pull_s=pulled.seconds if pulled else 0.0,
        )
    return result


def _time_waits() -> dict[str, float]:
    """Time the loop spends waiting for the checkpoint writer (and its uploads): in
    `LearningCheckpointer.wait`, at each save and at the end of `fit`."""
    from burnish.train.checkpoint.learning import LearningCheckpointer

    waited, wait = {"s": 0.0}, LearningCheckpointer.wait

    def timed(self):
        start = time.perf_counter()
        try:
            return wait(self)
        finally:
            waited["s"] += time.perf_counter() - start

    LearningCheckpointer.wait = timed
    return waited


def _time_storage() -> dict[str, float]:
    """Time `RemoteArtifactDir.open` (credentials, lock, pull; s3fs's import and client the
    first time) and `close` (the last upload, the lock's release)."""
    from burnish.storage.remote_dir import RemoteArtifactDir

    spent: dict[str, float] = {}
    for name in ("open", "close"):
        method = getattr(RemoteArtifactDir, name)

        def timed(self, *args, _method=method, _name=name, **kwargs):
            start = time.perf_counter()
            try:
                return _method(self, *args, **kwargs)
            finally:
                spent[f"{_name}_s"] = time.perf_counter() - start

        setattr(RemoteArtifactDir, name, timed)
    return spent


def throughput(url: str, megabytes: int) -> dict:
    """Seconds to upload, then to pull, one checkpoint of `megabytes` MB."""
    from burnish.storage import Mirror, ObjectStore, pull

    with tempfile.TemporaryDirectory() as root:
        staging = Path(root) / "staging" / "checkpoint" / "epoch-1"
        staging.mkdir(parents=True)
        files = {}
        for index in range(4):
            data = os.urandom(megabytes * 1_000_000 // 4)
            (staging / f"part{index}.bin").write_bytes(data)
            files[f"part{index}.bin"] = "0" * 64
        (staging / "COMMIT").write_text(json.dumps({"files": files}))
        start = time.perf_counter()
        Mirror(ObjectStore(url), staging.parents[1]).sync()
        upload = time.perf_counter() - start
        start = time.perf_counter()
        pull(ObjectStore(url), Path(root) / "fresh")
        download = time.perf_counter() - start
    return {"upload_mb_s": megabytes / upload, "pull_mb_s": megabytes / download}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--child", nargs=3, metavar=("WHERE", "URL", "STAGING"))
    args = parser.parse_args()
    if args.child:
        print(harness.MARKER + json.dumps(child(*args.child)), flush=True)
        return
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        _measure(args, f"http://127.0.0.1:{int(server.stdout.readline())}", server.pid)
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(args: argparse.Namespace, endpoint: str, server: int) -> None:
    import boto3

    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        BURNISH_LOCK_LEASE="2",
    )
    boto3.client("s3").create_bucket(Bucket="bench")
    runs: dict[str, list[dict]] = {"local": [], "s3": [], "fresh": []}
    with tempfile.TemporaryDirectory() as root:
        for run in range(args.runs):
            url = f"s3://bench/run-{uuid.uuid4().hex[:8]}"
            for where in ("local", "s3", "fresh"):
                staging = str(Path(root) / f"{where}-{run}")
                argv = ["-m", "benchmarks.object_storage", "--child", where, url, staging]
                before = _cpu_seconds(server)
                result = harness.run_child(argv, threads=1)
                result["server_cpu_s"] = _cpu_seconds(server) - before
                runs[where].append(result)
    for where, results in runs.items():
        keys = sorted(set.intersection(*(set(r) for r in results)))
        medians = {key: statistics.median(r[key] for r in results) for key in keys}
        print(where, " ".join(f"{key}={value:.2f}" for key, value in medians.items()))
    print("throughput", throughput("s3://bench/throughput", args.megabytes))


if __name__ == "__main__":
    main()
