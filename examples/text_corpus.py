"""A real text corpus on every machine, offline: the Python standard library's own sources.

`stdlib_corpus()` reads the `.py` files of `sysconfig.get_paths()["stdlib"]` (test suites and
vendored packages left out), in sorted path order, and splits them into train and valid *by
file*: every `valid_every`-th file goes to valid, so no file is seen by both. Tokens are bytes
(0..255): no tokenizer to train or download. A CPython install holds about 20-30 MB of such
source; `max_bytes` caps each split for short runs.

Used by `examples/huggingface.py`; any example that wants text can share it:

    from examples.text_corpus import stdlib_corpus, ByteWindows
    corpus = stdlib_corpus(max_bytes=2_000_000)
    train = ByteWindows(corpus.train, seq_len=128)    # a burnish Dataset of token windows
"""

from __future__ import annotations

import dataclasses
import sysconfig
from pathlib import Path

import torch

from burnish.data.dataset import Dataset

__all__ = ["VOCAB_SIZE", "ByteWindows", "TextCorpus", "stdlib_corpus", "stdlib_files"]

#: Byte tokens: one per byte value.
VOCAB_SIZE = 256
_SKIPPED = {"test", "tests", "idlelib", "site-packages", "dist-packages", "lib2to3", "__pycache__"}


@dataclasses.dataclass(frozen=True)
class TextCorpus:
    """A corpus split by file: each split is one `uint8` tensor of bytes (files joined by
    `\\n\\n`) and the files it holds."""

    train: torch.Tensor
    valid: torch.Tensor
    train_files: tuple[Path, ...]
    valid_files: tuple[Path, ...]


def stdlib_files(root: str | Path | None = None) -> list[Path]:
    """The standard library's `.py` files under `root` (default: this interpreter's), sorted,
    without test suites, IDLE and installed packages."""
    base = Path(root or sysconfig.get_paths()["stdlib"])
    files = [p for p in base.rglob("*.py") if not _SKIPPED & set(p.relative_to(base).parts)]
    if not files:
        raise FileNotFoundError(
            f"No Python source files under {str(base)!r}: this Python has no standard library "
            "sources (some minimal images ship only .pyc). Pass `root=` a folder of .py files."
        )
    return sorted(files)


def stdlib_corpus(
    max_bytes: int | None = None, valid_every: int = 10, root: str | Path | None = None
) -> TextCorpus:
    """The standard library's sources as byte tokens, split into train/valid by file.

    Args:
        max_bytes: cap each split at about this many bytes (whole files, in order); None:
            everything. The valid split gets `max_bytes // valid_every` at most.
        valid_every: every this many files (the last of each group) go to valid.
        root: the folder to read, default the standard library of this interpreter.
    """
    if valid_every < 2:
        raise ValueError(f"`valid_every` must be >= 2. Received: valid_every={valid_every}.")
    train, valid = [], []
    for index, path in enumerate(stdlib_files(root)):
        (valid if index % valid_every == valid_every - 1 else train).append(path)
    cap = None if max_bytes is None else max(1, max_bytes // valid_every)
    train_files, train_bytes = _read(train, max_bytes)
    valid_files, valid_bytes = _read(valid, cap)
    return TextCorpus(train_bytes, valid_bytes, train_files, valid_files)


def _read(files: list[Path], max_bytes: int | None) -> tuple[tuple[Path, ...], torch.Tensor]:
    chunks, used, size = [], [], 0
    for path in files:
        if max_bytes is not None and size >= max_bytes:
            break
        data = path.read_bytes() + b"\n\n"
        chunks.append(data)
        used.append(path)
        size += len(data)
    joined = b"".join(chunks)
    if max_bytes is not None:
        joined = joined[:max_bytes]
    return tuple(used), torch.frombuffer(bytearray(joined), dtype=torch.uint8)


class ByteWindows(Dataset[torch.Tensor]):
    """Non-overlapping windows of `seq_len` byte tokens (int64) over a split."""

    def __init__(self, tokens: torch.Tensor, seq_len: int) -> None:
        if seq_len < 2 or tokens.numel() < seq_len:
            raise ValueError(
                f"`seq_len` must be >= 2 and at most the split's {tokens.numel()} tokens. "
                f"Received: seq_len={seq_len}."
            )
        self.tokens, self.seq_len = tokens, seq_len

    def get(self, index: int) -> torch.Tensor | None:
        if not 0 <= index < len(self):
            return None
        start = index * self.seq_len
        return self.tokens[start : start + self.seq_len].long()

    def __len__(self) -> int:
        return self.tokens.numel() // self.seq_len
