"""`burnish inspect FILE`: what a record file says about itself, its tensors and its model."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import Any

from burnish.cli.base import format_bytes
from burnish.cli.remote import local_file
from burnish.cli.state import describe_state

__all__ = ["StoredRecord", "add_parser", "read_record", "run"]

_FORMATS = {
    "burnish.mpk": "named MessagePack",
    "burnish.bin": "burnish binary",
    "burnish.json": "JSON",
    "burnish.safetensors": "safetensors",
    "foreign": "safetensors written by another tool",
    "pytorch": "a PyTorch zip, from torch.save",
    "burnish.burnpack": "Burnpack",
    "burnpack": "Burnpack written by Burn or BurnpackStore",
}


def add_parser(commands: Any) -> None:
    """Add the `inspect` subcommand to `commands` (the parser's subparsers)."""
    parser = commands.add_parser(
        "inspect",
        help="a record's metadata, tensors and model summary",
        description="Print what a record file says about itself (format, precision, the "
        "burnish version that wrote it), each tensor's name, shape and dtypes, the total count, "
        "and the model summary grouped per top-level module.",
    )
    parser.add_argument(
        "file", metavar="FILE", help="a record file (any burnish format), or its URL"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print what the record `args.file` holds (`read_record`).

    Returns:
        0, the exit status.

    Raises:
        RecordError: if the file is missing, not a record, truncated or corrupt.
    """
    with local_file(args.file) as path:
        print(read_record(path), end="")
    return 0


@dataclasses.dataclass(frozen=True)
class StoredRecord:
    """A record file as stored: its metadata, tensors (flat names) and other values.

    Attributes:
        path: The file.
        size: Its size in bytes.
        recorder: The name of the recorder class that reads it.
        metadata: What the file says about itself (`RecordMetadata`).
        tensors: Flat name -> `TensorLeaf` (stored data and the dtype it loads as).
        others: The number of values that are not tensors (ints, strings, ...).
        state: What the record is when it is training state rather than a model (an
            optimizer's, a scheduler's or the learner's, from a checkpoint), else None.
        file_metadata: The strings a Burnpack or safetensors file carries besides burnish's
            own record metadata (a store's `format`, `producer`, `version`, and what was
            added with `.metadata(key, value)`).
    """

    path: Path
    size: int
    recorder: str
    metadata: Any
    tensors: dict[str, Any]
    others: int
    state: str | None = None
    file_metadata: dict[str, str] = dataclasses.field(default_factory=dict)

    def model_summary(self) -> Any:
        """The `ModelSummary` of the tensors, grouped by the first part of their names."""
        from burnish.module_summary import ModelSummary

        return ModelSummary.from_record(self.tensors)

    def __str__(self) -> str:
        meta = self.metadata
        described = _FORMATS.get(meta.format, "unknown")
        if meta.format == "foreign" and self.file_metadata.get("producer") == "burnish":
            described = "safetensors written by burnish's SafetensorsStore"
        lines = [
            f"File: {self.path} ({format_bytes(self.size)}, read with {self.recorder})",
            f"Format: {meta.format} ({described})"
            + (f", format version {meta.format_version}" if meta.format_version else ""),
        ]
        if self.file_metadata:
            pairs = ", ".join(f"{key}={value}" for key, value in self.file_metadata.items())
            lines.append(f"File metadata: {pairs}")
        if meta.settings:
            lines.append(f"Precision: {meta.settings} (floats stored as {meta.float}, ints as "
                         f"{meta.int})")  # fmt: skip
            lines.append(f"Written by: burnish {meta.version}")
        else:
            lines.append("Precision: as the file stores each tensor (no recorder settings)")
        if meta.record_type:
            lines.append(f"Record type: {meta.record_type}")
        total = sum(math.prod(leaf.data.shape) for leaf in self.tensors.values())
        lines.append(
            f"Tensors: {len(self.tensors)}, {total:,} elements in all"
            + (f"; {self.others} other values" if self.others else "")
        )
        text = "\n".join(lines) + "\n"
        if self.tensors:
            text += "\n" + _tensor_table(self.tensors)
        if self.state is not None:  # training state: no model summary of its tensors
            return text + "\n" + self.state
        if self.tensors:
            text += "\n" + str(self.model_summary())
        return text


def read_record(path: Path) -> StoredRecord:
    """Read any record file, telling its format from its bytes.

    Raises:
        RecordError: if it is missing, not a record, truncated or corrupt.
    """
    from burnish.record import recorder_for_file
    from burnish.record.formats.tensor import TensorLeaf
    from burnish.record.tree import flatten

    recorder = recorder_for_file(path)
    metadata, tree = recorder.load_stored(path)
    flat = flatten(tree) if isinstance(tree, (dict, list)) else {"": tree}
    tensors = {name: leaf for name, leaf in flat.items() if isinstance(leaf, TensorLeaf)}
    return StoredRecord(
        path=path,
        size=path.stat().st_size,
        recorder=type(recorder).__name__,
        metadata=metadata,
        tensors=tensors,
        others=len(flat) - len(tensors),
        state=describe_state(tree),
        file_metadata=_file_metadata(path, metadata.format),
    )


def _file_metadata(path: Path, format: str) -> dict[str, str]:
    """A Burnpack or safetensors file's string metadata, less burnish's record keys."""
    if format in ("burnpack", "burnish.burnpack"):
        from burnish.record.store.burnpack import PackReader

        strings = PackReader.from_file(path).metadata
    elif format in ("foreign", "burnish.safetensors"):
        import mmap

        from burnish.record.formats import safetensors

        with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            header, _ = safetensors._header(data)  # type: ignore[arg-type]
        strings = header.get("__metadata__") or {}
    else:
        return {}
    return {key: str(value) for key, value in strings.items() if not key.startswith("burnish.")}


def _tensor_table(tensors: dict[str, Any]) -> str:
    rows = [
        (
            name or "<root>",
            str(list(leaf.data.shape)),
            _dtype(leaf.data.dtype),
            _dtype(leaf.source_dtype),
            f"{math.prod(leaf.data.shape):,}",
        )
        for name, leaf in tensors.items()
    ]
    header = ("Tensor", "Shape", "Stored as", "Loads as", "Elements")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        padded = [
            c.rjust(w) if i == 4 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ]
        return "| " + " | ".join(padded) + " |\n"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|\n"
    return line(header) + rule + "".join(line(row) for row in rows)


def _dtype(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")
