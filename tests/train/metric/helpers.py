"""Fixed inputs and helpers shared by the metric tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from burnish.train.metric import MetricMetadata, Progress

# Ops that read a tensor back to the host (or need its values to size their result, which
# syncs on an accelerator).
_SYNC_OPS = {
    "aten::_local_scalar_dense",
    "aten::item",
    "aten::is_nonzero",
    "aten::equal",
    "aten::nonzero",
    "aten::nonzero_static",
    "aten::masked_select",
    "aten::unique_dim",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::repeat_interleave",
    "aten::bincount",
}
_INDEX_OPS = {"aten::index", "aten::index_put", "aten::index_put_"}  # sync with bool masks
_HOST_READS = ("item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__")


def metadata(iteration: int = 1, lr: float | None = None) -> MetricMetadata:
    """Metadata of iteration `iteration` of a 1-epoch run."""
    return MetricMetadata(Progress(iteration, 10), 1, 1, iteration, lr)


def _has_mask_index(args: tuple) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(
        isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices or ()
    )


class _SyncDetector(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.syncs: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        if name in _SYNC_OPS or (name in _INDEX_OPS and _has_mask_index(args)):
            self.syncs.append(name)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def no_host_sync(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail if the block reads a tensor back to the host or runs a value-dependent-shape op.

    Catches what would be a device sync on an accelerator, on the CPU: dispatched ops that
    read values (`_local_scalar_dense` behind `.item()`/`float(t)`, `nonzero`, ...) and the
    Python methods that copy a tensor to host objects (`tolist`, `numpy`, `bool(t)`).
    """
    with monkeypatch.context() as patch:
        for method in _HOST_READS:

            def refuse(self, *args, _method=method, **kwargs):
                raise AssertionError(f"host read `Tensor.{_method}` during update")

            patch.setattr(torch.Tensor, method, refuse)
        detector = _SyncDetector()
        with detector:
            yield
    assert detector.syncs == [], f"ops that sync the device ran: {detector.syncs}"


def weighted_mean(values: list[float], weights: list[int]) -> float:
    """The count-weighted mean of the defined (non-NaN) values."""
    values_arr, weights_arr = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    keep = ~np.isnan(values_arr)
    return float((values_arr[keep] * weights_arr[keep]).sum() / weights_arr[keep].sum())


# Burn's fixtures (burn-train/src/lib.rs, `dummy_classification_input`).
BINARY_SCORES = torch.tensor([[0.3], [0.2], [0.7], [0.1], [0.55]])
BINARY_TARGETS = torch.tensor([[0], [1], [0], [0], [1]])
MULTICLASS_SCORES = torch.tensor(
    [[0.2, 0.8, 0.0], [0.3, 0.6, 0.1], [0.7, 0.25, 0.05], [0.1, 0.15, 0.8], [0.9, 0.03, 0.07]]
)
MULTICLASS_TARGETS = torch.tensor([[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, 1], [1, 0, 0]])
MULTILABEL_SCORES = torch.tensor(
    [[0.1, 0.7, 0.6], [0.3, 0.9, 0.05], [0.8, 0.9, 0.4], [0.7, 0.5, 0.9], [1.0, 0.3, 0.2]]
)
MULTILABEL_TARGETS = torch.tensor([[1, 1, 0], [1, 0, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]])
