"""Every third-party import belongs to a dependency the project declares, in the right extra.

A module that is only present as someone else's dependency (yarl through aiohttp, rich through
Textual) works on the machine that happens to have it and breaks when that other package
changes; a test-only module missing from `dev` breaks a fresh clone's `scripts/test`. The
imports are read from the source (every `import`, lazy ones included), each top-level module is
mapped to the distribution that provides it (`importlib.metadata`), and that distribution must
be declared where the importing file can rely on it. The reverse holds for the runtime list:
nothing is declared that the engine and the console never import.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIRST_PARTY = {"engine", "console", "tests", "styles"}

RUNTIME_FILES_WITH_EXTRAS = {
    "engine/lab/train.py": {"train"},
    "engine/kev/server.py": {"kev-local"},
    "engine/tools/backtest/html_report.py": {"report"},
    "engine/tools/optimize/space.py": {"research"},
    "engine/tools/optimize/walk_forward.py": {"research"},
    "engine/tools/optimize/report.py": {"research", "report"},
    "engine/tools/cluster/ray_workers.py": {"cluster"},
}
"""Runtime files that import an optional extra lazily, behind a one-line error naming it."""

TOOL_EXTRAS = {"dev", "train", "kev-local", "report", "research", "cluster"}
"""`scripts/test` installs these for the tests and the scripts."""


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"unreadable requirement {requirement!r} in pyproject.toml"
    return _normalise(match.group(1))


@cache
def declared() -> dict[str, set[str]]:
    """Extra ('' for the runtime dependencies) -> the distributions it declares."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = {"": {_requirement_name(item) for item in project["dependencies"]}}
    for extra, items in project.get("optional-dependencies", {}).items():
        extras[extra] = {_requirement_name(item) for item in items}
    return extras


def _allowed(relative: str) -> set[str]:
    extras = declared()
    allowed = set(extras[""])
    if relative.startswith(("tests/", "scripts/")):
        names = TOOL_EXTRAS
    else:
        names = RUNTIME_FILES_WITH_EXTRAS.get(relative, set())
    for extra in names:
        allowed |= extras[extra]
    return allowed


def _python_sources() -> Iterator[Path]:
    for folder in ("engine", "console", "tests"):
        yield from sorted((REPO / folder).rglob("*.py"))
    for script in sorted((REPO / "scripts").iterdir()):
        if script.is_file() and script.read_text().startswith("#!/usr/bin/env python"):
            yield script


@cache
def _local_modules() -> frozenset[str]:
    """Helper modules and packages the tests and scripts import by name (their folders are on the
    path)."""
    names = {path.stem for folder in ("tests", "scripts") for path in (REPO / folder).rglob("*.py")}
    packages = {path.parent.name for path in (REPO / "tests").rglob("__init__.py")}
    return frozenset(names | packages)


def _imported_top_levels(path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0], node.lineno


def third_party_imports() -> list[tuple[str, str, int]]:
    """(file relative to the repository, top-level module, line) for every third-party import."""
    found = []
    local = _local_modules()
    for path in _python_sources():
        relative = path.relative_to(REPO).as_posix()
        for module, line in _imported_top_levels(path):
            if module in sys.stdlib_module_names or module in FIRST_PARTY or module in local:
                continue
            found.append((relative, module, line))
    return found


def test_the_sources_have_third_party_imports_to_check():
    modules = {module for _, module, _ in third_party_imports()}
    assert {"numpy", "textual", "aiohttp", "pytest"} <= modules


def test_every_third_party_import_is_declared_where_its_file_can_rely_on_it():
    providers = packages_distributions()
    problems = []
    for relative, module, line in third_party_imports():
        distributions = {_normalise(name) for name in providers.get(module, ())}
        if not distributions:
            problems.append(f"{relative}:{line}: {module} is provided by no installed package")
            continue
        if not distributions & _allowed(relative):
            where = (
                "the runtime dependencies"
                if not relative.startswith(("tests/", "scripts/"))
                else f"the runtime dependencies or the {sorted(TOOL_EXTRAS)} extras"
            )
            problems.append(
                f"{relative}:{line}: imports {module} ({', '.join(sorted(distributions))}), "
                f"which {where} do not declare"
            )
    assert not problems, "\n".join(problems)


def test_every_runtime_dependency_is_imported_by_the_engine_or_the_console():
    providers = packages_distributions()
    imported = set()
    for relative, module, _ in third_party_imports():
        if relative.startswith(("engine/", "console/")):
            imported |= {_normalise(name) for name in providers.get(module, ())}
    unused = declared()[""] - imported
    assert not unused, f"declared at run time but imported nowhere in engine/ or console/: {unused}"


@pytest.mark.parametrize("extra", sorted(RUNTIME_FILES_WITH_EXTRAS.values(), key=sorted))
def test_the_extras_runtime_files_rely_on_exist(extra):
    assert extra <= set(declared())
