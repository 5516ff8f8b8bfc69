"""`with_ema(decay, ...)`: the average equals a hand-written EMA, validation runs on it (or on
the trained weights, or both, logged side by side), every checkpoint holds it, and the builder
refuses what cannot work. The SIGKILL resume of the average is in test_crash_resume.py."""

from __future__ import annotations

import math
import weakref

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.nn.loss import CrossEntropyLossConfig
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import ClassificationOutput, Learner, LearnerBuilder, TrainOutput
from burnish.train.components.ema import EmaSettings
from burnish.train.logger import FileMetricLogger
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer
from burnish.train.settings.supervised import SupervisedTraining

from tests.train.helpers import Mlp, builder, loaders

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class BatchNormMlp(bn.Module):
    """Parameters, floating-point buffers (running statistics) and an integer buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.linear1 = nn.Linear(28 * 28, 24)
        self.norm = nn.BatchNorm1d(24)
        self.linear2 = nn.Linear(24, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.linear2(torch.relu(self.norm(self.linear1(images.flatten(1)))))

    def classify(self, batch) -> ClassificationOutput:
        output = self.forward(batch.images)
        loss = CrossEntropyLossConfig().init(output.device).forward(output, batch.targets)
        return ClassificationOutput(loss, output, batch.targets)

    def train_step(self, batch) -> TrainOutput:
        item = self.classify(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> ClassificationOutput:
        return self.classify(batch)


class HandEma:
    """The EMA written out per tensor, in float64, fed the model after each optimizer step."""

    def __init__(self, model: nn.Module, settings: EmaSettings) -> None:
        self.settings = settings
        self.params = {name for name, _ in model.named_parameters()}
        self.values = {k: v.detach().double().clone() for k, v in model.state_dict().items()}
        self.steps = self.updates = 0

    def after_step(self, model: nn.Module) -> None:
        self.steps += 1
        if self.steps % self.settings.update_every:
            return
        self.updates += 1
        s = self.settings
        decay = s.decay if not s.warmup else min(s.decay, 1 - self.updates**-s.warmup_power)
        for name, value in model.state_dict().items():
            averaged = name in self.params or s.buffers == "average"
            if value.is_floating_point() and averaged:
                self.values[name] = decay * self.values[name] + (1 - decay) * value.double()
            else:
                self.values[name] = value.detach().double().clone()


def watch_steps(optim, hand: HandEma) -> None:
    """Call `hand.after_step(model)` after every optimizer step (skipped or not)."""
    step = optim._step

    def stepping(lr, model, grads, found_inf):
        model = step(lr, model, grads, found_inf)
        hand.after_step(model)
        return model

    optim._step = stepping


SETTINGS = {
    "decay": {"decay": 0.9},
    "warmup": {"decay": 0.99, "warmup": True, "warmup_power": 0.75},
    "every-3+copy-buffers": {"decay": 0.8, "update_every": 3, "buffers": "copy"},
}
RUNS = {
    "eager": lambda b: b,
    "bf16": lambda b: b.mixed_precision("bf16"),
    "accumulation": lambda b: b.grads_accumulation(2),
}


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_average_equals_a_hand_written_ema_over_two_epochs(tmp_path, name, run):
    bn.seed(3)
    model, optim = BatchNormMlp(), AdamConfig().init()
    settings = EmaSettings(**SETTINGS[name])
    hand = HandEma(model, settings)
    watch_steps(optim, hand)
    configured = RUNS[run](builder(tmp_path, epochs=2).with_ema(**SETTINGS[name]))
    result = configured.build(model, optim, 1e-2).fit(*loaders(32, 320, 64))
    assert result.epochs_completed == 2
    expected_steps = 20 if run != "accumulation" else 10
    assert hand.steps == expected_steps
    average = result.ema.state_dict()
    assert average.keys() == hand.values.keys()
    for key, value in hand.values.items():
        torch.testing.assert_close(average[key].double(), value, rtol=1e-6, atol=1e-6, msg=key)
    # The average is not the model: it lags (a test that could fail).
    assert not torch.allclose(average["linear1.weight"], result.model.linear1.weight)
    assert result.ema is not result.model and not result.ema.training


def test_supervised_training_keeps_the_same_average(tmp_path):
    bn.seed(3)
    model, optim = BatchNormMlp(), AdamConfig().init()
    hand = HandEma(model, EmaSettings(0.9))
    watch_steps(optim, hand)
    train, valid = loaders(32, 320, 64)
    training = (
        SupervisedTraining(tmp_path, train, valid)
        .metrics(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(2)
        .with_ema(0.9)
    )
    result = training.launch(Learner(model, optim, 1e-2))
    for key, value in hand.values.items():
        torch.testing.assert_close(result.ema.state_dict()[key].double(), value, atol=1e-6, rtol=0)


def _batch_losses(model: nn.Module, loader) -> list[float]:
    model = bn.valid(model)
    with torch.no_grad():
        return [float(model.valid_step(batch).loss) for batch in loader]


def _logged(artifact_dir, name: str, epoch: int) -> list[float]:
    logger = FileMetricLogger(artifact_dir / "valid")
    return [float(entry.value) for entry in logger.read_numeric(name, epoch)]


@pytest.mark.parametrize("validate", ["ema", "model", "both"])
def test_validation_runs_on_the_weights_asked_for(tmp_path, validate):
    bn.seed(5)
    train, valid = loaders(32, 256, 96)
    learner = builder(tmp_path, epochs=2).with_ema(0.8, validate=validate)
    result = learner.build(BatchNormMlp(), AdamConfig().init(), 1e-2).fit(train, valid)
    on_ema, on_model = _batch_losses(result.ema, valid), _batch_losses(result.model, valid)
    assert not any(math.isclose(a, b) for a, b in zip(on_ema, on_model))
    expected = on_model if validate == "model" else on_ema
    assert _logged(tmp_path, "Loss", 2) == pytest.approx(expected, rel=1e-6)
    if validate == "both":
        assert _logged(tmp_path, "Raw Loss", 2) == pytest.approx(on_model, rel=1e-6)
    else:
        assert not (tmp_path / "valid" / "epoch-2" / "Raw_Loss.log").exists()


def test_on_mnist_the_ema_accuracy_is_reported_beside_the_raw_models(tmp_path, capsys):
    bn.seed(2)
    learner = (
        builder(tmp_path, epochs=3)
        .renderer(CliMetricsRenderer())
        .with_ema(0.9, validate="both")
        .summary()
        .build(Mlp(), AdamConfig().init(), 2e-3)
    )
    result = learner.fit(*loaders(64, 1280, 256))
    printed = capsys.readouterr().out
    summary = str(result.summary)
    for name in ("Accuracy", "Raw Accuracy", "Loss", "Raw Loss"):
        assert name in summary
    ema, raw = _logged(tmp_path, "Accuracy", 3), _logged(tmp_path, "Raw Accuracy", 3)
    assert len(ema) == len(raw) == 4 and ema != raw
    assert sum(ema) / 4 > 50 and sum(raw) / 4 > 50  # both learned MNIST
    assert "| Accuracy " in printed and "| Raw Accuracy " in printed  # the epoch lines


def test_every_checkpoint_holds_the_average_and_resume_continues_it(tmp_path):
    def run(directory, stop_after: int | None):
        bn.seed(9)
        model = StoppingMlp(stop_after)
        b = (
            builder(directory, epochs=2, recorder=DefaultRecorder())
            .with_ema(0.7, warmup=True, update_every=2)
            .checkpoint_every(3)
            .deterministic()
            .resume()
        )
        model.interrupter = weakref.ref(b.interrupter())  # the EMA deep-copies the model
        return b.build(model, AdamConfig().init(), 1e-2).fit(*loaders(32, 320, 64))

    reference = run(tmp_path / "reference", None).ema.state_dict()
    first = run(tmp_path / "resumed", 7)
    assert first.interrupted
    for checkpoint in (tmp_path / "resumed" / "checkpoint").iterdir():
        assert any(p.name.startswith("ema.") for p in checkpoint.iterdir()), checkpoint
    resumed = run(tmp_path / "resumed", None)
    assert resumed.epochs_completed == 2
    for key, value in reference.items():
        assert torch.equal(resumed.ema.state_dict()[key], value), key


class StoppingMlp(Mlp):
    """Asks the interrupter to stop at its `stop_after`-th train step."""

    def __init__(self, stop_after: int | None) -> None:
        super().__init__(dropout=0.1)
        self.stop_after = stop_after
        self.calls = 0
        self.interrupter = None

    def train_step(self, batch):
        self.calls += 1
        if self.calls == self.stop_after:
            self.interrupter().stop("test")
        return super().train_step(batch)


def test_a_checkpoint_without_an_average_starts_it_from_its_weights(tmp_path, caplog):
    bn.seed(1)
    first = builder(tmp_path, epochs=1, recorder=DefaultRecorder())
    first.build(Mlp(), AdamConfig().init(), 1e-2).fit(*loaders(32, 128, 64))
    resumed = builder(tmp_path, epochs=2, recorder=DefaultRecorder()).resume().with_ema(0.5)
    with caplog.at_level("WARNING", logger="burnish.train"):
        result = resumed.build(Mlp(), AdamConfig().init(), 1e-2).fit(*loaders(32, 128, 64))
    assert "holds no EMA average" in caplog.text
    assert result.epochs_completed == 2 and result.ema is not None


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"decay": 1.0}, ValueError, r"`decay` must be in \[0, 1\).*decay=1.0"),
        ({"decay": -0.1}, ValueError, r"decay=-0.1"),
        ({"decay": "0.9"}, TypeError, r"`decay` must be a float"),
        ({"decay": 0.9, "update_every": 0}, ValueError, r"`update_every` must be an integer"),
        ({"decay": 0.9, "buffers": "mean"}, ValueError, r"'average'.*'copy'.*buffers='mean'"),
        ({"decay": 0.9, "validate": "raw"}, ValueError, r"'ema'.*'model'.*'both'"),
        ({"decay": 0.9, "warmup_power": 0}, ValueError, r"`warmup_power` must be > 0"),
    ],
)
def test_bad_settings_name_the_setting_and_the_fix(kwargs, error, match):
    with pytest.raises(error, match=match):
        LearnerBuilder("unused").with_ema(**kwargs)


def test_fsdp_is_refused_clearly():
    b = LearnerBuilder("unused").with_ema(0.99).strategy("fsdp")
    with pytest.raises(ValueError, match=r"with_ema\(\.\.\.\) does not support strategy\('fsdp'\)"):
        b.build(Mlp(), AdamConfig().init(), 1e-3)


def test_a_metric_named_like_a_raw_twin_is_refused():
    class Raw(AccuracyMetric):
        def __init__(self):
            super().__init__()
            self.name = "Raw Accuracy"

    b = (
        LearnerBuilder("unused")
        .metric_valid_numeric(AccuracyMetric())
        .metric_valid_numeric(Raw())
        .with_ema(0.9, validate="both")
    )
    with pytest.raises(ValueError, match=r"\['Raw Accuracy'\] are registered twice"):
        b.build(Mlp(), AdamConfig().init(), 1e-3)


def test_early_stopping_may_watch_a_raw_twin(tmp_path):
    from burnish.train import MetricEarlyStoppingStrategy, StoppingCondition
    from burnish.train.metric.store import Aggregate, Direction
    from burnish.train.split import Split

    strategy = MetricEarlyStoppingStrategy(
        "Raw Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID, StoppingCondition(1)
    )
    b = builder(tmp_path, epochs=1).with_ema(0.9, validate="both").early_stopping(strategy)
    result = b.build(Mlp(), AdamConfig().init(), 1e-3).fit(*loaders(32, 64, 64))
    assert result.epochs_completed == 1
