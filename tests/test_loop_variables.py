"""A for-loop's variable is read only inside its loop. Read after the loop it holds the last
item, and a line built from it names that item for all of them: the risk gateway once answered
"BTCUSDT max position 0.6 BTC; ETHUSDT max position 0.6 ETH" (ETH's size for both, from a
comprehension over the symbols that read the previous loop's `size`), and a test recording's
BTC trades were priced at ETH's mid the same way. A name the function also binds another way
(an assignment, an argument, ...) is passed over: that is a variable of its own, not a leak."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _names(target: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


def _scope_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The function's own nodes: not those of the functions, classes and lambdas in it."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _other_bindings(function: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST]):
    arguments = function.args
    bound = {
        argument.arg
        for argument in (
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            arguments.vararg,
            arguments.kwarg,
        )
        if argument is not None
    }
    for node in nodes:
        if isinstance(node, _SCOPES) and not isinstance(node, ast.Lambda):
            bound.add(node.name)
        elif isinstance(node, ast.Assign):
            bound.update(*(_names(target) for target in node.targets))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            bound |= _names(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bound |= _names(node.optional_vars)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return bound


def leaked_loop_variables(path: Path) -> list[str]:
    """`line: name` for each read of a for-loop's variable outside the loop that binds it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def comprehension_binds(node: ast.AST, name: str) -> bool:
        parent = parents.get(id(node))
        while parent is not None and not isinstance(parent, _SCOPES):
            if isinstance(parent, _COMPREHENSIONS) and any(
                name in _names(generator.target) for generator in parent.generators
            ):
                return True
            parent = parents.get(id(parent))
        return False

    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = list(_scope_nodes(function))
        other = _other_bindings(function, nodes)
        inside: dict[str, set[int]] = {}  # name -> the nodes of every loop that binds it
        for loop in nodes:
            if isinstance(loop, (ast.For, ast.AsyncFor)):
                for name in _names(loop.target) - other - {"_"}:
                    inside.setdefault(name, set()).update(id(node) for node in ast.walk(loop))
        found.extend(
            f"{node.lineno}: {node.id}"
            for node in nodes
            if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in inside
            and id(node) not in inside[node.id]
            and not comprehension_binds(node, node.id)
        )
    return sorted(set(found), key=lambda text: int(text.split(":")[0]))


def _python_files() -> list[Path]:
    files = [
        path for folder in ("engine", "console", "tests") for path in (REPO / folder).rglob("*.py")
    ]
    files += [
        path
        for path in (REPO / "scripts").iterdir()
        if path.is_file() and path.read_text(errors="replace").startswith("#!/usr/bin/env python")
    ]
    return sorted(files)


def test_no_loop_variable_is_read_after_its_loop():
    offenders = {
        path.relative_to(REPO).as_posix(): found
        for path in _python_files()
        if (found := leaked_loop_variables(path))
    }
    assert not offenders, f"a loop's variable read outside its loop (line: name): {offenders}"


def test_the_scan_finds_a_leak_and_passes_over_what_is_not_one(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def answer(sizes):\n"
        "    for symbol, size in sizes.items():\n"
        "        print(symbol, size)\n"
        "    return [f'{symbol} {size}' for symbol in sizes]\n"
        "def fine(rows):\n"
        "    for row in rows:\n"
        "        pass\n"
        "    total = [row for row in rows]\n"
        "    for row in rows:\n"
        "        print(row)\n"
        "    return total\n"
        "def rebound(rows):\n"
        "    for row in rows:\n"
        "        pass\n"
        "    row = None\n"
        "    return row\n"
    )
    assert leaked_loop_variables(sample) == ["4: size"]
