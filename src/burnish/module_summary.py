"""A model's size at a glance (Keras' `model.summary()`, Lightning's `ModelSummary`).

One row per top-level submodule: its type, parameter count and trainable count; then the
totals and the parameters' size in MiB. Built from a live module, or from a record (a
`state_dict`-like mapping of names to tensors, e.g. a checkpoint's `model` file), where the
rows group the entries by the first part of their name.

Example:
    >>> print(bn.model_summary(model))
    ======================== Model Summary ========================
    Model: Mlp
    | Module  | Type    | Params | Trainable |
    |---------|---------|--------|-----------|
    | linear1 | Linear  | 25,120 |    25,120 |
    | dropout | Dropout |      0 |         0 |
    | linear2 | Linear  |    330 |       330 |
    <BLANKLINE>
    Total params: 25,450 (0.10 MiB)
    Trainable params: 25,450
    Non-trainable params: 0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from burnish.record.formats.tensor import TensorLeaf

__all__ = ["OWN", "ModelSummary", "ModuleRow", "model_summary"]

_MIB = 1 << 20
#: The row of parameters registered on the model itself rather than on a submodule.
OWN = "(self)"


@dataclasses.dataclass(frozen=True)
class ModuleRow:
    """One top-level submodule (or group of record entries).

    Attributes:
        name: The attribute name (`linear1`, `0` in a `Sequential`), or `OWN`.
        type: The module's class name; None when built from a record.
        params: Parameter elements (from a record: elements of every tensor, buffers included).
        trainable: Elements of parameters with `requires_grad`; None when built from a record.
    """

    name: str
    type: str | None
    params: int
    trainable: int | None


@dataclasses.dataclass(frozen=True)
class ModelSummary:
    """Per top-level submodule parameter counts, the totals and the size in MiB.

    Attributes:
        rows: One per top-level submodule, in registration (or record) order.
        total: Parameter elements of the whole model, a tied parameter counted once (so it can
            be less than the rows' sum).
        trainable: The trainable part of `total`; None when built from a record.
        size_bytes: Bytes of those parameters in their dtypes.
        model: The model's class name; None when built from a record.
    """

    rows: list[ModuleRow]
    total: int
    trainable: int | None
    size_bytes: int
    model: str | None = None

    @classmethod
    def from_module(cls, module: nn.Module) -> ModelSummary:
        """Summarize a module's parameters (buffers are not parameters and are not counted).

        Raises:
            TypeError: if `module` is not a `torch.nn.Module`.
        """
        if not isinstance(module, nn.Module):
            raise TypeError(
                "`model_summary` takes a torch.nn.Module. "
                f"Received: {type(module).__name__}. Pass the model (not its record)."
            )
        rows = []
        own = list(module.parameters(recurse=False))
        if own:
            rows.append(_row(OWN, type(module).__name__, own))
        for name, child in module.named_children():
            rows.append(_row(name, type(child).__name__, list(child.parameters())))
        params = list(module.parameters())
        return cls(
            rows=rows,
            total=sum(p.numel() for p in params),
            trainable=sum(p.numel() for p in params if p.requires_grad),
            size_bytes=sum(p.numel() * p.element_size() for p in params),
            model=type(module).__name__,
        )

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ModelSummary:
        """Summarize a record's tensors, grouped by the first part of their flat names.

        `record` maps names (`"encoder.0.weight"`) to tensors or `TensorLeaf`s (nested
        records are flattened first, e.g. with `burnish.record.tree.flatten`).
        Entries that are not tensors are skipped. A record holds buffers too (BatchNorm's
        running statistics), so its count can exceed the module's parameter count.
        """
        groups: dict[str, list[tuple[int, int]]] = {}
        for name, value in record.items():
            shape, dtype = _shape_and_dtype(value)
            if shape is None:
                continue
            numel = 1
            for size in shape:
                numel *= int(size)
            group = name.split(".", 1)[0] if "." in name else OWN
            groups.setdefault(group, []).append((numel, numel * dtype.itemsize))
        rows = [
            ModuleRow(name, None, sum(n for n, _ in items), None) for name, items in groups.items()
        ]
        return cls(
            rows=rows,
            total=sum(row.params for row in rows),
            trainable=None,
            size_bytes=sum(size for items in groups.values() for _, size in items),
        )

    @property
    def size_mib(self) -> float:
        """`size_bytes` in MiB."""
        return self.size_bytes / _MIB

    def __str__(self) -> str:
        columns = ["Module"]
        with_types = any(row.type is not None for row in self.rows)
        if with_types:
            columns.append("Type")
        columns.append("Params")
        if self.trainable is not None:
            columns.append("Trainable")
        table = [
            [row.name]
            + ([row.type or ""] if with_types else [])
            + [f"{row.params:,}"]
            + ([f"{row.trainable:,}"] if self.trainable is not None else [])
            for row in self.rows
        ]
        widths = [
            max([len(column)] + [len(cells[i]) for cells in table])
            for i, column in enumerate(columns)
        ]
        numeric = {i for i, column in enumerate(columns) if column in ("Params", "Trainable")}

        def line(cells: list[str]) -> str:
            padded = (
                cell.rjust(width) if i in numeric else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(cells, widths))
            )
            return "| " + " | ".join(padded) + " |\n"

        text = f"{'=' * 24} Model Summary {'=' * 24}\n"
        if self.model is not None:
            text += f"Model: {self.model}\n"
        text += line(columns) + "|" + "|".join("-" * (width + 2) for width in widths) + "|\n"
        text += "".join(line(cells) for cells in table)
        text += f"\nTotal params: {self.total:,} ({_format_mib(self.size_bytes)})\n"
        if self.trainable is not None:
            text += f"Trainable params: {self.trainable:,}\n"
            text += f"Non-trainable params: {self.total - self.trainable:,}\n"
        return text


def model_summary(module: nn.Module) -> ModelSummary:
    """The `ModelSummary` of `module`; `print` it for the table (Keras' `model.summary()`).

    Raises:
        TypeError: if `module` is not a `torch.nn.Module`.
    """
    return ModelSummary.from_module(module)


def _row(name: str, kind: str, params: list[nn.Parameter]) -> ModuleRow:
    return ModuleRow(
        name,
        kind,
        sum(p.numel() for p in params),
        sum(p.numel() for p in params if p.requires_grad),
    )


def _shape_and_dtype(value: Any) -> tuple[tuple[int, ...] | None, torch.dtype]:
    """A tensor's (or `TensorLeaf`'s: its loaded dtype) shape and dtype; (None, ...) otherwise."""
    if isinstance(value, TensorLeaf):
        return tuple(value.data.shape), value.source_dtype
    if isinstance(value, torch.Tensor):
        return tuple(value.shape), value.dtype
    return None, torch.float32


def _format_mib(size_bytes: int) -> str:
    mib = size_bytes / _MIB
    return f"{mib:.2f} MiB" if mib >= 0.01 or mib == 0 else f"<0.01 MiB, {size_bytes:,} B"
