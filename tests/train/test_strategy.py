"""`LearnerBuilder.strategy`: the names it takes and the combinations it refuses."""

from __future__ import annotations

import pytest

from burnish.train import LearnerBuilder


def test_strategy_names_reach_the_options(tmp_path):
    options = LearnerBuilder(tmp_path).strategy("fsdp", shard_policy=callable)._options()
    assert options.parallelism.kind == "fsdp" and options.parallelism.shard_policy is callable
    assert LearnerBuilder(tmp_path)._options().parallelism.kind == "ddp"


def test_an_unknown_strategy_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"`strategy` must be 'ddp' or 'fsdp'.*'zero3'"):
        LearnerBuilder(tmp_path).strategy("zero3")


def test_a_shard_policy_needs_fsdp(tmp_path):
    with pytest.raises(ValueError, match="needs strategy\\('fsdp'\\)"):
        LearnerBuilder(tmp_path).strategy("ddp", shard_policy=callable)


def test_fsdp_refuses_float16(tmp_path):
    builder = LearnerBuilder(tmp_path).strategy("fsdp").mixed_precision("fp16")
    with pytest.raises(ValueError, match="Use mixed_precision\\('bf16'\\)"):
        builder._options()
