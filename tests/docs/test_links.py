"""Every `page.md#anchor` link of the docs lands on a heading, in English and in Chinese.

The site is built per language (mkdocs-static-i18n, suffix structure): a page without a
`.zh.md` twin is also rendered in the Chinese tree, where its link `other.md` goes to
`other.zh.md` when that exists. So a link is checked against every page it can land on.
Heading ids are computed by Python-Markdown's `toc` extension, as mkdocs does (explicit
`{#id}` through `attr_list`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.snippets import DOCS, pages

markdown = pytest.importorskip("markdown")

_LINK = re.compile(r"\]\((?P<target>[^)\s#]*\.md)?#(?P<anchor>[^)\s]+)\)")
_ID = re.compile(r'<h[1-6][^>]* id="([^"]+)"')


def _ids(page: Path) -> set[str]:
    converter = markdown.Markdown(extensions=["toc", "attr_list", "tables", "fenced_code"])
    return set(_ID.findall(converter.convert(page.read_text(encoding="utf-8"))))


def _landings(page: Path, target: str | None) -> list[Path]:
    """The pages a link of `page` to `target` (None: the page itself) can land on."""
    chinese_page = page.name.endswith(".zh.md")
    english = page.with_name(page.name.removesuffix(".zh.md") + ".md") if chinese_page else page
    if target is None:
        return [page]
    base = english.parent / target
    chinese = base.with_name(base.stem + ".zh.md")
    has_twin = english.with_name(english.stem + ".zh.md").exists()
    if chinese_page:
        return [chinese if chinese.exists() else base]
    landings = [base]
    if not has_twin and chinese.exists():  # also rendered in the Chinese tree
        landings.append(chinese)
    return landings


def _links() -> list[tuple[Path, str | None, str]]:
    found = []
    for page in pages():
        if "api" in page.relative_to(DOCS).parts:
            continue
        for match in _LINK.finditer(page.read_text(encoding="utf-8")):
            found.append((page, match["target"], match["anchor"]))
    return found


def test_there_are_anchor_links_to_check() -> None:
    assert any(target == "basic-workflow.md" for _, target, _ in _links())


@pytest.mark.parametrize(
    ("page", "target", "anchor"),
    _links(),
    ids=[f"{p.name}->{t or ''}#{a}" for p, t, a in _links()],
)
def test_anchor_links_land_on_a_heading(page: Path, target: str | None, anchor: str) -> None:
    for landing in _landings(page, target):
        ids = _ids(landing)
        assert anchor in ids, (
            f"{page.name} links to {target or page.name}#{anchor}, but {landing.name} has no "
            f"heading with that id (ids: {sorted(ids)}). Give the heading an explicit "
            f"`{{#{anchor}}}`."
        )
