"""The Learner's checkpoints as Burnpack (`with_default_checkpointers()`, Burn main's name) and
with one recorder per part (`with_custom_checkpointers(model, optim, scheduler)`): the same
atomic commit, and runs resumed from them end bit-identical to uninterrupted ones (in process,
and after SIGKILLs inside checkpoint writes)."""

from __future__ import annotations

import random

import pytest
import torch

from burnish.record import (
    BinFileRecorder,
    BurnpackStore,
    PrettyJsonFileRecorder,
    SafetensorsFileRecorder,
    load_from,
)
from burnish.record.store.burnpack import MAGIC
from burnish.train import LearnerBuilder, SupervisedTraining

from tests.train.helpers import Mlp, loaders
from tests.train.test_learner import fit


def default_checkpointers(builder):
    return builder.with_default_checkpointers()


def test_default_checkpointers_write_burnpack_files_committed_atomically(tmp_path):
    fit(tmp_path, epochs=2, configure=default_checkpointers)
    checkpoint = tmp_path / "checkpoint" / "epoch-2"
    files = sorted(p.name for p in checkpoint.iterdir())
    assert files == ["COMMIT", "learner.bpk", "model.bpk", "optim.bpk", "scheduler.bpk"]
    assert all((checkpoint / f).read_bytes()[:4] == MAGIC for f in files if f != "COMMIT")
    model = Mlp()
    result = load_from(model, BurnpackStore.from_file(checkpoint / "model.bpk"))
    assert result.applied == list(model.state_dict())  # Burn and BurnpackStore read it


def test_resume_from_burnpack_checkpoints_is_exact(tmp_path):
    straight = fit(tmp_path / "straight", epochs=4, dropout=0.3, configure=default_checkpointers)
    fit(tmp_path / "resumed", epochs=2, dropout=0.3, configure=default_checkpointers)
    resumed = fit(
        tmp_path / "resumed",
        epochs=4,
        dropout=0.3,
        seed=99,
        configure=lambda b: default_checkpointers(b).checkpoint(2),
    )
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    for split in ("train", "valid"):
        relative = f"{split}/epoch-4/Loss.log"
        assert (tmp_path / "resumed" / relative).read_bytes() == (
            tmp_path / "straight" / relative
        ).read_bytes()


def test_custom_checkpointers_use_one_recorder_per_part_and_resume_exactly(tmp_path):
    def custom(builder):
        return builder.with_custom_checkpointers(
            BinFileRecorder(), SafetensorsFileRecorder(), PrettyJsonFileRecorder()
        )

    straight = fit(tmp_path / "straight", epochs=3, dropout=0.3, configure=custom)
    files = sorted(p.name for p in (tmp_path / "straight/checkpoint/epoch-3").iterdir())
    assert files == ["COMMIT", "learner.bpk", "model.bin", "optim.safetensors", "scheduler.json"]
    fit(tmp_path / "resumed", epochs=2, dropout=0.3, configure=custom)
    resumed = fit(
        tmp_path / "resumed",
        epochs=3,
        dropout=0.3,
        seed=5,
        configure=lambda b: custom(b).checkpoint(2),
    )
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name


def test_custom_checkpointers_take_recorders():
    with pytest.raises(TypeError, match=r"recorder for `optim`.*received str"):
        LearnerBuilder("artifacts").with_custom_checkpointers(
            BinFileRecorder(),
            "adam",
            BinFileRecorder(),  # type: ignore[arg-type]
        )


def test_supervised_training_has_the_burn_main_names():
    builder = SupervisedTraining("artifacts", *loaders()).with_default_checkpointers()
    assert (
        type(builder._options().checkpointing.checkpointer.recorder).__name__
        == "BurnpackFileRecorder"
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sigkill_inside_burnpack_checkpoint_writes_then_resume_is_bit_identical(tmp_path):
    from tests.train.test_crash_resume import assert_same_run, resume_until_done, run

    reference_dir, reference_out = tmp_path / "reference", tmp_path / "reference.pt"
    assert run(reference_dir, reference_out, "--count-io", "--burnpack") == 0
    io_calls = int(run.last_stdout.split("io-calls")[-1])
    rng = random.Random(20261125)
    kills: list = [["--kill-at-io", str(rng.randint(1, io_calls // 10))] for _ in range(6)]
    killed = resume_until_done(tmp_path / "artifacts", tmp_path / "final.pt", kills, "--burnpack")
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")
    assert killed >= 4
    assert (tmp_path / "artifacts/checkpoint").is_dir()
    assert any(p.suffix == ".bpk" for p in (tmp_path / "artifacts/checkpoint").rglob("*"))
