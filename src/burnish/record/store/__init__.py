"""Burn's `burn-store` for PyTorch modules: Burnpack, safetensors and PyTorch stores.

Example:
    >>> import torch
    >>> from burnish.record.store import BurnpackStore, load_from, save_into
    >>> model = torch.nn.Linear(3, 2)
    >>> save_into(model, BurnpackStore.from_file("artifacts/model").overwrite(True))
    >>> load_from(model, BurnpackStore.from_file("artifacts/model")).applied
    ['weight', 'bias']
"""

from burnish.record.store.adapter import (
    BurnToPyTorchAdapter,
    ChainAdapter,
    IdentityAdapter,
    ModuleAdapter,
    PyTorchToBurnAdapter,
)
from burnish.record.store.apply_result import ApplyError, ApplyResult
from burnish.record.store.base import ModuleStore
from burnish.record.store.burnpack_store import BurnpackStore
from burnish.record.store.filter import PathFilter
from burnish.record.store.indices import map_indices_contiguous
from burnish.record.store.module_record import DTypePolicy, ModuleRecord
from burnish.record.store.module_store import load_from, save_into
from burnish.record.store.precision import FloatCastAdapter, HalfPrecisionAdapter
from burnish.record.store.pytorch_store import PytorchStore
from burnish.record.store.remapper import KeyRemapper
from burnish.record.store.safetensors_store import SafetensorsStore
from burnish.record.store.snapshot import TensorSnapshot

__all__ = [
    "ApplyError",
    "ApplyResult",
    "BurnToPyTorchAdapter",
    "BurnpackStore",
    "ChainAdapter",
    "DTypePolicy",
    "FloatCastAdapter",
    "HalfPrecisionAdapter",
    "IdentityAdapter",
    "KeyRemapper",
    "ModuleAdapter",
    "ModuleRecord",
    "ModuleStore",
    "PathFilter",
    "PyTorchToBurnAdapter",
    "PytorchStore",
    "SafetensorsStore",
    "TensorSnapshot",
    "load_from",
    "map_indices_contiguous",
    "save_into",
]
