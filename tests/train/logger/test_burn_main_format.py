"""Burn main's metric-log format, read and written: the `value,final` line that ends an epoch.

The run directory `tests/fixtures/burn_main_run/` is laid out by Burn main's writer rules
(`tests/fixtures/burn_main_run_writer.py`, with the Burn source it follows). Burn's idiom reads
it with `LearnerSummary::new(dir, &["Loss", ...])`; here `LearnerSummary.from_dir(dir, [...])`
and `burnish summary DIR`.
"""

from __future__ import annotations

import math
from pathlib import Path

from burnish.train import LearnerSummary
from burnish.train.logger import FileMetricLogger
from burnish.train.logger.epoch_aggregates import EntryStats
from burnish.train.metric import NumericEntry

from tests.cli.helpers import burnish
from tests.fixtures import burn_main_run_writer as burn

RUN = burn.ROOT


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_fixture_is_what_burns_writer_rules_write(tmp_path):
    burn.write(tmp_path)
    assert files(tmp_path) == files(RUN)


def burn_epoch_value(split: str, epoch: int, name: str) -> float:
    """Burn's `NumericMetricsAggregate::aggregate`: the final line's value when the log ends
    with one, else the count-weighted mean of its lines."""
    if split in burn.AUROC and name == "AUROC [Macro]":
        return burn.AUROC[split][epoch]
    return burn.final_value(burn.BATCHES[split][epoch][name])


def test_summary_of_a_burn_main_run_takes_each_epochs_final_value():
    names = ["Loss", "Accuracy", "Learning Rate", "AUROC [Macro]", "CPU Temperature"]
    summary = LearnerSummary.from_dir(RUN, names)  # Burn: LearnerSummary::new(dir, &[..])
    assert summary.epochs == 2
    found = {
        (split, metric.name): [(e.step, e.value) for e in metric.entries]
        for split, metrics in (("train", summary.metrics.train), ("valid", summary.metrics.valid))
        for metric in metrics
    }
    for (split, name), entries in found.items():
        if name == "CPU Temperature":
            continue
        assert entries == [(epoch, burn_epoch_value(split, epoch, name)) for epoch in (1, 2)]
    assert set(found) == {
        ("train", "Loss"),
        ("train", "Accuracy"),
        ("train", "Learning Rate"),
        ("train", "CPU Temperature"),
        ("valid", "Loss"),
        ("valid", "Accuracy"),
        ("valid", "AUROC [Macro]"),
    }
    # Lone values (no final line): their mean, NaN where the sensor was missing, as in Burn.
    [(one, temperature), (two, missing)] = found[("train", "CPU Temperature")]
    assert (one, two) == (1, 2) and math.isnan(missing)
    assert temperature == (45.0 + 47.5 + 46.25 + 46.25) / 4
    # The final value is not the mean of the lines' values when batches differ in size.
    loss = [value for value, _ in burn.BATCHES["train"][1]["Loss"]]
    assert found[("train", "Loss")][0][1] != sum(loss) / len(loss)


def test_burnish_summary_prints_every_metric_of_a_burn_main_run():
    result = burnish("summary", RUN)
    assert result.returncode == 0, result.stderr
    assert "left out" not in result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert {tuple(cell.strip() for cell in row.split("|")[1:3]) for row in rows[1:]} >= {
        ("Train", "Loss"),
        ("Train", "Accuracy"),
        ("Train", "Learning_Rate"),  # a Burn run keeps no names: its file names serve
        ("Valid", "Loss"),
        ("Valid", "AUROC_[Macro]"),
        ("Test (mnist-test)", "Loss"),
    }
    valid_loss = next(
        r for r in rows if [c.strip() for c in r.split("|")[1:3]] == ["Valid", "Loss"]
    )
    # 1e20 * 60 / 160 is the final line's value; Burn's table prints `{:<9.3}` of it too.
    assert f"{burn_epoch_value('valid', 2, 'Loss'):.3f}" in valid_loss


def test_burnish_writes_an_epoch_as_burn_main_does(tmp_path):
    for split, epochs in burn.BATCHES.items():
        logger = FileMetricLogger(tmp_path / split)
        for epoch, metrics in epochs.items():
            for name, entries in metrics.items():
                logger.log(name, epoch, [NumericEntry(value, size) for value, size in entries])
            logger.end_epoch(epoch)
            logger.log_aggregates(
                epoch,
                {
                    name: EntryStats.of(entries).aggregate(burn.final_value(entries))
                    for name, entries in metrics.items()
                },
            )
        for epoch, metrics in epochs.items():
            for name in metrics:
                path = f"{split}/epoch-{epoch}/{name.replace(' ', '_')}.log"
                assert (tmp_path / path).read_bytes() == (RUN / path).read_bytes(), path


def test_the_final_line_is_not_an_iteration_and_burnish_runs_stay_readable(tmp_path):
    logger = FileMetricLogger(RUN / "train")
    entries = logger.read_numeric("Loss", 1)
    assert [(e.value, e.count) for e in entries] == burn.BATCHES["train"][1]["Loss"]
    assert logger.read_final("Loss", 1) == burn.final_value(burn.BATCHES["train"][1]["Loss"])
    assert FileMetricLogger(RUN / "valid").read_final("AUROC [Macro]", 1) is None  # lone value
    # A run burnish wrote before it ended epochs with `value,final`: its mean, as before.
    old = FileMetricLogger(tmp_path / "train")
    old.log("Loss", 1, [NumericEntry(1.0, 3), NumericEntry(3.0, 1)])
    old.end_epoch(1)
    assert old.read_final("Loss", 1) is None
    assert LearnerSummary.from_dir(tmp_path).metrics.train[0].entries[0].value == 1.5
