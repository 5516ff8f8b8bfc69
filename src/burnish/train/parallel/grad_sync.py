"""Gradient averaging over the ranks, overlapped with the backward pass (DDP's reducer).

The parameters that require gradients are grouped, in reverse registration order (roughly the
order the backward pass reaches them), into flat buckets of about 25 MB. A hook on each
parameter counts the gradients of its bucket as the backward pass accumulates them; when a
bucket is complete, and every bucket before it has been launched, its gradients are copied
into one flat tensor and all-reduced asynchronously while the backward pass goes on. Before
the optimizer step, `average` launches the buckets that are still waiting (a parameter without
a gradient in this step counts as zeros), waits for all of them, and hands the optimizer views
of the averaged flat tensors.

Buckets are launched strictly in order, so every rank issues the same collectives in the same
order whatever the timing of its backward pass. Each bucket also carries one flag per
parameter, "this rank has a gradient": a parameter without a gradient on some ranks gets the
average of the others (as in DistributedDataParallel); one without a gradient on every rank
gets none, as in one process.

`bn.backward` runs under torch.distributed through `torch.autograd.backward` (see
`burnish.optim.grads`), so the hooks are `register_post_accumulate_grad_hook` ones: they see
each gradient once autograd has stored it, and the gradients `train_step` returns are the
same tensors.
"""

from __future__ import annotations

from functools import partial
from itertools import compress, repeat
from operator import attrgetter, is_not, itemgetter
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from burnish.optim import GradientsParams
from burnish.optim.param_table import ParamTable, param_table

__all__ = ["GradientSync"]

BUCKET_BYTES = 25 * 1024 * 1024  # as DistributedDataParallel's default bucket_cap_mb

_REQUIRES_GRAD = attrgetter("requires_grad")
_VERSION = attrgetter("_version")
_GRAD = attrgetter("grad")
_ENTRY_GRAD = itemgetter(2)
_ABSENT = (None, None, None)
_is_not_none = partial(is_not, None)


class _Bucket:
    """Parameters whose gradients travel in one all-reduce, and that all-reduce's state."""

    __slots__ = (
        "flat",
        "keys",
        "names",
        "params",
        "pending",
        "present",
        "sent",
        "versions",
        "work",
    )

    def __init__(self, names: list[str], params: list[Tensor]) -> None:
        self.names = names
        self.params = params
        self.keys = list(map(id, params))
        self.reset()

    def reset(self) -> None:
        self.pending = len(self.params)
        self.work: Any = None
        self.flat: Tensor | None = None
        self.sent: list[Tensor | None] = []
        self.versions: list[int] = []
        self.present: list[bool] = []

    @property
    def launched(self) -> bool:
        return self.work is not None

    def launch(self, values: list[Tensor | None]) -> None:
        """Start the asynchronous all-reduce of `values` (None: no gradient, sent as zeros)."""
        present = list(map(_is_not_none, values))
        parts: list[Any] = values if all(present) else _zeros_for(self.params, values)
        flags = torch.tensor(present, dtype=parts[0].dtype, device=parts[0].device)
        self.flat = _flatten_dense_tensors([*parts, flags])
        self.sent = values
        self.versions = list(map(_VERSION, compress(values, present)))
        self.present = present
        self.work = dist.all_reduce(self.flat, async_op=True)

    def holds(self, values: list[Tensor | None]) -> bool:
        """Whether `values` are the tensors launched, unchanged since."""
        return list(map(id, values)) == list(map(id, self.sent)) and self.versions == list(
            map(_VERSION, compress(values, self.present))
        )


class GradientSync:
    """Averages a model's gradients over the ranks, overlapping the backward pass.

    Use: `prepare(model)` before the step's backward pass, `average(grads)` before the
    optimizer step, `close()` at the end of the run.

    Args:
        world_size: how many ranks average their gradients.
        overlap: launch buckets from the backward pass; False waits for `average` (used with
            gradient accumulation, whose only communication is at the optimizer step).
        bucket_bytes: the size of a bucket; default `BUCKET_BYTES`.
    """

    def __init__(
        self, world_size: int, overlap: bool = True, bucket_bytes: int | None = None
    ) -> None:
        self.world_size = world_size
        self.overlap = overlap
        self.bucket_bytes = bucket_bytes or BUCKET_BYTES
        self.buckets: list[_Bucket] = []
        self._table: ParamTable | None = None
        self._mask: list[bool] = []
        self._hooks: list[Any] = []
        self._next = 0  # the first bucket not launched yet
        self._armed = False

    def prepare(self, model: nn.Module) -> None:
        """Get ready for a step of `model`: buckets follow its trainable parameters."""
        table = param_table(model)
        mask = list(map(_REQUIRES_GRAD, table.params))
        if table is not self._table or mask != self._mask:
            self._rebuild(table, mask)
        for bucket in self.buckets:
            bucket.reset()
        self._next = 0
        self._armed = self.overlap

    def average(self, grads: GradientsParams) -> GradientsParams:
        """`grads` averaged over the ranks (in place; also returned).

        Every rank must call it once per optimizer step, after `prepare`.

        Raises:
            RuntimeError: if a gradient changed after the backward pass launched its bucket.
        """
        self._armed = False
        entries = grads._entries
        for bucket in self.buckets[: self._next]:
            if not bucket.holds(_values(entries, bucket)):
                name = bucket.names[0]
                raise RuntimeError(
                    "A gradient changed after the backward pass produced it (parameter "
                    f"{name!r} or another of its bucket): `train_step` modified it in place, "
                    "returned other tensors, or ran more than one backward pass through the "
                    "same parameters. Under several ranks the learner averages each gradient as "
                    "the backward pass produces it: return the gradients of one `bn.backward` "
                    "call unchanged (sum the losses first), and modify gradients in the "
                    "optimizer (e.g. `grad_clipping`)."
                )
        for bucket in self.buckets[self._next :]:
            bucket.launch(_values(entries, bucket))
        self._next = len(self.buckets)
        for bucket in self.buckets:
            self._collect(bucket, grads)
        return grads

    def close(self) -> None:
        """Remove the hooks from the parameters."""
        for handle in self._hooks:
            handle.remove()
        self._hooks.clear()
        self.buckets.clear()
        self._table = None
        self._armed = False

    # -- internals ---------------------------------------------------------------------------

    def _rebuild(self, table: ParamTable, mask: list[bool]) -> None:
        self.close()
        self._table, self._mask = table, mask
        named = list(compress(zip(table.names, table.params), mask))
        self.buckets = _buckets(named[::-1], self.bucket_bytes)
        for bucket in self.buckets:
            ready = partial(self._ready, bucket)
            self._hooks += [p.register_post_accumulate_grad_hook(ready) for p in bucket.params]

    def _ready(self, bucket: _Bucket, param: Tensor) -> None:
        """A parameter's gradient is stored: launch its bucket when complete and in turn."""
        if not self._armed or bucket.launched:
            return
        bucket.pending -= 1
        if bucket.pending:
            return
        buckets = self.buckets
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            bucket = buckets[self._next]
            bucket.launch(list(map(_GRAD, bucket.params)))
            self._next += 1

    def _collect(self, bucket: _Bucket, grads: GradientsParams) -> None:
        """Wait for `bucket` and put views of its averages into `grads`."""
        bucket.work.wait()
        flat = bucket.flat
        assert flat is not None
        flat.div_(self.world_size)
        views = _unflatten_dense_tensors(flat, [*bucket.params, flat[: len(bucket.params)]])
        averaged = views[: len(bucket.params)]
        if all(bucket.present):
            grads._extend(bucket.names, bucket.params, averaged)
            return
        # This rank lacks some gradients: keep those some rank had (a read of the flags).
        used = views[-1].gt(0).tolist()
        grads._extend(
            list(compress(bucket.names, used)),
            list(compress(bucket.params, used)),
            list(compress(averaged, used)),
        )


def _values(entries: dict[int, tuple[str, Tensor, Tensor]], bucket: _Bucket) -> list[Any]:
    """The gradients of `bucket`'s parameters in `entries` (None where absent)."""
    return list(map(_ENTRY_GRAD, map(entries.get, bucket.keys, repeat(_ABSENT))))


def _zeros_for(params: list[Tensor], values: list[Tensor | None]) -> list[Any]:
    like = next(v for v in values if v is not None) if any(map(_is_not_none, values)) else None
    dtype = like.dtype if like is not None else params[0].dtype
    return [torch.zeros_like(p, dtype=dtype) if v is None else v for p, v in zip(params, values)]


def _buckets(named: list[tuple[str, Tensor]], limit: int) -> list[_Bucket]:
    """Consecutive parameters of one dtype and device, about `limit` bytes per bucket."""
    groups: dict[tuple[torch.dtype, torch.device], list[list[tuple[str, Tensor]]]] = {}
    order: list[list[tuple[str, Tensor]]] = []
    sizes: dict[int, int] = {}
    for name, param in named:
        lists = groups.setdefault((param.dtype, param.device), [])
        size = param.numel() * param.element_size()
        if not lists or (lists[-1] and sizes[id(lists[-1])] + size > limit):
            lists.append([])
            order.append(lists[-1])
            sizes[id(lists[-1])] = 0
        lists[-1].append((name, param))
        sizes[id(lists[-1])] += size
    return [_Bucket([n for n, _ in b], [p for _, p in b]) for b in order if b]
