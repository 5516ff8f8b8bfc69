"""A deterministic run for the tracker tests: what the learner would log, epoch by epoch.

`play(loggers, epochs, ...)` calls the hooks in the learner's order with values that depend
only on the position, so a resumed run logs exactly the values the interrupted run logged.
"""

from __future__ import annotations

import os
from pathlib import Path

from burnish.train.logger.tracker import ResumePosition, RunInfo

TRAIN_ITERATIONS = 4
VALID_ITERATIONS = 2
CONFIG = {"model": {"hidden": 32, "layers": [2, 3]}, "optimizer": {"name": "adam"}, "lr": 0.01}
HPARAMS = {"num_epochs": 5, "devices": "cpu"}


def run_info(artifact_dir: Path, resume: ResumePosition | None = None) -> RunInfo:
    return RunInfo(Path(artifact_dir), CONFIG, HPARAMS, resume)


def wandb_settings():
    """Offline, quiet, no system probes: W&B touches nothing outside the test's directory."""
    import wandb

    fields = type(wandb.Settings()).model_fields
    options = {"x_disable_stats": True, "x_disable_machine_info": True, "save_code": False}
    if "x_transaction_log_flush_interval" in fields:
        options["x_transaction_log_flush_interval"] = 0.2
    return wandb.Settings(**{k: v for k, v in options.items() if k in fields})


def wandb_env(home: Path) -> dict[str, str]:
    """Environment for W&B offline with every file it writes under `home`."""
    return {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DISABLE_GIT": "true",
        "WANDB_DISABLE_CODE": "true",
        "WANDB_CONFIG_DIR": str(home / "config"),
        "WANDB_CACHE_DIR": str(home / "cache"),
        "WANDB_DATA_DIR": str(home / "data"),
    }


def step_of(epoch: int, iteration: int) -> int:
    return (epoch - 1) * TRAIN_ITERATIONS + iteration


def lr_of(step: int) -> float:
    return 0.01 / (1 + step)


def iteration_values(split: str, epoch: int, iteration: int) -> dict[str, float]:
    base = 1.0 / (epoch * 10 + iteration)
    return {"Loss": base + (split == "valid"), "Accuracy": 100.0 - base}


def epoch_values(split: str, epoch: int) -> dict[str, float]:
    return {"Loss": 2.0 / epoch + (split == "valid"), "Accuracy": 50.0 + epoch / 3}


def play_train(loggers, epoch: int, start: int = 0, stop: int = TRAIN_ITERATIONS, end=True):
    for iteration in range(start + 1, stop + 1):
        step = step_of(epoch, iteration)
        for logger in loggers:
            logger.log_iteration(
                "train",
                epoch,
                iteration,
                step,
                iteration_values("train", epoch, iteration),
                lr_of(step),
            )
    if end:
        lr = lr_of(step_of(epoch, TRAIN_ITERATIONS))
        for logger in loggers:
            logger.log_epoch("train", epoch, epoch_values("train", epoch), lr)


def play_valid(loggers, epoch: int) -> None:
    step = step_of(epoch, TRAIN_ITERATIONS)
    for iteration in range(1, VALID_ITERATIONS + 1):
        for logger in loggers:
            logger.log_iteration(
                "valid", epoch, iteration, step, iteration_values("valid", epoch, iteration)
            )
    for logger in loggers:
        logger.log_epoch("valid", epoch, epoch_values("valid", epoch))


def play(loggers, first: int, last: int) -> None:
    """Epochs `first..last` in full, as the learner logs them."""
    for epoch in range(first, last + 1):
        play_train(loggers, epoch)
        play_valid(loggers, epoch)


def make_loggers(artifact_dir: Path, names: list[str]):
    from burnish.train.logger.csv_logger import CsvLogger

    loggers = []
    for name in names:
        if name == "csv":
            loggers.append(CsvLogger())
        elif name == "tensorboard":
            from burnish.train.logger.tensorboard_logger import TensorBoardLogger

            loggers.append(TensorBoardLogger())
        elif name == "mlflow":
            from burnish.train.logger.mlflow_logger import MlflowLogger

            loggers.append(MlflowLogger(experiment="tests"))
        elif name == "wandb":
            from burnish.train.logger.wandb_logger import WandbLogger

            loggers.append(WandbLogger(project="tests", settings=wandb_settings()))
        else:
            raise ValueError(name)
    return loggers


def crash_after_epoch_2(artifact_dir: Path, names: list[str]) -> None:
    """Epochs 1-2, a checkpoint (`flush`), epoch 3 (written out) and half of epoch 4, SIGKILL.

    The resumed session starts from the checkpoint after epoch 2, so the stores hold points
    (epoch 3, some of epoch 4) that it logs again.
    """
    import signal
    import time

    loggers = make_loggers(artifact_dir, names)
    for logger in loggers:
        logger.start(run_info(artifact_dir))
    play(loggers, 1, 2)
    for logger in loggers:
        logger.flush()  # the learner flushes the trackers before committing a checkpoint
    time.sleep(0.5)  # the checkpoint's own write (W&B writes its file every 0.2 s here)
    play(loggers, 3, 3)
    for logger in loggers:  # as their periodic writes would: epoch 3 reaches the stores
        logger.flush()
    time.sleep(0.5)
    play_train(loggers, 4, 0, TRAIN_ITERATIONS // 2, end=False)
    os.kill(os.getpid(), signal.SIGKILL)


def crash_at_checkpoint(artifact_dir: Path, names: list[str], last: int = 2) -> None:
    """Epochs 1..`last`, a checkpoint (`flush`, then the commit), SIGKILL at once.

    Nothing waits between the flush and the kill: every point of epochs 1..`last` must be in
    the stores because `flush` returned, not because a periodic write came first.
    """
    import signal

    loggers = make_loggers(artifact_dir, names)
    for logger in loggers:
        logger.start(run_info(artifact_dir))
    play(loggers, 1, last)
    for logger in loggers:
        logger.flush()  # the learner flushes the trackers before committing a checkpoint
    os.kill(os.getpid(), signal.SIGKILL)
