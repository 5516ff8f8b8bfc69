"""`on_non_finite("continue" | "skip" | "stop")`: a NaN injected at a chosen iteration, in the
loss or only in the gradients, eager and under bf16 autocast (CPU), through whole runs.

Every mode says the first non-finite loss once, with its epoch and iteration, on the console
and in `experiment.log`. `"skip"` leaves the parameters and the optimizer state of that step as
they were and counts it in `Skipped Steps`; `"stop"` ends the run without another checkpoint,
the last committed one holds finite weights and says how to resume.
"""

from __future__ import annotations

import io
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import ClassificationOutput, LearnerBuilder, TrainOutput
from burnish.train.components.non_finite import NonFiniteWatch, loss_of
from burnish.train.logger import FileMetricLogger
from burnish.train.metric import LossInput, MetricMetadata, Progress
from burnish.train.renderer import CliMetricsRenderer
from burnish.train.split import Split

from tests.train.helpers import Mlp, builder, loaders

pytestmark = pytest.mark.usefixtures("one_torch_thread")
# 320 training images in batches of 32: 10 iterations per epoch, 2 epochs.
DATA = {"batch_size": 32, "train_items": 320, "valid_items": 64}
PRECISIONS = [None, "bf16"]


class NanAt(Mlp):
    """At its `nan_at`-th train step the loss is NaN (`kind="loss"`), or only its gradient is
    (`kind="grad"`: a `where` whose unused branch is `sqrt` of a negative number). Keeps the
    parameters each step starts from."""

    def __init__(self, nan_at: int | None, kind: str = "loss") -> None:
        super().__init__()
        self.nan_at, self.kind = nan_at, kind
        self.calls = 0
        self.starts: dict[int, dict[str, torch.Tensor]] = {}

    def train_step(self, batch) -> TrainOutput:
        self.calls += 1
        self.starts[self.calls] = {k: v.detach().clone() for k, v in self.state_dict().items()}
        item = self.forward_classification(batch)
        loss = item.loss
        if self.calls == self.nan_at and self.kind == "loss":
            loss = loss * float("nan")
        elif self.calls == self.nan_at:
            negative = -self.linear1.weight.abs().sum() - 1
            loss = loss + torch.where(torch.tensor(True), torch.zeros(()), negative.sqrt())
        item = ClassificationOutput(loss, item.output, item.targets)
        return TrainOutput(self, bn.backward(loss), item)


def fit(tmp_path, model, mode, precision, *, configure=lambda b: b, epochs=2):
    console = io.StringIO()
    b = builder(tmp_path, epochs=epochs).renderer(CliMetricsRenderer(file=console))
    if mode is not None:
        b = b.on_non_finite(mode)
    if precision is not None:
        b = b.mixed_precision(precision)
    optim = AdamConfig().init()
    result = configure(b).build(model, optim, 1e-3).fit(*loaders(**DATA))
    return result, console.getvalue(), (tmp_path / "experiment.log").read_text(), optim


def finite(model) -> bool:
    return all(torch.isfinite(t).all() for t in model.state_dict().values())


@pytest.mark.parametrize("precision", PRECISIONS)
def test_continue_trains_on_and_says_the_first_nan_loss_once(tmp_path, precision):
    bn.seed(1)
    result, console, log, _ = fit(tmp_path, NanAt(5), None, precision)  # the default
    assert result.epochs_completed == 2 and not result.interrupted
    assert not finite(result.model)  # Burn's behaviour: it trained on through the NaN
    for text in (console, log):
        assert text.count("Non-finite loss") == 1
        assert "Non-finite loss (nan) at epoch 1, iteration 5." in text
        assert "on_non_finite('skip')" in text  # what to do about it


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("kind", ["loss", "grad"])
def test_skip_leaves_that_step_undone_on_the_device_and_counts_it(tmp_path, precision, kind):
    bn.seed(1)
    model = NanAt(15, kind)  # epoch 2, iteration 5
    result, console, log, optim = fit(tmp_path, model, "skip", precision)
    assert result.epochs_completed == 2 and finite(result.model)
    for name, before in model.starts[15].items():
        assert torch.equal(model.starts[16][name], before), name  # step 15 changed nothing
    assert not torch.equal(model.starts[17]["linear1.weight"], model.starts[16]["linear1.weight"])
    assert {int(state["step"]) for state in optim._states.values()} == {19}  # 20 steps, 1 skip
    logger = FileMetricLogger(tmp_path / "train")
    flags = [entry.value for entry in logger.read_numeric("Skipped Steps", 2)]
    assert flags == [0.0] * 4 + [1.0] + [0.0] * 5
    assert [entry.value for entry in logger.read_numeric("Skipped Steps", 1)] == [0.0] * 10
    assert "| Skipped Steps 1" in console  # the epoch's count
    for text in (console, log):
        assert text.count("Skipped the optimizer step of epoch 2, iteration 5") == 1
        assert text.count("Non-finite loss") == (1 if kind == "loss" else 0)


def committed(tmp_path) -> list[str]:
    directory = tmp_path / "checkpoint"
    if not directory.exists():
        return []
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(
    ("nan_at", "last"), [(8, "epoch-1-iteration-6"), (10, "epoch-1-iteration-9")]
)
@pytest.mark.parametrize("kind", ["loss", "grad"])
def test_stop_ends_the_run_with_the_last_checkpoint_intact(tmp_path, precision, nan_at, last, kind):
    bn.seed(1)
    checkpoints = lambda b: b.with_file_checkpointer(DefaultRecorder()).checkpoint_every(3)  # noqa: E731
    result, console, log, _ = fit(
        tmp_path, NanAt(nan_at, kind), "stop", precision, configure=checkpoints
    )
    assert result.stopped_non_finite and not result.interrupted
    assert result.epochs_completed == 0
    assert finite(result.model)  # the guarded step kept the weights finite
    assert committed(tmp_path) == [last]  # none after the NaN: not at 9, not epoch 1
    record = DefaultRecorder().load(tmp_path / "checkpoint" / last / "model")
    assert all(torch.isfinite(t).all() for t in record.values())
    assert not (tmp_path / "valid" / "epoch-1").exists()  # no validation after it
    for text in (console, log):
        assert f"at epoch 1, iteration {nan_at}" in text
        assert str(tmp_path / "checkpoint" / last) in text and "`.resume()`" in text
    # Fixed (no NaN any more), the run continues from that checkpoint to the end.
    bn.seed(1)
    resumed = builder(tmp_path, epochs=2, recorder=DefaultRecorder()).resume().on_non_finite("stop")
    done = resumed.build(Mlp(), AdamConfig().init(), 1e-3).fit(*loaders(**DATA))
    assert done.epochs_completed == 2 and not done.stopped_non_finite and finite(done.model)


def test_stop_without_checkpoints_says_the_run_must_start_again(tmp_path):
    bn.seed(1)
    result, console, _, _ = fit(tmp_path, NanAt(3), "stop", None)
    assert result.stopped_non_finite
    assert "This run writes no checkpoints: it must start again" in console


def test_stop_before_any_checkpoint_names_the_directory(tmp_path):
    bn.seed(1)
    configure = lambda b: b.with_file_checkpointer(DefaultRecorder()).checkpoint_every(5)  # noqa: E731
    result, console, _, _ = fit(tmp_path, NanAt(2), "stop", None, configure=configure)
    assert result.stopped_non_finite and committed(tmp_path) == []
    assert "No checkpoint had been committed in" in console


@pytest.mark.parametrize(
    ("configure", "match"),
    [
        (
            lambda b: b.on_non_finite("ignore"),
            r"'continue'.*'skip'.*'stop'.*on_non_finite='ignore'",
        ),
        (
            lambda b: b.on_non_finite("skip").compile(step=True),
            r"on_non_finite\('skip'\) guards the optimizer step.*compile\(\)",
        ),
        (
            lambda b: b.on_non_finite("stop").strategy("fsdp"),
            r"on_non_finite\('stop'\) does not support strategy\('fsdp'\)",
        ),
    ],
)
def test_what_cannot_work_is_refused_with_the_fix(configure, match):
    with pytest.raises(ValueError, match=match):
        configure(LearnerBuilder("unused")).build(Mlp(), AdamConfig().init(), 1e-3)


def test_the_loss_of_an_item():
    loss = torch.tensor(0.5)
    per_item = torch.tensor([1.0, float("nan")])
    assert loss_of(LossInput(loss)) is not None
    assert loss_of(ClassificationOutput(loss, torch.zeros(2, 3), torch.zeros(2))).item() == 0.5
    assert math.isnan(loss_of(LossInput(per_item)).item())  # any NaN item makes it NaN
    assert loss_of(type("Custom", (), {"loss": loss})()).item() == 0.5
    assert loss_of(object()) is None and loss_of(torch.zeros(3)) is None


def _metadata(iteration: int) -> MetricMetadata:
    return MetricMetadata(Progress(iteration, 100), 1, 1, iteration)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()), max_size=40),
    st.sampled_from(["continue", "skip", "stop"]),
    st.integers(min_value=1, max_value=7),
)
def test_the_watch_says_the_first_non_finite_loss_once_at_any_drains(losses, mode, drain_every):
    said: list[str] = []
    watch = NonFiniteWatch(mode, say=said.append)
    for iteration, value in enumerate(losses, 1):
        item = object() if value is None else LossInput(torch.tensor(value, dtype=torch.float64))
        watch.note(Split.TRAIN, 0, item, _metadata(iteration))
        if iteration % drain_every == 0 or iteration == len(losses):
            watch.drained(Split.TRAIN, own=[float(v) for v in watch.pending(Split.TRAIN)])
    bad = [i for i, v in enumerate(losses, 1) if v is not None and not math.isfinite(v)]
    assert len(said) == (1 if bad else 0)
    if bad:
        assert f"at epoch 1, iteration {bad[0]}." in said[0]
    assert watch.stop_requested == (mode == "stop" and bool(bad))
    assert watch.stopped_at == ((1, bad[0]) if mode == "stop" and bad else None)
    assert watch.pending() == []
