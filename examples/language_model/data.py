"""The corpus: the Python standard library's own source files, as bytes.

Every machine with Python has it, offline and in CI, so nothing is downloaded or shipped. The
files are the `*.py` files at the top of `sysconfig.get_paths()["stdlib"]` (not the packages
below it, not `site-packages`), sorted by name so the order is the same on every run. Every
`valid_every`-th file is held out for validation: the split is by file, so the model is
validated on modules it never saw.

The tokenizer is the bytes themselves: token `b` is byte `b`, a vocabulary of 256, nothing to
train. An item is a window of `seq_len + 1` bytes cut from the concatenated files (windows do
not overlap); the batch's inputs are its first `seq_len` bytes, its targets the `seq_len` that
follow each.
"""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from burnish.data.dataloader import Batcher
from burnish.data.dataset import Dataset

VOCAB_SIZE = 256  # bytes
SEPARATOR = b"\n\n"  # between two files


def stdlib_files(root: str | Path | None = None) -> list[Path]:
    """The top-level `*.py` files of the standard library (or of `root`), sorted by name.

    Raises:
        FileNotFoundError: if the directory holds no `*.py` file.
    """
    directory = Path(root if root is not None else sysconfig.get_paths()["stdlib"])
    files = sorted(directory.glob("*.py"), key=lambda path: path.name)
    if not files:
        raise FileNotFoundError(
            f"The corpus directory {directory} holds no *.py file. Expected the Python standard "
            "library (sysconfig.get_paths()['stdlib']); pass `root=` to read another directory."
        )
    return files


def split_files(files: list[Path], valid_every: int = 10) -> tuple[list[Path], list[Path]]:
    """(train files, valid files): every `valid_every`-th file (from the first) is validation's."""
    if valid_every < 2:
        raise ValueError(f"`valid_every` must be >= 2. Received: valid_every={valid_every}.")
    valid = files[::valid_every]
    train = [file for index, file in enumerate(files) if index % valid_every]
    return train, valid


def encode(text: str) -> np.ndarray:
    """UTF-8 bytes of `text` as tokens (uint8)."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def decode(tokens) -> str:
    """The text of byte tokens (invalid UTF-8 sequences shown as U+FFFD)."""
    return bytes(int(token) for token in tokens).decode("utf-8", errors="replace")


def read_tokens(files: list[Path], max_bytes: int | None = None) -> np.ndarray:
    """The bytes of `files`, in order, separated by a blank line; at most `max_bytes` of them."""
    data = SEPARATOR.join(file.read_bytes() for file in files)
    if max_bytes is not None:
        data = data[:max_bytes]
    return np.frombuffer(data, dtype=np.uint8).copy()


class ByteWindowDataset(Dataset[np.ndarray]):
    """Non-overlapping windows of `seq_len + 1` tokens: item `i` starts at `i * seq_len`.

    Consecutive items share one token: the last target of item `i` is the first input of item
    `i + 1`, so every byte of the corpus is predicted once.
    """

    def __init__(self, tokens: np.ndarray, seq_len: int) -> None:
        if seq_len < 1:
            raise ValueError(f"`seq_len` must be >= 1. Received: seq_len={seq_len}.")
        if len(tokens) < seq_len + 1:
            raise ValueError(
                f"The corpus holds {len(tokens)} tokens: too few for one window of "
                f"seq_len + 1 = {seq_len + 1}. Use more files or a shorter seq_len."
            )
        self.tokens, self.seq_len = tokens, seq_len
        self._offsets = np.arange(seq_len + 1)

    def __len__(self) -> int:
        return (len(self.tokens) - 1) // self.seq_len

    def get(self, index: int) -> np.ndarray | None:
        if not 0 <= index < len(self):
            return None
        start = index * self.seq_len
        return self.tokens[start : start + self.seq_len + 1]

    def get_stacked(self, indices: np.ndarray) -> np.ndarray:
        """The windows at `indices`, `[B, seq_len + 1]`, in one gather."""
        return self.tokens[indices[:, None] * self.seq_len + self._offsets]


@dataclass
class TokenBatch:
    inputs: torch.Tensor  # [B, seq_len] int64
    targets: torch.Tensor  # [B, seq_len] int64: the token after each input


class TokenBatcher(Batcher[np.ndarray, TokenBatch]):
    def batch(self, items: list[np.ndarray], device: torch.device) -> TokenBatch:
        return self.batch_stacked(np.stack(items), device)

    def batch_stacked(self, items: np.ndarray, device: torch.device) -> TokenBatch:
        windows = torch.from_numpy(items.astype(np.int64))
        return TokenBatch(windows[:, :-1].to(device), windows[:, 1:].to(device))


@dataclass
class Corpus:
    """The train and valid windows of the standard library."""

    train: ByteWindowDataset
    valid: ByteWindowDataset

    @classmethod
    def stdlib(
        cls,
        seq_len: int,
        max_train_bytes: int | None = None,
        max_valid_bytes: int | None = None,
        root: str | Path | None = None,
    ) -> Corpus:
        train_files, valid_files = split_files(stdlib_files(root))
        return cls(
            ByteWindowDataset(read_tokens(train_files, max_train_bytes), seq_len),
            ByteWindowDataset(read_tokens(valid_files, max_valid_bytes), seq_len),
        )
