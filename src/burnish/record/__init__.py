"""Records and recorders (Burn's `burn::record`): save and load any record, at any precision.

A *record* is a nested structure of `dict[str, ...]`, `list`, `torch.Tensor`, `int`, `float`,
`bool`, `str` and `None`: a module's `into_record()`, an optimizer's or scheduler's
`to_record()`, a whole training checkpoint.

Example:
    >>> from burnish.record import CompactRecorder
    >>> path = CompactRecorder().record({"step": 3, "w": torch.ones(2)}, "/tmp/state")
    >>> path.name
    'state.mpk'
    >>> CompactRecorder().load(path)["step"]
    3
"""

from burnish.errors import RecordError
from burnish.record.base import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    FORMAT_VERSION,
    FileRecorder,
    RecordMetadata,
)
from burnish.record.detect import recorder_for_file
from burnish.record.load_args import LoadArgs
from burnish.record.recorders import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    PyTorchFileRecorder,
    SafetensorsFileRecorder,
    SensitiveCompactRecorder,
)
from burnish.record.settings import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    PrecisionSettings,
)

#: Burn's name for the recorder interface.
Recorder = FileRecorder

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "FORMAT_VERSION",
    "BinFileRecorder",
    "BinGzFileRecorder",
    "CompactRecorder",
    "DefaultRecorder",
    "DoublePrecisionSettings",
    "FileRecorder",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "JsonGzFileRecorder",
    "LoadArgs",
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "PrecisionSettings",
    "PrettyJsonFileRecorder",
    "PyTorchFileRecorder",
    "RecordError",
    "RecordMetadata",
    "Recorder",
    "SafetensorsFileRecorder",
    "SensitiveCompactRecorder",
    "recorder_for_file",
]
