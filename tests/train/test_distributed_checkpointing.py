"""Gradient checkpointing under DDP: two real Gloo ranks under torchrun, set up with Burn
main's `with_training_strategy(ExecutionStrategy.ddp(devices))`, train the same model as
without checkpointing (bf16 autocast and gradient accumulation included)."""

from __future__ import annotations

import pytest

from tests.train.test_distributed import assert_params_close, check, torchrun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_ddp_with_checkpointed_blocks_trains_the_same_model(tmp_path):
    common = ["--accumulate", "2", "--bf16", "--epochs", "1"]
    plain = torchrun(str(tmp_path / "plain"), str(tmp_path / "plain.pt"), *common)
    check(plain)
    checkpointed = [str(tmp_path / "ckpt"), str(tmp_path / "ckpt.pt"), *common]
    recomputed = torchrun(*checkpointed, "--checkpointing", "--execution-ddp")
    check(recomputed)
    assert_params_close(tmp_path / "plain.pt", tmp_path / "ckpt.pt", atol=1e-6)
    # Each rank ran every Linear (a block here) twice per training step: in the forward pass,
    # then again in the backward pass.
    for rank in (0, 1):
        linears = count(plain, "linear_calls", rank)
        assert count(plain, "block_runs", rank) == 0
        assert count(recomputed, "block_runs", rank) == 2 * linears > 0


def count(run, name: str, rank: int) -> int:
    lines = run.stdout.splitlines()
    line = next(line for line in lines if line.startswith(f"{name}=") and f"rank={rank}" in line)
    return int(line.split()[0].split("=")[1])
