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
    for name in ("learner-bf16", "plain-bf16"):  # the Learner's autocast and its plain peer
        bf16 = _child(name, "guide")
        assert abs(bf16["accuracy"] - accuracies["plain"]) < 5.0, name


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


def test_two_lengths_split_the_fixed_cost_from_the_cost_per_iteration() -> None:
    from benchmarks import two_lengths

    # 2 s once, then 5 ms an iteration: 300 it -> 3.5 s, 3000 it -> 17 s
    slope, fixed = two_lengths.fit_line((300, 3000), (3.5, 17.0))
    assert slope == pytest.approx(0.005) and fixed == pytest.approx(2.0)
    with pytest.raises(ValueError, match="the first the shorter"):
        two_lengths.fit_line((3000, 300), (17.0, 3.5))
    runs = {name: [{"ms_per_iteration": ms, "fixed_s": s}] for name, ms, s in
            (("plain", 5.0, 0.1), ("learner", 5.1, 0.6))}  # fmt: skip
    rows = two_lengths.rows("overhead cuda guide", runs, "plain", {})
    learner = next(r for r in rows if r.contender == "learner" and r.measure == "per iteration")
    assert learner.ratio == pytest.approx(1.02)
    fixed_row = next(r for r in rows if r.contender == "learner" and r.measure == "fixed cost")
    assert fixed_row.note == "+0.500 s over plain per fit"


def test_the_cli_takes_two_lengths_only_with_a_device_and_a_selection_of_contenders() -> None:
    from benchmarks import __main__ as cli

    args = cli.parse(["--device", "cpu", "--lengths", "300", "3000", "--contenders", "learner"])
    assert args.lengths == [300, 3000] and args.contenders == ["learner"]
    for wrong in (["--lengths", "300", "3000"], ["--device", "cpu", "--lengths", "300", "30"]):
        with pytest.raises(SystemExit):
            cli.parse(wrong)
    with pytest.raises(SystemExit):
        cli.parse(["--device", "cpu", "--contenders", "learner-fp8"])


def test_a_run_longer_than_the_data_goes_round_the_same_batches() -> None:
    import torch
    from benchmarks.device import DeviceBatches

    images, targets = torch.arange(12.0).reshape(6, 2), torch.arange(6)
    batches = list(DeviceBatches(images, targets, 2, True, batches=7))
    assert len(batches) == 7 and all(len(b.targets) == 2 for b in batches)
    firsts = [b.targets.tolist() for b in batches]
    assert firsts[3:6] == firsts[0:3] and firsts[6] == firsts[0]  # 3 distinct, then again
    assert sorted(i for batch in firsts[:3] for i in batch) == list(range(6))  # once a pass


def test_the_gpu_check_runs_every_part_and_names_tests_that_exist(tmp_path) -> None:
    from benchmarks import gpu_check

    cuda = gpu_check.parts(_check_args(tmp_path, "cuda", small=False))
    names = [name for name, _ in cuda]
    assert names == [
        "profile", "lengths_guide", "overhead_guide", "overhead_gpt", "overhead_resnet18",
        "graphs_gpt", "cuda_tests",
    ]  # fmt: skip
    lengths = dict(cuda)["lengths_guide"]
    assert lengths[lengths.index("--lengths") + 1 :][:2] == ["300", "3000"]
    assert "--runs" in lengths and lengths[lengths.index("--runs") + 1] == "2"
    for node in gpu_check.CUDA_TESTS:  # each names a file and a test in it
        path, _, test = node.partition("::")
        assert (REPO / path).exists(), node
        assert not test or f"def {test}(" in (REPO / path).read_text(), node
    cpu = dict(gpu_check.parts(_check_args(tmp_path, "cpu", small=True)))
    assert "cuda_tests" not in cpu and "overhead_resnet18" not in cpu


def _check_args(tmp_path, device: str, small: bool):
    import argparse

    return argparse.Namespace(out=tmp_path, device=device, small=small)
