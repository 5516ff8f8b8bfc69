"""The Burnpack container's layout: header constants, Burn's dtypes, a tensor's descriptor
(`burnpack.py` describes the format; `burnpack_writer.py` and `burnpack_reader.py` use this)."""

from __future__ import annotations

import dataclasses
import struct

import torch

from burnish.errors import RecordError

__all__ = [
    "BOOL_STORES",
    "DTYPES",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "MAGIC",
    "MAGIC_NUMBER",
    "MAX_FILE_SIZE",
    "MAX_METADATA_SIZE",
    "MAX_TENSOR_COUNT",
    "MAX_TENSOR_SIZE",
    "SCALAR_KINDS",
    "TENSOR_ALIGNMENT",
    "Descriptor",
    "aligned_data_section_start",
    "at_where",
    "burn_dtype",
    "looks_like",
]

MAGIC_NUMBER = 0x4255524E
MAGIC = struct.pack("<I", MAGIC_NUMBER)  # b"NRUB"
FORMAT_VERSION = 1
HEADER_SIZE = 10
TENSOR_ALIGNMENT = 256
MAX_METADATA_SIZE = 100 * 1024 * 1024
MAX_TENSOR_SIZE = 10 * 1024**3
MAX_TENSOR_COUNT = 100_000
MAX_FILE_SIZE = 100 * 1024**3

#: Burn's `DType`s burnish reads and writes, as serde/CBOR writes them, with their torch dtype.
DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64, "F32": torch.float32, "Flex32": torch.float32, "F16": torch.float16,
    "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
    "I8": torch.int8, "U64": torch.uint64, "U32": torch.uint32, "U16": torch.uint16,
    "U8": torch.uint8, "Bool": torch.bool,
}  # fmt: skip
#: How each `Bool(BoolStore)` is stored: one byte (`Native`, `U8`) or four (`U32`).
BOOL_STORES = {"Native": torch.uint8, "U8": torch.uint8, "U32": torch.uint32}
_TORCH_TO_BURN = {dtype: name for name, dtype in DTYPES.items() if name != "Flex32"}
SCALAR_KINDS = {"Int": int, "UInt": int, "Float": float, "Bool": bool}


def aligned_data_section_start(metadata_size: int) -> int:
    """Where the data section starts: header + metadata, rounded up to 256 bytes."""
    return -(-(HEADER_SIZE + metadata_size) // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT


def burn_dtype(dtype: torch.dtype, where: str = "") -> str:
    """Burn's `DType` name for a torch dtype.

    Raises:
        RecordError: for dtypes Burn has no equivalent of (complex, float8, ...).
    """
    try:
        return _TORCH_TO_BURN[dtype]
    except KeyError:
        raise RecordError(
            f"Burnpack cannot hold tensors of dtype {dtype}{at_where(where)}; it holds "
            f"{', '.join(_TORCH_TO_BURN.values())} (as torch {', '.join(map(str, DTYPES.values()))}"
            "). Cast the tensor first."
        ) from None


@dataclasses.dataclass(frozen=True)
class Descriptor:
    """A tensor's entry in the metadata."""

    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int
    param_id: int | None
    bool_store: str | None = None

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


def looks_like(data: bytes | bytearray) -> bool:
    """Whether `data` starts with Burnpack's magic."""
    return bytes(data[:4]) == MAGIC


def at_where(where: str) -> str:
    return f" (tensor {where!r})" if where else ""
