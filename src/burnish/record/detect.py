"""Which recorder reads a file, told from its bytes: for tools that take any record file.

The extension is not trusted: the first bytes (and, for gzip, the first inflated bytes) name the
format, as `sniff.detect` does for error messages. The precision needs no guessing: every file
says what it stores, and any recorder of the right format loads any precision.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

from burnish.errors import RecordError
from burnish.record import sniff
from burnish.record.base import FileRecorder
from burnish.record.recorders import (
    BinFileRecorder,
    BinGzFileRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    PyTorchFileRecorder,
    SafetensorsFileRecorder,
)
from burnish.record.store.recorder import BurnpackFileRecorder

__all__ = ["recorder_for_file"]

_HEAD = 64 * 1024
_PLAIN: dict[str, type[FileRecorder]] = {
    "MessagePack": NamedMpkFileRecorder,
    "burnish binary": BinFileRecorder,
    "JSON": PrettyJsonFileRecorder,
    "safetensors": SafetensorsFileRecorder,
    "PyTorch zip": PyTorchFileRecorder,
    "Burnpack": BurnpackFileRecorder,
}
_GZIPPED: dict[str, type[FileRecorder]] = {
    "MessagePack": NamedMpkGzFileRecorder,
    "burnish binary": BinGzFileRecorder,
    "JSON": JsonGzFileRecorder,
}
_FORMATS = "MessagePack, binary, JSON or safetensors (gzipped or not), a PyTorch zip or Burnpack"


def recorder_for_file(path: str | os.PathLike) -> FileRecorder:
    """A recorder that loads the file at `path`, chosen from the file's first bytes.

    Example:
        >>> recorder = recorder_for_file("artifacts/checkpoint/epoch-2/model.mpk")
        >>> recorder.load_metadata("artifacts/checkpoint/epoch-2/model.mpk").settings
        'HalfPrecisionSettings'

    Raises:
        RecordError: if `path` is missing, a directory, empty, or not in a format burnish
            reads (the message says what it is instead, when that can be told).
    """
    path = Path(path)
    if path.is_dir():
        records = sorted(child.name for child in path.iterdir() if _record_name(child))[:6]
        hint = f" Pass one of its record files: {', '.join(records)}." if records else ""
        raise RecordError(f"{path} is a directory, not a record file.{hint}")
    try:
        with open(path, "rb") as file:
            head = file.read(_HEAD)
            size = os.fstat(file.fileno()).st_size
    except FileNotFoundError:
        raise RecordError(f"No such file: {path}. Pass the path of a record file.") from None
    except OSError as error:
        raise RecordError(f"Cannot read {path}: {error.strerror or error}.") from None
    kind = _kind(head, size)
    if kind in _PLAIN:
        return _PLAIN[kind]()
    if kind == "gzip":
        inner = _kind(_inflate_head(head, path), None)
        if inner in _GZIPPED:
            return _GZIPPED[inner]()
        raise RecordError(
            f"{path} is a gzip file whose content is {_what(inner)}, not a record. burnish "
            f"reads {_FORMATS}."
        )
    if kind == "pickle":
        raise RecordError(
            f"{path} is a legacy PyTorch pickle, which burnish never loads (unpickling runs "
            "code). Re-save it with a current torch.save, or as safetensors."
        )
    raise RecordError(f"{path} is {_what(kind)}, not a record file. burnish reads {_FORMATS}.")


def _record_name(path: Path) -> bool:
    """Whether `path` is a file named like a record (`model.mpk`, `optim.bin.gz`, `w.pt`)."""
    extensions = {f".{cls.file_extension}" for cls in (*_PLAIN.values(), *_GZIPPED.values())}
    return path.is_file() and any(path.name.endswith(ext) for ext in extensions | {".pth"})


def _kind(head: bytes, size: int | None) -> str:
    # A safetensors header may be longer than `head`: check its length against the file's size.
    if size is not None and len(head) >= 9 and head[8:9] == b"{":
        (length,) = struct.unpack_from("<Q", head)
        if length <= size - 8:
            return "safetensors"
    return sniff.detect(head)


def _inflate_head(head: bytes, path: Path) -> bytes:
    try:
        return zlib.decompressobj(wbits=zlib.MAX_WBITS | 16).decompress(head, 4096)
    except zlib.error as error:
        raise RecordError(f"{path} is a corrupt gzip file ({error}).") from None


def _what(kind: str) -> str:
    if kind == "empty":
        return "empty"
    if kind == "unknown":
        return "of an unknown format"
    return f"{kind} data"
