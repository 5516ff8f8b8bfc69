"""Train a GPT-style byte-level language model on the Python standard library's source files.

python -m examples.language_model                 # the short run (~2 min of CPU: README.md)
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
        help="bf16: mixed precision (float32 parameters, bf16 autocast); fp32: none. Default:\n"
        "bf16 where the device computes it natively (a GPU of compute capability 8.0+, a CPU\n"
        "with AVX512-BF16 or AMX), else fp32: a CPU without them emulates bf16, several\n"
        "times slower",
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

    from examples.interrupted import exit_if_interrupted
    from examples.language_model.training import (
        TrainingConfig,
        choose_precision,
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
    if args.resume and saved.exists():
        why = f"the run's own, from {saved}"
    elif args.precision is not None:
        config = config.with_mixed_precision(None if args.precision == "fp32" else args.precision)
        why = "--precision"
    else:
        precision, why = choose_precision(args.device)
        config = config.with_mixed_precision(precision)
    print(f"Precision: {config.mixed_precision or 'fp32'} ({why})", flush=True)
    result = train(args.artifact_dir, config, args.device, resume=args.resume)
    resume = f"python -m examples.language_model --resume --artifact-dir {args.artifact_dir}"
    exit_if_interrupted(result, "no model.mpk was saved", resume)
    print(f"Saved the averaged model in {args.artifact_dir}/model.mpk")
    return result


if __name__ == "__main__":
    main()
