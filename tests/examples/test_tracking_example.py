"""The tracking example (TensorBoard and CSV beside Burn's logs), run short; Ctrl-C ends it
with the truth and exit 130."""

from __future__ import annotations

import csv

import pytest

from examples.tracking import main
from tests.examples.interrupt import start_and_interrupt

# One intra-op thread: two per test worker oversubscribe the cores (fp16's emulated kernels
# took 10.6 s of CPU with two, 7.1 s with one; the same numbers).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_a_short_run_writes_tensorboard_csv_and_the_model_then_says_how_to_open_them(
    tmp_path, capsys
):
    artifact_dir = tmp_path / "tracking"
    main(["--limit", "256", "--artifact-dir", str(artifact_dir)])
    assert (artifact_dir / "model.mpk").is_file()
    assert any((artifact_dir / "tensorboard").rglob("events.out.tfevents.*"))
    with open(artifact_dir / "metrics.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert {row["split"] for row in rows} == {"train", "valid"}
    assert f"tensorboard --logdir {artifact_dir / 'tensorboard'}" in capsys.readouterr().out


def test_ctrl_c_saves_no_model_and_exits_130(tmp_path):
    artifact_dir = tmp_path / "tracking"
    code, out, err = start_and_interrupt(
        ["-m", "examples.tracking", "--limit", "1280", "--artifact-dir", str(artifact_dir)]
    )
    assert code == 130, out + err
    assert "no model.mpk was saved" in err and "tensorboard --logdir" not in out
    assert not (artifact_dir / "model.mpk").exists()
