"""Sample text from a trained language model.

    python -m examples.language_model.generate --prompt "def " --tokens 300
    python -m examples.language_model.generate --temperature 0.8 --top-k 20 --seed 1

Loads `config.json` and the model file saved by the training (`model.*`, in whichever format
a recorder wrote it: the recorder is told from the file's bytes) from `--artifact-dir`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from burnish.record import recorder_for_file

from examples.language_model.data import decode, encode
from examples.language_model.model import Gpt
from examples.language_model.training import TrainingConfig


def model_file(artifact_dir: str | Path) -> Path:
    """The saved model in `artifact_dir` (`model.mpk`, `model.safetensors`, ...).

    Raises:
        FileNotFoundError: if there is none.
    """
    found = sorted(Path(artifact_dir).glob("model.*"))
    if not found:
        raise FileNotFoundError(
            f"No model file (model.*) in {artifact_dir}. Train first: "
            "python -m examples.language_model --artifact-dir DIR."
        )
    return found[0]


def load_model(artifact_dir: str | Path, device: torch.device | str = "cpu") -> Gpt:
    """The trained model of `artifact_dir`, as its inference twin (`model.valid()`)."""
    path = model_file(artifact_dir)  # first: a directory never trained in says so
    config = TrainingConfig.load(Path(artifact_dir) / "config.json")
    model = config.model.init(device).load_file(path, recorder_for_file(path), device)
    return model.valid()


def generate(
    artifact_dir: str | Path,
    prompt: str = "def ",
    num_tokens: int = 200,
    temperature: float = 0.8,
    top_k: int | None = 40,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> str:
    """`prompt` and the text the model of `artifact_dir` writes after it."""
    model = load_model(artifact_dir, device)
    tokens = torch.from_numpy(encode(prompt)).long().to(device)[None]
    generator = torch.Generator(device).manual_seed(seed)
    out = model.generate(tokens, num_tokens, temperature, top_k, generator)
    return decode(out[0].tolist())


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--artifact-dir", default="artifacts/language-model")
    parser.add_argument("--prompt", default="def ")
    parser.add_argument("--tokens", type=int, default=200, help="bytes to generate")
    parser.add_argument("--temperature", type=float, default=0.8, help="0: the most likely")
    parser.add_argument("--top-k", type=int, default=40, help="sample among the k most likely")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    try:
        text = generate(
            args.artifact_dir,
            args.prompt,
            args.tokens,
            args.temperature,
            args.top_k,
            args.seed,
            args.device,
        )
    except FileNotFoundError as error:
        parser.exit(1, f"error: {error}\n")
    print(text)
    return text


if __name__ == "__main__":
    main()
