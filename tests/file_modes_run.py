"""Writes every kind of file burnish writes under one umask; prints each file's mode as JSON.

    python tests/file_modes_run.py UMASK DIRECTORY

Run as a subprocess (the umask is process-wide): a Learner fit with a Compact checkpointer,
Burn's file logs, a CSV table and an MLflow run (`mlflow-run.json`), `save_file`, a config,
a record replaced in place, `burnish convert` and `burnish report`.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))


def main() -> None:
    os.umask(int(sys.argv[1], 8))
    directory = Path(sys.argv[2])

    import burnish as bn
    from burnish.cli.main import main as burnish
    from burnish.optim import AdamConfig
    from burnish.record import CompactRecorder, DefaultRecorder
    from burnish.train.logger import CsvLogger, MlflowLogger
    from burnish.train.renderer import NullRenderer

    from tests.train.helpers import Mlp, builder, loaders

    bn.seed(1)
    run = directory / "run"
    learner = (
        builder(run, epochs=1, recorder=CompactRecorder())
        .renderer(NullRenderer())
        .log_to(CsvLogger(), MlflowLogger())
        .build(Mlp(), AdamConfig().init(), 1e-3)
    )
    model = learner.fit(*loaders(batch_size=64, train_items=128, valid_items=64)).model
    saved = bn.save_file(model, directory / "model", DefaultRecorder())
    bn.save_file(model, saved.with_suffix(""), DefaultRecorder())  # replaces the file
    AdamConfig().save(directory / "optim.json")
    converted = str(directory / "converted")
    assert burnish(["convert", str(saved), converted, "--to", "safetensors"]) == 0
    assert burnish(["report", str(run), "-o", str(directory / "report.html")]) == 0
    modes = {
        str(path.relative_to(directory)): stat.S_IMODE(path.stat().st_mode)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }
    print(json.dumps(modes))


if __name__ == "__main__":
    main()
