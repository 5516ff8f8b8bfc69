"""Parse the IDX format (LeCun's MNIST files) into NumPy arrays, without a Python loop."""

from __future__ import annotations

import numpy as np

from burnish.errors import DatasetError

__all__ = ["parse_idx"]

# IDX type code -> element dtype (multi-byte types are big-endian).
_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def parse_idx(data: bytes, name: str = "IDX data") -> np.ndarray:
    """Parse IDX bytes: magic `00 00 <type> <ndim>`, `ndim` big-endian int32 sizes, then data.

    Args:
        data: the whole (decompressed) file.
        name: what to call the file in error messages.

    Returns:
        A read-only array of the file's shape, viewing `data` (no copy for `uint8` files).

    Raises:
        DatasetError: if the header is invalid or the size does not match it.
    """
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise DatasetError(
            f"{name} is not an IDX file: its magic number is {data[:4].hex() or 'missing'}, "
            "expected 0000<type><ndim> with type one of 08 09 0b 0c 0d 0e."
        )
    dtype, ndim = np.dtype(_DTYPES[data[2]]), data[3]
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise DatasetError(f"{name} is truncated: its header needs {offset} bytes.")
    shape = tuple(int(size) for size in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise DatasetError(
            f"{name} has {len(data)} bytes, expected {expected} for shape {shape} of {dtype}."
        )
    return np.frombuffer(data, dtype=dtype, offset=offset).reshape(shape)
