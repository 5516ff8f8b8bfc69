"""Differential suite under two Gloo ranks: validation's epoch values equal one process's.

37 replayed outputs (odd: the shards are uneven; half of the targets padding) in batches of 4
through tests/train/metric/ranks_run.py, alone and under `torchrun --nproc_per_node=2`: every
pooled metric's epoch value, as the renderer and the metric store give it, equals the
reference over the 37 items to 1e-6 on both — each item counted once, whichever rank had it.
AUROC and AUC-PR, computed once per epoch over every rank's scores, too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests import fork_server
from tests.train.metric import reference
from tests.train.metric.ranks_run import items, metrics
from tests.train.metric.replay import Replay, close

SCRIPT = Path(__file__).with_name("ranks_run.py")
FIELDS = ("scores", "labels", "truth", "probabilities")
ITEMS, BATCH = 37, 4
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _run(tmp_path: Path, nproc: int) -> dict[str, dict[str, float]]:
    out = tmp_path / f"values-{nproc}.json"
    args = [str(tmp_path / f"run-{nproc}"), str(out), "--items", str(ITEMS)]
    args = [str(SCRIPT), *args, "--batch-size", str(BATCH)]
    result = fork_server.ranks(args, nproc, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(out.read_text())


def _expected() -> dict[str, float]:
    """The reference over the items, batched as one process batches them."""
    data = items(ITEMS)
    batches = [
        Replay(*(torch.cat([getattr(i, f) for i in data[s : s + BATCH]]) for f in FIELDS))
        for s in range(0, ITEMS, BATCH)
    ]
    values = {}
    for metric in metrics():
        values[metric.name] = reference.of(metric, [b.adapt(metric.input_type) for b in batches])
    return values


@pytest.mark.parametrize("nproc", [1, 2])
def test_epoch_values_count_each_item_once_on_any_number_of_ranks(tmp_path, nproc) -> None:
    shown = _run(tmp_path, nproc)
    wrong = [
        (reader, name, values.get(name), expected)
        for name, expected in _expected().items()
        for reader, values in shown.items()
        if values.get(name) is None or not close(values[name], expected)
    ]
    assert not wrong, wrong
