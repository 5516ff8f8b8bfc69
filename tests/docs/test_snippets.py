"""Every Python block of the docs runs: one fresh interpreter per page, blocks in page order
(a Chinese page whose code is its English twin's, byte for byte, runs in its twin's).

The pages use small data (the repo's MNIST through `BURNISH_DATASETS`, a few hundred images),
so the whole file runs in about a minute on two cores.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import fork_server
from tests.docs.snippets import DOCS, english_twin, pages, python_blocks, runnable_script

REPO = DOCS.parent
RUNNABLE = [p for p in pages() if any(not b.fragment for b in python_blocks(p))]


def _code(page: Path) -> list[str]:
    return [block.code for block in python_blocks(page) if not block.fragment]


def _runs() -> list[tuple[Path, ...]]:
    """One run per distinct code: a Chinese page whose runnable blocks are its English twin's,
    block for block and byte for byte, is the same program and runs with it (the two scripts
    differ only in the blank lines that keep each page's line numbers)."""
    runs = {page: [page] for page in RUNNABLE}
    for page in RUNNABLE:
        twin = english_twin(page)
        if twin != page and twin in runs and _code(twin) == _code(page):
            runs[twin].append(runs.pop(page)[0])
    return [tuple(group) for group in runs.values()]


#: Fragments are shown, never run; keep them few (raise this only with a reason).
MAX_FRAGMENTS = 6


def _id(page: Path | tuple[Path, ...]) -> str:
    if isinstance(page, tuple):
        return "+".join(map(_id, page))
    return str(page.relative_to(DOCS))


@pytest.mark.slow
@pytest.mark.parametrize("run", _runs(), ids=_id)
def test_page_runs(run: tuple[Path, ...], tmp_path: Path) -> None:
    page = run[0]
    assert all(_code(other) == _code(page) for other in run)
    script = tmp_path / f"{page.stem.replace('.', '_')}_page.py"
    script.write_text(runnable_script(page), encoding="utf-8")
    env = dict(os.environ)
    env.update(
        BURNISH_DATASETS=str(REPO / "data"),
        BURNISH_RENDERER="cli",
        PYTHONHASHSEED="0",
        OMP_NUM_THREADS="2",
    )
    env.pop("PYTHONPATH", None)
    proc = fork_server.run(  # forked from servers with this environment (tests/fork_server.py)
        [str(script)],
        new_servers=True,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, (
        f"{_id(run)} failed (line numbers are {_id(page)}'s):\n{proc.stdout[-3000:]}\n"
        f"{proc.stderr[-5000:]}"
    )


def test_fragments_are_few_and_marked() -> None:
    fragments = [(_id(p), b.first_line) for p in pages() for b in python_blocks(p) if b.fragment]
    assert len(fragments) <= MAX_FRAGMENTS, f"too many fragments: {fragments}"


def test_the_guide_pages_have_code_that_runs() -> None:
    names = {_id(p) for p in RUNNABLE}
    for page in ("basic-workflow.md", "learner.md", "custom-training-loops.md", "records.md"):
        assert page in names, f"{page} has no runnable Python block"


def test_the_stateful_dataloader_example_runs() -> None:
    """crash-safety.md's `StatefulDataLoader` example is a whole program (its dataset, its
    `collate_fn`), run with its page, not a fragment."""
    page = DOCS / "crash-safety.md"
    blocks = [b for b in python_blocks(page) if "StatefulDataLoader(" in b.code]
    assert blocks and not any(b.fragment for b in blocks)
    assert all("collate_fn=" in b.code and "fit(" in b.code for b in blocks)
