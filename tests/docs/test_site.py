"""The built site works offline and switches language on every translated page."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.snippets import DOCS, english_twin, python_blocks

#: Chapters that have a Chinese translation (`<name>.zh.md`).
TRANSLATED = [
    "installation",
    "basic-workflow",
    "learner",
    "custom-training-loops",
    "records",
    "long-runs",
    "stores",
    "language-model",
]
_EXTERNAL_ASSET = re.compile(
    r"<(?:script|img|iframe)[^>]+src=\"(?:https?:)?//|<link[^>]+href=\"(?:https?:)?//[^\"]*\"[^>]*"
    r"rel=\"(?:stylesheet|preload|preconnect|icon)|<link[^>]+rel=\"(?:stylesheet|preload|"
    r"preconnect|icon)\"[^>]+href=\"(?:https?:)?//|fonts\.googleapis|fonts\.gstatic|"
    r"googletagmanager|google-analytics|cdn\.jsdelivr|unpkg\.com|cdnjs"
)


def test_no_page_loads_anything_from_the_network(built_site: Path) -> None:
    pages = list(built_site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        match = _EXTERNAL_ASSET.search(page.read_text(encoding="utf-8"))
        assert match is None, f"{page.relative_to(built_site)} loads {match.group(0)!r}"


def test_every_translated_chapter_exists_and_switches_language(built_site: Path) -> None:
    for name in TRANSLATED:
        assert (DOCS / f"{name}.zh.md").is_file(), f"docs/{name}.zh.md is missing"
        english = (built_site / name / "index.html").read_text(encoding="utf-8")
        chinese = (built_site / "zh" / name / "index.html").read_text(encoding="utf-8")
        assert f'href="../zh/{name}/"' in english, f"{name}: no link to the Chinese page"
        assert f'href="../../{name}/"' in chinese, f"{name}: no link back to English"
        assert 'lang="zh"' in chinese


def test_chinese_pages_have_the_english_code() -> None:
    for page in sorted(DOCS.glob("*.zh.md")):
        chinese = [b.code for b in python_blocks(page)]
        english = [b.code for b in python_blocks(english_twin(page))]
        assert chinese == english, (
            f"{page.name}: Python blocks differ from {english_twin(page).name}"
        )
        if page.stem.removesuffix(".zh") in TRANSLATED:
            assert chinese, f"{page.name} has no Python block"
