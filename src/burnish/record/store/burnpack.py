"""The Burnpack container (Burn's `burn-pack` crate, format version 1), byte for byte.

```text
header    10 bytes   magic u32 LE 0x4255524E ("NRUB" on disk), version u16 LE, metadata size u32 LE
metadata  CBOR       {"tensors": {name: {"dtype", "shape", "data_offsets": [start, end],
                      "param_id"?}}, "metadata"?: {str: str}, "scalars"?: {str: {"Int"|...: v}}}
padding   to the next multiple of 256 bytes
data      each tensor's little-endian bytes at a 256-byte aligned offset (relative to data)
```

Descriptors are sorted by name (Burn's `BTreeMap`); data is written in the order given. Reading
checks every claim before trusting it (Burn's limits: metadata <= 100 MiB, <= 100,000 tensors,
<= 10 GiB a tensor, CBOR depth <= 128; plus burnish's: each tensor's bytes match its shape and
dtype and lie inside the file) and maps the file instead of reading it.

The layout's constants are in `burnpack_format.py`, writing in `burnpack_writer.py`, reading
in `burnpack_reader.py`; this module is their one import path.
"""

from burnish.record.store.burnpack_format import (
    DTYPES,
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC,
    MAGIC_NUMBER,
    MAX_FILE_SIZE,
    MAX_METADATA_SIZE,
    MAX_TENSOR_COUNT,
    MAX_TENSOR_SIZE,
    TENSOR_ALIGNMENT,
    aligned_data_section_start,
    burn_dtype,
    looks_like,
)
from burnish.record.store.burnpack_reader import PackReader
from burnish.record.store.burnpack_writer import PackTensor, encode_chunks

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "MAGIC",
    "MAGIC_NUMBER",
    "MAX_FILE_SIZE",
    "MAX_METADATA_SIZE",
    "MAX_TENSOR_COUNT",
    "MAX_TENSOR_SIZE",
    "TENSOR_ALIGNMENT",
    "PackReader",
    "PackTensor",
    "aligned_data_section_start",
    "burn_dtype",
    "encode_chunks",
    "looks_like",
]
