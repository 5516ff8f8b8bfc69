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
from burnish.record.tree import prepare

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
    nan, inf = float("nan"), float("inf")
    record = {
        "big": torch.tensor([1e6, 1.0]),
        "big_with_nan": torch.tensor([nan, -1e6]),
        "fine": torch.tensor([1.0, inf]),
        "fine_with_nan": torch.tensor([nan, 0.5, -inf]),
    }
    recorder = CompactRecorder()
    stored = {k: leaf.data.dtype for k, leaf in prepare(record, recorder.settings).items()}
    assert stored == {
        "big": torch.float32,  # 1e6 would become inf in float16: kept at float32
        "big_with_nan": torch.float32,
        "fine": torch.float16,  # the inf was already there
        "fine_with_nan": torch.float16,
    }
    out = recorder.from_bytes(recorder.to_bytes(record))
    for key, tensor in record.items():
        assert torch.allclose(out[key], tensor, atol=0, rtol=0, equal_nan=True), key
