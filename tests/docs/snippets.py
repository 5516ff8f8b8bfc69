"""Python code blocks of the documentation pages, for the docs tests.

A block is a fenced ```` ```python ```` block (at any indentation, e.g. inside an admonition).
Blocks run in page order, in one interpreter per page. A block preceded by the line
`<!-- fragment -->` is a fragment: shown, never run. Other languages are never run.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
FRAGMENT_MARK = "<!-- fragment -->"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`\n]*)$")


@dataclasses.dataclass
class Block:
    """One fenced code block of a page."""

    language: str
    code: str
    first_line: int  # 1-based line number of the block's first code line
    fragment: bool


def blocks(page: Path) -> list[Block]:
    """Every fenced code block of `page`, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        indent, fence = match["indent"], match["fence"]
        info = match["info"].strip()
        language = info.split()[0].lstrip(".{").rstrip("}") if info else ""
        previous = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
        body, end = [], index + 1
        while end < len(lines) and lines[end].strip() != fence:
            line = lines[end]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            end += 1
        found.append(Block(language, "\n".join(body), index + 2, previous == FRAGMENT_MARK))
        index = end + 1
    return found


def python_blocks(page: Path) -> list[Block]:
    """The Python blocks of `page` (fragments included)."""
    return [block for block in blocks(page) if block.language in ("python", "py")]


def runnable_script(page: Path) -> str:
    """The page's runnable Python blocks as one script whose line numbers are the page's.

    Every other line is blank, so a traceback points at the line of the Markdown file.
    """
    lines = [""] * len(page.read_text(encoding="utf-8").splitlines())
    for block in python_blocks(page):
        if block.fragment:
            continue
        for offset, line in enumerate(block.code.splitlines()):
            lines[block.first_line - 1 + offset] = line
    return "\n".join(lines) + "\n"


def pages() -> list[Path]:
    """Every Markdown page of the docs."""
    return sorted(DOCS.rglob("*.md"))


def english_twin(page: Path) -> Path:
    """`learner.md` for `learner.zh.md`."""
    return page.with_name(page.name.replace(".zh.md", ".md"))
