"""Burn main's newer metrics under two Gloo ranks and across a SIGKILL and resume.

tests/train/metric/epoch_metrics_run.py trains (nothing) on 24 items and validates on 23 (odd:
uneven shards) with AUROC, AUC-PR, CER, WER, BLEU, ROUGE-L, PSNR, SSIM and Dice on both splits.
Each split's epoch value, in one process, under `torchrun --nproc_per_node=2`, and under two
ranks whose rank 0 is SIGKILLed mid-epoch then resumed from its iteration checkpoint, equals the
metric's value over all the split's items in one update (itself held to torchmetrics or
scikit-learn in test_{rank,sequence,vision}_metrics.py) to 1e-6: each item counted once,
whichever rank had it, and the checkpoint carries every rank's state.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests import fork_server
from tests.train.metric.epoch_metrics_run import SampleBatcher, item, metrics
from tests.train.metric.replay import close

SCRIPT = Path(__file__).with_name("epoch_metrics_run.py")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _run(artifacts: Path, out: Path, nproc: int, *flags: str) -> subprocess.CompletedProcess:
    """The script alone or under torchrun (forked: tests/fork_server.py)."""
    args = [str(SCRIPT), str(artifacts), str(out), *flags]
    return fork_server.ranks(args, nproc, capture_output=True, text=True, timeout=300)


def _expected() -> dict[str, dict[str, float]]:
    """Each metric over the split's items, one process, one update."""
    import torch

    splits = {"train": range(24), "valid": range(1000, 1023)}
    values: dict[str, dict[str, float]] = {}
    for split, indices in splits.items():
        batch = SampleBatcher().batch([item(i) for i in indices], torch.device("cpu"))
        values[split] = {}
        for metric in metrics():
            metric.update(batch, None)
            value = metric.epoch_entry().value if metric.computed_per_epoch else metric.value()
            values[split][metric.name] = float(value)
    return values


def _wrong(shown: dict, expected: dict) -> list:
    return [
        (split, name, shown.get(split, {}).get(name), value)
        for split, values in expected.items()
        for name, value in values.items()
        if shown.get(split, {}).get(name) is None or not close(shown[split][name], value)
    ]


@pytest.mark.parametrize("nproc", [1, 2])
def test_epoch_values_count_each_item_once_on_any_number_of_ranks(tmp_path, nproc) -> None:
    out = tmp_path / "values.json"
    result = _run(tmp_path / "artifacts", out, nproc)
    assert result.returncode == 0, result.stderr[-4000:]
    assert not _wrong(json.loads(out.read_text()), _expected())


def test_sigkill_mid_epoch_under_two_ranks_then_resume_keeps_every_ranks_state(tmp_path) -> None:
    """6 steps per rank; rank 0 dies at its 5th, after the checkpoint of step 4 committed; the
    resumed run's rank 0 restores every rank's state (the others start empty)."""
    out, artifacts = tmp_path / "values.json", tmp_path / "artifacts"
    flags = ("--checkpoint-every", "2")
    killed = _run(artifacts, out, 2, *flags, "--kill-at", "5")
    assert killed.returncode != 0 and not out.exists()
    names = [p.name for p in (artifacts / "checkpoint").iterdir()]
    assert "epoch-1-iteration-4" in names, names
    resumed = _run(artifacts, out, 2, *flags)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert not _wrong(json.loads(out.read_text()), _expected())
