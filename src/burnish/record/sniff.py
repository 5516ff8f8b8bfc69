"""Recognise a file's format from its first bytes, to say *what* a wrong file is."""

from __future__ import annotations

from burnish.record.formats import bin as bin_format
from burnish.record.formats import gzip as gzip_format
from burnish.record.formats import safetensors as safetensors_format

__all__ = ["HINTS", "detect"]

#: Burnpack's magic 0x4255524E, little-endian (`burnish.record.store.burnpack.MAGIC`).
BURNPACK_MAGIC = b"NRUB"

#: What to use instead, by detected kind.
HINTS = {
    "gzip": "a gzip recorder (NamedMpkGzFileRecorder, BinGzFileRecorder or JsonGzFileRecorder)",
    "burnish binary": "BinFileRecorder",
    "JSON": "PrettyJsonFileRecorder",
    "MessagePack": "NamedMpkFileRecorder (CompactRecorder, DefaultRecorder)",
    "safetensors": "SafetensorsFileRecorder",
    "Burnpack": "BurnpackFileRecorder (or BurnpackStore to load a module)",
    "PyTorch zip": "PyTorchFileRecorder",
    "pickle": "PyTorchFileRecorder (legacy pickles load only through torch.load)",
}


def detect(data: bytes | bytearray) -> str:
    """Name the kind of data: one of `HINTS`' keys, `"empty"` or `"unknown"`."""
    head = bytes(data[:16])
    if not head:
        return "empty"
    if head.startswith(bin_format.MAGIC[:8]):
        return "burnish binary"
    if head.startswith(BURNPACK_MAGIC):
        return "Burnpack"
    if head.startswith(gzip_format.MAGIC):
        return "gzip"
    if head.startswith(b"PK\x03\x04"):
        return "PyTorch zip"
    if head[0] == 0x80 and len(head) > 1 and 2 <= head[1] <= 5:
        return "pickle"
    if safetensors_format.looks_like(data):
        return "safetensors"
    if head.lstrip()[:1] in (b"{", b"["):
        return "JSON"
    if _msgpack_map_with_str_key(head):
        return "MessagePack"
    return "unknown"


def _msgpack_map_with_str_key(head: bytes) -> bool:
    """A MessagePack map whose first key is a string (what every record file starts with)."""
    if 0x81 <= head[0] <= 0x8F:
        key = head[1:2]
    elif head[0] == 0xDE:
        key = head[3:4]
    elif head[0] == 0xDF:
        key = head[5:6]
    else:
        return False
    return bool(key) and (0xA0 <= key[0] <= 0xBF or key[0] in (0xD9, 0xDA, 0xDB))
