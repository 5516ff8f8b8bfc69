"""The GPU check of issue 43, as one command that fits a short lease on a GPU machine.

    bash benchmarks/gpu_check.sh /tmp/gpu-check                 # on the GPU machine
    bash benchmarks/gpu_check.sh /tmp/gpu-check --device cpu --small   # a dry run here

Its parts, most telling first, each a subprocess whose output goes to `<out>/<part>.log` (and
`.json`); a part starts only while the time budget (`--budget-s`) leaves room for it, and a
failed part does not stop the others:

  profile         `benchmarks.gpu_profile`: kernel launches, host syncs, host-to-device copies,
                  aten ops and CPU time per iteration, plain loop vs custom loop vs Learner,
                  guide and GPT; then a Learner fit under `set_sync_debug_mode("error")`;
  lengths_guide   `--lengths 300 3000` on the guide model: time per iteration (the slope the
                  1.03 target holds) and fixed cost per fit, plain vs custom vs Learner;
  overhead_MODEL  `-b overhead --device cuda --runs 2 --iterations 900`, per model: plain,
                  plain-bf16, custom, learner, learner-bf16, learner-graphs (the GPT's graph
                  step last, alone: its compile took minutes in the issue);
  cuda_tests      the CUDA tests: no sync under the debug mode, the hot-path guard, the
                  compiled step as a CUDA graph, gradient checkpointing's memory.

`<out>/summary.md` holds the tables, `<out>/profile.json` the profile.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import harness

CUDA_TESTS = (
    "tests/train/test_host_syncs.py::test_cuda_epoch_under_sync_debug_mode_error",
    "tests/train/test_hot_path_guard.py",
    "tests/train/test_compile.py::test_compiled_step_replayed_as_a_cuda_graph_matches_eager",
    "tests/test_gradient_checkpointing.py::test_peak_memory_drops_on_cuda",
    "tests/test_gradient_checkpointing.py::test_peak_memory_drops_on_the_cpu",
)
EAGER = ("plain-bf16", "custom", "learner", "learner-bf16")  # plain always runs


def parts(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(name, argv after `python`) of every part, in the order they run."""
    small, device = args.small, args.device
    runs = "1" if small else "2"
    iterations = "5" if small else "900"
    lengths = ["10", "30"] if small else ["300", "3000"]
    models = ("guide", "gpt") if small else ("guide", "gpt", "resnet18")

    def bench(name: str, *flags: str) -> tuple[str, list[str]]:
        output = str(args.out / f"{name}.json")
        common = ["--device", device, "--runs", runs, "--no-lightning", "--output", output]
        return name, ["-m", "benchmarks", "-b", "overhead", *common, *flags]

    profile = ["-m", "benchmarks.gpu_profile", "--device", device, "--out", str(args.out)]
    found = [
        ("profile", [*profile, "--iterations", "5" if small else "20"]),
        bench("lengths_guide", "--models", "guide", "--lengths", *lengths, "--contenders",
              "custom", "learner"),
    ]  # fmt: skip
    for model in models:
        graphs = ["learner-graphs"] if model != "gpt" else []  # the GPT's: last, alone
        flags = ["--models", model, "--iterations", iterations, "--contenders", *EAGER, *graphs]
        found.append(bench(f"overhead_{model}", *flags))
    flags = ["--models", "gpt", "--iterations", iterations, "--contenders", "learner-graphs"]
    found.append(bench("graphs_gpt", *flags))
    if device.startswith("cuda"):
        found.append(("cuda_tests", ["-m", "pytest", "-q", *CUDA_TESTS]))
    return found


def run_part(name: str, argv: list[str], out: Path, timeout: float) -> dict:
    """Run one part; its output in `<out>/<name>.log`."""
    started = time.monotonic()
    with (out / f"{name}.log").open("w") as log:
        try:
            done = subprocess.run(
                [sys.executable, *argv], stdout=log, stderr=subprocess.STDOUT,
                cwd=harness.REPO, env=harness.child_env(1), timeout=timeout,
            )  # fmt: skip
            code: int | str = done.returncode
        except subprocess.TimeoutExpired:
            code = "timed out"
    seconds = round(time.monotonic() - started, 1)
    print(f"{name}: exit {code} after {seconds} s", flush=True)
    return {"part": name, "exit": code, "seconds": seconds}


def summary(out: Path, done: list[dict]) -> str:
    """The parts' exits, the profile, and every benchmark table."""
    from benchmarks.markdown import render

    lines = ["# GPU check", "", "| part | exit | seconds |", "|---|---|---:|"]
    lines += [f"| {d['part']} | {d['exit']} | {d['seconds']} |" for d in done]
    profile = out / "profile.json"
    if profile.exists():
        lines += ["", "## Profile (per iteration)", "", "```", profile.read_text(), "```"]
    for d in done:
        result = out / f"{d['part']}.json"
        if d["part"] != "profile" and result.exists():  # a benchmark's results.json
            lines += ["", f"## {d['part']}", "", render(json.loads(result.read_text()))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check")
    parser.add_argument("out", type=Path, help="the directory the results go to")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--small", action="store_true", help="tiny sizes: a dry run")
    parser.add_argument("--budget-s", type=float, default=540.0, help="stop starting parts")
    parser.add_argument("--only", nargs="+", help="run only these parts")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    done = []
    for name, part_argv in parts(args):
        if args.only and name not in args.only:
            continue
        left = deadline - time.monotonic()
        if left < 20:
            done.append({"part": name, "exit": "not started: budget spent", "seconds": 0})
            continue
        done.append(run_part(name, part_argv, args.out, left))
        (args.out / "summary.md").write_text(summary(args.out, done))
    print(f"wrote {args.out / 'summary.md'}")
    return 0 if all(d["exit"] == 0 for d in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
