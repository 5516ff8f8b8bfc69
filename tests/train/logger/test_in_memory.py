"""InMemoryMetricLogger reads back what FileMetricLogger does and resumes the same way."""

import pytest

from burnish.train.logger import FileMetricLogger, InMemoryMetricLogger
from burnish.train.metric.base import NumericEntry

ENTRIES = [NumericEntry(0.1, 3), NumericEntry(1e-9, 1), NumericEntry(12345.678, 64)]


@pytest.fixture(params=["memory", "file"])
def logger(request, tmp_path):
    return InMemoryMetricLogger() if request.param == "memory" else FileMetricLogger(tmp_path)


def test_round_trip_per_epoch(logger):
    logger.log("Loss", 1, ENTRIES)
    logger.end_epoch(1)
    logger.log("Loss", 2, ENTRIES[:1])
    assert logger.read_numeric("Loss", 1) == ENTRIES
    assert logger.read_numeric("Loss", 2) == ENTRIES[:1]
    assert logger.read_numeric("Loss", 3) == []
    assert logger.read_numeric("Other", 1) == []


def test_positions_and_truncate(logger):
    logger.log("Loss", 1, ENTRIES)
    logger.end_epoch(1)
    logger.log("Loss", 2, ENTRIES[:2])
    positions = logger.positions()
    assert positions == {"epoch": 2, "lines": {"Loss": 2}}
    logger.log("Loss", 2, ENTRIES)
    logger.end_epoch(2)
    logger.log("Loss", 3, ENTRIES)
    logger.truncate_to(positions)
    assert logger.read_numeric("Loss", 2) == ENTRIES[:2]
    assert logger.read_numeric("Loss", 3) == []
    assert logger.read_numeric("Loss", 1) == ENTRIES


def test_in_memory_skips_text_lines_and_rejects_impossible_positions():
    logger = InMemoryMetricLogger()
    logger.log("Loss", 1, ["hello", NumericEntry(2.0, 2)])
    assert logger.read_numeric("Loss", 1) == [NumericEntry(2.0, 2)]
    with pytest.raises(ValueError, match="had 5 lines in epoch 1, but only 2 were logged"):
        logger.truncate_to({"epoch": 1, "lines": {"Loss": 5}})


def test_positions_for_an_epoch_the_logger_has_not_seen(logger):
    assert logger.positions() == {"epoch": 1, "lines": {}}
    assert logger.positions(4) == {"epoch": 4, "lines": {}}  # e.g. a resumed run's validation
    logger.log("Loss", 2, ENTRIES)
    assert logger.positions(2) == {"epoch": 2, "lines": {"Loss": 3}}
    assert logger.positions(3) == {"epoch": 3, "lines": {}}
    with pytest.raises(ValueError, match="must not be before the logger's current epoch 2"):
        logger.positions(1)
    logger.truncate_to(logger.positions(3))
    assert logger.read_numeric("Loss", 2) == ENTRIES  # earlier epochs are never touched
