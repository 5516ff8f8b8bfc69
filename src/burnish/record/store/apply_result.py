"""What loading a store into a module did (Burn's `ApplyResult` and `ApplyError`)."""

from __future__ import annotations

import dataclasses
import difflib

__all__ = ["ApplyError", "ApplyResult"]


@dataclasses.dataclass(frozen=True)
class ApplyError:
    """A tensor that was found but could not be applied.

    Attributes:
        kind: `"ShapeMismatch"`, `"DTypeMismatch"` or `"LoadError"` (Burn's variants).
        path: the module path.
        message: what went wrong, with expected and found.
    """

    kind: str
    path: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclasses.dataclass
class ApplyResult:
    """The outcome of `load_from`.

    Attributes:
        applied: module paths loaded from the store, in module order.
        skipped: paths the store holds that the filter excluded.
        missing: `(path, container_path)` of module tensors the store does not hold.
        unused: store tensors no module tensor asked for.
        errors: tensors found but not applied (shape, dtype, read errors).
    """

    applied: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    missing: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    unused: list[str] = dataclasses.field(default_factory=list)
    errors: list[ApplyError] = dataclasses.field(default_factory=list)

    def is_success(self) -> bool:
        """Whether no tensor failed to apply (missing ones do not count, as in Burn)."""
        return not self.errors

    def suggestions(self, path: str) -> list[str]:
        """Unused store names close to a missing `path`."""
        return difflib.get_close_matches(path, self.unused, n=3, cutoff=0.7)

    def __str__(self) -> str:
        lines = [
            f"ApplyResult: {len(self.applied)} applied, {len(self.skipped)} skipped, "
            f"{len(self.missing)} missing, {len(self.unused)} unused, {len(self.errors)} errors"
        ]
        lines += [f"  error: {error}" for error in self.errors[:10]]
        for path, _ in self.missing[:10]:
            close = self.suggestions(path)
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            lines.append(f"  missing: {path}{hint}")
        lines += [f"  unused: {path}" for path in self.unused[:10]]
        return "\n".join(lines)
