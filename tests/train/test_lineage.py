"""A run's lineage (issue 40): `checkpoint(N)` with later checkpoints or logs begins a branch,
the part it leaves moves aside into `branches/<n>-from-epoch-N/`, and `resume()` continues the
branch. In-process runs of the MNIST MLP; the SIGKILL sequences are in
test_lineage_properties.py."""

from __future__ import annotations

import io
import json

import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train.checkpoint import KeepLastNCheckpoints
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders


def fit(artifact_dir, epochs, lr=1e-3, start=None, out=None):
    """Train the MLP (keeping every epoch checkpoint) from `start` (an epoch, "resume", None)."""
    bn.seed(5)
    configured = (
        builder(artifact_dir, epochs=epochs, recorder=DefaultRecorder())
        .with_checkpointing_strategy(KeepLastNCheckpoints(10))
        .renderer(CliMetricsRenderer(file=out or io.StringIO()))
        .deterministic()
    )
    if start == "resume":
        configured = configured.resume()
    elif start is not None:
        configured = configured.checkpoint(start)
    learner = configured.build(Mlp(), AdamConfig().init(), lr)
    return learner.fit(*loaders(batch_size=64, train_items=256, valid_items=64))


def files(directory, *names):
    """Every file under the named subdirectories, by relative path."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for name in names
        for path in sorted((directory / name).rglob("*"))
        if path.is_file()
    }


def parameters(result):
    return {name: tensor.clone() for name, tensor in result.model.state_dict().items()}


def assert_same_parameters(expected, actual):
    assert expected.keys() == actual.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, actual[name]), name


def test_resume_after_a_branch_continues_the_branch_not_the_abandoned_line(tmp_path):
    # The straight run the branch's line describes: 2 epochs at 1e-3, a third at 3e-3.
    straight = tmp_path / "straight"
    fit(straight, 2)
    expected = parameters(fit(straight, 3, lr=3e-3, start="resume"))

    run = tmp_path / "run"
    original = parameters(fit(run, 4))
    said = io.StringIO()
    branch = fit(run, 3, lr=3e-3, start=2, out=said)
    assert "Branching from checkpoint epoch-2 (line 1)" in said.getvalue()
    assert_same_parameters(expected, parameters(branch))

    said = io.StringIO()
    resumed = fit(run, 3, lr=3e-3, start="resume", out=said)
    assert "already complete: 3 epochs" in said.getvalue()
    assert "epoch-4" not in said.getvalue()
    assert_same_parameters(expected, parameters(resumed))
    # The branch's logs are the straight run's; the abandoned part is kept, named.
    assert files(run, "train", "valid") == files(straight, "train", "valid")
    archive = run / "branches" / "1-from-epoch-2"
    assert sorted(p.name for p in (archive / "checkpoint").iterdir()) == ["epoch-3", "epoch-4"]
    assert sorted(p.name for p in (run / "checkpoint").iterdir()) == [
        "epoch-1",
        "epoch-2",
        "epoch-3",
    ]
    assert (archive / "train" / "epoch-4").is_dir()
    old = DefaultRecorder().load(archive / "checkpoint" / "epoch-4" / "model")
    assert_same_parameters(original, {name: old[name] for name in original})
    lineage = json.loads((run / "branches" / "lineage.json").read_text())
    assert lineage["current"] == 1
    assert lineage["lines"][-1]["from"] == "epoch-2"
    assert lineage["lines"][-1]["archive"] == "branches/1-from-epoch-2"
    line = DefaultRecorder().load(run / "checkpoint" / "epoch-3" / "learner")["line"]
    assert (line["number"], line["parent"], line["from"]) == (1, 0, "epoch-2")
