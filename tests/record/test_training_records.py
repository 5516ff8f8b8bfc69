"""Optimizer and LR-scheduler records save and load through every recorder, then resume."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.lr_scheduler import CosineAnnealingLrSchedulerConfig
from burnish.optim import AdamConfig, GradientsParams
from burnish.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    JsonGzFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    SafetensorsFileRecorder,
)

from tests.helpers import assert_close, tiny_model

RECORDERS = [DefaultRecorder(), NamedMpkGzFileRecorder(), BinFileRecorder(),
             BinGzFileRecorder(), PrettyJsonFileRecorder(), JsonGzFileRecorder(),
             SafetensorsFileRecorder(), CompactRecorder()]  # fmt: skip


def train(model, optim, scheduler, steps: int) -> None:
    generator = torch.Generator().manual_seed(steps)
    for _ in range(steps):
        x = torch.randn(8, 4, generator=generator)
        loss = model(x).pow(2).mean()
        grads = GradientsParams.from_grads(bn.backward(loss), model)
        model = optim.step(scheduler.step(), model, grads)


@pytest.mark.parametrize("recorder", RECORDERS, ids=lambda r: type(r).__name__)
def test_training_state_resumes_through_every_recorder(tmp_path, recorder):
    def fresh():
        return (tiny_model(seed=0), AdamConfig().init(),
                CosineAnnealingLrSchedulerConfig(1e-2, 20).init())  # fmt: skip

    model, optim, scheduler = fresh()
    train(model, optim, scheduler, 3)
    state = {"model": bn.into_record(model), "optim": optim.to_record(),
             "scheduler": scheduler.to_record(), "epoch": 1}  # fmt: skip
    path = recorder.record(state, tmp_path / "checkpoint")
    train(model, optim, scheduler, 4)  # the uninterrupted run

    loaded = recorder.load(path)
    resumed, optim2, scheduler2 = fresh()
    bn.load_record(resumed, loaded["model"])
    optim2.load_record(loaded["optim"])
    scheduler2.load_record(loaded["scheduler"])
    assert loaded["epoch"] == 1
    train(resumed, optim2, scheduler2, 4)
    assert scheduler2.step() == pytest.approx(scheduler.step())
    if recorder.settings.float_dtype == torch.float16:
        # Half precision flushes Adam's tiny second moments to zero: the resumed run stays
        # finite and close, but is not the same run. Checkpoint optimizers at full precision.
        for value in bn.into_record(resumed).values():
            assert bool(torch.isfinite(value).all())
        assert_close(bn.into_record(resumed), bn.into_record(model), atol=0.5, rtol=0.5)
        return
    assert_close(bn.into_record(resumed), bn.into_record(model), atol=1e-6, rtol=1e-6)


def test_half_precision_never_overflows_to_inf():
    record = {"big": torch.tensor([1e6, 1.0]), "fine": torch.tensor([1.0, float("inf")])}
    out = CompactRecorder().from_bytes(CompactRecorder().to_bytes(record))
    assert torch.equal(out["big"], record["big"])  # kept at float32
    assert torch.equal(out["fine"], record["fine"])
