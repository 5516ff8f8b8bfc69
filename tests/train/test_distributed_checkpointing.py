"""Gradient checkpointing under DDP: two real Gloo ranks under torchrun, set up with Burn
main's `with_training_strategy(ExecutionStrategy.ddp(devices))`, train the same model as
without checkpointing (bf16 autocast and gradient accumulation included)."""

from __future__ import annotations

import pytest

from tests.train.test_distributed import assert_params_close, check, torchrun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_ddp_with_checkpointed_blocks_trains_the_same_model(tmp_path):
    common = ["--accumulate", "2", "--bf16", "--epochs", "1"]
    check(torchrun(str(tmp_path / "plain"), str(tmp_path / "plain.pt"), *common))
    checkpointed = [str(tmp_path / "ckpt"), str(tmp_path / "ckpt.pt"), *common]
    check(torchrun(*checkpointed, "--checkpointing", "--execution-ddp"))
    assert_params_close(tmp_path / "plain.pt", tmp_path / "ckpt.pt", atol=1e-6)
