"""Every public name (each public subpackage's `__all__`) is documented in the API reference.

A page documents a module with a `::: module` directive; mkdocstrings renders the names of the
module's `__all__`. A new public module, or a name missing from its page, fails here.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tests.docs.snippets import DOCS

#: public module -> the modules whose directives cover its names (re-exporting packages).
PUBLIC = {
    "burnish": ["burnish"],
    "burnish.optim": ["burnish.optim"],
    "burnish.lr_scheduler": ["burnish.lr_scheduler"],
    "burnish.record": ["burnish.record"],
    "burnish.data": [
        "burnish.data.dataset",
        "burnish.data.dataset.vision",
        "burnish.data.dataloader",
    ],
    "burnish.data.dataset": ["burnish.data.dataset"],
    "burnish.data.dataset.vision": ["burnish.data.dataset.vision"],
    "burnish.data.dataloader": ["burnish.data.dataloader"],
    "burnish.nn": ["burnish.nn.loss"],
    "burnish.nn.loss": ["burnish.nn.loss"],
    "burnish.vision": ["burnish.vision"],
    "burnish.export": ["burnish.export"],
    "burnish.train": ["burnish.train"],
    "burnish.train.metric": ["burnish.train.metric"],
    "burnish.train.metric.vision": ["burnish.train.metric.vision"],
    "burnish.train.logger": ["burnish.train.logger"],
    "burnish.train.checkpoint": ["burnish.train.checkpoint"],
    "burnish.train.renderer": ["burnish.train.renderer"],
    "burnish.cli": ["burnish.cli"],
    "burnish.tune": ["burnish.tune"],
    "burnish.storage": ["burnish.storage"],
}
#: train/'s packages by role (its README): internal, their public names re-exported by it.
INTERNAL_TRAIN = ("settings", "loop", "components", "parallel", "report")
#: names whose defining module `__module__` does not tell.
DEFINED_IN = {"__version__": "burnish._version"}
_DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.MULTILINE)


def _directives() -> set[str]:
    found = set()
    for page in (DOCS / "api").glob("*.md"):
        found |= set(_DIRECTIVE.findall(page.read_text(encoding="utf-8")))
    return found


def _public_names(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_is_in_the_reference(module: str) -> None:
    directives = _directives()
    covering = PUBLIC[module]
    missing_pages = [m for m in covering if m not in directives]
    assert not missing_pages, f"no `::: {missing_pages[0]}` in docs/api/*.md"
    documented = set().union(*(_public_names(m) for m in covering))
    if module == "burnish.nn":
        documented.add("loss")  # the module itself: `::: burnish.nn.loss`
    missing = _public_names(module) - documented
    assert not missing, f"{module}.__all__ names not in the API reference: {sorted(missing)}"


def test_every_public_subpackage_is_listed() -> None:
    """A public subpackage (one with `__all__`, no leading underscore) has a reference page."""
    import pkgutil

    import burnish

    names = {"burnish"}
    for info in pkgutil.walk_packages(burnish.__path__, "burnish."):
        parts = info.name.split(".")
        if not info.ispkg or any(p.startswith("_") for p in parts) or info.name in PUBLIC:
            continue
        if info.name.startswith("burnish.train.renderer.tui"):
            continue  # internal: the dashboard is `TuiMetricsRenderer` of its parent
        if info.name in {f"burnish.train.{role}" for role in INTERNAL_TRAIN}:
            continue  # internal roles of train/; their public names are `burnish.train`'s
        if info.name.startswith(
            (
                "burnish.record.formats",
                "burnish.record.store",
                "burnish.data.dataset.transform",
                "burnish.data.dataset.sqlite",
            )
        ):
            continue  # implementation packages, re-exported by their parents
        names.add(info.name)
    assert names <= set(PUBLIC), (
        f"public subpackages without a reference page: {names - set(PUBLIC)}"
    )


def test_rendered_reference_has_every_name(built_site: Path) -> None:
    """mkdocstrings resolves every name, lazy re-exports (PEP 562) included."""
    html = "".join(p.read_text(encoding="utf-8") for p in (built_site / "api").rglob("*.html"))
    for module, covering in PUBLIC.items():
        for name in _public_names(module) - {"loss"}:
            anchors = [f'id="{m}.{name}"' for m in covering]
            # Documented under its defining module (`burnish.config` the decorator shares its
            # name with its module; `__version__` is filtered out of members as a dunder).
            defined_in = getattr(getattr(importlib.import_module(module), name), "__module__", None)
            anchors.append(f'id="{DEFINED_IN.get(name, defined_in)}.{name}"')
            assert any(a in html for a in anchors), f"{module}.{name} is not rendered"
