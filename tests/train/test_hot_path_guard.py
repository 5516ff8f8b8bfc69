"""The CPU guard of the Learner's cost on a GPU (issue 43, item 6).

On a GPU the host only launches work; whatever the Learner does on the host per iteration
beyond a hand-written loop is time a launch-bound model pays. Measured on the CPU, with the
guide's model on MNIST tensors, between two metric read-backs of a real fit (the 32
iterations one drain of the metrics processor holds):

* no iteration reads a device value back (`aten._local_scalar_dense`, what `.item()`,
  `float(t)`, `bool(t)` dispatch) other than the optimizer's CPU step counters, which the
  custom loop reads as well (torch's Adam keeps them on the host);
* no iteration makes a tensor from a Python number (`lift_fresh`, `scalar_tensor`: on a GPU, a
  host-to-device copy) or copies a tensor between devices, beyond what the custom loop does;
* the Learner dispatches at most the custom loop's operations plus its train accuracy's (a
  stated bound);

and no thread but the loop's runs Python per iteration: the dashboard's thread wakes at its
own rate, the checkpoint writer at checkpoints.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from io import StringIO
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from rich.console import Console
from torch.utils._python_dispatch import TorchDispatchMode

import burnish as bn
from burnish.optim import AdamConfig, GradientsParams
from burnish.record import CompactRecorder
from burnish.train import LearnerBuilder
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import NullRenderer
from burnish.train.report.processor import MetricsProcessor

pytestmark = pytest.mark.usefixtures("one_torch_thread")
BATCH, WINDOW = 16, 32  # a window: the iterations between two read-backs (NullRenderer)
SCALAR_TO_TENSOR = ("aten.lift_fresh.default", "aten.scalar_tensor.default")
ITEM = "aten._local_scalar_dense.default"
# The train accuracy's operations per iteration (argmax, eq, to float, mean, percent, sum):
# what the Learner's AccuracyMetric adds over the custom loop, which computes none.
ACCURACY_OPS = 6


class Iterations(TorchDispatchMode):
    """Records the operations of each iteration: `mark()` starts the next one; operations
    while `paused` (a read-back) are not recorded."""

    def __init__(self, step_counters) -> None:
        super().__init__()
        self.step_counters = step_counters  # () -> the optimizer's CPU step tensors
        self.iterations: list[collections.Counter[str]] = []
        self.reads: list[list[str]] = []  # per iteration: what `item` was called on
        self.transfers: list[list[str]] = []  # per iteration: copies between devices
        self.paused = False

    def mark(self) -> None:
        self.iterations.append(collections.Counter())
        self.reads.append([])
        self.transfers.append([])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)  # lift_fresh aliases its input: a "view", counted all the same
        if self.iterations and not self.paused and (not func.is_view or name in SCALAR_TO_TENSOR):
            self.iterations[-1][name] += 1
            if name == ITEM:
                counter = any(args[0] is step for step in self.step_counters())
                self.reads[-1].append("step counter" if counter else repr(args[0]))
            if name.startswith("aten._to_copy") and "device" in kwargs:
                source, target = args[0].device, torch.device(kwargs["device"])
                if source != target:
                    self.transfers[-1].append(f"{source} -> {target}")
            if name.startswith("aten.copy_") and args[0].device != args[1].device:
                self.transfers[-1].append(f"{args[1].device} -> {args[0].device}")
        return func(*args, **kwargs)


def _batches(count: int, device: torch.device) -> list[Any]:
    from burnish.data.dataset.vision import MnistDataset

    from examples.mnist.data import MEAN, STD, MnistBatch

    train = MnistDataset.train()
    n = count * BATCH
    images = torch.as_tensor(train.images[:n].copy()).float().div(255).sub(MEAN).div(STD)
    labels = torch.as_tensor(train.labels[:n].astype("int64"))
    images, labels = images.to(device), labels.to(device)
    return [MnistBatch(images[i : i + BATCH], labels[i : i + BATCH]) for i in range(0, n, BATCH)]


def _model(device: torch.device):
    from examples.mnist.model import ModelConfig

    bn.seed(4)
    return ModelConfig(num_classes=10, hidden_size=32).init(device)


def _steps(optim):
    return lambda: [state["step"] for state in optim._states.values() if "step" in state]


def _custom_loop(device: torch.device, count: int) -> Iterations:
    """The burnish custom loop, loss summed on the device, every iteration recorded."""
    model, optim = _model(device), AdamConfig().init()
    batches = _batches(count, device)
    mode = Iterations(_steps(optim))
    with mode:
        loss_sum = torch.zeros((), device=device)
        for batch in batches:
            mode.mark()
            loss = F.cross_entropy(model(batch.images), batch.targets)
            model = optim.step(1e-3, model, GradientsParams.from_grads(bn.backward(loss), model))
            loss_sum += loss.detach()
    return mode


def _learner(tmp_path, device: torch.device, count: int) -> tuple[Iterations, list[int]]:
    """A fit of `count` iterations under the mode; also the iterations after which the
    metrics were read back."""
    optim = AdamConfig().init()
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .renderer(NullRenderer())
        .num_epochs(1)
        .devices([device])
        .build(_model(device), optim, 1e-3)
    )
    mode = Iterations(_steps(optim))
    drains: list[int] = []
    original = MetricsProcessor._drain

    def drain(self, *args, **kwargs):
        drains.append(len(mode.iterations))
        mode.paused = True
        try:
            return original(self, *args, **kwargs)
        finally:
            mode.paused = False

    model_step = type(learner.model()).train_step

    def train_step(self, batch):
        mode.mark()
        return model_step(self, batch)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MetricsProcessor, "_drain", drain)
        patch.setattr(type(learner.model()), "train_step", train_step)
        with mode:
            learner.fit(_batches(count, device), None)
    return mode, drains


DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
    ),
]


@pytest.mark.parametrize("device", DEVICES)
def test_the_iterations_between_two_read_backs_do_nothing_gpu_hostile(tmp_path, device):
    device = torch.device(device)
    learner, drains = _learner(tmp_path, device, 3 * WINDOW)
    assert drains[:2] == [WINDOW, 2 * WINDOW], drains  # read back every 32 iterations
    window = range(WINDOW, 2 * WINDOW)  # iterations 33-64: between the first two drains
    custom = _custom_loop(device, WINDOW + 2)
    reference = custom.iterations[2]  # a steady iteration: the optimizer state exists
    assert sum(reference.values()) > 40  # forward, backward, Adam: the mode sees them
    for i in window:
        ops = learner.iterations[i]
        where = f"iteration {i + 1}"
        reads = [r for r in learner.reads[i] if r != "step counter"]
        assert reads == [], f"{where} reads a device value back: {reads}"
        assert len(learner.reads[i]) <= len(custom.reads[2]), where
        for name in SCALAR_TO_TENSOR:
            assert ops[name] <= reference[name], (where, name, ops[name], reference[name])
        assert learner.transfers[i] == [], (where, learner.transfers[i])
        extra = sum(ops.values()) - sum(reference.values())
        assert extra <= ACCURACY_OPS, (where, ops - reference, reference - ops)


def test_the_guard_sees_what_it_guards_against(tmp_path):
    """A train step that reads its loss back and makes a tensor of its learning rate each
    iteration, as a GPU-hostile loop would: the mode records both."""
    from examples.mnist.model import Model

    device = torch.device("cpu")

    original = Model.train_step

    def hostile(self, batch):
        output = original(self, batch)
        float(output.item.loss)  # a read-back per iteration
        torch.tensor(1e-3, device=device)  # a Python number made a device tensor
        return output

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Model, "train_step", hostile)
        learner, _ = _learner(tmp_path, device, WINDOW + 2)
    assert any(r != "step counter" for r in learner.reads[WINDOW]), learner.reads[WINDOW]
    assert learner.iterations[WINDOW]["aten.lift_fresh.default"] >= 1


# -- other threads ---------------------------------------------------------------------------


class ThreadCalls:
    """Python calls per thread name, on the threads started while installed (not the loop's)."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.ticks = 0  # the dashboard thread's passes through its loop

    def __call__(self, frame, event, arg):
        if event == "call":
            name = threading.current_thread().name
            self.calls[name] += 1
            if frame.f_code.co_name == "_step" and name == "burnish-tui":
                self.ticks += 1


def _fit_with_threads(tmp_path, count: int) -> tuple[ThreadCalls, float]:
    from burnish.train.renderer.tui import TuiMetricsRenderer

    device = torch.device("cpu")
    console = Console(file=StringIO(), force_terminal=True, width=120, height=40)
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .renderer(TuiMetricsRenderer(console=console, read_keys=False))
        .with_file_checkpointer(CompactRecorder())
        .num_epochs(1)
        .build(_model(device), AdamConfig().init(), 1e-3)
    )
    calls = ThreadCalls()
    threading.setprofile(calls)
    started = time.monotonic()
    try:
        learner.fit(_batches(count, device), None)
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
    return calls, time.monotonic() - started


def test_no_other_thread_runs_python_per_iteration(tmp_path):
    from burnish.train.renderer.tui import renderer as tui

    short, _ = _fit_with_threads(tmp_path / "short", WINDOW)
    long, seconds = _fit_with_threads(tmp_path / "long", 5 * WINDOW)
    assert set(long.calls) >= {"burnish-tui"}, long.calls  # the profile sees the threads
    writer = [name for name in long.calls if name != "burnish-tui"]
    assert writer, long.calls  # the checkpoint writer's thread
    extra = 4 * WINDOW
    for name in writer:  # one checkpoint in each fit: the same work, whatever the length
        assert long.calls[name] - short.calls.get(name, 0) < extra, (name, long, short)
    # The dashboard's thread sleeps `_TICK_S` between passes, whatever the loop does: at
    # most one pass per tick of the fit's duration (a slower machine makes fewer, not more).
    assert long.ticks <= seconds / tui._TICK_S + 2, (long.ticks, seconds)
    assert sys.getprofile() is None
