"""The Hugging Face example: a `transformers` GPT-2 (random init, nothing downloaded) trained
by the Learner on the standard library's sources; records load into a fresh HF model, resume
is bit-identical, and both HF's and burnish's gradient checkpointing give the same model."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.optim import GradientsParams
from burnish.record import DefaultRecorder

pytest.importorskip("transformers")

from examples.huggingface import HfGptConfig, hf_checkpointing, loaders, train
from tests.helpers import iteration_lines

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TINY = HfGptConfig(n_layer=2, n_embd=32, n_head=2, n_positions=32)
SMALL = {"config": TINY, "max_bytes": 768, "batch_size": 8}  # 3 iterations an epoch


def params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_batches_are_dicts_of_byte_windows():
    train, valid = loaders(32, 8, 768)
    assert len(train) == 3 and len(valid) == 1  # 23 windows of 33 bytes; 2
    batch = next(iter(train))
    assert set(batch) == {"input_ids", "labels"} and batch["input_ids"] is batch["labels"]
    assert batch["input_ids"].shape == (8, 32) and batch["input_ids"].dtype == torch.int64
    assert int(batch["input_ids"].min()) >= 0 and int(batch["input_ids"].max()) < 256


def test_trains_saves_and_loads_into_a_fresh_hf_model(tmp_path):
    result = train(tmp_path / "run", **SMALL)
    assert result.epochs_completed == 1
    loss = iteration_lines(tmp_path / "run/train/epoch-1/Loss.log")
    assert len(loss) == 3
    path = result.model.save_file(tmp_path / "model", DefaultRecorder())
    fresh = TINY.init().load_file(path, DefaultRecorder())
    batch = next(iter(loaders(32, 4, 768)[1]))
    with torch.no_grad():
        expected = bn.valid(result.model)(**batch).logits
        torch.testing.assert_close(bn.valid(fresh)(**batch).logits, expected, atol=0, rtol=0)


def test_resume_is_bit_identical(tmp_path):
    straight = train(tmp_path / "straight", num_epochs=2, **SMALL).model
    train(tmp_path / "resumed", num_epochs=1, **SMALL)
    resumed = train(tmp_path / "resumed", num_epochs=2, resume=True, **SMALL)
    assert resumed.epochs_completed == 2
    for name, value in params(straight).items():
        assert torch.equal(value, params(resumed.model)[name]), name


def test_hf_and_burnish_gradient_checkpointing_give_the_same_gradients():
    batch = next(iter(loaders(32, 4, 768)[0]))
    grads = {}
    for mode in (None, "hf", "burnish"):
        bn.seed(1)
        model = TINY.init()
        if mode == "hf":
            hf_checkpointing(model.model)
        if mode == "burnish":
            assert model.checkpoint_blocks() == ["model.transformer.h.0", "model.transformer.h.1"]
        torch.manual_seed(2)  # the same dropout masks
        output = model.train_step(batch)
        grads[mode] = (GradientsParams.from_grads(output.grads, model), model)
    reference, model = grads[None]
    for mode in ("hf", "burnish"):
        for name, _ in model.named_parameters():
            torch.testing.assert_close(
                grads[mode][0].get(name), reference.get(name), atol=1e-6, rtol=0, msg=name
            )


@pytest.mark.parametrize("mode", ["hf", "burnish"])
def test_the_learner_trains_the_same_model_with_either_checkpointing(tmp_path, mode):
    plain = train(tmp_path / "plain", **SMALL).model
    checkpointed = train(tmp_path / mode, checkpointing=mode, **SMALL).model
    assert bn.checkpointed_blocks(checkpointed) == []  # burnish's: undone after `fit`
    for name, value in params(plain).items():
        torch.testing.assert_close(params(checkpointed)[name], value, atol=1e-6, rtol=0)


def test_without_transformers_the_example_says_how_to_install_it_in_one_line(tmp_path):
    """transformers made unimportable (None in sys.modules) in a real interpreter."""
    import subprocess
    import sys
    from pathlib import Path

    shim = (
        "import runpy, sys; sys.modules['transformers'] = None; "
        "runpy.run_module('examples.huggingface', run_name='__main__')"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", shim, "--artifact-dir", str(tmp_path / "run")],
        cwd=repo, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: examples.huggingface needs Hugging Face transformers, which this Python cannot "
        "import. From the burnish checkout: pip install -e '.[huggingface]' (burnish is not on "
        "PyPI), or pip install 'transformers>=4.40'."
    ]
    assert not (tmp_path / "run").exists()  # nothing started
