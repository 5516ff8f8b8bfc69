"""The documentation site, built once per test session (strict, into a temporary directory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mkdocs build --strict` of the repository's site; skipped without the docs extra."""
    pytest.importorskip("mkdocs", reason="needs the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("material", reason="needs the docs extra")
    pytest.importorskip("mkdocstrings_handlers.python", reason="needs the docs extra")
    pytest.importorskip("mkdocs_static_i18n", reason="needs the docs extra")
    site = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return site
