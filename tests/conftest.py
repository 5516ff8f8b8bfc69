"""Test-wide set-up: datasets come from the copy of MNIST kept in the repo (data/mnist); the
suite's subprocesses share compiled bytecode; the processes of a session share fork servers."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The workers of `-n auto` and the processes they start share the cores: OpenMP threads that
# spin while they wait for work (GNU OpenMP's default) take the CPU another process needs.
# Measured on 2 cores, 1,343 in-process tests: 79 s -> 68 s wall, 146 -> 121 CPU seconds.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # after OMP_WAIT_POLICY: OpenMP reads it when torch loads it

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
# Where PYTHONDONTWRITEBYTECODE is set (as on this project's machines), each of the few hundred
# interpreters the suite starts would compile burnish's and the tests' modules from source
# again (0.3-0.5 s each): they write and share the usual __pycache__ instead (git ignores it).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from tests import fork_server  # noqa: E402  # after the settings above, which its servers inherit


def pytest_configure(config: pytest.Config) -> None:
    """In the session's first process (pytest-xdist's controller, or the only process): a
    directory for the fork servers' sockets (tests/fork_server.py), which the workers inherit,
    so that they share the servers; the servers end when this process does."""
    if fork_server.DIRECTORY_KEY not in os.environ:
        os.environ[fork_server.DIRECTORY_KEY] = tempfile.mkdtemp(prefix="burnish-forks-")
        os.environ[fork_server.OWNER_KEY] = str(os.getpid())
        config.add_cleanup(lambda: shutil.rmtree(os.environ[fork_server.DIRECTORY_KEY], True))


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def one_torch_thread():
    """One intra-op thread for the test (counts and timings alike), restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# The test files that take longest, longest first (their tests' seconds summed, from
# `pytest -n auto --junitxml` on 2 cores, 2026-11-27). They start first, so that the workers
# of `-n auto` (work stealing: `--dist worksteal` in pyproject's addopts) end on short tests
# instead of one worker running a long file alone at the end. A new slow file belongs here.
SLOWEST_FILES = (
    "tests/train/test_distributed.py",
    "tests/train/test_crash_resume.py",
    "tests/docs/test_snippets.py",
    "tests/test_benchmarks.py",
    "tests/train/metric/test_ranges.py",
    "tests/docs/test_api_reference.py",
    "tests/train/logger/test_trackers.py",
    # One test, not split across workers: 3 sessions importing and opening MLflow and W&B
    # (80-95 s on 2 loaded cores, 2026-11-28); estimated, not from the junitxml above.
    "tests/train/logger/test_tracker_lineage.py",
    # Training processes into moto's S3 server, killed and resumed: 23 s on 2 quiet cores,
    # ~100 s on loaded ones (2026-11-28, its local reference run included); measured alone.
    "tests/storage/test_remote_run.py",
    "tests/test_benchmarks_device.py",
    "tests/train/test_compile.py",
    "tests/test_distributed_overlap_bench.py",
    "tests/test_fork_server.py",
    "tests/train/test_run_lock.py",
    "tests/examples/test_custom_loops.py",
    "tests/test_io.py",
    "tests/train/renderer/test_dashboard_keys_in_tmux.py",
    "tests/test_gradient_checkpointing.py",
    "tests/train/test_artifact_dir.py",
    "tests/train/test_preemption.py",
    "tests/cli/test_long_logs.py",
    "tests/train/test_host_syncs.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slowest files first; each file's tests stay together and in their order (a sort that
    keeps the order of equals), so a module-scoped fixture is not built again between them."""

    def file_rank(item: pytest.Item) -> int:
        path = item.path.as_posix()
        return next(
            (i for i, name in enumerate(SLOWEST_FILES) if path.endswith(name)), len(SLOWEST_FILES)
        )

    items.sort(key=file_rank)
