"""`burnish export DIR --to onnx|torch-export --model M:F --example M:L`, run as a real process
on the guide's MNIST run; the file it writes is run here and compared with the model."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import onnxruntime
import pytest
import torch

import burnish as bn
from burnish.module import into_record
from burnish.record import CompactRecorder

from examples.mnist.export import model, valid_loader
from examples.mnist.training import guide_config, train
from tests.cli.helpers import assert_one_line_error, burnish, command

REPO = Path(__file__).resolve().parents[2]
MODEL, LOADER = "examples.mnist.export:model", "examples.mnist.export:valid_loader"
GUIDE = ["--model", MODEL, "--example", LOADER]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    """The guide trained 1 epoch on 640 MNIST images (~3 s). Read only: copy it to write."""
    directory = tmp_path_factory.mktemp("export-cli") / "mnist"
    train(directory, guide_config().with_num_epochs(1).with_num_workers(0), "cpu", limit=640)
    return directory


@pytest.fixture
def run(trained_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(trained_run, tmp_path / "run"))


def reference(directory: Path, record: Path, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` validation images and what the run's model, in eval mode, makes of them."""
    trained = model(directory).load_file(record, CompactRecorder(), torch.device("cpu"))
    images = torch.cat([batch.images for batch in valid_loader(directory)])[:count]
    with torch.no_grad():
        return images, bn.valid(trained)(images)


def test_the_console_script_exports_onnx_that_onnxruntime_runs_to_the_models_outputs(run) -> None:
    result = subprocess.run(
        [*command(), "export", run, "--to", "onnx", *GUIDE, "--inputs", "images"],
        cwd=REPO,  # the console script imports `examples` from the working directory
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # torch's exporter talks; the command says one line
    line = re.fullmatch(
        rf"Exported Model \({re.escape(str(run / 'model.mpk'))}\) to "
        rf"{re.escape(str(run / 'model.onnx'))} \(onnx, 2\.0 MiB\); run by onnxruntime "
        r"[\d.]+ at batch sizes 64 and 1: largest difference (\S+) \(allowed (\S+)\)\n",
        result.stdout,
    )
    assert line is not None, result.stdout
    assert float(line.group(1)) <= float(line.group(2))
    session = onnxruntime.InferenceSession(str(run / "model.onnx"))
    assert [node.name for node in session.get_inputs()] == ["images"]
    images, expected = reference(run, run / "model.mpk", 10)
    (logits,) = session.run(None, {"images": images.numpy()})
    torch.testing.assert_close(torch.from_numpy(logits), expected, rtol=1e-4, atol=1e-5)


def test_a_checkpoints_model_to_torch_export_at_another_path(run, tmp_path) -> None:
    output = tmp_path / "exported" / "mnist"
    output.parent.mkdir()
    result = burnish(
        "export", run, "--to", "torch-export", *GUIDE, "--inputs", "images",
        "--checkpoint", "epoch-1", "-o", output, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = run / "checkpoint" / "epoch-1" / "model.mpk"
    assert result.stdout.startswith(f"Exported Model ({record}) to {output}.pt2 (torch-export")
    assert not (run / "model.pt2").exists()
    images, expected = reference(run, record, 100)
    with torch.no_grad():
        actual = torch.export.load(f"{output}.pt2").module()(images)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


def test_a_static_batch_export_says_it_ran_one_batch_size(run) -> None:
    result = burnish(
        "export",
        run,
        "--to",
        "torch-export",
        *GUIDE,
        "--inputs",
        "images",
        "--static-batch",
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert "at batch size 64: largest difference" in result.stdout


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["missing-dir", *GUIDE], ["missing-dir is missing: pass a run's artifact directory"]),
        (
            ["{run}", "--model", "examples.mnist.export", "--example", "x:y"],
            ["--model must be 'module:callable'", "Received: 'examples.mnist.export'"],
        ),
        (
            ["{run}", "--model", "no_such_package:model", "--example", "x:y"],
            ["cannot import 'no_such_package'", "add it to PYTHONPATH"],
        ),
        (
            ["{run}", "--model", "examples.mnist.export:nothing", "--example", "x:y"],
            ["'examples.mnist.export' has no attribute 'nothing'"],
        ),
        (
            ["{run}", "--model", LOADER, "--example", LOADER],
            ["returned a DataLoader, not a torch.nn.Module"],
        ),
        (
            ["{run}", "--model", "examples.mnist.model:Model", "--example", LOADER],
            ["--model examples.mnist.model:Model raised AttributeError"],
        ),
        (
            ["{run}", "--model", "torch.nn:Identity", "--example", LOADER],
            [
                "does not fit the model --model torch.nn:Identity built: Record does not match "
                "Identity (8 problems): unexpected key `conv1.weight`",
                "Check that --model builds the run's model",
                "--record FILE or --checkpoint NAME",
            ],
        ),
        (["{run}", *GUIDE], ["Which part of a MnistBatch batch is the model's input"]),
        (
            ["{run}", *GUIDE, "--checkpoint", "epoch-9"],
            ["--checkpoint epoch-9", "no committed checkpoint of that name (newest: epoch-1)"],
        ),
        (["{run}", *GUIDE, "--record", "nope.mpk"], ["--record nope.mpk: no such file"]),
    ],
)
def test_bad_input_is_one_line_naming_what_to_pass(trained_run, arguments, fragments) -> None:
    arguments = [a.replace("{run}", str(trained_run)) for a in arguments]
    result = burnish("export", *arguments, "--to", "onnx", cwd=REPO)
    assert_one_line_error(result, "burnish export: error: ", *fragments)
    assert not (trained_run / "model.onnx").exists()


@pytest.mark.parametrize("record", ["model.mpk", "model.bpk"])
def test_a_record_that_does_not_fit_says_what_the_command_line_can_change(run, record) -> None:
    # load_record's error ends "or pass strict=False", a ModuleRecord's ".allow_partial()":
    # options a Python caller has; the command's user changes --model or the record instead.
    if record == "model.bpk":  # a Burnpack record: loaded by ModuleRecord.apply_to
        into_record(model(run)).save(run / "mnist-weights.bpk")
        record = "mnist-weights.bpk"
    arguments = ["--model", "torch.nn:Identity", "--example", LOADER, "--record", record]
    result = burnish("export", run, "--to", "onnx", *arguments, cwd=REPO)
    assert_one_line_error(
        result,
        f"burnish export: error: {run / record} does not fit the model --model "
        "torch.nn:Identity built: ",
        "conv1.weight",
        f"Check that --model builds the run's model with the run's settings (e.g. from {run}/"
        "config.json), or pass the record of that model with --record FILE or --checkpoint NAME.",
    )
    for remedy in ("strict", "allow_partial", "allow_unused", "validate(False)", "Fix the"):
        assert remedy not in result.stderr, result.stderr
    assert not (run / "model.onnx").exists()


def test_an_unknown_target_is_a_usage_error(trained_run) -> None:
    result = burnish("export", trained_run, "--to", "tflite", *GUIDE, cwd=REPO)
    assert result.returncode == 2
    assert "argument --to: invalid choice: 'tflite'" in result.stderr
