"""Train a GPT-style byte-level language model on the Python standard library's source files.

python -m examples.language_model                 # the short run (about 2 minutes on 2 CPU cores)
python -m examples.language_model --full          # the longer recipe (see BENCHMARKS.md)
python -m examples.language_model --resume        # continue the run in --artifact-dir exactly
python -m examples.language_model.generate        # then sample text from the saved model
"""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--artifact-dir", default="artifacts/language-model")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--full", action="store_true", help="the longer recipe")
    parser.add_argument("--iterations", type=int, help="optimizer steps (default 250, full 2000)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument(
        "--precision",
        choices=("bf16", "fp16", "fp32"),
        help="default bf16 (mixed precision: float32 parameters, bf16 autocast); fp32: none",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="torch's intra-op threads (default: torch's choice, one per core); on a machine\n"
        "shared with other jobs, 1 avoids oversubscription, which can be 10x slower",
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)

    from pathlib import Path

    from examples.language_model.training import (
        TrainingConfig,
        default_config,
        full_config,
        train,
    )

    saved = Path(args.artifact_dir) / "config.json"
    if args.resume and saved.exists():  # the run's own recipe
        config = TrainingConfig.load(saved)
    else:
        config = full_config() if args.full else default_config()
    if args.iterations is not None:
        config = config.with_max_iterations(args.iterations)
    if args.precision is not None and not (args.resume and saved.exists()):
        precision = None if args.precision == "fp32" else args.precision
        config = config.with_mixed_precision(precision)
    result = train(args.artifact_dir, config, args.device, resume=args.resume)
    print(f"Saved the averaged model in {args.artifact_dir}/model.mpk")
    return result


if __name__ == "__main__":
    main()
