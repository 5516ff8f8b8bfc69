"""`burnish inspect FILE` on the records a real run wrote."""

import burnish as bn
from burnish.record import CompactRecorder

from tests.cli.helpers import burnish
from tests.cli.tiny_run import Classifier, RunConfig, train_run


def test_inspect_a_saved_model(run_dir):
    result = burnish("inspect", run_dir / "model.mpk")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Format: burnish.mpk (named MessagePack), format version 1" in out
    assert "Precision: HalfPrecisionSettings (floats stored as float16, ints as int16)" in out
    assert f"Written by: burnish {bn.__version__}" in out
    assert "Record type: module:tests.cli.tiny_run.Classifier" in out
    model = Classifier(RunConfig().hidden_size)
    total = sum(p.numel() for p in model.parameters())
    assert f"Tensors: 4, {total:,} elements in all" in out
    tensors = table_rows(out[: out.index("Model Summary")])
    assert list(tensors) == ["Tensor", *dict(model.named_parameters())]
    for name, parameter in model.named_parameters():
        assert tensors[name] == [str(list(parameter.shape)), "float16", "float32",
                                 f"{parameter.numel():,}"]  # fmt: skip
    # The model summary, grouped per top-level module (ReLU has no parameters: no entry).
    summary = out[out.index("Model Summary") :]
    modules = table_rows(summary)
    assert list(modules) == ["Module", "encoder", "head"]
    for child in ("encoder", "head"):
        count = sum(p.numel() for p in getattr(model, child).parameters())
        assert modules[child] == [f"{count:,}"]
    assert f"Total params: {total:,}" in summary


def table_rows(text: str) -> dict[str, list[str]]:
    """The rows of the `| a | b |` tables in `text`, by first cell (rule lines left out)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| "):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_inspect_a_checkpoint_optimizer_record(run_dir):
    """Adam's moments are shown as optimizer state, not as a model of a module named `state`."""
    path = run_dir / "checkpoint" / "epoch-3" / "optim.mpk"
    record = CompactRecorder().load(path)
    result = burnish("inspect", path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "state.encoder.weight.moment_1" in out  # the tensors, under their flat names
    assert "other values" in out
    assert record["optimizer"] == "Adam"
    assert "Model Summary" not in out and "Total params" not in out
    model = Classifier(RunConfig().hidden_size)
    names = list(dict(model.named_parameters()))
    steps = RunConfig().num_epochs * 256 // 32  # 8 iterations an epoch
    total = sum(p.numel() for p in model.parameters())
    assert out.endswith(
        "Optimizer state: Adam (record version 1), not a model.\n"
        f"Steps taken: {steps} (per parameter)\n"
        f"Parameters with state: 4 ({', '.join(names)})\n"
        f"State tensors per parameter: moment_1, moment_2 ({2 * total:,} elements in all)\n"
    )


def test_inspect_a_checkpoint_learner_record(run_dir):
    """The learner's record is where training stands, not a model with an `rng` module."""
    result = burnish("inspect", run_dir / "checkpoint" / "epoch-3" / "learner.mpk")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Model Summary" not in out and "Total params" not in out
    state = out[out.index("Learner state") :].splitlines()
    assert state[:6] == [
        "Learner state: where training stands, for `resume()` (not a model).",
        "Position: epoch 3 finished (training and validation)",
        "Run ended: after epoch 3 (its last epoch; resume() goes on only with a larger num_epochs)",
        f"Optimizer steps: {RunConfig().num_epochs * 256 // 32}",
        f"Learning rate: {RunConfig().learning_rate} (the last iteration's)",
        "World size: 1",
    ]
    assert "Metric states: train Accuracy, Loss; valid Accuracy, Loss" in state
    assert "Metric logs: train epoch 4 (no line yet); valid epoch 4 (no line yet)" in state
    assert "Random generator states: python, numpy, torch" in state


def test_inspect_a_checkpoint_scheduler_and_model_record(run_dir):
    checkpoint = run_dir / "checkpoint" / "epoch-3"
    result = burnish("inspect", checkpoint / "scheduler.mpk")
    assert result.stdout.endswith("Learning-rate scheduler state: ConstantLr\n"), result.stdout
    result = burnish("inspect", checkpoint / "model.mpk")  # a model: its summary, as before
    assert "Model Summary" in result.stdout and "Optimizer state" not in result.stdout


def test_inspect_a_mid_epoch_learner_record(tmp_path):
    """A checkpoint taken inside an epoch says after which iteration it was taken."""
    run = train_run(tmp_path / "run", epochs=1, stop_after=6)
    checkpoint = run / "checkpoint" / "epoch-1-iteration-6"
    result = burnish("inspect", checkpoint / "learner.mpk")
    assert "Position: epoch 1, after training iteration 6" in result.stdout, result.stdout
    assert "Optimizer steps: 6" in result.stdout
    assert "Metric logs: train epoch 1 (Accuracy 6 lines, Loss 6 lines)" in result.stdout
