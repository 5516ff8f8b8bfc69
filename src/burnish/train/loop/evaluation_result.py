"""What an evaluation returns (`EvaluationResult`, `EvaluationResults`) and where its logs go
(`evaluation_tag`); the `Evaluator` (evaluator.py) makes them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from burnish.train.renderer.base import MetricsRenderer

__all__ = ["EvaluationResult", "EvaluationResults", "evaluation_tag"]


def evaluation_tag(name: str) -> str:
    """The directory name of an evaluation (Burn's `format_tag`): `name` trimmed, spaces as
    `-`, lower case.

    Example:
        >>> evaluation_tag(" MNIST test ")
        'mnist-test'

    Raises:
        ValueError: if the tag would be empty, `.`/`..`, or hold a path separator.
    """
    tag = str(name).strip().replace(" ", "-").lower()
    if tag in ("", ".", "..") or "/" in tag or "\\" in tag or "\0" in tag:
        raise ValueError(
            "An evaluation's name becomes its log directory `test/<name>/`, so it must be a "
            f"non-empty name without path separators. Received: name={name!r}. Use e.g. "
            "'mnist-test'."
        )
    return tag


@dataclasses.dataclass(frozen=True)
class EvaluationResult:
    """What one `Evaluator.eval` measured.

    Attributes:
        name: the evaluation's name, as given.
        metrics: each numeric metric's value over the whole data set (all ranks), by name.
        directory: where its logs are (`<directory>/test/<tag>`).
        items: how many items were evaluated (all ranks).
        interrupted: whether a stop request ended it before the last batch.
    """

    name: str
    metrics: dict[str, float]
    directory: Path
    items: int
    interrupted: bool = False
    _renderer = None  # not a field: `dataclasses.asdict` stays the measured values

    def manual_close(self) -> None:
        """Burn's `evaluator.eval(..).manual_close()` (`eval` returns the renderer in Burn):
        a renderer written to Burn's trait gets its `manual_close`; burnish's renderers closed
        with the evaluation, so there is nothing to wait for."""
        if self._renderer is not None:
            self._renderer.manual_close()


class EvaluationResults(list[EvaluationResult]):
    """`eval_all`'s results, one per data set; also the renderer's handle, as Burn's `eval_all`
    returns the renderer: `manual_close()` (see `EvaluationResult.manual_close`)."""

    renderer: MetricsRenderer | None = None

    def manual_close(self) -> None:
        """The renderer's `manual_close` (Burn: `renderer.manual_close()` after `eval_all`)."""
        if self.renderer is not None:
            self.renderer.manual_close()
