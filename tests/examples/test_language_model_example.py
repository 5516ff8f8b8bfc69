"""The language-model example: a tiny GPT trained on the standard library's own files.

The code of the example, at a size that trains in seconds: validation perplexity drops,
the saved model generates text (from any recorder's file), and a run killed by SIGKILL
after a checkpoint resumes to the very parameters of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.record import NamedMpkGzFileRecorder, SafetensorsFileRecorder
from burnish.train.renderer import CliMetricsRenderer

from examples.language_model.data import (
    ByteWindowDataset,
    TokenBatcher,
    decode,
    encode,
    split_files,
    stdlib_files,
)
from examples.language_model.generate import generate, load_model
from examples.language_model.model import GptConfig
from examples.language_model.training import TrainingConfig, adamw, split_decay, train
from tests.examples.interrupt import start_and_interrupt
from tests.helpers import iteration_lines

REPO = Path(__file__).resolve().parents[2]


def tiny_config() -> TrainingConfig:
    """A model of 27k parameters on the first 100 kB of the training files: seconds."""
    return TrainingConfig(
        model=GptConfig(context_length=32, d_model=32, num_layers=2, num_heads=2, dropout=0.1),
        optimizer=adamw(),
        max_iterations=40,
        batch_size=8,
        grads_accumulation=2,
        peak_lr=5e-3,
        warmup_iters=5,
        min_lr=5e-4,
        valid_every=20,
        valid_windows=32,
        max_train_bytes=100_000,
        ema_decay=0.9,
        checkpoint_every=10,
        mixed_precision="bf16",
    )


def _perplexities(artifact_dir: Path, name: str = "Perplexity") -> list[float]:
    """The valid perplexity of each validation, in order."""
    points = json.loads((artifact_dir / "valid" / "validations.json").read_text())
    found = []
    for number in range(1, len(points["validations"]) + 1):
        values = json.loads((artifact_dir / "valid" / f"epoch-{number}" / "aggregates.json")
                            .read_text())  # fmt: skip
        found.append(values["metrics"][name]["value"])
    return found


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread: tiny kernels on a shared 2-core machine run 10-40x slower with two
    (OpenMP threads spinning while the other is descheduled)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, one_thread) -> tuple[Path, object]:
    artifact_dir = tmp_path_factory.mktemp("lm") / "run"
    result = train(artifact_dir, tiny_config(), renderer=CliMetricsRenderer())
    return artifact_dir, result


def test_the_tiny_run_learns_and_validation_perplexity_drops(trained) -> None:
    artifact_dir, result = trained
    assert result.iterations == 40 and result.validations == 2
    perplexities = _perplexities(artifact_dir)
    raw = _perplexities(artifact_dir, "Raw Perplexity")
    assert len(perplexities) == 2
    # Uniform guessing over 256 bytes is a perplexity of 256; Python source is far more regular.
    assert perplexities[-1] < perplexities[0] and perplexities[-1] < 30
    assert raw[-1] < raw[0]
    train_dir = artifact_dir / "train" / "epoch-1"
    assert (train_dir / "Token_Throughput.log").exists()
    first_rate = iteration_lines(train_dir / "Token_Throughput.log")[-1]
    assert float(first_rate.split(",")[0]) > 0
    assert (artifact_dir / "model.mpk").exists() and (artifact_dir / "config.json").exists()


def test_generate_samples_from_the_saved_model_of_any_recorder(trained, tmp_path) -> None:
    artifact_dir, _ = trained
    text = generate(artifact_dir, "def ", 40, temperature=0.8, top_k=10, seed=1)
    assert text.startswith("def ") and len(text.encode()) >= 40  # 40 bytes after the prompt
    assert text == generate(artifact_dir, "def ", 40, temperature=0.8, top_k=10, seed=1)
    greedy = generate(artifact_dir, "import ", 30, temperature=0.0)
    # The same weights saved by other recorders give the same text.
    model = load_model(artifact_dir)
    for recorder in (SafetensorsFileRecorder(), NamedMpkGzFileRecorder()):
        other = tmp_path / type(recorder).__name__
        other.mkdir()
        (other / "config.json").write_text((artifact_dir / "config.json").read_text())
        model.save_file(other / "model", recorder)
        assert generate(other, "import ", 30, temperature=0.0) == greedy
    from examples.language_model.generate import main

    assert main(["--artifact-dir", str(artifact_dir), "--tokens", "5", "--prompt", "x"])


def test_generate_in_a_directory_never_trained_in_says_to_train_first(tmp_path, capsys) -> None:
    from examples.language_model.generate import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--artifact-dir", str(tmp_path / "nothing-here")])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("error: No model file (model.*) in ") and "Train first" in error
    assert "Traceback" not in error


def test_top_k_one_is_greedy_and_bad_sampling_settings_are_refused(trained) -> None:
    artifact_dir, _ = trained
    model = load_model(artifact_dir)
    prompt = torch.from_numpy(encode("class ")).long()[None]
    greedy = model.generate(prompt, 12, temperature=0.0)
    assert torch.equal(model.generate(prompt, 12, temperature=1.5, top_k=1), greedy)
    with pytest.raises(ValueError, match="`top_k` must be >= 1"):
        model.generate(prompt, 1, top_k=0)
    with pytest.raises(ValueError, match="`temperature` must be >= 0"):
        model.generate(prompt, 1, temperature=-1.0)
    with pytest.raises(ValueError, match="context_length is 32"):
        model(torch.zeros(1, 33, dtype=torch.long))


_KILLED_RUN = """
import os, signal, sys
import torch
torch.set_num_threads(1)
from burnish.train import TrainingListener
from burnish.train.renderer import CliMetricsRenderer
from tests.examples.test_language_model_example import tiny_config
from examples.language_model.training import train

class KillAt(TrainingListener):
    def on_iteration_end(self, event):
        if event.split == "train" and event.step == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)

train(sys.argv[1], tiny_config(), renderer=CliMetricsRenderer(), listeners=[KillAt()])
"""


def test_a_run_killed_after_a_checkpoint_resumes_exactly(trained, tmp_path) -> None:
    artifact_dir, uninterrupted = trained
    killed = tmp_path / "killed"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_RUN, str(killed), "55"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    assert not (killed / "model.mpk").exists()  # it never finished
    assert any((killed / "checkpoint").iterdir())
    resumed = train(killed, tiny_config(), resume=True, renderer=CliMetricsRenderer())
    assert resumed.iterations == 40
    for (name, a), b in zip(
        uninterrupted.model.state_dict().items(), resumed.model.state_dict().values()
    ):
        assert torch.equal(a, b), name
    for a, b in zip(uninterrupted.ema.state_dict().values(), resumed.ema.state_dict().values()):
        assert torch.equal(a, b)
    assert _perplexities(killed) == _perplexities(artifact_dir)


def test_weight_decay_skips_norms_biases_and_embeddings() -> None:
    torch.manual_seed(0)
    model = GptConfig(context_length=8, d_model=8, num_layers=1, num_heads=2).init()
    names = set(model.no_decay_parameters())
    assert "token_embedding.weight" in names and "blocks.0.norm1.bias" in names
    assert "blocks.0.attention.qkv.weight" not in names
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optim = split_decay(model, adamw().with_grad_clipping(None))
    import burnish as bn
    from burnish.optim import GradientsParams

    # A zero loss: only the decay moves anything (AdamW's update of a zero gradient is zero).
    loss = (model(torch.zeros(1, 4, dtype=torch.long)) * 0).sum()
    model = optim.step(1.0, model, GradientsParams.from_grads(bn.backward(loss), model))
    for name, param in model.named_parameters():
        if name in names:
            assert torch.equal(param, before[name]), name
        else:
            assert torch.allclose(param, before[name] * 0.9), name  # 1 - lr * 0.1
    record = optim.to_record()
    no_decay_group = {path for path, group in record["group_of"].items() if group == 1}
    assert no_decay_group == names and set(record["state"]) == set(before)
    again = split_decay(model, adamw()).load_record(record).to_record()
    assert again["group_of"] == record["group_of"]
    assert again["state"].keys() == record["state"].keys()


def test_the_corpus_is_split_by_file_in_a_fixed_order() -> None:
    files = stdlib_files()
    assert files == sorted(files, key=lambda path: path.name) and len(files) > 50
    train_files, valid_files = split_files(files)
    assert not set(train_files) & set(valid_files)
    assert len(valid_files) == len(files[::10])
    dataset = ByteWindowDataset(encode("abcdefghij"), 3)
    assert len(dataset) == 3 and decode(dataset.get(1)) == "defg" and dataset.get(3) is None
    batch = TokenBatcher().batch_stacked(dataset.get_stacked(torch.arange(3).numpy()), "cpu")
    assert decode(batch.inputs[2].tolist()) == "ghi" and decode(batch.targets[2].tolist()) == "hij"
    with pytest.raises(ValueError, match="too few for one window"):
        ByteWindowDataset(encode("ab"), 3)
    with pytest.raises(FileNotFoundError, match=r"holds no \*\.py file"):
        stdlib_files(REPO / "docs")


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300), seq_len=st.integers(1, 40))
def test_windows_predict_every_byte_once_and_any_bytes_decode(data: bytes, seq_len: int) -> None:
    tokens = np.frombuffer(data, dtype=np.uint8).copy()
    assert isinstance(decode(tokens), str)  # invalid UTF-8 is replaced, never raised
    if len(tokens) < seq_len + 1:
        with pytest.raises(ValueError, match="too few"):
            ByteWindowDataset(tokens, seq_len)
        return
    dataset = ByteWindowDataset(tokens, seq_len)
    windows = dataset.get_stacked(np.arange(len(dataset)))
    assert windows.shape == (len(dataset), seq_len + 1)
    assert [bytes(w) for w in windows] == [bytes(dataset.get(i)) for i in range(len(dataset))]
    targets = windows[:, 1:].reshape(-1)  # each byte after the first is a target once, in order
    assert bytes(targets) == data[1 : 1 + len(targets)]
    assert len(data) - 1 - len(targets) < seq_len  # fewer than one window is left out


# -- the default precision fits the machine; Ctrl-C ends with the truth and exit 130 -------


@pytest.mark.parametrize("native", [False, True])
def test_the_default_precision_is_bf16_only_where_it_is_native_and_says_why(
    native, monkeypatch, tmp_path, capsys
) -> None:
    from burnish import capability

    flags = {"cpu_name": "Test CPU", "avx2": True, "avx512_bf16": native}
    monkeypatch.setattr(capability, "_cpu_capabilities", lambda: flags)
    from examples.language_model.__main__ import main

    artifact_dir = tmp_path / "run"
    result = main(["--iterations", "1", "--artifact-dir", str(artifact_dir)])
    assert result.iterations == 1 and not result.interrupted
    saved = TrainingConfig.load(artifact_dir / "config.json").mixed_precision
    out = capsys.readouterr().out
    if native:
        assert saved == "bf16"
        assert "Precision: bf16 (the default: Test CPU has native bf16 (avx512_bf16))" in out
    else:
        assert saved is None
        assert (
            "Precision: fp32 (the default: Test CPU has no native bf16 (AVX2, no AVX512-BF16 or "
            "AMX): bf16 would be emulated, several times slower than float32; --precision bf16 "
            "uses it anyway)"
        ) in out
    if native:  # bf16 is emulated on most CPUs that run the tests: one run is enough
        return
    # An explicit --precision wins over the machine; a resumed run keeps its own.
    main(["--iterations", "1", "--precision", "fp32", "--artifact-dir", str(artifact_dir)])
    assert "Precision: fp32 (--precision)" in capsys.readouterr().out
    main(["--resume", "--iterations", "1", "--artifact-dir", str(artifact_dir)])
    assert "Precision: fp32 (the run's own, from " in capsys.readouterr().out


def test_ctrl_c_says_no_model_was_saved_how_to_resume_and_exits_130(tmp_path) -> None:
    artifact_dir = tmp_path / "run"
    args = ["-m", "examples.language_model", "--iterations", "200", "--threads", "1"]
    code, out, err = start_and_interrupt([*args, "--artifact-dir", str(artifact_dir)])
    assert code == 130, out + err
    assert "Saved the averaged model" not in out and not (artifact_dir / "model.mpk").exists()
    assert "Training was interrupted after " in err and "no model.mpk was saved" in err
    assert f"burnish summary {artifact_dir}" in err
    resume = f"python -m examples.language_model --resume --artifact-dir {artifact_dir}"
    assert f"Continue from the last checkpoint with: {resume}" in err
    assert any((artifact_dir / "checkpoint").iterdir())  # what that command continues from
