"""Smoke tests of the accelerator benchmarks (`python -m benchmarks --device ...`) on the CPU.

They prove the code path (every contender trains, on the same batches, to the same accuracy);
nothing here looks at how fast anything is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import fork_server

REPO = Path(__file__).resolve().parents[1]
EAGER = ("plain", "custom", "learner")


def _child(contender: str, model: str, iterations: int = 3, *flags: str) -> dict:
    done = fork_server.run(  # forked (tests/fork_server.py)
        ["-m", "benchmarks.device", "child", contender, "--model", model,
         "--device", "cpu", "--iterations", str(iterations), "--benchmark", "time_to_accuracy",
         *flags],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("BENCH-RESULT "))
    return json.loads(line.removeprefix("BENCH-RESULT "))


@pytest.mark.timeout(600)
def test_every_guide_contender_trains_the_same_batches_to_the_same_accuracy() -> None:
    results = {name: _child(name, "guide") for name in (*EAGER, "learner-graphs")}
    accuracies = {name: result["accuracy"] for name, result in results.items()}
    assert len(set(accuracies.values())) == 1, accuracies  # same data, weights, steps
    assert all(result["device"] == "cpu" and result["seconds"] > 0 for result in results.values())
    bf16 = _child("learner-bf16", "guide")
    assert abs(bf16["accuracy"] - accuracies["plain"]) < 5.0


@pytest.mark.timeout(600)
def test_the_resnet18_trains_under_the_plain_loop_and_the_learner() -> None:
    from benchmarks.models import resnet18

    model = resnet18()
    assert 11_000_000 < sum(p.numel() for p in model.parameters()) < 11_300_000
    # 16 images a batch, not the benchmark's 256: the same code path at a 16th of the cost.
    small = ("--batch-size", "16")
    plain, learner = (
        _child("plain", "resnet18", 1, *small),
        _child("learner", "resnet18", 1, *small),
    )
    assert plain["accuracy"] == learner["accuracy"]


def test_the_cli_takes_a_device_and_targets_apply_only_on_a_gpu() -> None:
    from benchmarks import __main__ as cli
    from benchmarks.device import TARGETS

    assert cli.parse(["--device", "cuda"]).device == "cuda"
    assert cli.parse([]).device is None  # the CPU benchmarks stay the default
    assert cli.parse(["--device", "cpu", "--models", "guide"]).models == ["guide"]
    with pytest.raises(SystemExit):
        cli.parse(["--device", "cpu", "--models", "resnet50"])
    assert set(TARGETS["guide"]) == {"learner", "learner-graphs"}
    assert cli.parse(["--device", "cpu", "--models", "gpt"]).models == ["gpt"]
    assert set(TARGETS["gpt"]) == {"learner"}


@pytest.mark.timeout(600)
def test_the_language_model_gpt_trains_the_same_under_every_eager_loop() -> None:
    from benchmarks.models import gpt

    assert 3_000_000 < sum(p.numel() for p in gpt().parameters()) < 3_500_000
    # 8 windows a batch, not the benchmark's 32: the same code path at a quarter of the cost.
    results = {name: _child(name, "gpt", 2, "--batch-size", "8") for name in EAGER}
    accuracies = {name: result["accuracy"] for name, result in results.items()}
    assert len(set(accuracies.values())) == 1, accuracies  # same windows, weights, steps
    assert 0 < accuracies["plain"] < 100
