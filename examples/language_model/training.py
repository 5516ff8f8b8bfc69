"""Train the GPT on the standard library with the Learner: the recipe of today's language
models at a size a CPU trains in minutes.

AdamW with decoupled weight decay (none on norms, biases and embeddings), a linear warm-up
then a cosine decay, gradient clipping, bf16 mixed precision, gradient accumulation, a step
budget with validations inside the epoch, an exponential moving average of the weights,
perplexity and tokens/s, checkpoints every few iterations and an exact `resume()`.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import torch

import burnish as bn
from burnish.capability import bf16_support
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.lr_scheduler import (
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    SequentialLrSchedulerConfig,
)
from burnish.optim import AdamWConfig, GradientClippingConfig, ModuleOptimizer
from burnish.record import CompactRecorder, DefaultRecorder
from burnish.train import LearnerBuilder, TrainingListener, TrainingResult
from burnish.train.metric import (
    LearningRateMetric,
    LossMetric,
    PerplexityMetric,
    ThroughputMetric,
)

from examples.language_model.data import Corpus, TokenBatcher
from examples.language_model.model import Gpt, GptConfig


@bn.config
class TrainingConfig:
    """The whole recipe; saved as `config.json` beside the model.

    Args:
        model: the GPT's shape (its `context_length` is the training sequence length).
        optimizer: AdamW of the weight matrices (the rest: the same without decay).
        max_iterations: optimizer steps (the step budget).
        batch_size: windows per iteration.
        grads_accumulation: iterations per optimizer step.
        peak_lr: the learning rate after warm-up.
        warmup_lr: the learning rate of the first step.
        warmup_iters: optimizer steps of the linear warm-up.
        min_lr: the learning rate the cosine decays to at the last step.
        valid_every: optimizer steps between validations.
        valid_windows: validation windows (the first of the held-out files).
        max_train_bytes: use only this many bytes of the training files; None for all.
        ema_decay: the weights' moving average (validated, and saved as the model).
        checkpoint_every: iterations between crash-safe checkpoints.
        mixed_precision: "bf16", "fp16", or None for float32.
        num_workers: data loader workers.
        seed: weights, dropout and the order of the windows.
    """

    model: GptConfig
    optimizer: AdamWConfig
    max_iterations: int = 250
    batch_size: int = 16
    grads_accumulation: int = 2
    peak_lr: float = 2e-3
    warmup_lr: float = 1e-4
    warmup_iters: int = 30
    min_lr: float = 2e-4
    valid_every: int = 50
    valid_windows: int = 96
    max_train_bytes: int | None = None
    ema_decay: float = 0.95
    checkpoint_every: int = 100
    mixed_precision: str | None = "bf16"
    num_workers: int = 0
    seed: int = 42

    def scheduler(self):
        """Linear warm-up from `warmup_lr` to `peak_lr`, then cosine to `min_lr` at the last
        optimizer step (one scheduler step per optimizer step). A budget shorter than twice
        the warm-up warms up over its first half."""
        warmup_iters = max(1, min(self.warmup_iters, self.max_iterations // 2))
        warmup = LinearLrSchedulerConfig(self.warmup_lr, self.peak_lr, warmup_iters)
        decay = CosineAnnealingLrSchedulerConfig(
            self.peak_lr, max(1, self.max_iterations - warmup_iters), self.min_lr
        )
        return SequentialLrSchedulerConfig([warmup, decay], [warmup_iters]).init()


def default_config() -> TrainingConfig:
    """The short run: about two minutes of CPU in float32 (0.8M parameters; README.md)."""
    return TrainingConfig(model=GptConfig(), optimizer=adamw())


def choose_precision(device: torch.device | str = "cpu") -> tuple[str | None, str]:
    """bf16 mixed precision where `device` computes bf16 natively, else float32 (None).

    Returns:
        The `mixed_precision` of the config, and why, in words.
    """
    support = bf16_support(device)
    if support.native:
        return "bf16", f"the default: {support.reason}"
    return None, (
        f"the default: {support.reason}, several times slower than float32; "
        "--precision bf16 uses it anyway"
    )


def full_config() -> TrainingConfig:
    """The longer recipe: a wider model (3.3M parameters, the benchmarks' GPT) and 2,000 steps."""
    return TrainingConfig(
        model=GptConfig(context_length=128, d_model=256, num_layers=4, num_heads=8),
        optimizer=adamw(),
        max_iterations=2000,
        batch_size=16,
        grads_accumulation=2,
        peak_lr=1e-3,
        warmup_iters=100,
        min_lr=1e-4,
        valid_every=100,
        valid_windows=256,
        ema_decay=0.98,
        checkpoint_every=200,
    )


def split_decay(model: Gpt, config: AdamWConfig) -> ModuleOptimizer:
    """AdamW with `config`'s decoupled weight decay on the weight matrices and none on norms,
    biases and embeddings (a parameter group with its own AdamW); `global_norm` clipping then
    applies to each group's gradients, as `clip_grad_norm_` called once per group."""
    return ModuleOptimizer(config).with_group(model.no_decay_group(), config.with_weight_decay(0.0))


def adamw() -> AdamWConfig:
    """GPT's AdamW: betas (0.9, 0.95), decay 0.1 (of the matrices), clipped at norm 1."""
    return AdamWConfig(
        beta_2=0.95,
        epsilon=1e-8,
        weight_decay=0.1,
        grad_clipping=GradientClippingConfig.global_norm(1.0),
    )


def loaders(config: TrainingConfig, corpus: Corpus | None = None):
    """(train loader, valid loader) of the standard library's windows."""
    seq_len = config.model.context_length
    corpus = corpus or Corpus.stdlib(seq_len, config.max_train_bytes)
    valid = corpus.valid
    valid = PartialDataset(valid, 0, min(config.valid_windows, len(valid)))
    builder = DataLoaderBuilder(TokenBatcher()).batch_size(config.batch_size)
    builder = builder.num_workers(config.num_workers)
    return builder.shuffle(config.seed).build(corpus.train), builder.build(valid)


def learner_builder(artifact_dir: str | Path, config: TrainingConfig, checkpoints: bool = True):
    """The LearnerBuilder of the recipe (everything but the model and the optimizer).

    Args:
        checkpoints: checkpoint (full precision, so that `resume()` is exact) at every
            validation and every `config.checkpoint_every` iterations.
    """
    builder = (
        LearnerBuilder(artifact_dir)
        .metrics(LossMetric(), PerplexityMetric())
        .metric_train_numeric(ThroughputMetric(tokens=True))
        .metric_train_numeric(LearningRateMetric())
        .grads_accumulation(config.grads_accumulation, lr_step="optimizer_step")
        .max_iterations(config.max_iterations)
        .valid_every(config.valid_every)
        .with_ema(config.ema_decay, warmup=True, validate="both")
    )
    if checkpoints:
        builder = builder.with_file_checkpointer(DefaultRecorder())
        builder = builder.checkpoint_every(config.checkpoint_every)
    if config.mixed_precision is not None:
        builder = builder.mixed_precision(config.mixed_precision)
    return builder


def train(
    artifact_dir: str | Path,
    config: TrainingConfig,
    device: torch.device | str = "cpu",
    resume: bool = False,
    corpus: Corpus | None = None,
    renderer=None,
    listeners: Sequence[TrainingListener] = (),
) -> TrainingResult:
    """Train; write `config.json`, logs, checkpoints and `model.mpk` (the EMA weights).

    Args:
        resume: continue the run in `artifact_dir` from its newest checkpoint (exactly);
            otherwise the directory is emptied first.
        corpus: the data (default: the standard library).
        renderer: a `MetricsRenderer` (default: the dashboard in a terminal, else the CLI).
        listeners: `TrainingListener`s to call during the run.
    """
    artifact_dir = Path(artifact_dir)
    if not resume:
        shutil.rmtree(artifact_dir, ignore_errors=True)
    artifact_dir.mkdir(parents=True, exist_ok=True)
    config.save(artifact_dir / "config.json")
    bn.seed(config.seed)
    model = config.model.init(device)
    dataloader_train, dataloader_valid = loaders(config, corpus)
    builder = learner_builder(artifact_dir, config).devices([device])
    builder = builder.summary()
    if renderer is not None:
        builder = builder.renderer(renderer)
    if resume:
        builder = builder.resume()
    for listener in listeners:
        builder = builder.with_listener(listener)
    optim = split_decay(model, config.optimizer)
    learner = builder.build(model, optim, config.scheduler())
    result = learner.fit(dataloader_train, dataloader_valid)
    if not result.interrupted:
        assert result.ema is not None
        result.ema.save_file(artifact_dir / "model", CompactRecorder())
    return result
