"""`python -m benchmarks` for the smoke tests: in the test process, its children forked.

The command starts every measured run as a fresh interpreter (benchmarks/harness.py), a second
or more of imports each. The smoke tests prove the code paths, not the timings: `main(argv)`
runs the command's `main` here with `harness.run_child` replaced by `run_child` below, which
forks each child (a torchrun child: its agent and its ranks) from tests/fork_server.py's servers,
with the harness's environment, and reads its result and peak memory as the harness does. The
import-time benchmark (`benchmarks.startup`), whose measure is a fresh interpreter's imports,
still starts fresh interpreters.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Any
from unittest import mock

from benchmarks import __main__ as cli
from benchmarks import harness

from tests import fork_server

FRESH = ("benchmarks.startup",)
TORCHRUN = ["-m", "torch.distributed.run"]
_fresh_child = harness.run_child  # the harness's own, for FRESH (`main` replaces it meanwhile)


def main(argv: list[str]) -> int:
    """`python -m benchmarks ARGV`'s exit status; what it prints goes to this process's stdout."""
    with mock.patch.object(harness, "run_child", run_child):
        return cli.main(argv)


def run_child(argv: Sequence[str], threads: int, timeout: float = 900.0) -> dict[str, Any]:
    """`harness.run_child`, the child forked."""
    if argv[1] in FRESH:
        return _fresh_child(argv, threads, timeout)
    args, env = list(argv), harness.child_env(threads)
    if args[:2] == TORCHRUN:
        script = args.index("-m", 2)  # torchrun's own `-m`: a module, as python's
        args, env = fork_server.torchrun_command(args[2:script], args[script:], env)
    process = fork_server.popen(
        args, new_servers=True, env=env, cwd=harness.REPO,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    with process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise harness.ChildError(f"{' '.join(argv)}: timed out after {timeout:.0f} s") from None
    max_rss_kib = getattr(process, "max_rss_kib", None) or 0  # 0: not forked (not on Linux)
    return harness.child_result(argv, process.returncode, output, max_rss_kib)
