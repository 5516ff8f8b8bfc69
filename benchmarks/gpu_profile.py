"""What one training iteration asks of the host: torch.profiler over the plain loop, the custom
loop and the Learner, and the Learner under `torch.cuda.set_sync_debug_mode("error")`.

Per contender and model, two fits (n and 2n iterations, the data already on the device) run
under `torch.profiler`; the difference is n iterations' worth, so what a fit pays once (set-up,
the end of the epoch) cancels out. Per iteration: kernel launches (`cudaLaunchKernel` and
kin), host waits on the device (`cudaStreamSynchronize`, `cudaDeviceSynchronize`,
`cudaEventSynchronize`), copy calls (`cudaMemcpyAsync`, either way), host-to-device copies (the
device's `Memcpy HtoD` activities), aten operations (every level, composite ones included: the
CPU's rough proxy of launches) and the process's CPU time (profiler included). Then one
Learner fit runs with the sync debug mode set to "error" everywhere but the metrics'
read-backs: any other synchronizing call fails it, and the traceback is kept. Results go to
`<out>/profile.json`.

    python -m benchmarks.gpu_profile --device cuda --out /tmp/gpu-check --iterations 20
"""

from __future__ import annotations

import argparse
import functools
import json
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.device import data_for, model_for
from benchmarks.device_loops import contender

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch")
SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
KEYS = ("launches", "syncs", "memcpy_calls", "htod_copies", "aten_ops", "cpu_ms")


def _counts(events) -> dict[str, float]:
    counts = dict.fromkeys(KEYS, 0.0)
    for event in events:
        name = event.key
        if name.startswith(LAUNCHES):
            counts["launches"] += event.count
        elif name.startswith(SYNCS):
            counts["syncs"] += event.count
        elif name.startswith(("cudaMemcpy", "cuMemcpy")):  # either way, async or not
            counts["memcpy_calls"] += event.count
        elif name.startswith("Memcpy HtoD"):
            counts["htod_copies"] += event.count
        elif name.startswith("aten::"):
            counts["aten_ops"] += event.count
    return counts


def profiled_fit(name: str, model: str, device, iterations: int) -> dict[str, float]:
    """Counts of one fit of `iterations` iterations of contender `name`."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    train, valid = data_for(model, device, iterations)
    function = contender(name, device)
    net = model_for(model, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    cpu = time.process_time()
    with profile(activities=activities) as prof:
        function(net, train, valid, 1, device, False)
    counts = _counts(prof.key_averages())
    counts["cpu_ms"] = 1000 * (time.process_time() - cpu)
    return counts


def per_iteration(name: str, model: str, device, n: int) -> dict[str, float]:
    """The counts of n more iterations, divided by n (two fits: 2n minus n)."""
    profiled_fit(name, model, device, n)  # warm-up: context, cuDNN, caches, lazy imports
    short = profiled_fit(name, model, device, n)
    long = profiled_fit(name, model, device, 2 * n)
    return {key: round((long[key] - short[key]) / n, 3) for key in KEYS}


def sync_debug_fit(model: str, device, iterations: int) -> dict[str, Any]:
    """A Learner fit with the sync debug mode "error" outside the metrics' read-backs."""
    import torch

    from burnish.train.report.processor import MetricsProcessor

    if device.type != "cuda":
        return {"skipped": "not a CUDA device"}
    train, valid = data_for(model, device, iterations)
    original = MetricsProcessor._drain

    @functools.wraps(original)
    def drain(*args, **kwargs):
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode(0)
        try:
            return original(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode(previous)

    net = model_for(model, device)
    MetricsProcessor._drain = drain  # type: ignore[method-assign]
    torch.cuda.set_sync_debug_mode("error")
    try:
        contender("learner", device)(net, train, valid, 1, device, False)
        return {"ok": True, "iterations": iterations}
    except Exception:
        return {"ok": False, "error": traceback.format_exc()[-4000:]}
    finally:
        torch.cuda.set_sync_debug_mode(0)
        MetricsProcessor._drain = original  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_profile")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["guide", "gpt"])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    import torch

    device = torch.device(args.device)
    result: dict[str, Any] = {"device": str(device), "iterations": args.iterations}
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(device)
        result["torch"] = f"{torch.__version__} (CUDA {torch.version.cuda})"
    for model in args.models:
        for name in ("plain", "custom", "learner"):
            counts = per_iteration(name, model, device, args.iterations)
            result[f"{model}/{name}"] = counts
            print(f"{model} {name}: per iteration {counts}", flush=True)
    result["sync_debug_mode_error"] = sync_debug_fit("guide", device, 2 * args.iterations)
    print(f"sync debug mode 'error': {result['sync_debug_mode_error']}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "profile.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
