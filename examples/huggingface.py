"""A Hugging Face `transformers` model trained by burnish's Learner.

    python -m examples.huggingface                       # a tiny GPT-2 for 1 short epoch
    python -m examples.huggingface --gradient-checkpointing burnish   # or: hf
    python -m examples.huggingface --resume              # continue the last run, exactly

A GPT-2 is built from a small `GPT2Config` with random initialization: nothing is downloaded
(the Hugging Face offline switches are set). The corpus is the Python standard library's own
sources as byte tokens, split into train and valid by file: the language model's corpus
(`examples/language_model/data.py`).

The model is wrapped in a `bn.Module` that gives it Burn's steps: batches are dicts
(`input_ids`, `labels`), `train_step` calls `model(**batch).loss` and returns `bn.backward` of
it. Records, checkpoints, `resume()`, mixed precision and the metrics work as for any burnish
model; the saved file loads back into a fresh `GPT2LMHeadModel`.

Gradient checkpointing, either way: Hugging Face's own
`model.activation_checkpointing_enable()` (`gradient_checkpointing_enable()` before
transformers 5; its layers call `torch.utils.checkpoint`), or
burnish's `.gradient_checkpointing()` on the builder (the blocks of the `nn.ModuleList`
`transformer.h`, found by `bn.checkpoint_blocks`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np
import torch

import burnish as bn
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.optim import AdamWConfig
from burnish.record import CompactRecorder, DefaultRecorder
from burnish.train import LearnerBuilder, SequenceOutput, TrainOutput
from burnish.train.metric import LossMetric, PerplexityMetric

from examples.interrupted import exit_if_interrupted
from examples.language_model.data import VOCAB_SIZE, Corpus

INSTALL_HINT = (
    "examples.huggingface needs Hugging Face transformers, which this Python cannot import. "
    "From the burnish checkout: pip install -e '.[huggingface]' (burnish is not on PyPI), "
    "or pip install 'transformers>=4.40'."
)


def require_transformers() -> None:
    """Import transformers, or raise `ModuleNotFoundError` with the line that installs it."""
    try:
        import transformers  # noqa: F401
    except ModuleNotFoundError as error:
        if error.name not in (None, "transformers"):  # transformers found, a part of it not
            raise
        raise ModuleNotFoundError(INSTALL_HINT, name="transformers") from error


@bn.config
class HfGptConfig:
    """A small GPT-2 over byte tokens (the fields of `transformers.GPT2Config` it sets)."""

    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 2
    n_positions: int = 128

    def init(self, device: torch.device | str | None = None) -> HfCausalLm:
        """A `GPT2LMHeadModel` with random weights (seeded by `bn.seed`), wrapped."""
        require_transformers()
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            vocab_size=VOCAB_SIZE, n_positions=self.n_positions, n_embd=self.n_embd,
            n_layer=self.n_layer, n_head=self.n_head, bos_token_id=0, eos_token_id=0,
            use_cache=False,  # no key/value cache in training (and with checkpointing)
        )  # fmt: skip
        gpt2 = GPT2LMHeadModel(config)
        # The loss GPT-2 uses anyway; unnamed, transformers 4.46+ warns "loss_type=None ...
        # unrecognized" on every run.
        gpt2.loss_type = "ForCausalLM"
        model = HfCausalLm(gpt2)
        return model.to(device) if device is not None else model


class HfCausalLm(bn.Module):
    """Burn's `train_step`/`valid_step` around a Hugging Face causal language model."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, **batch: torch.Tensor) -> Any:
        return self.model(**batch)

    def forward_sequence(self, batch: dict[str, torch.Tensor]) -> SequenceOutput:
        output = self.model(**batch)
        # Hugging Face shifts inside: the logits at position t predict the label at t + 1.
        logits, targets = output.logits[:, :-1], batch["labels"][:, 1:]
        return SequenceOutput(output.loss, logits, None, targets)

    def train_step(self, batch: dict[str, torch.Tensor]) -> TrainOutput:
        item = self.forward_sequence(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch: dict[str, torch.Tensor]) -> SequenceOutput:
        return self.forward_sequence(batch)


class CausalLmBatcher(Batcher[np.ndarray, dict]):
    """Byte windows -> `{"input_ids", "labels"}` of their first `seq_len` tokens (the labels
    are the inputs: Hugging Face shifts them inside the model)."""

    def batch(self, items: list[np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
        tokens = torch.from_numpy(np.stack(items)[:, :-1].astype(np.int64)).to(device)
        return {"input_ids": tokens, "labels": tokens}


def loaders(seq_len: int, batch_size: int, max_bytes: int, seed: int = 42) -> tuple[Any, Any]:
    """Train and valid loaders over the standard library's sources (at most `max_bytes` of
    training text and a tenth of that for validation)."""
    corpus = Corpus.stdlib(seq_len, max_train_bytes=max_bytes, max_valid_bytes=max_bytes // 10)
    builder = DataLoaderBuilder(CausalLmBatcher()).batch_size(batch_size)
    train = builder.shuffle(seed).build(corpus.train)
    valid = DataLoaderBuilder(CausalLmBatcher()).batch_size(batch_size)
    return train, valid.build(corpus.valid)


def hf_checkpointing(model: torch.nn.Module) -> None:
    """Hugging Face's own checkpointing of its layers, non-reentrant (`bn.backward` computes
    the gradients with `torch.autograd.grad`, which the reentrant variant does not support).
    `activation_checkpointing_enable` from transformers 5, `gradient_checkpointing_enable`
    before."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    enable = enable or model.gradient_checkpointing_enable
    enable({"use_reentrant": False})


def learner_builder(
    artifact_dir: str | Path, num_epochs: int = 1, checkpointing: str | None = None
) -> LearnerBuilder:
    """The run's settings; `checkpointing="burnish"` adds `gradient_checkpointing()`."""
    builder = (
        LearnerBuilder(artifact_dir)
        .metrics(LossMetric(), PerplexityMetric())
        .with_file_checkpointer(DefaultRecorder())  # full precision: resume is exact
        .num_epochs(num_epochs)
    )
    if checkpointing == "burnish":
        builder = builder.gradient_checkpointing()  # transformer.h's GPT2Blocks
    return builder


def train(
    artifact_dir: str | Path,
    config: HfGptConfig | None = None,
    *,
    num_epochs: int = 1,
    max_bytes: int = 400_000,
    batch_size: int = 16,
    lr: float = 1e-3,
    checkpointing: str | None = None,
    resume: bool = False,
    checkpoint_every: int | None = None,
    seed: int = 42,
) -> Any:
    """Train the GPT-2 on the corpus; returns the `TrainingResult`."""
    config = config or HfGptConfig()
    bn.seed(seed)
    model = config.init()
    if checkpointing == "hf":
        hf_checkpointing(model.model)
    builder = learner_builder(artifact_dir, num_epochs, checkpointing)
    if resume:
        builder = builder.resume()
    if checkpoint_every is not None:
        builder = builder.checkpoint_every(checkpoint_every)
    optim = AdamWConfig(weight_decay=0.01).init()
    train_loader, valid_loader = loaders(config.n_positions, batch_size, max_bytes, seed)
    return builder.build(model, optim, lr).fit(train_loader, valid_loader)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact-dir", default="/tmp/burnish-huggingface")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-bytes", type=int, default=400_000)
    parser.add_argument("--gradient-checkpointing", choices=["hf", "burnish"])
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    try:
        require_transformers()
    except ModuleNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    result = train(
        args.artifact_dir, num_epochs=args.epochs, max_bytes=args.max_bytes,
        checkpointing=args.gradient_checkpointing, resume=args.resume,
    )  # fmt: skip
    resume = f"python -m examples.huggingface --resume --artifact-dir {args.artifact_dir}"
    exit_if_interrupted(result, "no model was saved", resume)
    path = result.model.save_file(Path(args.artifact_dir) / "model", CompactRecorder())
    print(f"Saved the trained model to {path}")


if __name__ == "__main__":
    main()
