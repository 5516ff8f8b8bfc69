"""Where training runs: Burn main's `ExecutionStrategy` and `TrainingStrategy`.

Burn main dropped the builder's `devices(...)` for
`with_training_strategy(ExecutionStrategy::...)`. burnish runs one process per device (under
`torchrun`), so each variant says what every process trains on:

| Burn main                                         | burnish                                   |
|---------------------------------------------------|-------------------------------------------|
| `ExecutionStrategy::single(device)`               | `ExecutionStrategy.single(device)`: the   |
|                                                   | old `devices([device])`                   |
| `ExecutionStrategy::ddp(devices, config)`         | `ExecutionStrategy.ddp(devices)`: under   |
|                                                   | `torchrun --nproc_per_node=len(devices)`, |
|                                                   | rank `LOCAL_RANK` trains on               |
|                                                   | `devices[LOCAL_RANK]`; `strategy("ddp")`  |
| `ExecutionStrategy::multi(devices, OptimMainDevice)` | the same as `ddp` (the same update)    |
| `ExecutionStrategy::multi(devices, OptimSharded)` | `strategy("fsdp")`: optimizer state (and  |
|                                                   | parameters, gradients) sharded            |
| `TrainingStrategy::Custom(strategy)`              | `TrainingStrategy.custom(strategy)`: your |
|                                                   | `SupervisedLearningStrategy.train` runs   |

One device in the list trains alone, as Burn's `multi` does with one device. As with
`devices(...)`, a CUDA device under torchrun is `cuda:<LOCAL_RANK>` (`DistributedContext`):
list the node's GPUs in order.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from burnish.backend import device as parse_device

if TYPE_CHECKING:
    from burnish.train.loop.learner import Learner
    from burnish.train.loop.result import TrainingResult

__all__ = [
    "ExecutionStrategy",
    "MultiDeviceOptim",
    "SupervisedLearningStrategy",
    "TrainingStrategy",
]


class MultiDeviceOptim(str, enum.Enum):
    """How a multi-device run optimizes (Burn's `MultiDeviceOptim`)."""

    #: Every rank applies the averaged gradients to its whole replica (DDP).
    OPTIM_MAIN_DEVICE = "optim_main_device"
    #: The optimizer state is sharded over the ranks (burnish: FSDP2).
    OPTIM_SHARDED = "optim_sharded"


@dataclasses.dataclass(frozen=True)
class ExecutionStrategy:
    """Where a training runs (Burn's `ExecutionStrategy`); make one with `single`, `multi` or
    `ddp` and pass it to `with_training_strategy`.

    Example:
        >>> from burnish.train import ExecutionStrategy
        >>> ExecutionStrategy.single("cpu").main_device()
        device(type='cpu')
        >>> ExecutionStrategy.ddp(["cpu", "cpu"]).strategy_name
        'ddp'

    Attributes:
        kind: `"single"`, `"multi"` or `"ddp"`.
        devices: the devices, one per process.
        optim: for `"multi"`, how the optimization is spread.
    """

    kind: str
    devices: tuple[torch.device, ...]
    optim: MultiDeviceOptim | None = None

    @classmethod
    def single(cls, device: torch.device | str) -> ExecutionStrategy:
        """Train on one device (Burn: `ExecutionStrategy::single(device)`)."""
        return cls("single", (parse_device(device),))

    @classmethod
    def multi(
        cls,
        devices: Sequence[torch.device | str],
        optim: MultiDeviceOptim | str = MultiDeviceOptim.OPTIM_MAIN_DEVICE,
    ) -> ExecutionStrategy:
        """Data parallel over `devices`, one process each under torchrun (Burn:
        `ExecutionStrategy::multi(devices, optim)`); `OPTIM_SHARDED` shards with FSDP2."""
        try:
            optim = MultiDeviceOptim(optim)
        except ValueError:
            raise ValueError(
                "`optim` must be MultiDeviceOptim.OPTIM_MAIN_DEVICE or OPTIM_SHARDED. "
                f"Received: optim={optim!r}."
            ) from None
        return cls("multi", _devices("multi", devices), optim)

    @classmethod
    def ddp(cls, devices: Sequence[torch.device | str], config: Any = None) -> ExecutionStrategy:
        """Distributed data parallel over `devices`: launch with `torchrun
        --nproc_per_node=len(devices)`; rank `LOCAL_RANK` trains on `devices[LOCAL_RANK]`
        (Burn: `ExecutionStrategy::ddp(devices, config)`; gradients are averaged, Burn's
        `ReduceOperation::Mean`, so `config` is accepted and unused)."""
        del config
        return cls("ddp", _devices("ddp", devices))

    # Burn's variant names, for a one-to-one port.
    @classmethod
    def SingleDevice(cls, device: torch.device | str) -> ExecutionStrategy:
        """Burn's `ExecutionStrategy::SingleDevice(device)`: `single(device)`."""
        return cls.single(device)

    @classmethod
    def MultiDevice(
        cls, devices: Sequence[torch.device | str], optim: MultiDeviceOptim | str
    ) -> ExecutionStrategy:
        """Burn's `ExecutionStrategy::MultiDevice(devices, optim)`: `multi(devices, optim)`."""
        return cls.multi(devices, optim)

    @classmethod
    def DistributedDataParallel(
        cls, devices: Sequence[torch.device | str], context: Any = None
    ) -> ExecutionStrategy:
        """Burn's `ExecutionStrategy::DistributedDataParallel { devices, context }`."""
        return cls.ddp(devices, context)

    def main_device(self) -> torch.device:
        """The first device: where rank 0 trains (Burn's `main_device`)."""
        return self.devices[0]

    @property
    def strategy_name(self) -> str:
        """burnish's `strategy(...)` for several devices: `"ddp"` or `"fsdp"`."""
        return "fsdp" if self.optim is MultiDeviceOptim.OPTIM_SHARDED else "ddp"

    def process_device(self) -> torch.device:
        """The device of this process: `devices[LOCAL_RANK]` under torchrun, else the one.

        Raises:
            ValueError: if there are several devices but not as many processes on this node.
        """
        if len(self.devices) == 1:
            return self.devices[0]
        processes = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
        if processes != len(self.devices):
            raise ValueError(
                f"ExecutionStrategy.{self.kind}(...) names {len(self.devices)} devices, and "
                "burnish trains each in its own process; this node runs "
                f"{processes}. Launch the script with `torchrun "
                f"--nproc_per_node={len(self.devices)} script.py`."
            )
        return self.devices[int(os.environ.get("LOCAL_RANK", "0"))]


class SupervisedLearningStrategy(abc.ABC):  # noqa: B024 (a base class: `fit` or `train`)
    """A training loop of your own (Burn's `SupervisedLearningStrategy`), run by
    `SupervisedTraining.launch` through `TrainingStrategy.custom(strategy)`.

    Implement Burn's `fit(training_components, learner, dataloader_train, dataloader_valid,
    starting_epoch) -> (model, event_processor)` (see `TrainingComponents`), or override
    `train(learner, dataloader_train, dataloader_valid)` whole.
    """

    def train(
        self, learner: Learner, dataloader_train: Any, dataloader_valid: Any
    ) -> TrainingResult:
        """Train `learner` on the two loaders: by default Burn's `train`, which runs `fit`
        with the `TrainingComponents` of `learner.options` (the `SupervisedTraining`'s
        settings); `learner.fit(...)` is the learner's own loop."""
        from burnish.train.loop.training_components import train_with_components

        return train_with_components(self, learner, dataloader_train, dataloader_valid)

    def fit(
        self,
        training_components: Any,
        learner: Learner,
        dataloader_train: Any,
        dataloader_valid: Any,
        starting_epoch: int,
    ) -> tuple[Any, Any]:
        """Burn's training loop of this strategy: returns the trained model and the event
        processor (`training_components.event_processor`)."""
        raise NotImplementedError(
            f"{type(self).__name__} implements neither `fit(training_components, learner, "
            "dataloader_train, dataloader_valid, starting_epoch)` (Burn's) nor "
            "`train(learner, dataloader_train, dataloader_valid)`. Implement one of them."
        )


@dataclasses.dataclass(frozen=True)
class TrainingStrategy:
    """How the learner trains (Burn's `TrainingStrategy`): the default loop on an
    `ExecutionStrategy`, or a custom `SupervisedLearningStrategy`.

    `with_training_strategy` also takes an `ExecutionStrategy` as is (Burn's `.into()`).
    """

    execution: ExecutionStrategy | None = None
    custom_strategy: SupervisedLearningStrategy | None = None

    @classmethod
    def Default(cls, execution: ExecutionStrategy) -> TrainingStrategy:
        """The learner's own loop on `execution` (Burn: `TrainingStrategy::Default`)."""
        if not isinstance(execution, ExecutionStrategy):
            raise TypeError(
                "`TrainingStrategy.Default` takes an ExecutionStrategy. Received: "
                f"{execution!r}. Use ExecutionStrategy.single(device) or .ddp(devices)."
            )
        return cls(execution=execution)

    @classmethod
    def custom(cls, strategy: SupervisedLearningStrategy) -> TrainingStrategy:
        """Your loop (Burn: `TrainingStrategy::Custom(Arc::new(strategy))`)."""
        if not isinstance(strategy, SupervisedLearningStrategy):
            raise TypeError(
                "`TrainingStrategy.custom` takes a SupervisedLearningStrategy (a class with "
                f"`train(learner, dataloader_train, dataloader_valid)`). Received: {strategy!r}."
            )
        return cls(custom_strategy=strategy)

    Custom = custom  # Burn's variant name


def as_training_strategy(strategy: Any) -> TrainingStrategy:
    """`strategy` as a `TrainingStrategy` (an `ExecutionStrategy` becomes the default loop)."""
    if isinstance(strategy, TrainingStrategy):
        return strategy
    if isinstance(strategy, ExecutionStrategy):
        return TrainingStrategy.Default(strategy)
    if isinstance(strategy, SupervisedLearningStrategy):
        return TrainingStrategy.custom(strategy)
    raise TypeError(
        "`with_training_strategy` takes an ExecutionStrategy (single, multi, ddp) or a "
        f"TrainingStrategy. Received: {strategy!r}. Write e.g. "
        "`.with_training_strategy(ExecutionStrategy.single('cuda'))`."
    )


def _devices(kind: str, devices: Sequence[torch.device | str]) -> tuple[torch.device, ...]:
    if isinstance(devices, (str, torch.device)) or not devices:
        raise ValueError(
            f"`ExecutionStrategy.{kind}` takes a non-empty list of devices. Received: "
            f"{devices!r}. Write e.g. `ExecutionStrategy.{kind}(['cuda:0', 'cuda:1'])`."
        )
    return tuple(parse_device(device) for device in devices)
