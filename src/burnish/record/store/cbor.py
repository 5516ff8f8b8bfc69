"""A small, strict CBOR (RFC 8949) codec for the subset Burnpack metadata uses.

Burn writes its metadata with `ciborium` through serde: definite-length maps, arrays and text
strings, integers in their shortest form, `true`/`false`/`null`, and floats in the shortest
width that keeps the value (half, single, then double). `encode` writes exactly that, so a
file burnish writes is the file Burn writes for the same content.

`decode` reads that subset and refuses everything else with a `RecordError` that says what it
found and where: indefinite lengths, tags, byte strings, `undefined`, simple values, reserved
encodings, non-UTF-8 text, duplicate or non-string map keys, trailing bytes. Sizes are bounded
by the input (a length that claims more items or bytes than remain is rejected before anything
is allocated) and nesting by `MAX_DEPTH` (Burn's `MAX_CBOR_RECURSION_DEPTH`).
"""

from __future__ import annotations

import struct
from typing import Any

from burnish.errors import RecordError

__all__ = ["MAX_DEPTH", "decode", "encode"]

#: Deepest nesting accepted (Burn's `MAX_CBOR_RECURSION_DEPTH`).
MAX_DEPTH = 128

_UINT, _NEGINT, _BYTES, _TEXT, _ARRAY, _MAP, _TAG, _SIMPLE = range(8)
_FALSE, _TRUE, _NULL, _UNDEFINED = 20, 21, 22, 23
_MAJOR_NAMES = ("unsigned int", "negative int", "byte string", "text string", "array", "map",
                "tag", "simple/float")  # fmt: skip


# -- encoding ------------------------------------------------------------------------------


def encode(value: Any) -> bytes:
    """CBOR bytes of `value`: dict (keys in the given order), list/tuple, str, int, float,
    bool, None.

    Raises:
        RecordError: for any other type, or an int outside CBOR's 64-bit range.
    """
    out = bytearray()
    _encode(value, out)
    return bytes(out)


def _head(major: int, argument: int, out: bytearray) -> None:
    if argument < 24:
        out.append(major << 5 | argument)
    elif argument < 1 << 8:
        out += bytes((major << 5 | 24, argument))
    elif argument < 1 << 16:
        out.append(major << 5 | 25)
        out += struct.pack(">H", argument)
    elif argument < 1 << 32:
        out.append(major << 5 | 26)
        out += struct.pack(">I", argument)
    else:
        out.append(major << 5 | 27)
        out += struct.pack(">Q", argument)


def _encode(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(_SIMPLE << 5 | _NULL)
    elif value is True or value is False:
        out.append(_SIMPLE << 5 | (_TRUE if value else _FALSE))
    elif isinstance(value, int):
        if not -(1 << 64) <= value < 1 << 64:
            raise RecordError(f"CBOR integers are 64-bit; received {value}.")
        if value >= 0:
            _head(_UINT, value, out)
        else:
            _head(_NEGINT, -1 - value, out)
    elif isinstance(value, float):
        _encode_float(value, out)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        _head(_TEXT, len(data), out)
        out += data
    elif isinstance(value, (list, tuple)):
        _head(_ARRAY, len(value), out)
        for item in value:
            _encode(item, out)
    elif isinstance(value, dict):
        _head(_MAP, len(value), out)
        for key, item in value.items():
            _encode(key, out)
            _encode(item, out)
    else:
        raise RecordError(
            f"Burnpack metadata holds dicts, lists, str, int, float, bool and None; "
            f"received a {type(value).__name__}."
        )


def _encode_float(value: float, out: bytearray) -> None:
    """The shortest of half/single/double that gives back the same bits (ciborium's rule)."""
    bits = struct.pack(">d", value)
    for code, fmt in ((25, ">e"), (26, ">f")):
        try:
            packed = struct.pack(fmt, value)
        except (OverflowError, struct.error):
            continue
        if struct.pack(">d", struct.unpack(fmt, packed)[0]) == bits:
            out.append(_SIMPLE << 5 | code)
            out += packed
            return
    out.append(_SIMPLE << 5 | 27)
    out += bits


# -- decoding ------------------------------------------------------------------------------


def decode(data: bytes | bytearray | memoryview) -> Any:
    """The one CBOR item `data` holds.

    Raises:
        RecordError: for anything outside the subset (see the module docstring), truncated
            input, nesting deeper than `MAX_DEPTH`, or bytes after the item.
    """
    reader = _Reader(bytes(data))
    value = reader.item(0)
    if reader.position != len(reader.data):
        raise RecordError(
            f"Burnpack metadata: {len(reader.data) - reader.position} unexpected bytes after "
            f"the CBOR item at byte {reader.position}. The file is corrupt."
        )
    return value


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def fail(self, what: str) -> RecordError:
        return RecordError(f"Burnpack metadata: {what} at byte {self.position}. The file is "
                           "corrupt or not written by Burn/burnish.")  # fmt: skip

    def take(self, count: int) -> bytes:
        end = self.position + count
        if count < 0 or end > len(self.data):
            raise self.fail(
                f"CBOR item needs {count} bytes but {len(self.data) - self.position} remain"
            )
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def head(self) -> tuple[int, int, int]:
        start = self.position
        (initial,) = self.take(1)
        major, minor = initial >> 5, initial & 31
        if minor < 24:
            return major, minor, minor
        if minor > 27:
            self.position = start
            kind = "indefinite length" if minor == 31 else f"reserved additional info {minor}"
            raise self.fail(f"CBOR {_MAJOR_NAMES[major]} with {kind} (Burn never writes one)")
        size = 1 << (minor - 24)
        return major, minor, int.from_bytes(self.take(size), "big")

    def length(self, count: int, unit: int, what: str) -> int:
        if count * unit > len(self.data) - self.position:
            raise self.fail(
                f"CBOR {what} claims {count} {'bytes' if what == 'text string' else 'entries'} "
                "but only "
                f"{len(self.data) - self.position} bytes remain"
            )
        return count

    def item(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"CBOR nesting deeper than {MAX_DEPTH} levels")
        start = self.position
        major, minor, argument = self.head()
        if major == _UINT:
            return argument
        if major == _NEGINT:
            return -1 - argument
        if major == _TEXT:
            raw = self.take(self.length(argument, 1, "text string"))
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                self.position = start
                raise self.fail("CBOR text string that is not valid UTF-8") from None
        if major == _ARRAY:
            count = self.length(argument, 1, "array")
            return [self.item(depth + 1) for _ in range(count)]
        if major == _MAP:
            return self.map(self.length(argument, 2, "map"), depth, start)
        if major == _SIMPLE:
            return self.simple(minor, argument, start)
        self.position = start
        raise self.fail(f"CBOR {_MAJOR_NAMES[major]} (Burnpack metadata has none)")

    def map(self, count: int, depth: int, start: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for _ in range(count):
            key_at = self.position
            key = self.item(depth + 1)
            if not isinstance(key, str):
                self.position = key_at
                raise self.fail(f"CBOR map key {key!r} is not a text string")
            if key in result:
                self.position = key_at
                raise self.fail(f"duplicate CBOR map key {key!r}")
            result[key] = self.item(depth + 1)
        return result

    def simple(self, minor: int, argument: int, start: int) -> Any:
        if minor == 25:
            return struct.unpack(">e", argument.to_bytes(2, "big"))[0]
        if minor == 26:
            return struct.unpack(">f", argument.to_bytes(4, "big"))[0]
        if minor == 27:
            return struct.unpack(">d", argument.to_bytes(8, "big"))[0]
        if minor in (_FALSE, _TRUE):
            return minor == _TRUE
        if minor == _NULL:
            return None
        self.position = start
        name = "undefined" if minor == _UNDEFINED else f"simple value {argument}"
        raise self.fail(f"CBOR {name} (Burnpack metadata has none)")
