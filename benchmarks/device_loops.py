"""The training loops that `benchmarks/device.py` times, one function per contender.

Each takes `(model, train, valid, epochs, device, validate)`, trains `model` on the batches of
`train` (already on `device`) and returns the validation accuracy in percent (NaN when
`validate` is false). Every loop sums its training loss and accuracy on the device each step
and reads nothing back during the epoch:

  plain           `torch.optim.Adam(foreach)`, `zero_grad` / `backward` / `step`;
  plain-bf16      the same with the forward pass and loss under
                  `torch.autocast(device_type, torch.bfloat16)`: the peer of learner-bf16;
  custom          burnish's custom loop: `bn.backward` -> `GradientsParams` -> `optim.step`;
  learner         the Learner with Accuracy + Loss metrics, file loggers, the CLI renderer;
  learner-bf16    the same with `mixed_precision("bf16")`;
  learner-graphs  the same with `compile(step=True, mode="reduce-overhead")` (on a CPU, where
                  there are no CUDA graphs: `compile(step=True, backend="aot_eager")`);
  lightning       PyTorch Lightning, when installed (informational).
"""

from __future__ import annotations

import contextlib
import functools
import tempfile

CONTENDERS = (
    "plain",
    "plain-bf16",
    "custom",
    "learner",
    "learner-bf16",
    "learner-graphs",
    "lightning",
)
LR = 1e-3


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plain(model, train, valid, epochs: int, device, validate: bool, autocast=None) -> float:
    import torch
    import torch.nn.functional as F

    optimizer = torch.optim.Adam(model.parameters(), lr=LR, foreach=True)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    for _ in range(epochs):
        model.train()
        loss_sum = torch.zeros((), device=device)
        right = torch.zeros((), dtype=torch.int64, device=device)
        for batch in train:
            with autocast() if autocast is not None else contextlib.nullcontext():
                output = model(batch.images)
                loss = F.cross_entropy(output, batch.targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
            right += (output.detach().argmax(dim=1) == batch.targets).sum()
        if validate:
            correct = _validate(model, valid, device)
    synchronize(device)
    return _accuracy(correct, valid) if validate else float("nan")


def plain_bf16(model, train, valid, epochs: int, device, validate: bool) -> float:
    """`plain` with the forward pass and the loss under bfloat16 autocast."""
    import torch

    def autocast():
        return torch.autocast(device.type, dtype=torch.bfloat16)

    return plain(model, train, valid, epochs, device, validate, autocast)


def custom(model, train, valid, epochs: int, device, validate: bool) -> float:
    import torch
    import torch.nn.functional as F

    import burnish as bn
    from burnish.optim import AdamConfig, GradientsParams

    optim = AdamConfig(epsilon=1e-8).init()
    correct = torch.zeros((), dtype=torch.int64, device=device)
    for _ in range(epochs):
        model.train()
        loss_sum = torch.zeros((), device=device)
        right = torch.zeros((), dtype=torch.int64, device=device)
        for batch in train:
            output = model(batch.images)
            loss = F.cross_entropy(output, batch.targets)
            model = optim.step(LR, model, GradientsParams.from_grads(bn.backward(loss), model))
            loss_sum += loss.detach()
            right += (output.detach().argmax(dim=1) == batch.targets).sum()
        if validate:
            correct = _validate(bn.valid(model), valid, device)
    synchronize(device)
    return _accuracy(correct, valid) if validate else float("nan")


def _validate(model, valid, device):
    import torch

    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=device)
    with torch.no_grad():
        for batch in valid:
            correct += (model(batch.images).argmax(dim=1) == batch.targets).sum()
    return correct


def _accuracy(correct, valid) -> float:
    return 100 * correct.item() / valid.targets.numel()


def learner(model, train, valid, epochs: int, device, validate: bool, configure=None) -> float:
    from benchmarks.models import learner_builder
    from burnish.optim import AdamConfig

    with tempfile.TemporaryDirectory(prefix="burnish-device-") as workdir:
        builder = learner_builder(workdir, epochs).devices([device])
        if configure is not None:
            builder = configure(builder)
        learner = builder.build(model, AdamConfig(epsilon=1e-8).init(), LR)
        # The overhead benchmark trains without validation, as its plain loop does.
        result = learner.fit(train, valid if validate else None)
        synchronize(device)
        if not validate:
            return float("nan")
        return _accuracy(_validate(result.model, valid, device), valid)


def lightning(model, train, valid, epochs: int, device, validate: bool) -> float:
    import lightning as L
    import torch
    import torch.nn.functional as F

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def training_step(self, batch, index):
            loss = F.cross_entropy(self.model(batch.images), batch.targets)
            self.log("train_loss", loss, prog_bar=True, batch_size=len(batch.targets))
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=LR, foreach=True)

    with tempfile.TemporaryDirectory(prefix="burnish-device-") as workdir:
        trainer = L.Trainer(
            max_epochs=epochs,
            accelerator="gpu" if device.type == "cuda" else "cpu",
            devices=1,
            logger=False,
            enable_checkpointing=False,
            default_root_dir=workdir,
            enable_model_summary=False,
        )
        trainer.fit(Module(), train)
    synchronize(device)
    return _accuracy(_validate(model, valid, device), valid) if validate else float("nan")


def graphs(device):
    """How learner-graphs configures its builder on `device`."""
    if device.type == "cuda":
        return lambda b: b.compile(step=True, mode="reduce-overhead")
    return lambda b: b.compile(step=True, backend="aot_eager")


def contender(name: str, device):
    """The function that trains with contender `name`."""
    if name == "learner-bf16":
        return functools.partial(learner, configure=lambda b: b.mixed_precision("bf16"))
    if name == "learner-graphs":
        return functools.partial(learner, configure=graphs(device))
    loops = {
        "plain": plain,
        "plain-bf16": plain_bf16,
        "custom": custom,
        "learner": learner,
        "lightning": lightning,
    }
    return loops[name]
