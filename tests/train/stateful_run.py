"""A training run over torchdata `StatefulDataLoader`s, run as a subprocess and SIGKILLed.

    python tests/train/stateful_run.py ARTIFACT_DIR OUT DRAWS [--workers N] [--plain]
        [--kill-at-step N] [--kill-in-valid] [--valid-every K]

It resumes from the newest complete checkpoint (`resume()`) and trains the dropout MLP of
tests/train/helpers.py for 3 epochs on 960 MNIST training images (shuffled, batches of 32,
checkpoints every 3 iterations), validated on 96 test images. Both loaders are
`StatefulDataLoader`s (`--plain`: `torch.utils.data.DataLoader`s) with `--workers` workers.
Every `__getitem__` of either dataset, in whichever process it runs, appends `train I` or
`valid I` to DRAWS: the items this process drew. On success it writes the final parameters to
OUT. `--kill-at-step N` SIGKILLs the process after its N-th training iteration,
`--kill-in-valid` in its first validation; `--valid-every K` validates every K iterations
inside the epochs too. Tests that stop a run in-process call `fit`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))

import torch  # noqa: E402
import torch.utils.data  # noqa: E402
from torchdata.stateful_dataloader import StatefulDataLoader  # noqa: E402

import burnish as bn  # noqa: E402
from burnish.data.dataset import PartialDataset  # noqa: E402
from burnish.optim import AdamConfig  # noqa: E402
from burnish.record import DefaultRecorder  # noqa: E402
from burnish.train.renderer import CliMetricsRenderer  # noqa: E402

from tests.helpers import MnistBatcher, mnist  # noqa: E402
from tests.train.crash_run import kill_at_step, kill_in_valid  # noqa: E402
from tests.train.helpers import Mlp, builder  # noqa: E402

TRAIN_ITEMS, VALID_ITEMS, BATCH, EPOCHS = 960, 96, 32, 3


class LoggedItems(torch.utils.data.Dataset):
    """A burnish dataset's items, each draw appended to a file as `TAG INDEX` (one `write`
    on an O_APPEND descriptor: whole lines, from the loader's workers too)."""

    def __init__(self, dataset, tag: str, draws: int) -> None:
        self.dataset, self.tag, self.draws = dataset, tag, draws

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int):
        os.write(self.draws, f"{self.tag} {index}\n".encode())
        return self.dataset.get(index)


def collate(items):
    """MNIST items into the `MnistBatch` the MLP's steps read."""
    return MnistBatcher().batch(items, torch.device("cpu"))


def loaders(draws: int, workers: int, plain: bool):
    """The shuffled train and ordered valid loaders over the logged MNIST subsets."""
    kind = torch.utils.data.DataLoader if plain else StatefulDataLoader
    train = LoggedItems(PartialDataset(mnist("train"), 0, TRAIN_ITEMS), "train", draws)
    valid = LoggedItems(PartialDataset(mnist("test"), 0, VALID_ITEMS), "valid", draws)
    settings = {"batch_size": BATCH, "collate_fn": collate, "num_workers": workers}
    return kind(train, shuffle=True, **settings), kind(valid, **settings)


def fit(
    artifact_dir,
    draws: int,
    workers: int = 0,
    plain: bool = False,
    valid_every: int = 0,
    listener=None,
):
    """Train (or resume) the run in `artifact_dir`, each draw appended to `draws`."""
    bn.seed(11)  # the model's weights, then the train sampler's seed
    model = Mlp(dropout=0.2)
    train, valid = loaders(draws, workers, plain)
    configured = (
        builder(artifact_dir, epochs=EPOCHS, recorder=DefaultRecorder())
        .renderer(CliMetricsRenderer(file=sys.stderr))
        .checkpoint_every(3)
        .deterministic()
        .resume()
    )
    if valid_every:
        configured = configured.valid_every(valid_every)
    if listener is not None:
        configured = configured.with_listener(listener)
    return configured.build(model, AdamConfig().init(), 1e-3).fit(train, valid)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir")
    parser.add_argument("out")
    parser.add_argument("draws")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--plain", action="store_true", help="torch.utils.data.DataLoader")
    parser.add_argument("--kill-at-step", type=int, default=0)
    parser.add_argument("--kill-in-valid", action="store_true")
    parser.add_argument("--valid-every", type=int, default=0)
    args = parser.parse_args()
    if args.kill_at_step:
        kill_at_step(args.kill_at_step)
    if args.kill_in_valid:
        kill_in_valid()
    torch.set_num_threads(1)
    draws = os.open(args.draws, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    result = fit(args.artifact_dir, draws, args.workers, args.plain, args.valid_every)
    print(f"iterations={result.iterations} epochs={result.epochs_completed}", flush=True)
    torch.save(dict(result.model.state_dict()), args.out)


if __name__ == "__main__":
    main()
