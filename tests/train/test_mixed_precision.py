"""`LearnerBuilder.mixed_precision`: steps in the half type, float32 parameters, optimizer state
and checkpoints, learning on MNIST, overflow skipping, loss scaling across accumulated
iterations, the scaler's state in the checkpoint."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.nn.loss import CrossEntropyLossConfig
from burnish.optim import AdamConfig, SgdConfig
from burnish.record import DefaultRecorder
from burnish.train import ClassificationOutput, LearnerBuilder
from burnish.train.checkpoint.file import FileCheckpointer

from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, builder, loaders


class Probe(Mlp):
    """Records the dtype of an activation in each step, the parameters before each train step,
    and makes the loss infinite at chosen training iterations."""

    def __init__(self, overflow_at: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.overflow_at = overflow_at
        self.train_dtypes: set[torch.dtype] = set()
        self.valid_dtypes: set[torch.dtype] = set()
        self.params_before: list[list[torch.Tensor]] = []

    def hidden(self, batch) -> torch.Tensor:
        return self.linear1(batch.images.flatten(1))

    def train_step(self, batch):
        self.params_before.append([p.detach().clone() for p in self.parameters()])
        self.train_dtypes.add(self.hidden(batch).dtype)
        output = super().train_step(batch)
        if len(self.params_before) in self.overflow_at:
            loss = output.item.loss * float("inf")
            output.grads = bn.backward(loss)
        return output

    def valid_step(self, batch):
        self.valid_dtypes.add(self.hidden(batch).dtype)
        return super().valid_step(batch)


class Float32Loss(Mlp):
    """The loss computed in float32 from half-precision logits, as CUDA's autocast does: a
    float16 loss cannot carry the first scale (2**16 > 65504), so that step would be skipped."""

    def forward_classification(self, batch) -> ClassificationOutput:
        output = self.forward(batch.images).float()
        loss = CrossEntropyLossConfig().init(output.device).forward(output, batch.targets)
        return ClassificationOutput(loss, output, batch.targets)


def fit(tmp_path, precision, model=None, optim=None, epochs=1, configure=None, **loader_args):
    bn.seed(5)
    model = model if model is not None else Probe()
    b = builder(tmp_path / "artifacts", epochs, DefaultRecorder())
    if precision is not None:
        b = b.mixed_precision(precision)
    if configure is not None:
        b = configure(b)
    learner = b.build(model, optim or AdamConfig().init(), 1e-3)
    return learner.fit(*loaders(**loader_args)), model


def last_checkpoint(artifact_dir) -> dict:
    files = FileCheckpointer(artifact_dir / "checkpoint", DefaultRecorder())
    return files.load(files.committed()[-1])


@pytest.mark.parametrize(
    ("precision", "dtype"),
    [("bf16", torch.bfloat16), ("fp16", torch.float16), (torch.float16, torch.float16)],
)
def test_steps_run_in_the_half_type_and_everything_kept_stays_float32(tmp_path, precision, dtype):
    result, model = fit(tmp_path, precision, train_items=128, valid_items=64)
    assert model.train_dtypes == {dtype} and model.valid_dtypes == {dtype}
    assert {p.dtype for p in result.model.parameters()} == {torch.float32}
    records = last_checkpoint(tmp_path / "artifacts")
    tensors = [t for t in records["model"].values() if isinstance(t, torch.Tensor)]
    tensors += [
        value
        for state in records["optim"]["state"].values()
        for value in state.values()
        if isinstance(value, torch.Tensor)
    ]
    assert tensors and {t.dtype for t in tensors} == {torch.float32}
    scaler = records["learner"]["grad_scaler"]
    assert (scaler is not None) == (dtype is torch.float16)


def test_without_mixed_precision_steps_stay_float32(tmp_path):
    _, model = fit(tmp_path, None, train_items=64, valid_items=64)
    assert model.train_dtypes == {torch.float32} == model.valid_dtypes


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_learns_mnist(tmp_path, precision):
    result, _ = fit(tmp_path, precision, epochs=3, train_items=640)
    lines = iteration_lines(result.artifact_dir / "valid" / "epoch-3" / "Accuracy.log")
    correct = sum(float(line.split(",")[0]) * int(line.split(",")[1]) for line in lines)
    items = sum(int(line.split(",")[1]) for line in lines)
    assert correct / items > 60.0  # 10 % is chance; float32 reaches ~70 % here


def test_overflow_skips_the_step_and_halves_the_scale(tmp_path):
    model = Probe(overflow_at=(3, 7))
    fit(tmp_path, "fp16", model=model, train_items=640)  # 10 iterations
    before = model.params_before
    skipped = [
        i
        for i in range(1, len(before))
        if all(torch.equal(a, b) for a, b in zip(before[i - 1], before[i]))
    ]
    assert {3, 7} <= set(skipped)  # iteration i's step did not move the parameters
    scaler = last_checkpoint(tmp_path / "artifacts")["learner"]["grad_scaler"]
    assert scaler["scale"] == 2.0**16 / 2 ** len(skipped)  # halved once per skipped step
    assert scaler["growth_tracker"] == 10 - max(skipped)  # good steps since the last skip


@pytest.mark.parametrize("accumulation", [1, 2])
def test_scaled_gradients_are_unscaled_once_per_optimizer_step(tmp_path, accumulation):
    """SGD moves by lr * gradient: any scale left in (or divided twice) would show."""

    def run(precision, directory):
        bn.seed(5)
        model = Float32Loss()
        start = [p.detach().clone() for p in model.parameters()]
        b = builder(directory, 1).grads_accumulation(accumulation)
        if precision is not None:
            b = b.mixed_precision(precision)
        one_step = loaders(64, 64 * accumulation, 64)  # exactly one optimizer step
        result = b.build(model, SgdConfig().init(), 0.1).fit(*one_step)
        return [p.detach() - s for p, s in zip(result.model.parameters(), start)]

    half = run("fp16", tmp_path / "fp16")
    full = run(None, tmp_path / "fp32")
    for moved, reference in zip(half, full):
        assert reference.abs().max() > 1e-4
        torch.testing.assert_close(moved, reference, rtol=0.02, atol=1e-5)


def test_scaler_state_round_trips_through_the_checkpoint(tmp_path):
    model = Probe(overflow_at=(2,))
    fit(tmp_path, "fp16", model=model, epochs=1, train_items=256)
    saved = last_checkpoint(tmp_path / "artifacts")["learner"]["grad_scaler"]
    assert saved["scale"] < 2.0**16
    # Resume epoch 1's checkpoint for a second epoch: the scaler continues from the record.
    resumed = Probe()
    bn.seed(5)
    learner = (
        builder(tmp_path / "artifacts", 2, DefaultRecorder())
        .mixed_precision("fp16")
        .checkpoint(1)
        .build(resumed, AdamConfig().init(), 1e-3)
    )
    learner.fit(*loaders(train_items=256))
    after = last_checkpoint(tmp_path / "artifacts")["learner"]["grad_scaler"]
    # Four more good steps: the scale carried over and the tracker counted on from the record.
    assert after == {"scale": saved["scale"], "growth_tracker": saved["growth_tracker"] + 4}


@pytest.mark.parametrize("precision", ["fp8", "float16", torch.float32, None, 16])
def test_unknown_precision_is_refused_by_name(precision):
    with pytest.raises(ValueError, match=r"`precision` must be \"bf16\", \"fp16\""):
        LearnerBuilder("unused").mixed_precision(precision)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_fp16_on_cuda(tmp_path):
    def on_cuda(b: LearnerBuilder) -> LearnerBuilder:
        return b.devices(["cuda"])

    result, model = fit(tmp_path, "fp16", configure=on_cuda, train_items=256, valid_items=64)
    assert model.train_dtypes == {torch.float16}
    assert next(result.model.parameters()).device.type == "cuda"
