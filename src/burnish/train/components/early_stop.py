"""Early stopping as a component of the loop: after each validation the strategy decides
(every rank agrees with rank 0), before the checkpoint that records the decision; its state
rides in the checkpoint with the rule it watches (checkpoint/strategy_rule.py)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar

from burnish.train.checkpoint.strategy_rule import stopping_rule
from burnish.train.components.component import Component

if TYPE_CHECKING:
    from burnish.train.components.early_stopping import EarlyStoppingStrategy
    from burnish.train.components.loop_view import LoopView

__all__ = ["EarlyStop"]

log = logging.getLogger("burnish.train")


class EarlyStop(Component):
    """The run's `EarlyStoppingStrategy` (None: none, and a checkpoint's is noted as off).

    Args:
        strategy: the strategy, or None.
    """

    key: ClassVar[str | None] = "early_stopping"

    def __init__(self, strategy: EarlyStoppingStrategy | None) -> None:
        self.strategy = strategy
        self.run: LoopView | None = None

    def bind(self, run: LoopView) -> None:
        self.run = run

    def should_stop(self, validation: int) -> bool:
        """The strategy's decision after validation N (epoch N without `valid_every`)."""
        if self.strategy is None:
            return False
        run = self.run
        assert run is not None
        stop = run.context.agree(self.strategy.should_stop(validation, run.store))
        if stop:
            what = "validation" if run.options.validation.every else "epoch"
            log.info("Early stopping after %s %d.", what, validation)
        return stop

    def to_record(self) -> dict[str, Any] | None:
        if self.strategy is None:
            return None
        return {"state": self.strategy.to_record(), "rule": stopping_rule(self.strategy)}

    def load_record(self, record: Any, changed: list[str]) -> None:
        """The strategy's state, if the checkpoint's watched what it watches now; another
        rule starts from a clean state, noted in `changed` (its best value means something
        else)."""
        rule = stopping_rule(self.strategy)
        state, saved = _parts(record, rule)
        if self.strategy is None and state is not None:
            changed.append(
                f"Early stopping is off now (the checkpoint's run stopped early on {saved}): "
                "the run trains every epoch it is given."
            )
        if self.strategy is None or state is None:
            return
        if saved != rule:
            changed.append(
                f"Early stopping changed since the checkpoint (it watched {saved}, now {rule}): "
                "it starts from a clean state, with no best value yet."
            )
            return
        self.strategy.load_record(state)


def _parts(record: Any, rule: str | None) -> tuple[Any, str | None]:
    """The state and rule of a record; a record from before rules is the state alone (its
    rule taken as today's)."""
    if isinstance(record, dict) and set(record) == {"state", "rule"}:
        return record["state"], record["rule"]
    return record, rule if rule is not None else "a metric"
