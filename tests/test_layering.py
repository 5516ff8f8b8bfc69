"""The house drawn from the imports (issue 42, item 5): no import circles in `src/` and
`benchmarks/`, no file in `src/` over 450 lines.

A static scan of every `import burnish...`, `from burnish... import`, `from benchmarks...` and
relative import, at module level and inside functions alike: a lazy import that closes a circle
is still a circle in the design, only hidden. Imports under `if TYPE_CHECKING:` are left out
(they never run). Importing a name from a package (`from burnish.optim import Adam`) is an edge
to the package's `__init__`; importing a submodule (`from burnish.optim import base`) an edge to
the submodule; the implicit import of a module's parent packages is not counted (else every
package whose `__init__` re-exports its modules would be a circle).

There is none left: a new circle anywhere fails with its members named (ALLOWED_CIRCLES stays
as the place to list one knowingly, with its reason).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = {"burnish": REPO / "src" / "burnish", "benchmarks": REPO / "benchmarks"}
MAX_LINES = 450

# Circles allowed, each the set of the modules of one strongly connected component: none (the
# reorganisation of train/, issue 42, broke the last). A listed one that is gone fails too.
ALLOWED_CIRCLES: list[frozenset[str]] = []
# Subpackages of burnish importing each other: none.
ALLOWED_LAYER_CIRCLES: list[frozenset[str]] = []
# Files of src/ over MAX_LINES: none.
ALLOWED_LONG_FILES: set[str] = set()


def _module_name(root: str, path: Path) -> str:
    parts = [root, *path.relative_to(ROOTS[root]).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for root, directory in ROOTS.items():
        for path in sorted(directory.rglob("*.py")):
            found[_module_name(root, path)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of `tree` that can run: the bodies of `if TYPE_CHECKING:` left out."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The scanned module `name` names, or the closest scanned package above it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: dict[str, Path]
) -> set[str]:
    if isinstance(node, ast.Import):
        return {t for alias in node.names if (t := _resolve(alias.name, modules))}
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{node.module}" if node.module else package
    else:
        base = node.module or ""
    if base.split(".")[0] not in ROOTS:
        return set()
    targets = set()
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        target = submodule if submodule in modules else _resolve(base, modules)
        if target:
            targets.add(target)
    return targets


@functools.cache
def import_graph() -> dict[str, frozenset[str]]:
    """Each scanned module -> the scanned modules it imports (itself left out); read once."""
    modules = _modules()
    graph: dict[str, frozenset[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _imports(tree):
            edges |= _targets(node, module, is_package, modules)
        edges.discard(module)
        graph[module] = frozenset(edges)
    return graph


def circles(graph: Mapping[str, AbstractSet[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _describe(component: frozenset[str], graph: Mapping[str, AbstractSet[str]]) -> str:
    edges = [f"  {a} -> {b}" for a in sorted(component) for b in sorted(graph[a] & component)]
    return "circle of " + ", ".join(sorted(component)) + ":\n" + "\n".join(edges)


def _against(
    found: list[frozenset[str]], allowed: list[frozenset[str]]
) -> tuple[list[frozenset[str]], str]:
    """The circles found outside the allowed ones, and the allowed ones no longer found."""
    new = [c for c in found if not any(c <= a for a in allowed)]
    gone = [a for a in allowed if not any(c <= a for c in found)]
    return new, "; ".join(", ".join(sorted(c)) for c in gone)


def test_the_scan_sees_circles_and_their_kinds_of_import() -> None:
    """The scanner itself: a circle closed by a function-level import is found; one through
    `if TYPE_CHECKING:` is not; relative imports resolve."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from burnish.config import config\n"
        "def f():\n    from .base import Thing\n"
    )
    tree = ast.parse(source)
    modules = {m: Path() for m in ("burnish.optim", "burnish.optim.base", "burnish.config")}
    targets = set()
    for node in _imports(tree):
        targets |= _targets(node, "burnish.optim.sgd", False, modules)
    assert targets == {"burnish.optim.base"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [frozenset({"a", "b", "c"})]


def test_no_import_circles() -> None:
    graph = import_graph()
    new, gone = _against(circles(graph), ALLOWED_CIRCLES)
    assert not new, "import circles (break them by moving the shared piece down a layer):\n" + (
        "\n".join(_describe(c, graph) for c in new)
    )
    assert not gone, "circles listed in ALLOWED_CIRCLES are gone: remove them: " + gone


def test_no_import_back_up_between_packages() -> None:
    """The subpackages of burnish (optim, lr_scheduler, record, train, cli, ...) form layers:
    no two import each other, through any chain of modules."""
    graph = import_graph()

    def layer(module: str) -> str:
        return ".".join(module.split(".")[:2])

    layers: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module.startswith("burnish."):
            layers.setdefault(layer(module), set()).update(
                layer(t) for t in targets if t.startswith("burnish.") and layer(t) != layer(module)
            )
    for targets in layers.values():
        targets &= set(layers)
    new, gone = _against(circles(layers), ALLOWED_LAYER_CIRCLES)
    details = [
        f"  {a} -> {b}"
        for c in new
        for a in sorted(graph)
        for b in sorted(graph[a])
        if layer(a) in c and layer(b) in c and layer(a) != layer(b)
    ]
    assert not new, "packages importing each other:\n" + "\n".join(details)
    assert not gone, "circles listed in ALLOWED_LAYER_CIRCLES are gone: remove them: " + gone


def test_no_file_in_src_over_450_lines() -> None:
    lengths = {
        str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((REPO / "src").rglob("*.py"))
    }
    long = {path: n for path, n in lengths.items() if n > MAX_LINES}
    new = sorted(set(long) - ALLOWED_LONG_FILES)
    assert not new, f"files over {MAX_LINES} lines (split them by concern): " + ", ".join(
        f"{path} ({long[path]})" for path in new
    )
    assert not ALLOWED_LONG_FILES - set(long), (
        "files listed in ALLOWED_LONG_FILES are short now: remove them: "
        + ", ".join(sorted(ALLOWED_LONG_FILES - set(long)))
    )
