"""`ComputeSetters`: where and how the steps compute (devices, execution and parallelism,
mixed precision, determinism, compilation, recomputed blocks)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from burnish.backend import device as parse_device
from burnish.train.settings.setters import Setters

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.gradient_checkpointing import BlockSelector
    from burnish.train.parallel.execution_strategy import ExecutionStrategy, TrainingStrategy

__all__ = ["ComputeSetters"]


class ComputeSetters(Setters):
    """The compute setters of `TrainingBuilder`."""

    def devices(self, devices: Sequence[torch.device | str]) -> Self:
        """The device to train on (one per process); `fit` moves the model and data there."""
        if isinstance(devices, (str, torch.device)):
            raise TypeError(
                "`devices` takes a list of devices, as Burn's `devices(vec![device])`. "
                f"Received: {devices!r}. Write `.devices([{str(devices)!r}])`."
            )
        if not devices:
            raise ValueError("`devices` must name at least one device. Received: [].")
        if len(devices) > 1:
            raise ValueError(
                f"Training on several devices ({len(devices)} given) runs one process per "
                "device under torch.distributed: launch the script with "
                "`torchrun --nproc_per_node=N` and pass one device per process."
            )
        return self._set("parallelism", device=parse_device(devices[0]), execution=None)

    def with_training_strategy(self, strategy: TrainingStrategy | ExecutionStrategy) -> Self:
        """Where and how to train (Burn main: `with_training_strategy(strategy.into())`).

        `ExecutionStrategy.single(device)` is `devices([device])`; `ExecutionStrategy.ddp(
        devices)` (or `multi(devices)`) trains one process per device under `torchrun
        --nproc_per_node=len(devices)`, rank `LOCAL_RANK` on `devices[LOCAL_RANK]`, gradients
        averaged; `multi(devices, MultiDeviceOptim.OPTIM_SHARDED)` shards with FSDP2;
        `TrainingStrategy.custom(strategy)` runs your `SupervisedLearningStrategy` (with
        `SupervisedTraining.launch`). The last of this and `devices` wins.

        Example:
            >>> from burnish.train import ExecutionStrategy, SupervisedTraining
            >>> training = SupervisedTraining("artifacts", [], []).with_training_strategy(
            ...     ExecutionStrategy.single("cpu"))

        Raises:
            TypeError: for anything else.
        """
        from burnish.train.parallel.execution_strategy import as_training_strategy

        training = as_training_strategy(strategy)
        if training.execution is None:
            return self._set("parallelism", custom=training.custom_strategy)
        return self._set(
            "parallelism",
            custom=training.custom_strategy,
            execution=training.execution,
            device=None,
        )

    def gradient_checkpointing(self, blocks: BlockSelector = None) -> Self:
        """Recompute the activations of the model's blocks in the backward pass (less memory,
        one more forward pass per block), as Burn main's `gradient_checkpointing()`.

        During `fit` the model's blocks run under `torch.utils.checkpoint` (non-reentrant);
        the gradients are the same. `blocks` picks them as `burnish.checkpoint_blocks` does:
        None for the modules of each `nn.ModuleList` (a transformer's layers), a module class
        or tuple of classes, or a predicate. See docs/performance.md.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").gradient_checkpointing()
        """
        from burnish.gradient_checkpointing import _predicate

        _predicate(blocks)  # a wrong selector fails here, not in `fit`
        return self._set("recompute", enabled=True, blocks=blocks)

    def deterministic(self, enabled: bool = True) -> Self:
        """Use torch's deterministic algorithms during `fit` (with `bn.seed`: repeatable runs)."""
        if enabled:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        return self._set("precision", deterministic=enabled)

    def compile(self, *, step: bool = False, **options: Any) -> Self:
        """Run the model through `torch.compile(**options)` during `fit`.

        By default the model's `forward` is compiled; `bn.backward` and the optimizer step
        stay eager. With `step=True` the whole train step is one graph: `train_step` (forward
        and `bn.backward`) and the optimizer step, the learning rate entering as a device
        tensor (a new value never recompiles); validation stays eager. On CUDA,
        `compile(step=True, mode="reduce-overhead")` replays that graph as a CUDA graph, torch
        copying each batch into its static input buffers: one launch per iteration instead of
        one per kernel. `fullgraph=True` and `dynamic=False` are the defaults of that path, so
        a batch of another shape (the last, partial one) compiles a second graph, once, and
        anything the graph cannot hold is an error rather than a silent slow step.

        Compiling pays when shapes are static, the run is long enough to repay the compile
        time spent up front (seconds to minutes), and the step is bound by kernel launches
        (small models on a GPU); on a CPU, or a short run, eager is usually faster. Results
        match eager execution within float tolerance. See docs/performance.md.

        Example:
            >>> builder.compile(step=True, mode="reduce-overhead")  # doctest: +SKIP

        Args:
            step: compile the whole train step instead of the forward. Needs an `Sgd`, `Adam`
                or `AdamW` optimizer and one process, and works without gradient accumulation
                and float16 loss scaling (bfloat16 works); `build` refuses the rest.
            **options: keyword arguments of `torch.compile` (`mode`, `backend`, ...).
        """
        return self._set("compilation", kwargs=dict(options), whole_step=step)

    def mixed_precision(self, precision: str | torch.dtype) -> Self:
        """Run `train_step` and `valid_step` under `torch.autocast` in a half type.

        Parameters, gradients, optimizer state and checkpoints stay float32. With float16,
        `bn.backward(loss)` inside `train_step` differentiates the loss times a dynamic scale
        (`burnish.optim.GradScaler`); the learner unscales the gradients before clipping and
        the optimizer step, skips a step whose gradients hold inf/NaN and lowers the scale.
        The scaler's state is checkpointed. See docs/mixed-precision.md.

        Args:
            precision: `"bf16"` or `"fp16"` (or `torch.bfloat16` / `torch.float16`).

        Raises:
            ValueError: for any other precision.
        """
        from burnish.train.loop.precision import parse_precision

        return self._set("precision", autocast=parse_precision(precision))

    def strategy(
        self, name: str, *, shard_policy: Callable[[nn.Module], bool] | None = None
    ) -> Self:
        """How the model is spread over the ranks under torchrun (alone, it trains as is).

        `"ddp"` (the default): every rank holds the whole model; gradients are averaged in
        buckets launched during the backward pass. `"fsdp"`: PyTorch's FSDP2 shards every
        parameter, gradient and optimizer state over the ranks (`fully_shard` on each unit the
        policy picks, then on the model); checkpoints still hold the whole model, gathered on
        rank 0. See docs/distributed.md.

        Args:
            name: `"ddp"` or `"fsdp"`.
            shard_policy: with `"fsdp"`, `policy(submodule) -> bool` picks the submodules
                sharded as units (e.g. `lambda m: isinstance(m, Block)`); default: each
                direct child module that has parameters.

        Raises:
            ValueError: for another name, or a policy with `"ddp"`.
        """
        if name not in ("ddp", "fsdp"):
            raise ValueError(f"`strategy` must be 'ddp' or 'fsdp'. Received: strategy={name!r}.")
        if shard_policy is not None and name != "fsdp":
            raise ValueError(
                "`shard_policy` picks FSDP units, so it needs strategy('fsdp'). Received: "
                f"strategy={name!r} with a shard_policy."
            )
        return self._set("parallelism", kind=name, shard_policy=shard_policy)
