"""The engine runs headless: no engine module may pull in the UI layer.

Each module is imported in a fresh interpreter, so a lazy import that is not really lazy
shows up here (the approach of Harlequin's test_import_hygiene).
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import engine

UI_PACKAGES = ("textual", "rich", "console")
ENGINE_MODULES = sorted(
    module.name for module in pkgutil.walk_packages(engine.__path__, prefix="engine.")
)


def test_the_engine_has_modules_to_check():
    assert "engine.feed.parse" in ENGINE_MODULES


def modules_after_importing(module: str) -> set[str]:
    """Every module a fresh interpreter holds once it imported `module`."""
    probe = f"import sys, importlib; importlib.import_module({module!r}); print(*sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return set(result.stdout.split())


@pytest.mark.parametrize("module", ["engine", *ENGINE_MODULES])
def test_engine_module_does_not_import_the_ui(module):
    loaded = modules_after_importing(module)
    ui = sorted(name for name in loaded if name.split(".")[0] in UI_PACKAGES)
    assert not ui, f"{module} imported {ui}"


HEAVY_MODULES = ("onnxruntime", "numba", "engine.sim.market", "engine.sim.server", "engine.node")
"""What reading the engine's configuration must not load: the console reads and checks it
before the engine process starts, and each costs it time and memory it never uses."""


@pytest.mark.parametrize(
    "module", ["engine.config", "engine.settings.schema", "engine.laya.config", "engine.kev.config"]
)
def test_reading_the_engines_config_loads_no_runtime_kernels_or_simulator(module):
    heavy = sorted(set(HEAVY_MODULES) & modules_after_importing(module))
    assert not heavy, f"{module} imported {heavy}"
