"""The GPT of `examples/language_model` on a CPU: the Learner against the same recipe by hand.

The model: 4 pre-norm blocks, width 256, 8 heads, context 128, bytes (3.3M parameters), on the
standard library's source files. The recipe, identical in every contender: AdamW (betas 0.9,
0.95, eps 1e-8) with decay 0.1 on the weight matrices and none on norms, biases and
embeddings, each group's gradients clipped to a global norm of 1, a linear warm-up then a
cosine decay, gradients of 2 batches of 8 windows summed per optimizer step, float32 (bf16
off), an EMA of the weights (decay 0.9) validated every `VALID_EVERY` steps on 32 held-out
windows. Every contender draws the same windows in the same order from the same weights.

  plain      hand loop: `torch.optim.AdamW` with two parameter groups,
             `clip_grad_norm_` per group, `loss.backward()` twice per step, the EMA by
             `torch._foreach_lerp_`, windows gathered by NumPy indexing in the loader's
             order, loss summed on the device and read once per validation.
  learner    `examples/language_model`'s code through the Learner: Loss, Perplexity,
             tokens/s and learning-rate metrics, file loggers, CLI renderer,
             `grads_accumulation(2)`, `max_iterations`, `valid_every`, `with_ema`.
  lightning  PyTorch Lightning (informational, when installed): the same model, optimizer
             groups, schedule, per-group clipping (`configure_gradient_clipping`) and EMA (a
             hook), `accumulate_grad_batches=2`, loss and perplexity through `self.log`.

Two measures, one fresh process per run, alternating:

  tokens/s          training tokens / seconds of a run of `steps` optimizer steps with one
                    validation at its end (target: learner / plain <= 1.03 in time, i.e.
                    plain / learner tokens/s);
  time to target    seconds until the first validation whose perplexity is <= `TARGET`
                    (validation every `VALID_EVERY` steps; target learner / plain <= 1.05).

    .venv/bin/python -m benchmarks -b language_model
    .venv/bin/python -m benchmarks.language_model child learner --mode tokens --steps 10
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.models import gpt_config

BATCH, ACCUMULATION, VALID_WINDOWS, SEED = 8, 2, 32, 42
VALID_EVERY = 5
TARGET = 25.0  # validation perplexity (of the EMA weights)
CONTENDERS = ("plain", "learner", "lightning")
TARGETS_TOKENS = {"learner": harness.at_most(1.03)}
TARGETS_TIME = {"learner": harness.at_most(1.05)}


def recipe(steps: int):
    """The example's TrainingConfig for this benchmark."""
    from examples.language_model.training import TrainingConfig, adamw

    return TrainingConfig(
        model=gpt_config(),
        optimizer=adamw(),
        max_iterations=steps,
        batch_size=BATCH,
        grads_accumulation=ACCUMULATION,
        peak_lr=2e-3,
        warmup_lr=1e-4,
        warmup_iters=10,
        min_lr=2e-4,
        valid_every=VALID_EVERY,
        valid_windows=VALID_WINDOWS,
        ema_decay=0.9,
        mixed_precision=None,
        seed=SEED,
    )


def run(settings: harness.Settings, log) -> list[harness.Row]:
    """Both measures, every contender `settings.runs` times, alternating."""
    if settings.device is not None:  # the accelerator version: benchmarks.device --models gpt
        return []
    steps = settings.iterations or (4 if settings.quick else 10)
    budget = 10 if settings.quick else 40  # the most steps a time-to-target run may take
    lightning = settings.lightning and harness.lightning_available()
    names = [n for n in CONTENDERS if n != "lightning" or lightning]
    log(f"language model: {steps} steps x {settings.runs} runs, contenders {names}")
    contenders = _children(names, "tokens", steps, settings.threads)
    results = harness.alternate(contenders, settings.runs, log)
    label = f"GPT tokens/s ({steps} steps)"
    rows = harness.rows_for(label, results, "seconds", "time", "s", "plain", TARGETS_TOKENS)
    rows += harness.rows_for(
        label, results, "cpu_seconds", "CPU time", "s", "plain", TARGETS_TOKENS
    )
    rows += harness.rows_for(label, results, "tokens_per_second", "tokens/s", "tok/s", "plain")
    for row in rows:
        if row.contender == "lightning":
            row.note = "informational"
    if not lightning:
        why = "not installed" if settings.lightning else "skipped (--no-lightning)"
        rows.append(harness.Row(label, "lightning", "time", "s", None, [], note=why))
    log(f"language model: time to valid perplexity {TARGET} (at most {budget} steps)")
    timed = harness.alternate(
        _children(["plain", "learner"], "target", budget, settings.threads), settings.runs, log
    )
    label = f"GPT time to ppl {TARGET:g}"
    target_rows = harness.rows_for(label, timed, "seconds", "time", "s", "plain", TARGETS_TIME)
    target_rows += harness.rows_for(
        label, timed, "cpu_seconds", "CPU time", "s", "plain", TARGETS_TIME
    )
    for row in target_rows:
        runs = timed[row.contender]
        reached = sum(r["reached"] for r in runs)
        steps_used = sorted({r["steps"] for r in runs})
        ppl = harness.median([r["perplexity"] for r in runs])
        row.note = f"reached {reached}/{len(runs)}, steps {steps_used}, ppl {ppl:.2f}"
        if reached < len(runs) and row.ok is not None:
            row.ok = False
    return rows + target_rows


def _children(names, mode: str, steps: int, threads: int) -> dict:
    return {
        name: (
            lambda name=name: harness.run_child(
                harness.module_argv(
                    "language_model", name, "--mode", mode, "--steps", steps, "--threads", threads
                ),
                threads,
            )
        )
        for name in names
    }


# -- the data (in the child) --------------------------------------------------------------------


def data(steps: int):
    """(corpus, windows of the train loader's order for `steps` steps, valid windows)."""
    import numpy as np

    from examples.language_model.data import Corpus

    config = recipe(steps)
    train_bytes = (steps * ACCUMULATION * BATCH + 1) * config.model.context_length * 8
    corpus = Corpus.stdlib(config.model.context_length, max_train_bytes=train_bytes)
    # The burnish loader's shuffle(seed) of epoch 1 (the same as benchmarks.overhead's).
    order = np.random.default_rng([SEED, 0]).permutation(len(corpus.train))
    return corpus, order


def _windows(dataset, indices):
    import numpy as np
    import torch

    stacked = dataset.get_stacked(np.asarray(indices, dtype=np.int64))
    windows = torch.from_numpy(stacked.astype(np.int64))
    return windows[:, :-1], windows[:, 1:]


# -- the contenders ------------------------------------------------------------------------------


def plain(steps: int, target: float | None, workdir: Path) -> dict[str, Any]:
    """The recipe by hand; returns seconds, tokens and the last validation's perplexity."""
    import torch
    import torch.nn.functional as F

    import burnish as bn

    config = recipe(steps)
    corpus, order = data(steps)
    valid = [
        _windows(corpus.valid, range(i, min(i + BATCH, VALID_WINDOWS)))
        for i in range(0, VALID_WINDOWS, BATCH)
    ]
    lrs = _lrs(config)
    bn.seed(SEED)
    model = config.model.init("cpu")
    no_decay = set(model.no_decay_parameters())
    named = list(model.named_parameters())
    groups = [
        [p for n, p in named if n not in no_decay],  # the decayed group first, as burnish's
        [p for n, p in named if n in no_decay],
    ]
    optimizer = torch.optim.AdamW(
        [
            {"params": groups[0], "weight_decay": config.optimizer.weight_decay},
            {"params": groups[1], "weight_decay": 0.0},
        ],
        lr=lrs[0],
        betas=(config.optimizer.beta_1, config.optimizer.beta_2),
        eps=config.optimizer.epsilon,
        foreach=True,
    )
    ema = _copy(model)
    ema_params, params = list(ema.parameters()), list(model.parameters())
    start, cpu_start = time.perf_counter(), time.process_time()
    model.train()
    loss_sum = torch.zeros(())
    perplexity, used = math.inf, 0
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = lrs[step]
        for micro in range(ACCUMULATION):
            first = (step * ACCUMULATION + micro) * BATCH
            inputs, targets = _windows(corpus.train, order[first : first + BATCH])
            logits = model(inputs)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            loss.backward()  # summed over the micro-batches, as burnish's accumulation
            loss_sum += loss.detach()
        for group in groups:
            torch.nn.utils.clip_grad_norm_(group, 1.0, foreach=True)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            decay = min(config.ema_decay, 1.0 - (step + 1) ** (-2 / 3))
            torch._foreach_lerp_(ema_params, params, 1.0 - decay)
        used = step + 1
        if used % VALID_EVERY == 0 or used == steps:
            perplexity = _validate(ema, valid)
            if target is not None and perplexity <= target:
                break
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    print(f"train loss {loss_sum.item() / (used * ACCUMULATION):.4f} | valid ppl {perplexity:.3f}")
    return _result(seconds, cpu_seconds, used, perplexity, target)


def _copy(model):
    import copy

    ema = copy.deepcopy(model)
    for param in ema.parameters():
        param.requires_grad_(False)
    return ema.eval()


def _validate(model, valid) -> float:
    """Perplexity of `model` on the valid windows: exp(mean token NLL)."""
    import torch
    import torch.nn.functional as F

    nll, count = torch.zeros(()), 0
    with torch.no_grad():
        for inputs, targets in valid:
            logits = model(inputs).flatten(0, 1).float()
            nll += F.cross_entropy(logits, targets.flatten(), reduction="sum")
            count += targets.numel()
    return math.exp(nll.item() / count)


def _lrs(config) -> list[float]:
    """The learning rate of every optimizer step: burnish's scheduler, run ahead of time."""
    scheduler = config.scheduler()
    return [scheduler.step() for _ in range(config.max_iterations)]


def _result(
    seconds: float, cpu_seconds: float, steps: int, perplexity: float, target: float | None
) -> dict:
    tokens = steps * ACCUMULATION * BATCH * gpt_config().context_length
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "steps": steps,
        "tokens_per_second": tokens / seconds,
        "perplexity": perplexity,
        "reached": target is not None and perplexity <= target,
    }


def learner(steps: int, target: float | None, workdir: Path) -> dict[str, Any]:
    """The example's Learner (metrics on, bf16 off), stopped at the target by a listener."""
    import burnish as bn
    from burnish.train import TrainingListener
    from burnish.train.renderer import CliMetricsRenderer

    from examples.language_model.training import learner_builder, loaders, split_decay

    config = recipe(steps)
    corpus, _ = data(steps)
    found: dict[str, float] = {"perplexity": math.inf}

    class AtTarget(TrainingListener):
        def on_validation_end(self, event) -> None:
            found["perplexity"] = event.values["Perplexity"]
            if target is not None and found["perplexity"] <= target:
                event.stop(f"validation perplexity {found['perplexity']:.2f} <= {target}")

    bn.seed(SEED)
    model = config.model.init("cpu")
    loader_train, loader_valid = loaders(config, corpus)
    builder = learner_builder(workdir / "artifacts", config, checkpoints=False)
    builder = builder.renderer(CliMetricsRenderer())
    builder = builder.with_ema(config.ema_decay, warmup=True).with_listener(AtTarget())
    learner = builder.build(model, split_decay(model, config.optimizer), config.scheduler())
    start, cpu_start = time.perf_counter(), time.process_time()
    result = learner.fit(loader_train, loader_valid)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return _result(seconds, cpu_seconds, result.iterations, found["perplexity"], target)


def lightning(steps: int, target: float | None, workdir: Path) -> dict[str, Any]:
    """PyTorch Lightning with the same recipe (informational)."""
    import lightning as L
    import torch
    import torch.nn.functional as F

    import burnish as bn

    config = recipe(steps)
    corpus, order = data(steps)
    batches = [
        _windows(corpus.train, order[i * BATCH : (i + 1) * BATCH])
        for i in range(steps * ACCUMULATION)
    ]
    valid = [
        _windows(corpus.valid, range(i, min(i + BATCH, VALID_WINDOWS)))
        for i in range(0, VALID_WINDOWS, BATCH)
    ]
    lrs = _lrs(config)
    bn.seed(SEED)
    found: dict[str, float] = {"perplexity": math.inf}

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = config.model.init("cpu")
            self.ema = _copy(self.model)
            self.updates = 0

        def training_step(self, batch, index):
            inputs, targets = batch
            logits = self.model(inputs)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            self.log("loss", loss, prog_bar=True)
            self.log("perplexity", loss.detach().exp(), prog_bar=True)
            return loss

        def configure_gradient_clipping(
            self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
        ):
            for group in optimizer.param_groups:
                torch.nn.utils.clip_grad_norm_(group["params"], 1.0, foreach=True)

        def on_train_batch_end(self, outputs, batch, index) -> None:
            if (index + 1) % ACCUMULATION:
                return
            self.updates += 1
            decay = min(config.ema_decay, 1.0 - self.updates ** (-2 / 3))
            with torch.no_grad():
                torch._foreach_lerp_(
                    list(self.ema.parameters()), list(self.model.parameters()), 1.0 - decay
                )
            if self.updates % VALID_EVERY == 0 or self.updates == steps:
                found["perplexity"] = _validate(self.ema, valid)
                if target is not None and found["perplexity"] <= target:
                    self.trainer.should_stop = True

        def configure_optimizers(self):
            no_decay = set(self.model.no_decay_parameters())
            named = list(self.model.named_parameters())
            optimizer = torch.optim.AdamW(
                [
                    {
                        "params": [p for n, p in named if n not in no_decay],
                        "weight_decay": config.optimizer.weight_decay,
                    },
                    {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0},
                ],
                lr=1.0,
                betas=(config.optimizer.beta_1, config.optimizer.beta_2),
                eps=config.optimizer.epsilon,
                foreach=True,
            )
            schedule = torch.optim.lr_scheduler.LambdaLR(
                optimizer, lambda step: lrs[min(step, len(lrs) - 1)]
            )
            return [optimizer], [{"scheduler": schedule, "interval": "step"}]

    trainer = L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        devices=1,
        accumulate_grad_batches=ACCUMULATION,
        logger=False,
        enable_checkpointing=False,
        default_root_dir=workdir,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    module = Module()
    start, cpu_start = time.perf_counter(), time.process_time()
    trainer.fit(module, Batches(batches))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return _result(seconds, cpu_seconds, module.updates, found["perplexity"], target)


class Batches:
    """A list of batches as one iterable (Lightning takes a plain list for several loaders)."""

    def __init__(self, batches: list) -> None:
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.language_model child")
    parser.add_argument("contender", choices=CONTENDERS)
    parser.add_argument("--mode", choices=("tokens", "target"), default="tokens")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    target = TARGET if args.mode == "target" else None
    with tempfile.TemporaryDirectory(prefix="burnish-lm-") as workdir:
        result = globals()[args.contender](args.steps, target, Path(workdir))
    harness.report(result)


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        sys.exit("usage: python -m benchmarks -b language_model")
