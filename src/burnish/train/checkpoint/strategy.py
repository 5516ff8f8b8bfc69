"""When to save and delete epoch checkpoints (Burn's `CheckpointingStrategy` and its three kinds).

After each epoch the learner asks its strategy what to do with that epoch's checkpoint and
carries out the returned actions in order:

    >>> strategy = KeepLastNCheckpoints(2)
    >>> [strategy.checkpointing(epoch, store) for epoch in (1, 2, 3)]
    [[CheckpointingAction.SAVE], [CheckpointingAction.SAVE],
     [CheckpointingAction.SAVE, CheckpointingAction.DELETE(1)]]
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from burnish.errors import RecordError
from burnish.train.metric.store import Aggregate, Direction, MetricFinder, Split, metric_name
from burnish.value_builder import ValueBuilder

__all__ = [
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "ComposedCheckpointingStrategyBuilder",
    "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy",
    "default_checkpointing_strategy",
]


@dataclasses.dataclass(frozen=True)
class CheckpointingAction:
    """One thing the checkpointer must do (Burn: `CheckpointingAction::{Save, Delete(epoch)}`).

    Use the two constructors: `CheckpointingAction.SAVE` (save the current epoch's checkpoint)
    and `CheckpointingAction.DELETE(epoch)` (delete the checkpoint of `epoch`). Keeping a
    checkpoint needs no action.

    Attributes:
        kind: `"save"` or `"delete"`.
        epoch: The epoch to delete, None for a save.
    """

    kind: Literal["save", "delete"]
    epoch: int | None = None

    SAVE: ClassVar[CheckpointingAction]

    def __post_init__(self) -> None:
        if self.kind == "save" and self.epoch is None:
            return
        if self.kind == "delete" and _is_epoch(self.epoch):
            return
        raise ValueError(
            "A CheckpointingAction is `CheckpointingAction.SAVE` or "
            f"`CheckpointingAction.DELETE(epoch)` with epoch >= 1. Received: kind={self.kind!r}, "
            f"epoch={self.epoch!r}."
        )

    @classmethod
    def DELETE(cls, epoch: int) -> CheckpointingAction:
        """Delete the checkpoint of `epoch`."""
        return cls("delete", epoch)

    @property
    def is_save(self) -> bool:
        """Whether this action saves the current epoch's checkpoint."""
        return self.kind == "save"

    @property
    def is_delete(self) -> bool:
        """Whether this action deletes the checkpoint of `self.epoch`."""
        return self.kind == "delete"

    def __repr__(self) -> str:
        return (
            "CheckpointingAction.SAVE"
            if self.is_save
            else f"CheckpointingAction.DELETE({self.epoch})"
        )


CheckpointingAction.SAVE = CheckpointingAction("save")


def _is_epoch(epoch: object) -> bool:
    return isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 1


def _check_epoch(epoch: object) -> int:
    if not _is_epoch(epoch):
        raise ValueError(f"`epoch` must be an int >= 1 (epochs count from 1). Received: {epoch!r}.")
    return epoch  # type: ignore[return-value]


class CheckpointingStrategy(ABC):
    """Decides, after each epoch, which checkpoints to save and delete (Burn's trait)."""

    @abstractmethod
    def checkpointing(self, epoch: int, store: MetricFinder) -> list[CheckpointingAction]:
        """The actions to take now that `epoch` has ended (its metrics are in `store`)."""

    def watched_metrics(self) -> list[tuple[str, Split]]:
        """The `(metric name, split)` pairs this strategy reads (checked at `build`)."""
        return []

    def to_record(self) -> dict[str, Any]:
        """The strategy's state, for resuming a run (empty for stateless strategies)."""
        return {}

    def load_record(self, record: dict[str, Any]) -> None:  # noqa: B027 - stateless default
        """Restore the state saved by `to_record`."""


class KeepLastNCheckpoints(CheckpointingStrategy):
    """Save every epoch and delete the one `num_keep` epochs back (Burn's strategy).

    Keeps disk use bounded while a crashed run can still resume from a recent epoch.

    Args:
        num_keep: How many of the most recent checkpoints to keep (>= 1).

    Raises:
        ValueError: if `num_keep` < 1.
    """

    def __init__(self, num_keep: int) -> None:
        if isinstance(num_keep, bool) or not isinstance(num_keep, int) or num_keep < 1:
            raise ValueError(
                f"`num_keep` must be an int >= 1. Received: num_keep={num_keep!r}. "
                "To keep no checkpoint at all, do not use a checkpointer."
            )
        self.num_keep = num_keep

    def checkpointing(self, epoch: int, store: MetricFinder) -> list[CheckpointingAction]:
        """`[SAVE]`, plus `DELETE(epoch - num_keep)` once that epoch exists."""
        _check_epoch(epoch)
        actions = [CheckpointingAction.SAVE]
        if epoch - self.num_keep > 0:
            actions.append(CheckpointingAction.DELETE(epoch - self.num_keep))
        return actions

    def __repr__(self) -> str:
        return f"KeepLastNCheckpoints({self.num_keep})"


class MetricCheckpointingStrategy(CheckpointingStrategy):
    """Keep only the checkpoint of the best epoch for a metric (Burn's strategy).

    Each epoch it asks the store for the best epoch so far. When that changes, the previous
    best is deleted; when the best is the current epoch, it is saved. If the metric has no
    value yet, the current epoch counts as the best.

    Args:
        metric: The metric, or its name (e.g. `LossMetric()` or `"Loss"`).
        aggregate: How an epoch's values are reduced (`Aggregate.MEAN`).
        direction: `Direction.LOWEST` for losses, `Direction.HIGHEST` for accuracies.
        split: The split whose logs are read (`Split.VALID` or `Split.TRAIN`).

    Raises:
        TypeError: if `metric` is neither a metric nor a string.
        ValueError: if `aggregate`, `direction` or `split` is not valid.
    """

    def __init__(
        self,
        metric: Any,
        aggregate: Aggregate,
        direction: Direction,
        split: Split | str,
    ) -> None:
        self.name = metric_name(metric)
        self.aggregate = Aggregate.parse(aggregate)
        self.direction = Direction.parse(direction)
        self.split = Split.parse(split)
        self.current: int | None = None

    def checkpointing(self, epoch: int, store: MetricFinder) -> list[CheckpointingAction]:
        """`DELETE(previous best)` if the best epoch changed, `SAVE` if `epoch` is the best."""
        _check_epoch(epoch)
        best = store.find_epoch(self.name, self.aggregate, self.direction, self.split)
        best = epoch if best is None else best
        actions = []
        if self.current is not None and self.current != best:
            actions.append(CheckpointingAction.DELETE(self.current))
        if best == epoch:
            actions.append(CheckpointingAction.SAVE)
        self.current = best
        return actions

    def watched_metrics(self) -> list[tuple[str, Split]]:
        """`[(name, split)]` of the metric whose best epoch is kept."""
        return [(self.name, self.split)]

    def to_record(self) -> dict[str, Any]:
        """`{"current": best epoch so far or None}`."""
        return {"current": self.current}

    def load_record(self, record: dict[str, Any]) -> None:
        """Restore the best epoch so far."""
        current = _record_field(record, "current", self)
        if current is not None and not _is_epoch(current):
            raise RecordError(
                f"`current` of a {type(self).__name__} record must be None or an epoch >= 1. "
                f"Received: {current!r}."
            )
        self.current = current

    def __repr__(self) -> str:
        return (
            f"MetricCheckpointingStrategy({self.name!r}, {self.aggregate}, {self.direction}, "
            f"Split.{self.split.name})"
        )


class ComposedCheckpointingStrategy(CheckpointingStrategy):
    """Combine strategies: save if any saves; delete an epoch only once all agree (Burn's).

    A strategy that does not save the current epoch counts as wanting it deleted. An epoch is
    deleted when the last of the strategies comes to want it deleted.

    Example:
        >>> strategy = (ComposedCheckpointingStrategy.builder()
        ...     .add(KeepLastNCheckpoints(2))
        ...     .add(MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST,
        ...                                      Split.VALID))
        ...     .build())

    Args:
        strategies: The strategies to combine (at least one).

    Raises:
        ValueError: if `strategies` is empty or holds something that is not a strategy.
    """

    def __init__(self, strategies: list[CheckpointingStrategy]) -> None:
        strategies = list(strategies)
        if not strategies:
            raise ValueError(
                "`strategies` must hold at least one CheckpointingStrategy. Received: []. "
                "Use `ComposedCheckpointingStrategy.builder().add(strategy).build()`."
            )
        for strategy in strategies:
            if not isinstance(strategy, CheckpointingStrategy):
                raise ValueError(
                    "Every strategy must be a CheckpointingStrategy. "
                    f"Received: {type(strategy).__name__}."
                )
        self.strategies = strategies
        self.deleted: list[set[int]] = [set() for _ in strategies]

    @staticmethod
    def builder() -> ComposedCheckpointingStrategyBuilder:
        """A builder: `.add(strategy)` for each strategy, then `.build()`."""
        return ComposedCheckpointingStrategyBuilder()

    def checkpointing(self, epoch: int, store: MetricFinder) -> list[CheckpointingAction]:
        """`[SAVE]` if any strategy saves, then `DELETE(e)` for each epoch all want deleted."""
        _check_epoch(epoch)
        saved = False
        to_check: list[int] = []
        for deleted, strategy in zip(self.deleted, self.strategies):
            actions = strategy.checkpointing(epoch, store)
            if CheckpointingAction.SAVE not in actions:
                deleted.add(epoch)
            for action in actions:
                if action.epoch is None:  # a save
                    saved = True
                else:
                    deleted.add(action.epoch)
                    to_check.append(action.epoch)
        actions = [CheckpointingAction.SAVE] if saved else []
        for candidate in to_check:
            if all(candidate in deleted for deleted in self.deleted):
                actions.append(CheckpointingAction.DELETE(candidate))
                for deleted in self.deleted:
                    deleted.discard(candidate)
        return actions

    def watched_metrics(self) -> list[tuple[str, Split]]:
        """The metrics every composed strategy reads."""
        return [pair for strategy in self.strategies for pair in strategy.watched_metrics()]

    def to_record(self) -> dict[str, Any]:
        """The epochs each strategy wants deleted and each strategy's own record."""
        return {
            "deleted": [sorted(deleted) for deleted in self.deleted],
            "strategies": [strategy.to_record() for strategy in self.strategies],
        }

    def load_record(self, record: dict[str, Any]) -> None:
        """Restore the state saved by `to_record` (same strategies, same order)."""
        deleted = _record_field(record, "deleted", self)
        children = _record_field(record, "strategies", self)
        count = len(self.strategies)
        if len(deleted) != count or len(children) != count:
            raise RecordError(
                f"The {type(self).__name__} record is for {len(children)} strategies but this "
                f"one has {count}. Compose the same strategies, in the same order, as the run "
                "that saved it."
            )
        for strategy, child in zip(self.strategies, children):
            strategy.load_record(child)
        self.deleted = [set(epochs) for epochs in deleted]

    def __repr__(self) -> str:
        return f"ComposedCheckpointingStrategy({self.strategies!r})"


class ComposedCheckpointingStrategyBuilder(ValueBuilder):
    """Collects strategies for a `ComposedCheckpointingStrategy` (Burn's builder); `add`
    returns a new builder and leaves this one as it was."""

    def __init__(self) -> None:
        self.strategies: list[CheckpointingStrategy] = []

    def add(self, strategy: CheckpointingStrategy) -> ComposedCheckpointingStrategyBuilder:
        """A new builder with `strategy` added."""
        if not isinstance(strategy, CheckpointingStrategy):
            raise TypeError(
                f"`strategy` must be a CheckpointingStrategy. Received: {type(strategy).__name__}."
            )
        return self._replace(strategies=[*self.strategies, strategy])

    def build(self) -> ComposedCheckpointingStrategy:
        """The composed strategy."""
        return ComposedCheckpointingStrategy(self.strategies)


def default_checkpointing_strategy() -> ComposedCheckpointingStrategy:
    """Burn's default: keep the last 2 epochs and the epoch of lowest mean validation loss."""
    return (
        ComposedCheckpointingStrategy.builder()
        .add(KeepLastNCheckpoints(2))
        .add(MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID))
        .build()
    )


def _record_field(record: Any, field: str, owner: object) -> Any:
    if not isinstance(record, dict) or field not in record:
        raise RecordError(
            f"A {type(owner).__name__} record must be a dict with `{field}`. "
            f"Received: {record!r}. Pass what `to_record()` returned."
        )
    return record[field]
