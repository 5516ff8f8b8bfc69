"""Gzip with a bound: compression for the `*Gz*` recorders, decompression that stops early.

Decompression streams and stops as soon as the output would exceed `max_size`, so a gzip
bomb costs at most `max_size` bytes of memory and the time to inflate them.
"""

from __future__ import annotations

import gzip as _gzip
import zlib
from collections.abc import Iterable, Iterator

from burnish.errors import RecordError

__all__ = ["MAGIC", "chunked", "compress", "compress_chunks", "decompress"]

MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def compress(data: bytes, level: int) -> bytes:
    """Gzip `data` deterministically (no timestamp, no file name)."""
    return _gzip.compress(data, compresslevel=level, mtime=0)


def compress_chunks(
    chunks: Iterable[bytes | memoryview], level: int
) -> Iterator[bytes | memoryview]:
    """Gzip a stream of chunks (one gzip member, no timestamp) without joining them."""
    deflater = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for chunk in chunks:
        for start in range(0, len(chunk), _CHUNK):
            out = deflater.compress(chunk[start : start + _CHUNK])
            if out:
                yield out
    yield deflater.flush()


def decompress(chunks: Iterable[bytes], max_size: int) -> bytearray:
    """Inflate one gzip stream from `chunks`, refusing output larger than `max_size` bytes.

    Raises:
        RecordError: for data that is not gzip, is truncated, has trailing bytes, or inflates
            beyond `max_size`.
    """
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = bytearray()
    for chunk in chunks:
        if inflater.eof:
            if chunk:
                raise RecordError("Gzip stream is followed by extra bytes: the file is corrupt.")
            continue
        data = chunk
        while data and not inflater.eof:
            try:
                out += inflater.decompress(data, max_size + 1 - len(out))
            except zlib.error as error:
                raise RecordError(f"Invalid gzip data ({error}): the file is corrupt.") from None
            if len(out) > max_size:
                raise RecordError(
                    f"Gzip data inflates to more than max_decompressed_bytes={max_size} bytes: "
                    "the file is corrupt or a decompression bomb. If it is a genuine large "
                    "record, raise the recorder's `max_decompressed_bytes`."
                )
            data = inflater.unconsumed_tail
        if inflater.eof and inflater.unused_data:
            raise RecordError("Gzip stream is followed by extra bytes: the file is corrupt.")
    if not inflater.eof:
        raise RecordError("Gzip data is truncated (the stream has no end): the file is corrupt.")
    return out


def chunked(data: bytes | bytearray | memoryview) -> Iterable[bytes]:
    """Split in-memory bytes into the chunks `decompress` takes."""
    view = memoryview(data)
    for start in range(0, len(view), _CHUNK):
        yield bytes(view[start : start + _CHUNK])
