"""`burnish inspect FILE` on the records a real run wrote."""

import burnish as bn
from burnish.record import CompactRecorder

from tests.cli.helpers import burnish
from tests.cli.tiny_run import Classifier, RunConfig


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
    """A nested record: tensors under their flat names, and its other values counted."""
    path = run_dir / "checkpoint" / "epoch-3" / "optim.mpk"
    record = CompactRecorder().load(path)
    result = burnish("inspect", path)
    assert result.returncode == 0, result.stderr
    assert "state.encoder.weight.moment_1" in result.stdout
    assert "other values" in result.stdout
    assert record["optimizer"] == "Adam"
