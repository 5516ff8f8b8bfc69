"""`StoppingOptions`: when the run ends."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from burnish.train.interrupter import Interrupter
from burnish.train.settings.fields import OptionGroup, positive

if TYPE_CHECKING:
    from burnish.train.components.early_stopping import EarlyStoppingStrategy
    from burnish.train.components.preemption import PreemptionSettings

__all__ = ["StoppingOptions"]


@dataclasses.dataclass(frozen=True)
class StoppingOptions(OptionGroup):
    """When the run ends.

    Attributes:
        num_epochs: epochs to train (1-based, inclusive); unset: 1, or with `max_iterations`
            as many epochs as the step budget needs (None once built; see budget.py).
        max_iterations: the step budget: training ends after this many optimizer steps,
            None: after `num_epochs`.
        early_stopping: when to stop before `num_epochs`.
        interrupter: receives stop requests.
        preemption: the signals that preempt the run (SIGTERM by default) and what it does
            then (see preemption.py); None: SIGTERM, no requeue, exit code 143.
    """

    num_epochs: int | None = positive("num_epochs")
    max_iterations: int | None = positive("max_iterations")
    early_stopping: EarlyStoppingStrategy | None = None
    interrupter: Interrupter = dataclasses.field(default_factory=Interrupter)
    preemption: PreemptionSettings | None = None

    def epochs(self) -> int | None:
        """The `num_epochs` set; unset, 1, or None (as many as the step budget needs)."""
        if self.num_epochs is not None:
            return self.num_epochs
        return None if self.max_iterations is not None else 1
