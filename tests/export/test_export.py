"""`burnish.export.export` of the guide's trained MNIST model: the ONNX file run by
onnxruntime, the torch.export program by `torch.export.load`, each compared here with the
model's inference twin at batch sizes the export itself did not check."""

from __future__ import annotations

import sys

import onnxruntime
import pytest
import torch
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

import burnish as bn
from burnish.export import ExportError, export

from examples.mnist.data import MnistBatch

RTOL, ATOL = 1e-4, 1e-5  # float32 on the CPU: what two runtimes' reduction orders leave


def images(loader, count: int) -> torch.Tensor:
    """The first `count` validation images (the loader's first batches)."""
    batches: list[MnistBatch] = []
    for batch in loader.slice(0, count):
        batches.append(batch)
    return torch.cat([batch.images for batch in batches])[:count]


def expected(model, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return bn.valid(model)(x)


def run_onnx(path, x: torch.Tensor) -> torch.Tensor:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (name,) = [node.name for node in session.get_inputs()]
    return torch.from_numpy(session.run(None, {name: x.numpy()})[0])


def run_program(path, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return torch.export.load(str(path)).module()(x)


@pytest.mark.parametrize(("to", "run"), [("onnx", run_onnx), ("torch-export", run_program)])
def test_exported_file_computes_the_trained_model_at_any_batch_size(
    trained, loader, tmp_path, to, run
) -> None:
    result = export(trained, loader, tmp_path / "model", to, inputs="images")
    extension = {"onnx": ".onnx", "torch-export": ".pt2"}[to]
    assert result.path == tmp_path / f"model{extension}" and result.path.is_file()
    assert result.target == to and result.model == "Model"
    assert result.batch_sizes == (64, 1)  # the example's batch, then one item
    assert result.largest_difference <= result.allowed
    assert [path.name for path in tmp_path.iterdir()] == [result.path.name]  # no stage left
    for count in (7, 64, 130):  # 7 and 130: sizes the export never ran
        x = images(loader, count)
        torch.testing.assert_close(run(result.path, x), expected(trained, x), rtol=RTOL, atol=ATOL)


def test_the_export_is_the_inference_twin_and_leaves_the_model_and_loader_as_they_were(
    trained, loader, tmp_path
) -> None:
    """Dropout (p=0.5) is off in the file: the training model, in train mode, would differ."""
    before = {name: p.clone() for name, p in trained.named_parameters()}
    epoch = loader.epoch
    result = export(trained, loader, tmp_path / "model", "torch-export", inputs="images")
    assert trained.training and loader.epoch == epoch
    assert all(torch.equal(p, before[name]) for name, p in trained.named_parameters())
    x = images(loader, 16)
    with torch.no_grad():
        in_train_mode = trained(x)
    assert not torch.allclose(run_program(result.path, x), in_train_mode, rtol=RTOL, atol=ATOL)
    assert all(p.requires_grad for p in trained.parameters())


def test_the_training_result_exports_its_model(guide_result, loader, tmp_path) -> None:
    result = guide_result.export(loader, tmp_path / "model", "torch-export", inputs="images")
    assert result.path == tmp_path / "model.pt2" and result.batch_sizes == (64, 1)
    x = images(loader, 9)
    with torch.no_grad():
        expected_logits = guide_result.model(x)  # the inference twin the run returned
    torch.testing.assert_close(run_program(result.path, x), expected_logits, rtol=RTOL, atol=ATOL)


def test_a_static_batch_fixes_the_shape_and_a_batch_of_one_still_exports_a_dynamic_one(
    trained, loader, tmp_path
) -> None:
    x = images(loader, 64)
    static = export(trained, x, tmp_path / "static", "onnx", dynamic_batch=False)
    assert static.batch_sizes == (64,)
    with pytest.raises(InvalidArgument, match="Got invalid dimensions for input: images"):
        run_onnx(static.path, x[:7])
    one = export(trained, x[:1], tmp_path / "one", "onnx")  # traced at 2: 1 would specialise
    assert one.batch_sizes == (1, 2)
    torch.testing.assert_close(
        run_onnx(one.path, x[:5]), expected(trained, x[:5]), rtol=RTOL, atol=ATOL
    )


def test_a_model_torch_cannot_export_is_named_with_the_target_and_torchs_reason(
    tmp_path, capsys
) -> None:
    class Branchy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(x) if x.sum() > 0 else -self.linear(x)

    for to in ("onnx", "torch-export"):
        with pytest.raises(ExportError, match=rf"Could not export Branchy to {to}: torch's reason: "
                           ".*data-dependent"):  # fmt: skip
            export(Branchy(), torch.randn(3, 4), tmp_path / "branchy", to)
    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr() == ("", "")  # torch prints the partial graph; not through us


class Counter(torch.nn.Module):
    """Reads a Python counter the tracer bakes in as a constant: the file computes x * 1 while
    the model goes on to x * 2, x * 3, ... (a model the exporter cannot represent)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.linear(x) * self.calls


@pytest.mark.parametrize("to", ["onnx", "torch-export"])
def test_a_file_that_computes_something_else_is_refused_and_the_previous_file_kept(
    tmp_path, to
) -> None:
    model = torch.nn.Linear(4, 4)
    first = export(model, torch.randn(3, 4), tmp_path / "model", to)
    good = first.path.read_bytes()
    with pytest.raises(ExportError, match=rf"The {to} export of Counter does not compute what the "
                       "model computes: output 0 differs by up to"):  # fmt: skip
        export(Counter(), torch.randn(3, 4), tmp_path / "model", to)
    assert first.path.read_bytes() == good
    assert [path.name for path in tmp_path.iterdir()] == [first.path.name]


def test_bad_targets_examples_and_paths_say_what_to_pass(trained, loader, tmp_path) -> None:
    x = images(loader, 4)
    with pytest.raises(ExportError, match=r'`to` must be "onnx" or "torch-export"\. Received: '
                       "to='tflite'"):  # fmt: skip
        export(trained, x, tmp_path / "model", "tflite")
    with pytest.raises(ExportError, match="Which part of a MnistBatch batch is the model's input"):
        export(trained, loader, tmp_path / "model", "onnx")
    with pytest.raises(
        ExportError, match=r"has no attribute 'pixels'\. Its fields: images, targets"
    ):
        export(trained, loader, tmp_path / "model", "onnx", inputs="pixels")
    with pytest.raises(ExportError, match="The example batch is empty"):
        export(trained, x[:0], tmp_path / "model", "onnx")
    with pytest.raises(ExportError, match="all NaN or infinite"):
        export(trained, torch.full_like(x, float("nan")), tmp_path / "model", "onnx")
    with pytest.raises(ExportError, match="must be the forward's inputs"):
        export(trained, 3, tmp_path / "model", "onnx")
    with pytest.raises(FileNotFoundError, match="its directory does not exist"):
        export(trained, x, tmp_path / "missing" / "model", "onnx")
    (tmp_path / "model.onnx").mkdir()
    with pytest.raises(IsADirectoryError, match="Cannot export over a directory"):
        export(trained, x, tmp_path / "model", "onnx")
    assert [path.name for path in tmp_path.iterdir()] == ["model.onnx"]


def test_onnx_without_its_packages_says_how_to_install_them(monkeypatch, tmp_path) -> None:
    """onnxruntime not importable (as where `burnish[export]` is not installed)."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ExportError, match=r"needs onnxruntime: install them \(pip install "
                       r"'burnish\[export\]'\), or export with to='torch-export'"):  # fmt: skip
        export(torch.nn.Linear(2, 2), torch.randn(2, 2), tmp_path / "model", "onnx")
