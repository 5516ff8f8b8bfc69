"""W&B's offline transaction log (`.wandb` files): reading its history rows, following it as
W&B writes it. No wandb API reads these files back; the format is LevelDB's log of `Record`
protos (wandb.proto), which the installed wandb provides."""

from __future__ import annotations

import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["HistoryTail", "read_wandb_history", "wait_for_exit_record"]

log = logging.getLogger("burnish.train")


class HistoryTail:
    """Counts the history rows of a `.wandb` file as W&B writes it (reads new records only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = _FILE_HEADER.size
        self.count = 0

    def rows(self) -> int:
        """The history rows written so far."""
        from wandb.proto import wandb_internal_pb2

        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return 0
        records, self.offset = _scan(data, self.offset)
        for chunk in records:
            record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]  # generated
            record.ParseFromString(chunk)
            self.count += record.WhichOneof("record_type") == "history"
        return self.count


def wait_for_exit_record(path: Path, timeout: float) -> None:
    """Poll `path` until its exit record is written (W&B writes it after `finish` returns)."""
    from wandb.proto import wandb_internal_pb2

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            for data in _records(path):
                record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]  # generated
                record.ParseFromString(data)
                if record.WhichOneof("record_type") == "exit":
                    return
        time.sleep(0.05)
    log.warning("WandbLogger: W&B had not finished writing %s after %.0f s.", path, timeout)


# The `.wandb` transaction log: a 7-byte header (":W&B", magic 0xBEE1, version 0), then
# LevelDB-log records (checksum, length, type; split across 32 KiB blocks) of `Record` protos.
# The checksum is zlib's CRC-32 of the data, seeded with the CRC-32 of the type byte.
_FILE_HEADER = struct.Struct("<4sHB")
_RECORD_HEADER = struct.Struct("<IHB")
_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _records(path: Path) -> Iterator[bytes]:
    """The records of a `.wandb` file; a record cut short (or torn) by a crash ends the file."""
    data = path.read_bytes()
    if len(data) < _FILE_HEADER.size:
        return
    ident, magic, _version = _FILE_HEADER.unpack_from(data)
    if ident != b":W&B" or magic != 0xBEE1:
        raise ValueError(f"{path} is not a W&B transaction log (.wandb file).")
    records, _ = _scan(data, _FILE_HEADER.size)
    yield from records


def _scan(data: bytes, offset: int) -> tuple[list[bytes], int]:
    """The complete records of `data` from `offset` (the end of a record), and the offset
    after the last of them: a record not yet (or not wholly) written is left for later."""
    records: list[bytes] = []
    parts: list[bytes] = []
    end = offset
    while True:
        room = _BLOCK - offset % _BLOCK
        if room < _RECORD_HEADER.size:  # the rest of the block is padding
            if offset + room > len(data):
                return records, end
            offset += room
            continue
        if offset + _RECORD_HEADER.size > len(data):
            return records, end
        checksum, length, kind = _RECORD_HEADER.unpack_from(data, offset)
        start = offset + _RECORD_HEADER.size
        if kind == 0 or start + length > len(data):
            return records, end
        chunk = data[start : start + length]
        if zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != checksum:
            return records, end
        offset = start + length
        if kind == _FULL:
            records.append(chunk)
            end = offset
        elif kind == _FIRST:
            parts = [chunk]
        elif kind == _MIDDLE:
            parts.append(chunk)
        elif kind == _LAST:
            records.append(b"".join([*parts, chunk]))
            parts = []
            end = offset


def read_wandb_history(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """The history rows (`run.log` calls) stored in a `.wandb` file, as dicts of values."""
    from wandb.proto import wandb_internal_pb2

    for data in _records(Path(path)):
        record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]  # generated
        record.ParseFromString(data)
        if record.WhichOneof("record_type") != "history":
            continue
        row = {}
        for item in record.history.item:
            key = item.key or "/".join(item.nested_key)
            row[key] = json.loads(item.value_json)
        yield row
