"""The documentation site, built once per test session (strict, into a temporary directory)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mkdocs build --strict` of the repository's site; skipped without the docs extra.

    Built once per test session: the workers of `-n auto` share the build (the first to need it
    builds it, under a lock, while the others wait for it)."""
    pytest.importorskip("mkdocs", reason="needs the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("material", reason="needs the docs extra")
    pytest.importorskip("mkdocstrings_handlers.python", reason="needs the docs extra")
    pytest.importorskip("mkdocs_static_i18n", reason="needs the docs extra")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's directory, above each worker's own
    site = root / "site"
    with open(root / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (site / "index.html").exists():
            _build(site)
    return site


def _build(site: Path) -> None:
    building = site.with_name("site.building")
    shutil.rmtree(building, ignore_errors=True)
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(building)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    building.rename(site)
