"""burnish: Burn's training system for Python, on PyTorch.

    import burnish as bn

    bn.seed(42)
    grads = bn.backward(loss)

The top-level names are listed in `__all__`; submodules (`burnish.optim`, `burnish.train`,
`burnish.record`, `burnish.data`, ...) are imported on first use so `import burnish` stays cheap:
it does not import torch (`burnish summary` and `burnish report` read logs without it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from burnish._version import __version__
from burnish.config import Config, config
from burnish.errors import (
    ArtifactDirError,
    BurnishError,
    CheckpointError,
    ConfigError,
    DatasetError,
    RecordError,
    RunLockedError,
)

# name -> module that defines it; resolved on first attribute access (PEP 562).
_LAZY = {
    "device": "burnish.backend",
    "seed": "burnish.backend",
    "Module": "burnish.module",
    "checkpoint_blocks": "burnish.gradient_checkpointing",
    "checkpointed_blocks": "burnish.gradient_checkpointing",
    "valid": "burnish.module",
    "num_params": "burnish.module",
    "save_file": "burnish.module",
    "load_file": "burnish.module",
    "into_record": "burnish.module",
    "load_record": "burnish.module",
    "save_into": "burnish.module",
    "load_from": "burnish.module",
    "backward": "burnish.optim.grads",
    "grad": "burnish.optim.grads",
    "Gradients": "burnish.optim.grads",
    "ModelSummary": "burnish.module_summary",
    "model_summary": "burnish.module_summary",
}

_SUBPACKAGES = ("data", "lr_scheduler", "nn", "optim", "record", "train")

__all__ = [
    "ArtifactDirError",
    "BurnishError",
    "CheckpointError",
    "Config",
    "ConfigError",
    "DatasetError",
    "Gradients",
    "ModelSummary",
    "Module",
    "RecordError",
    "RunLockedError",
    "__version__",
    "backward",
    "checkpoint_blocks",
    "checkpointed_blocks",
    "config",
    "device",
    "grad",
    "into_record",
    "load_file",
    "load_from",
    "load_record",
    "model_summary",
    "num_params",
    "save_file",
    "save_into",
    "seed",
    "valid",
]

if TYPE_CHECKING:
    from burnish.backend import device, seed
    from burnish.gradient_checkpointing import checkpoint_blocks, checkpointed_blocks
    from burnish.module import (
        Module,
        into_record,
        load_file,
        load_from,
        load_record,
        num_params,
        save_file,
        save_into,
        valid,
    )
    from burnish.module_summary import ModelSummary, model_summary
    from burnish.optim.grads import Gradients, backward, grad


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"burnish.{name}")
    raise AttributeError(f"module 'burnish' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBPACKAGES))
