"""One recorder per checkpoint part: Burn main's `with_custom_checkpointers(model, optim,
scheduler)` on burnish's single atomic checkpoint directory.

`FileCheckpointer` calls `record(record, directory / part)` and `load(directory / file)`; this
recorder hands each call to the part's recorder, told from the file name (`model`, `optim`,
`scheduler`; `ema` goes with `model`; the loop's `learner` state and anything else with a
full-precision `BurnpackFileRecorder`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from burnish.errors import RecordError
from burnish.record.base import FileRecorder
from burnish.record.store.recorder import BurnpackFileRecorder

__all__ = ["PartRecorders"]


class PartRecorders(BurnpackFileRecorder):
    """Routes each checkpoint part to its own recorder (see the module docstring)."""

    def __init__(self, model: FileRecorder, optim: FileRecorder, scheduler: FileRecorder) -> None:
        super().__init__()
        parts = {"model": model, "optim": optim, "scheduler": scheduler}
        for name, recorder in parts.items():
            if not isinstance(recorder, FileRecorder):
                raise TypeError(
                    f"with_custom_checkpointers takes a recorder for `{name}` (e.g. "
                    f"BurnpackFileRecorder()); received {type(recorder).__name__}."
                )
        self.parts: dict[str, FileRecorder] = {**parts, "ema": model}
        self.settings = model.settings  # what resume warns about (an approximate model)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.parts.items() if k != "ema")
        return f"PartRecorders({inner})"

    def recorder_for(self, part: str) -> FileRecorder:
        """The recorder of the checkpoint part `part` (a fallback Burnpack for others)."""
        return self.parts.get(part) or BurnpackFileRecorder()

    def record(self, record: Any, path: str | os.PathLike, **kwargs: Any) -> Path:
        return self.recorder_for(Path(path).name).record(record, path, **kwargs)

    def load(self, path: str | os.PathLike, device: Any = None, **kwargs: Any) -> Any:
        part = Path(path).name.split(".", 1)[0]
        recorder = self.recorder_for(part)
        if not Path(path).name.endswith(f".{recorder.file_extension}"):
            raise RecordError(
                f"Checkpoint file {str(path)!r} is not a .{recorder.file_extension} file, "
                f"which the `{part}` recorder ({type(recorder).__name__}) writes. Resume with "
                "the checkpointers that wrote the checkpoint."
            )
        return recorder.load(path, device, **kwargs)
