"""What a run's artifact directory holds, read for `burnish summary`, `report` and their
comparisons: the learner summary (`learner_summary`), per metric its epoch means and its
iterations' values (thinned to a fixed number of points, `cli.iteration_curve`) for both
splits, `config.json`, the checkpoints, the files, the model's summary from its newest
record and the learning-rate finder's `lr_finder.json` (`collect_run`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from burnish.cli.base import CommandError
from burnish.cli.inspect import read_record
from burnish.cli.iteration_curve import iteration_curve
from burnish.cli.lr_finder_section import read_lr_finder
from burnish.run_lock import LOCK_NAME

__all__ = [
    "SPLITS",
    "Checkpoint",
    "MetricCurves",
    "RunReport",
    "collect_run",
    "learner_summary",
    "metric_curves",
    "read_config",
]

SPLITS = ("train", "valid")


@dataclasses.dataclass(frozen=True)
class MetricCurves:
    """One metric's values: per split, `(x, mean)` of each epoch and `(x, value)` of every
    iteration, and the last mean's epoch (`last`, e.g. `"epoch 3"`).

    An iteration's `x` is `epoch - 1 + k / n` for the `k`-th of `n` iterations of its epoch,
    so an epoch spans `(epoch - 1, epoch]` and its mean sits at `x = epoch`. A run that
    validated inside its epochs (`valid/validations.json`) has one valid epoch per validation:
    each one's mean sits where it was taken, `x = epoch - 1 + iteration / iterations of that
    epoch`, and its iterations span the interval since the previous validation.
    """

    name: str
    means: dict[str, list[tuple[float, float]]]
    iterations: dict[str, list[tuple[float, float]]]
    last: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint directory: its name, epoch, iteration (None: end of epoch), size."""

    name: str
    epoch: int
    iteration: int | None
    size: int
    committed: bool


@dataclasses.dataclass(frozen=True)
class RunReport:
    """Everything the page shows about a run."""

    directory: Path
    summary: Any  # LearnerSummary
    curves: list[MetricCurves]
    config: str | None
    checkpoints: list[Checkpoint]
    files: list[tuple[str, int]]
    model: str | None  # the model summary's text
    model_source: str | None  # where it was read from, or why it could not be
    lr_finder: Any = None  # the LrFinderResult of lr_finder.json, if any
    lr_finder_note: str | None = None  # why lr_finder.json could not be read


def collect_run(directory: Path, leave_out: Path | None = None) -> RunReport:
    """Read a run's artifact directory (`leave_out`: a file not to list, the report itself).

    Raises:
        CommandError: if `directory` is missing or holds no metric logs.
    """
    summary = learner_summary(directory)
    model, model_source = _model_summary(directory)
    lr_finder, lr_finder_note = read_lr_finder(directory)
    return RunReport(
        directory=directory,
        summary=summary,
        curves=metric_curves(directory, summary),
        config=_config(directory),
        checkpoints=_checkpoints(directory / "checkpoint"),
        files=sorted(
            (path.name, path.stat().st_size)
            for path in directory.iterdir()
            if path.is_file()
            and path.name != LOCK_NAME  # the run lock's file: kept for good, not the run's
            and not (leave_out and path.resolve() == leave_out.resolve())
        ),
        model=model,
        model_source=model_source,
        lr_finder=lr_finder,
        lr_finder_note=lr_finder_note,
    )


def metric_curves(directory: Path, summary: Any) -> list[MetricCurves]:
    """The curves of every metric of the train and valid splits of `summary` (the run's
    `LearnerSummary`), by name."""
    names = sorted({m.name for m in summary.metrics.train + summary.metrics.valid})
    places = _validation_places(directory / "valid", summary, _train_entries(directory, summary))
    return [_curves(directory, summary, name, places) for name in names]


def _curves(
    directory: Path, summary: Any, name: str, places: dict[int, float] | None
) -> MetricCurves:
    from burnish.train.logger.file import FileMetricLogger

    means: dict[str, list[tuple[float, float]]] = {}
    iterations: dict[str, list[tuple[float, float]]] = {}
    last: dict[str, str] = {}
    for split in SPLITS:
        metric = next((m for m in getattr(summary.metrics, split) if m.name == name), None)
        entries = metric.entries if metric else []
        at = places if split == "valid" and places is not None else None
        means[split] = [(_place(at, e.step), e.value) for e in entries]
        unit = "validation" if at is not None else "epoch"
        if entries:
            last[split] = f"{unit} {entries[-1].step}"
        logger = FileMetricLogger(directory / split)
        count_of_epochs = summary.validations if at is not None else summary.epochs
        # Training's batches spread over their epoch; a validation's all stand where it ran
        # (its epoch's end, or its place inside the epoch), not across the epoch before it.
        spans = [
            (epoch, _place(at, epoch if split == "valid" else epoch - 1), _place(at, epoch))
            for epoch in range(1, (count_of_epochs or 0) + 1)
        ]
        points = iteration_curve(logger, name, spans)  # thinned as it is read
        iterations[split] = points
    return MetricCurves(name, means, iterations, last)


def _train_entries(directory: Path, summary: Any) -> Callable[[int], int]:
    """The entries logged in a train epoch (the most of any train metric's log): the `n` its
    iterations' `x = epoch - 1 + k / n` divide by."""
    from burnish.train.logger.file import FileMetricLogger
    from burnish.train.logger.numeric_lines import count_entries

    logger = FileMetricLogger(directory / "train")
    names = {metric.name for metric in summary.metrics.train}
    return lambda epoch: max((count_entries(logger.file_path(n, epoch)) for n in names), default=0)


def _validation_places(
    valid: Path, summary: Any, train_entries: Callable[[int], int] = lambda epoch: 0
) -> dict[int, float] | None:
    """Where on the epoch axis each validation of a `valid_every` run was taken (by number);
    None for a run that validated at epoch ends only.

    Validation at iteration `i` of epoch `e` stands at `e - 1 + i / n`, `n` the epoch's
    iterations: its own validation's iteration when the epoch ended; else (the run stopped
    inside it) the entries its train logs hold (`train_entries(e)`), where its train curve
    ends, and at least the furthest validation's iteration.
    """
    from burnish.train.logger.validations import read_validations

    if summary.validations is None:
        return None
    try:
        points = read_validations(valid) or []
    except ValueError:  # the summary said so; the valid split is then drawn by number
        points = []
    ended = {point.epoch: point.iteration for point in points if point.epoch_end}
    reached: dict[int, int] = {}  # an epoch that did not end: as far as it went
    for point in points:
        reached[point.epoch] = max(reached.get(point.epoch, 0), point.iteration)
    places = {0: 0.0}
    for epoch in reached.keys() - ended.keys():
        reached[epoch] = max(reached[epoch], train_entries(epoch))
    for point in points:
        length = max(ended.get(point.epoch, reached[point.epoch]), 1)
        places[point.validation] = point.epoch - 1 + point.iteration / length
    return places


def _place(places: dict[int, float] | None, number: int) -> float:
    """The x of epoch `number` (a validation's, with `places`; else the epoch itself)."""
    if places is None:
        return float(number)
    return places.get(number, float(number))


def _config(directory: Path) -> str | None:
    path = directory / "config.json"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def read_config(directory: Path) -> tuple[Any, str | None]:
    """`directory/config.json` parsed, and None; or None and why it cannot be (no such file,
    not JSON)."""
    path = directory / "config.json"
    if not path.is_file():
        return None, "no config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace")), None
    except (ValueError, RecursionError) as error:
        reason = "nested too deeply" if isinstance(error, RecursionError) else error
        return None, f"config.json is not valid JSON ({reason})"


def _checkpoints(directory: Path) -> list[Checkpoint]:
    from burnish.train.checkpoint import CheckpointId
    from burnish.train.checkpoint.file import committed_checkpoints

    if not directory.is_dir():
        return []
    committed = set(committed_checkpoints(directory))
    found = []
    for path in directory.iterdir():
        checkpoint = CheckpointId.parse(path.name)
        if checkpoint is None or not path.is_dir():
            continue
        size = sum(file.stat().st_size for file in path.iterdir() if file.is_file())
        found.append(
            Checkpoint(
                path.name, checkpoint.epoch, checkpoint.iteration, size, checkpoint in committed
            )
        )
    order = {c.name: CheckpointId(c.epoch, c.iteration).sort_key() for c in found}
    return sorted(found, key=lambda c: order[c.name])


def _model_summary(directory: Path) -> tuple[str | None, str | None]:
    """The summary of the final model record (`model.*`), else of the newest checkpoint's."""
    candidates = sorted(directory.glob("model.*"))
    for checkpoint in reversed(_checkpoints(directory / "checkpoint")):
        if checkpoint.committed:
            candidates += sorted((directory / "checkpoint" / checkpoint.name).glob("model.*"))
            break
    for path in candidates:
        try:
            stored = read_record(path)
        except Exception as error:  # the page still shows everything else
            return None, f"{path.relative_to(directory)} could not be read: {error}"
        return str(stored.model_summary()), str(path.relative_to(directory))
    return None, None


def learner_summary(directory: Path) -> Any:
    """`LearnerSummary.from_dir(directory)`, refusing a directory that has no metric logs.

    Raises:
        CommandError: if `directory` is missing, not a directory, or holds no metric logs.
    """
    from burnish.train import LearnerSummary

    if not directory.exists():
        raise CommandError(f"No such directory: {directory}. Pass a run's artifact directory.")
    if not directory.is_dir():
        raise CommandError(
            f"{directory} is a file, not a run's artifact directory (the directory given to "
            "`LearnerBuilder(artifact_dir)`)."
        )
    try:
        summary = LearnerSummary.from_dir(directory)
    except FileNotFoundError as error:
        raise CommandError(str(error)) from None
    if not summary.metrics.train and not summary.metrics.valid and not summary.metrics.test:
        raise CommandError(
            f"{directory} has no numeric metric logs (expected `train/epoch-N/<Metric>.log`, "
            "`valid/...` or an evaluation's `test/<name>/<Metric>.log`): the run logged "
            "nothing yet, or this is not a run's directory."
        )
    return summary
