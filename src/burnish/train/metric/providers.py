"""Which step outputs provide which metric input: what a `MetricInputError` proposes.

The outputs live a layer above the metrics (`burnish.train.output` imports the metric inputs),
so the metrics never import them: each output registers itself here when its module defines
it, with a factory of a one-item sample, and the error asks each sample's `adapt` for the
input it lacks. Nothing here imports torch; the samples are built on the error path only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["outputs_providing", "register_output", "registered_outputs"]

# Constructor call shown in the message (`"ClassificationOutput(loss, output, targets)"`) ->
# a factory of a one-item sample of that output; in the order the outputs were registered.
_SAMPLES: dict[str, Callable[[], Any]] = {}


def register_output(call: str, sample: Callable[[], Any]) -> None:
    """Register an output for the error message: `call`, how the message shows its
    constructor; `sample`, a factory of a small instance whose `adapt` is asked."""
    _SAMPLES[call] = sample


def registered_outputs() -> list[str]:
    """The constructor calls of the outputs registered so far (none before
    `burnish.train.output` is imported)."""
    return list(_SAMPLES)


def outputs_providing(input_type: type[Any]) -> list[str]:
    """The registered outputs whose `adapt` gives an `input_type`, as constructor calls: what
    the error for a step output that feeds no registered metric proposes. Asked of a sample
    of each output (an error path only: it costs a few tiny tensors)."""
    found = []
    for call, make in _SAMPLES.items():
        sample = make()
        try:
            provided = sample.adapt(input_type)
        except Exception:  # an input that checks shapes: not this sample's
            continue
        if isinstance(provided, input_type):
            found.append(call)
    return found
