"""The house's layers, from the code's own imports: the runtime imports no tool, no lab and no
console; the venue and the market data import nothing of trading or the simulator; live trading
imports no simulator; no modules of the project import each other in a circle."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("engine.tools", "engine.lab")
NEVER = {
    # importer prefix: the prefixes it must never import
    "engine": ("console", *TOOLS),
    "engine.tools": ("console",),
    "engine.lab": ("console",),
    "engine.bitget": (
        "engine.trading",
        "engine.sim",
        "engine.node",
        "engine.kev",
        "engine.settings",
    ),
    "engine.feed": ("engine.bitget", "engine.trading", "engine.sim", "engine.node"),
    "engine.market": ("engine.trading", "engine.sim", "engine.bitget.rest", "engine.node"),
    "engine.risk": ("engine.trading", "engine.sim", "engine.node", "engine.kev"),
    "engine.laya": ("engine.trading", "engine.sim", "engine.node", "engine.kev"),
    "engine.trading": ("engine.sim", "engine.node", "engine.kev"),
    "console.app": ("console.cli",),
    "console.widgets": ("console.cli",),
    "console.screens": ("console.cli",),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _imports() -> dict[str, frozenset[str]]:
    """Every project module and the project modules it imports (at any depth of its code,
    under TYPE_CHECKING too: a circle of type imports is still a circle to a reader)."""
    modules = {
        _module_name(path): path
        for folder in ("engine", "console")
        for path in (REPO / folder).rglob("*.py")
    }
    imported: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        imported[name] = frozenset(target for target in found if target in modules)
    return imported


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _rule(module: str) -> tuple[str, ...]:
    """The longest importer prefix that has a rule for `module`, and its forbidden prefixes
    together with those of the shorter prefixes (engine.tools is also under engine's)."""
    forbidden: list[str] = []
    for prefix, never in NEVER.items():
        if _under(module, prefix):
            forbidden.extend(never)
    if any(_under(module, tool) for tool in TOOLS):
        forbidden = [target for target in forbidden if target not in TOOLS]
    return tuple(forbidden)


def test_every_module_is_read():
    assert "engine.node" in _imports() and "console.cli.main" in _imports()


@pytest.mark.parametrize("module", sorted(_imports()))
def test_a_module_imports_nothing_of_a_layer_above_it(module):
    forbidden = _rule(module)
    wrong = sorted(
        target
        for target in _imports()[module]
        if any(_under(target, prefix) for prefix in forbidden)
    )
    assert not wrong, f"{module} imports {', '.join(wrong)}"


def test_no_modules_import_each_other_in_a_circle():
    graph = _imports()
    circles = [sorted(component) for component in _strongly_connected(graph) if len(component) > 1]
    assert not circles, "; ".join(" <-> ".join(circle) for circle in circles)


def _strongly_connected(graph: dict[str, frozenset[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the project's import graph is a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components
