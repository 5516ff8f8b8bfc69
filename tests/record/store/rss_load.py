"""Save or load a large model and print the process's memory, for test_memory.py and by hand.

    python tests/record/store/rss_load.py save PATH SIZE_MB
    python tests/record/store/rss_load.py load PATH SIZE_MB   # prints JSON

The model is 8 float32 tensors of SIZE_MB / 8 each. `load` builds the model, touches every page
(so its memory is resident), then loads the file into it and reports RSS before and after and
the peak (ru_maxrss) after.
"""

from __future__ import annotations

import gc
import json
import resource
import sys

import psutil
import torch

from burnish.record.store import BurnpackStore, load_from, save_into

TENSORS = 8


class Big(torch.nn.Module):
    def __init__(self, size_mb: int) -> None:
        super().__init__()
        numel = size_mb * 1024 * 1024 // 4 // TENSORS
        self.params = torch.nn.ParameterList(
            torch.nn.Parameter(torch.empty(numel), requires_grad=False) for _ in range(TENSORS)
        )


def main(mode: str, path: str, size_mb: int) -> None:
    model = Big(size_mb)
    if mode == "save":
        for i, param in enumerate(model.params):
            param.data.fill_(float(i + 1))
        save_into(model, BurnpackStore.from_file(path).overwrite(True))
        return
    for param in model.params:
        param.data.fill_(0.0)  # resident, like a model built before loading
    gc.collect()
    before = psutil.Process().memory_info().rss
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = load_from(model, BurnpackStore.from_file(path))
    after = psutil.Process().memory_info().rss
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    correct = all(bool((p == float(i + 1)).all()) for i, p in enumerate(model.params))
    print(
        json.dumps(
            {
                "model_bytes": size_mb * 1024 * 1024,
                "rss_before": before,
                "rss_after": after,
                "peak_before": peak_before,
                "peak_after": peak_after,
                "applied": len(result.applied),
                "correct": correct,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
