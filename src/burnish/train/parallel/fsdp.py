"""Sharded training with PyTorch's FSDP2 (`LearnerBuilder.strategy("fsdp")`).

Under torchrun, `shard_model` applies `torch.distributed.fsdp.fully_shard` to each block the
policy picks (by default every direct child module that has parameters), then to the root:
each rank keeps 1/N of every parameter (a `DTensor`), the forward and backward passes gather
a block's parameters just before it runs (the model's `train_step` and `valid_step` count as
forward methods of the root, so they may call `self.forward` directly), and the backward pass
reduce-scatters (and averages) its gradients into the shards. `bn.backward` then returns the
sharded gradients (the backward pass runs for every leaf, so FSDP's hooks fill the shards'
`.grad`, which is put back as it was), and burnish's optimizers step the shards with their
foreach kernels.

Checkpoints stay Burn records of the whole model: every rank takes part in gathering each
sharded tensor of the records (model, optimizer state, accumulated gradients) and rank 0
writes them; resuming loads the full records on every rank and keeps each rank's shard. So a
checkpoint of a sharded run loads in one process, under DDP, or under FSDP with another world
size (epoch checkpoints), and vice versa.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from burnish.optim.param_table import invalidate_tables, param_table

__all__ = ["ShardPolicy", "full_record", "gather_records", "is_sharded", "shard_model"]

ShardPolicy = Callable[[nn.Module], bool]
"""Which submodules become their own FSDP unit (sharded, gathered and freed together)."""


def is_sharded(model: nn.Module) -> bool:
    """Whether `fully_shard` was applied to `model`."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def shard_model(
    model: nn.Module,
    policy: ShardPolicy | None = None,
    precision: torch.dtype | None = None,
) -> nn.Module:
    """Shard `model` over the ranks of the default process group, in place; returns it.

    Args:
        model: the model, on this rank's device, with the same parameters on every rank.
        policy: which submodules to shard as units (visited children first); None: every
            direct child module that has parameters. The root is always a unit.
        precision: `torch.bfloat16`: parameters are gathered and computed in bfloat16,
            gradients reduced in float32 (FSDP2's `MixedPrecisionPolicy`); None: float32.
    """
    from torch.distributed.fsdp import (
        MixedPrecisionPolicy,
        fully_shard,
        register_fsdp_forward_method,
    )

    if is_sharded(model):
        return model
    mixed = (
        MixedPrecisionPolicy(param_dtype=precision, reduce_dtype=torch.float32)
        if precision is not None
        else MixedPrecisionPolicy()
    )
    if policy is None:
        units = [child for child in model.children() if _has_parameters(child)]
    else:
        units = [m for m in reversed(list(model.modules())) if m is not model and policy(m)]
    for unit in units:
        fully_shard(unit, mp_policy=mixed)
    fully_shard(model, mp_policy=mixed)
    for method in ("train_step", "valid_step"):  # they call `forward` themselves
        if callable(getattr(model, method, None)):
            register_fsdp_forward_method(model, method)
    invalidate_tables()
    return model


def gather_records(records: Any) -> Any:
    """`records` with every sharded tensor gathered whole (a collective: call on every rank).

    Ranks other than 0 get None in place of those tensors: only rank 0 writes checkpoints.
    """
    from torch.distributed.tensor import DTensor

    main = dist.get_rank() == 0

    def gather(value: Any) -> Any:
        if isinstance(value, DTensor):
            full = value.full_tensor()
            return full if main else None
        if isinstance(value, dict):
            return {key: gather(item) for key, item in value.items()}
        if isinstance(value, list):
            return [gather(item) for item in value]
        return value

    return gather(records)


def shard_records(records: dict[str, Any], model: nn.Module) -> dict[str, Any]:
    """Full checkpoint records cut into this rank's shards of `model`'s parameters.

    The model record follows the model's state dict; optimizer states and accumulated
    gradients are keyed by parameter name. No communication: every rank holds the records.
    """
    expected = model.state_dict()
    params = param_table(model).by_name
    result = dict(records)
    model_record = records["model"]
    result["model"] = {key: _shard_like(expected.get(key), t) for key, t in model_record.items()}
    optim = dict(records["optim"])
    optim["state"] = {
        name: {key: _shard_like(params.get(name), value) for key, value in entry.items()}
        for name, entry in optim["state"].items()
    }
    result["optim"] = optim
    learner = dict(records["learner"])
    accumulation = learner.get("accumulation")
    if accumulation and accumulation.get("accumulator"):
        learner["accumulation"] = {
            **accumulation,
            "accumulator": {
                name: _shard_like(params.get(name), grad)
                for name, grad in accumulation["accumulator"].items()
            },
        }
    result["learner"] = learner
    return result


def full_record(model: nn.Module) -> dict[str, Any] | None:
    """The whole model's record on rank 0 (None on the others); a collective under FSDP.

    Example:
        >>> record = full_record(result.model)  # every rank calls it  # doctest: +SKIP
        >>> if record is not None:  # doctest: +SKIP
        ...     CompactRecorder().record(record, "artifacts/model")
    """
    record = gather_records(dict(model.state_dict()))
    return record if dist.get_rank() == 0 else None


def _shard_like(like: Any, value: Any) -> Any:
    """`value` (a whole tensor) as the shard `like` (a DTensor) holds; else unchanged."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if not isinstance(like, DTensor) or not isinstance(value, torch.Tensor):
        return value
    if value.shape != like.shape:
        return value
    value = value.to(device=like.device, dtype=like.dtype)
    return distribute_tensor(value, like.device_mesh, like.placements, src_data_rank=None)


def _has_parameters(module: nn.Module) -> bool:
    return next(module.parameters(), None) is not None
