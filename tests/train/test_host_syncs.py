"""The Learner's training iteration never waits for the device.

Without CUDA, every tensor method that makes the host wait for a device (`item`, `tolist`,
`cpu`, `numpy`, `bool`/`float`/`int` of a tensor, a blocking copy to the CPU,
`torch.cuda.synchronize`) is counted during whole Learner runs, and none may be called outside
the batched read-backs (the metrics processor's drain, the checkpoint snapshots) and the
host-only epoch start of torch's data loader (it seeds its workers from a CPU generator). The
checkpoint writer's thread reads only the host copies the snapshot made: its calls are checked
to be on CPU tensors, not counted. With CUDA,
`torch.cuda.set_sync_debug_mode("error")` makes any synchronizing call in an epoch fail.
"""

from __future__ import annotations

import functools
import threading
import traceback
from collections.abc import Callable
from typing import Any

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig, SgdConfig
from burnish.record import DefaultRecorder
from burnish.train import LearnerBuilder
from burnish.train.checkpoint.learning import LearningCheckpointer
from burnish.train.logger import CsvLogger
from burnish.train.metric import ThroughputMetric
from burnish.train.report.processor import MetricsProcessor

from tests.train.helpers import JournalListener, Mlp, builder, loaders

SYNCING_METHODS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__")


class SyncCounter:
    """Counts sync-causing calls made outside the allowed read-backs, with where they came from.

    Args:
        exempt: tensors whose reads are host-only by design (the optimizer's step counters,
            which torch.optim keeps on the CPU on every device).
    """

    def __init__(self, exempt: Callable[[torch.Tensor], bool]) -> None:
        self.exempt = exempt
        self.read_back_depth = 0
        self.calls: list[str] = []
        self.allowed_calls = 0
        self.loop_thread = threading.current_thread()
        self.background_calls: list[str] = []  # on other threads (the checkpoint writer)

    def note(self, name: str, tensor: torch.Tensor | None) -> None:
        if tensor is not None and self.exempt(tensor):
            return
        if threading.current_thread() is not self.loop_thread:
            on_host = tensor is not None and tensor.device.type == "cpu"
            self.background_calls.append(f"{name} on {'the host' if on_host else 'a device'}")
            return
        if self.read_back_depth:
            self.allowed_calls += 1
            return
        where = "".join(traceback.format_stack(limit=6)[:-2])
        self.calls.append(f"{name}\n{where}")

    def counting(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def counted(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            self.note(name, tensor)
            return method(tensor, *args, **kwargs)

        return counted

    def counting_to(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def to(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if _blocking_copy_to_cpu(args, kwargs):
                self.note("to(cpu)", tensor)
            return method(tensor, *args, **kwargs)

        return to

    def read_back(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def allowed(*args: Any, **kwargs: Any) -> Any:
            self.read_back_depth += 1
            try:
                return method(*args, **kwargs)
            finally:
                self.read_back_depth -= 1

        return allowed


def _blocking_copy_to_cpu(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    target, non_blocking = kwargs.get("device"), bool(kwargs.get("non_blocking", False))
    for index, arg in enumerate(args):
        if isinstance(arg, (torch.device, str)):
            target = arg
        elif isinstance(arg, torch.Tensor):
            target = arg.device
        elif isinstance(arg, bool) and index > 0:
            non_blocking = non_blocking or arg
    return target is not None and torch.device(target).type == "cpu" and not non_blocking


@pytest.fixture
def install_counter(monkeypatch):
    def install(optim) -> SyncCounter:
        def is_step_counter(tensor: torch.Tensor) -> bool:
            return any(tensor is state.get("step") for state in optim._states.values())

        counter = SyncCounter(is_step_counter)
        for name in SYNCING_METHODS:
            monkeypatch.setattr(
                torch.Tensor, name, counter.counting(name, getattr(torch.Tensor, name))
            )
        monkeypatch.setattr(torch.Tensor, "to", counter.counting_to(torch.Tensor.to))
        synchronize = torch.cuda.synchronize
        monkeypatch.setattr(
            torch.cuda,
            "synchronize",
            lambda *a, **k: (counter.note("synchronize", None), synchronize(*a, **k)),
        )
        monkeypatch.setattr(MetricsProcessor, "_drain", counter.read_back(MetricsProcessor._drain))
        for name in ("save_iteration", "save_epoch"):
            method = getattr(LearningCheckpointer, name)
            monkeypatch.setattr(LearningCheckpointer, name, counter.read_back(method))
        epoch_start = torch.utils.data.DataLoader.__iter__
        monkeypatch.setattr(torch.utils.data.DataLoader, "__iter__", counter.read_back(epoch_start))
        return counter

    return install


CASES = {
    "adam": lambda b: b,
    "fp16": lambda b: b.mixed_precision("fp16"),
    "bf16": lambda b: b.mixed_precision("bf16"),
    "accumulation+checkpoints": lambda b: b.grads_accumulation(2).checkpoint_every(3),
    "trackers": lambda b: b.log_to(CsvLogger()).log_every(2),
    "listeners+throughput": lambda b: (
        b.with_listener(JournalListener())
        .metric_train_numeric(ThroughputMetric(flops_per_item=1e6, peak_flops=1e12))
        .checkpoint_every(3)
    ),
    "ema": lambda b: b.with_ema(0.9, warmup=True, validate="both"),
    "skip": lambda b: b.on_non_finite("skip"),
    "stop+checkpoints": lambda b: b.on_non_finite("stop").checkpoint_every(3),
    "ema+skip+bf16": lambda b: b.with_ema(0.9).on_non_finite("skip").mixed_precision("bf16"),
    "ema+skip+fp16": lambda b: b.with_ema(0.9).on_non_finite("skip").mixed_precision("fp16"),
    # 10 iterations an epoch: 9 steps of 2 end the run 8 iterations into epoch 2, after
    # validations inside the epochs at steps 3 and 6 (and the trackers' valid points).
    "max_iterations+valid_every": lambda b: (
        b.grads_accumulation(2)
        .max_iterations(9)
        .valid_every(3)
        .checkpoint_every(4)
        .log_to(CsvLogger())
        .log_every(2)
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_sync_in_the_training_iteration(tmp_path, install_counter, case):
    bn.seed(2)
    configure = CASES[case]
    optim = AdamConfig().init()
    learner = configure(builder(tmp_path, epochs=2, recorder=DefaultRecorder())).build(
        Mlp(dropout=0.1), optim, 1e-3
    )
    # Batches are built in a worker, as on a GPU (pinned, then moved with non_blocking=True).
    data = loaders(batch_size=32, train_items=320, valid_items=96, workers=1)
    counter = install_counter(optim)
    result = learner.fit(*data)
    assert result.epochs_completed == 2
    if case == "max_iterations+valid_every":
        assert (result.iterations, result.validations) == (9, 4)
    assert counter.calls == [], f"{len(counter.calls)} syncs, the first:\n{counter.calls[0]}"
    assert counter.allowed_calls > 0  # the counter sees the read-backs it lets through
    # the checkpoint writer (in the background) reads host copies only
    assert all(call.endswith("the host") for call in counter.background_calls)


def test_the_counter_catches_a_sync_in_the_iteration(tmp_path, install_counter):
    class Syncing(Mlp):
        def train_step(self, batch):
            output = super().train_step(batch)
            if output.item.loss > 100:  # bool(tensor): waits for the device
                raise AssertionError("unreachable")
            return output

    optim = SgdConfig().init()
    learner = builder(tmp_path, epochs=1).build(Syncing(), optim, 0.1)
    data = loaders(batch_size=64, train_items=128, valid_items=64, workers=1)
    counter = install_counter(optim)
    learner.fit(*data)
    assert len(counter.calls) == 2 and all(c.startswith("__bool__") for c in counter.calls)


CUDA_CASES = {
    "fp32": lambda b: b,
    "fp16": lambda b: b.mixed_precision("fp16"),
    "bf16": lambda b: b.mixed_precision("bf16"),
    "ema+skip": lambda b: b.with_ema(0.99, validate="both").on_non_finite("skip"),
    "ema+stop+fp16": lambda b: b.with_ema(0.99).on_non_finite("stop").mixed_precision("fp16"),
    "max_iterations+valid_every": lambda b: b.max_iterations(7).valid_every(3),
    "max_iterations+valid_every+bf16": lambda b: (
        b.max_iterations(7).valid_every(3).mixed_precision("bf16")
    ),
}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("case", list(CUDA_CASES))
def test_cuda_epoch_under_sync_debug_mode_error(tmp_path, case):
    """The batches come from workers (pinned memory, non_blocking copies); reading metrics
    back in the processor's drain and checkpoints are the only syncs, so they run with the
    debug mode off. With a budget, 7 steps of the 10-iteration epoch and validations at
    steps 3 and 6 inside it."""
    bn.seed(2)
    b: LearnerBuilder = CUDA_CASES[case](builder(tmp_path, epochs=1).devices(["cuda"]))
    model = Mlp().to("cuda")  # before the debug mode: a copy from pageable memory waits
    learner = b.build(model, AdamConfig().init(), 1e-3)
    data = loaders(batch_size=64, train_items=640, valid_items=128, workers=1)

    def drain_unchecked(method):
        @functools.wraps(method)
        def wrapped(*args, **kwargs):
            previous = torch.cuda.get_sync_debug_mode()
            torch.cuda.set_sync_debug_mode(0)
            try:
                return method(*args, **kwargs)
            finally:
                torch.cuda.set_sync_debug_mode(previous)

        return wrapped

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MetricsProcessor, "_drain", drain_unchecked(MetricsProcessor._drain))
        torch.cuda.set_sync_debug_mode("error")
        try:
            result = learner.fit(*data)
        finally:
            torch.cuda.set_sync_debug_mode(0)
    assert result.epochs_completed == 1
    if case.startswith("max_iterations"):
        assert (result.iterations, result.validations) == (7, 3)
