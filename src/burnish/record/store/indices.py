"""Burn's `map_indices_contiguous`: renumber gaps in layer indices (`fc.0`, `fc.2`, `fc.4` ->
`fc.0`, `fc.1`, `fc.2`), separately at each position, keyed by the original prefix."""

from __future__ import annotations

from burnish.record.store.snapshot import TensorSnapshot

__all__ = ["map_indices_contiguous"]


def _indices(parts: tuple[str, ...]) -> list[tuple[int, str, int]]:
    """Each numeric part as (its position, the original prefix before it, its value)."""
    return [
        (i, ".".join(parts[:i]), int(p)) for i, p in enumerate(parts) if p.isascii() and p.isdigit()
    ]


def map_indices_contiguous(
    tensors: list[TensorSnapshot],
) -> tuple[list[TensorSnapshot], list[tuple[str, str]]]:
    """The snapshots with contiguous indices, and each `(new_path, original_path)`."""
    seen: dict[str, set[int]] = {}
    for snapshot in tensors:
        for _, prefix, index in _indices(snapshot.path_stack):
            seen.setdefault(prefix, set()).add(index)
    maps = {prefix: {old: new for new, old in enumerate(sorted(found))}
            for prefix, found in seen.items()}  # fmt: skip
    mapped, changes = [], []
    for snapshot in tensors:
        parts = list(snapshot.path_stack)
        for position, prefix, index in _indices(snapshot.path_stack):
            parts[position] = str(maps[prefix][index])
        original = snapshot.full_path
        if tuple(parts) != snapshot.path_stack:
            snapshot = snapshot.with_path(tuple(parts), snapshot.container_stack)
        mapped.append(snapshot)
        changes.append((snapshot.full_path, original))
    return mapped, changes
