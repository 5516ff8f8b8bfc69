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
from burnish.record.store import (
    ApplyError,
    ApplyResult,
    BurnpackStore,
    BurnToPyTorchAdapter,
    ChainAdapter,
    DTypePolicy,
    FloatCastAdapter,
    HalfPrecisionAdapter,
    IdentityAdapter,
    KeyRemapper,
    ModuleAdapter,
    ModuleRecord,
    ModuleStore,
    PathFilter,
    PytorchStore,
    PyTorchToBurnAdapter,
    SafetensorsStore,
    TensorSnapshot,
    load_from,
    save_into,
)
from burnish.record.store.recorder import BurnpackFileRecorder

#: Burn's name for the recorder interface.
Recorder = FileRecorder

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "FORMAT_VERSION",
    "ApplyError",
    "ApplyResult",
    "BinFileRecorder",
    "BinGzFileRecorder",
    "BurnToPyTorchAdapter",
    "BurnpackFileRecorder",
    "BurnpackStore",
    "ChainAdapter",
    "CompactRecorder",
    "DTypePolicy",
    "DefaultRecorder",
    "DoublePrecisionSettings",
    "FileRecorder",
    "FloatCastAdapter",
    "FullPrecisionSettings",
    "HalfPrecisionAdapter",
    "HalfPrecisionSettings",
    "IdentityAdapter",
    "JsonGzFileRecorder",
    "KeyRemapper",
    "LoadArgs",
    "ModuleAdapter",
    "ModuleRecord",
    "ModuleStore",
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "PathFilter",
    "PrecisionSettings",
    "PrettyJsonFileRecorder",
    "PyTorchFileRecorder",
    "PyTorchToBurnAdapter",
    "PytorchStore",
    "RecordError",
    "RecordMetadata",
    "Recorder",
    "SafetensorsFileRecorder",
    "SafetensorsStore",
    "SensitiveCompactRecorder",
    "TensorSnapshot",
    "load_from",
    "recorder_for_file",
    "save_into",
]
