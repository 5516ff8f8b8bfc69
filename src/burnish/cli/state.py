"""What `burnish inspect` says about a checkpoint's training state, instead of a model summary.

A checkpoint directory holds four records (`model`, `optim`, `scheduler`, `learner`); only the
model's is a model. The others are recognised by their content, so files written by any
burnish version are described:

- an optimizer's state (`optim.to_record()`): `{"optimizer": name, "state": {param: {...}}}`,
- a learning-rate scheduler's (`scheduler.to_record()`): `{"scheduler": name, ...}`,
- the learner's (where the loop stands, for `resume()`): `{"position": {...}, "rng": ...}`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["describe_state"]

_SHOWN_NAMES = 4  # parameter names listed before "..."


def describe_state(tree: Any) -> str | None:
    """Lines describing `tree` (a record as stored) as training state; None for anything else."""
    if not isinstance(tree, Mapping):
        return None
    if isinstance(tree.get("optimizer"), str) and isinstance(tree.get("state"), Mapping):
        return _optimizer(tree)
    if isinstance(tree.get("scheduler"), str):
        return _scheduler(tree)
    position = tree.get("position")
    if isinstance(position, Mapping) and {"epoch", "phase"} <= set(position) and "rng" in tree:
        return _learner(tree)
    return None


def _optimizer(tree: Mapping[str, Any]) -> str:
    state = {name: entry for name, entry in tree["state"].items() if isinstance(entry, Mapping)}
    version = f" (record version {tree['version']})" if "version" in tree else ""
    lines = [f"Optimizer state: {tree['optimizer']}{version}, not a model."]
    steps = sorted({entry["step"] for entry in state.values() if _is_int(entry.get("step"))})
    if steps:
        count = str(steps[0]) if len(steps) == 1 else f"{steps[0]} to {steps[-1]}"
        lines.append(f"Steps taken: {count} (per parameter)")
    kinds: dict[str, None] = {}
    elements = 0
    for entry in state.values():
        for key, value in entry.items():
            if _is_tensor(value):
                kinds[key] = None
                elements += _elements(value)
    names = list(state)
    shown = ", ".join(names[:_SHOWN_NAMES]) + (", ..." if len(names) > _SHOWN_NAMES else "")
    lines.append(f"Parameters with state: {len(names)}" + (f" ({shown})" if names else ""))
    if kinds:
        lines.append(
            f"State tensors per parameter: {', '.join(kinds)} ({elements:,} elements in all)"
        )
    else:
        lines.append("State tensors per parameter: none (this optimizer keeps no buffers)")
    return "\n".join(lines) + "\n"


def _scheduler(tree: Mapping[str, Any]) -> str:
    fields = ", ".join(
        f"{key} {_short(value)}" for key, value in tree.items() if key != "scheduler"
    )
    return f"Learning-rate scheduler state: {tree['scheduler']}" + (
        f" ({fields})\n" if fields else "\n"
    )


def _learner(tree: Mapping[str, Any]) -> str:
    """The loop's position and what else `resume()` restores from this record."""
    lines = [
        "Learner state: where training stands, for `resume()` (not a model).",
        f"Position: {_position(tree['position'])}",
    ]
    end = tree.get("end")
    if isinstance(end, Mapping) and _is_int(end.get("epoch")):
        if end.get("stopped_early"):
            how = "early stopping ended it; resume() trains no more"
        elif end.get("max_iterations_reached"):
            how = "its step budget; resume() goes on only with a larger max_iterations"
        else:
            how = "its last epoch; resume() goes on only with a larger num_epochs"
        lines.append(f"Run ended: after epoch {end['epoch']} ({how})")
    steps = tree.get("optimizer_steps", tree.get("step"))  # older records: one per iteration
    if _is_int(steps):
        lines.append(f"Optimizer steps: {steps}")
    if isinstance(tree.get("lr"), (int, float)):
        lines.append(f"Learning rate: {tree['lr']:.6g} (the last iteration's)")
    if _is_int(tree.get("world_size")):
        lines.append(f"World size: {tree['world_size']}")
    if _is_int(tree.get("validations")):
        lines.append(f"Validations done: {tree['validations']}")
    loaders = tree.get("loaders")
    if isinstance(loaders, Mapping) and isinstance(loaders.get("now"), Mapping):
        lines.append("Data loaders: " + "; ".join(_loader(s, r) for s, r in loaders["now"].items()))
    metrics = tree.get("metrics")
    if isinstance(metrics, Mapping):
        names = [
            f"{split} {', '.join(record['metrics'])}"
            for split, record in metrics.items()
            if isinstance(record, Mapping) and isinstance(record.get("metrics"), Mapping)
        ]
        lines.append("Metric states: " + ("; ".join(names) or "none"))
    loggers = tree.get("loggers")
    if isinstance(loggers, Mapping):
        lines.append("Metric logs: " + "; ".join(_log(s, r) for s, r in loggers.items()))
    accumulation = tree.get("accumulation")
    if isinstance(accumulation, Mapping) and _is_int(accumulation.get("accumulated")):
        lines.append(f"Gradients accumulated, not yet stepped: {accumulation['accumulated']}")
    rng = tree.get("rng")
    if isinstance(rng, Mapping):
        lines.append(f"Random generator states: {', '.join(rng)}")
    lines += [
        f"{label}: {'yes' if tree.get(key) is not None else 'none'}"
        for key, label in (("early_stopping", "Early stopping state"),
                           ("grad_scaler", "Loss scaler (fp16)"))
        if key in tree
    ]  # fmt: skip
    known = {"position", "step", "lr", "world_size", "loaders", "metrics", "rng", "loggers",
             "accumulation", "early_stopping", "grad_scaler", "end"}  # fmt: skip
    others = [key for key in tree if key not in known]
    if others:
        lines.append(f"Also: {', '.join(others)}")
    return "\n".join(lines) + "\n"


def _position(position: Mapping[str, Any]) -> str:
    epoch, iteration, phase = position["epoch"], position.get("iteration"), position["phase"]
    if phase == "done":
        return f"epoch {epoch} finished (training and validation)"
    if phase == "valid":
        return f"epoch {epoch}, training done, validating"
    return f"epoch {epoch}, after training iteration {iteration}"


def _log(split: str, record: Any) -> str:
    """`train epoch 3 (no line yet)` or `train epoch 2 (Loss 5 lines, ...)`."""
    if not isinstance(record, Mapping) or not isinstance(record.get("lines"), Mapping):
        return f"{split} {_short(record)}"
    lines = ", ".join(f"{name} {count} lines" for name, count in record["lines"].items())
    return f"{split} epoch {record.get('epoch')} ({lines or 'no line yet'})"


def _loader(split: str, record: Any) -> str:
    if not isinstance(record, Mapping):
        return f"{split} {_short(record)}"
    parts = [f"{key} {_short(value)}" for key, value in record.items()]
    return f"{split} ({', '.join(parts)})"


def _short(value: Any) -> str:
    if _is_tensor(value):
        return f"tensor {list(value.data.shape)}"
    if isinstance(value, Mapping):
        return "{...}"
    if isinstance(value, list):
        return f"[{len(value)} values]"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_tensor(value: Any) -> bool:
    from burnish.record.formats.tensor import TensorLeaf

    return isinstance(value, TensorLeaf)


def _elements(leaf: Any) -> int:
    return math.prod(leaf.data.shape)
