"""`Batcher`: turns items into a batch on a device (Burn: `Batcher<B, I, O>`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic

import torch

from burnish.data.dataset.base import I, O

__all__ = ["Batcher", "supports_stacked"]


class Batcher(ABC, Generic[I, O]):
    """Builds one batch from a list of items (Burn: `Batcher::batch(items, device)`).

    `batch(items, device)` returns anything: a tensor, a tuple, a dataclass of tensors. With
    `num_workers == 0` the loader calls it with the loader's device, so the batch is built right
    there; with workers it runs in a worker process on `"cpu"` and the loader then moves every
    tensor of the result (through dataclasses, tuples, lists and dicts) to the device, from pinned
    memory when the device is CUDA.

    **Fast path (whole-batch gather).** Building a batch item by item costs a Python call per
    item. A batcher that also implements `batch_stacked(items, device)` lets an array-backed
    dataset gather the whole batch in one vectorised indexing operation: for each batch the loader
    asks the dataset for `dataset.get_stacked(indices)`, the batch's items as *one* item whose
    fields carry a leading batch dimension (`MnistDataset` returns `MnistItem(image [B, 28, 28],
    label [B])`). If the dataset returns it, the loader calls `batch_stacked(stacked, device)`;
    if it returns `None` (the default for datasets, e.g. a `MapperDataset`), the loader falls
    back to `batch([dataset.get(i) for i in indices], device)`. Index-only transforms
    (`PartialDataset`, `SelectionDataset`, `ShuffledDataset`) pass `get_stacked` through, so a
    sliced or shuffled MNIST keeps the fast path. Both methods must give the same batch for the
    same items; the usual way is for `batch` to stack its items and call `batch_stacked`:

    Example:
        >>> class MnistBatcher(Batcher):
        ...     def batch(self, items, device):
        ...         images = np.stack([item.image for item in items])
        ...         labels = np.array([item.label for item in items])
        ...         return self.batch_stacked(MnistItem(images, labels), device)
        ...
        ...     def batch_stacked(self, items, device):
        ...         images = torch.from_numpy(items.image).to(device)
        ...         return MnistBatch(images / 255, torch.from_numpy(items.label).to(device))
    """

    @abstractmethod
    def batch(self, items: list[I], device: torch.device) -> O:
        """The batch made of `items`, on `device`."""

    def batch_stacked(self, items: I, device: torch.device) -> O:
        """The batch made of a stacked item (fields with a leading batch dimension).

        Optional: implement it to enable the fast path described in the class docstring.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement `batch_stacked`.")


def supports_stacked(batcher: Any) -> bool:
    """Whether `batcher` implements the fast path (`batch_stacked`)."""
    method = getattr(type(batcher), "batch_stacked", None)
    return callable(method) and method is not Batcher.batch_stacked
