"""The engine with its trading stack compiled by mypyc, for backtests and sweeps only.

`backtest --compiled` runs in a child process whose `engine` package is a copy of this one with
`COMPILED_MODULES` compiled to C extensions: the same source, so the same orders, fills and PnL
to the last digit, 1.3-1.6x the frames a second (the desk, the paper venue, the gateway and the
executor are most of a backtest's time, and mypyc runs their attribute-heavy Python faster).
With `--ray`, each node builds its own and the workers there run it (engine/tools/cluster/).
Live trading and the console never load it.

The copy is built once per source: it lives in the user cache under a hash of every file of
the package, mypy's version and Python's, so an edited engine is never run from a stale build.
Building needs the `compiled` extra (mypy, setuptools) and a C compiler; about a minute.
Modules with numba kernels, asyncio subclasses (the replay's loop, `engine.market_loop`) and
what crosses to sweep workers by pickle (a compiled frozen dataclass cannot be unpickled: the
backtest's specs) stay Python.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import engine
from engine.user_files import user_cache_dir

COMPILED_MODULES = (
    "engine/book.py",
    "engine/clock.py",
    "engine/feed/parse.py",
    "engine/feed/recording.py",
    "engine/feed/replay.py",
    "engine/journal.py",
    "engine/latency.py",
    "engine/laya/decide.py",
    "engine/market/matching.py",
    "engine/pipeline.py",
    "engine/risk/gateway.py",
    "engine/risk/intents.py",
    "engine/trading/desk.py",
    "engine/trading/events.py",
    "engine/trading/executor.py",
    "engine/trading/paper_venue.py",
    "engine/trading/strategy.py",
    "engine/trading/tracked_order.py",
)
TREE_ENV = "HFT_COMPILED_ENGINE"
"""Set in the child process: the tree its `engine` is loaded from."""
# mypy's checks that the compiled modules fail today, on narrowing it cannot follow (`type(x)
# is C`, a NamedTuple field named `count`): mypyc then checks those values' types at run time.
_RELAXED_CHECKS = (
    "arg-type",
    "assignment",
    "attr-defined",
    "has-type",
    "misc",
    "operator",
    "union-attr",
)
_BUILD_LOG = "last-build.log"
_TREES_KEPT = 2
_ABANDONED_S = 86_400.0


class CompiledBuildError(RuntimeError):
    """The compiled engine cannot be built here; the message says why in one line."""


def source_package() -> Path:
    """The folder of the `engine` package this process runs."""
    return Path(engine.__file__).resolve().parent


def tree_key(package: Path) -> str:
    """A hash of every Python file of `package`, with mypy's and Python's versions."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    digest.update(f"{_mypy_version()} {sys.version}".encode())
    return digest.hexdigest()[:24]


def compiled_tree(
    cache_dir: Path | None = None,
    package: Path | None = None,
    on_build: Callable[[], None] | None = None,
) -> Path:
    """The folder holding the compiled `engine` for this source, built first when missing
    (`on_build` hears that it is). Raises `CompiledBuildError`."""
    package = source_package() if package is None else package
    check_build_tools()
    built = built_tree(cache_dir, package)
    if built is not None:
        return built
    root = _cache_root(cache_dir)
    tree = root / tree_key(package)
    if on_build is not None:
        on_build()
    root.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="building-", dir=root))
    try:
        shutil.copytree(
            package, building / "engine", ignore=shutil.ignore_patterns("__pycache__", "*.so")
        )
        _compile(building, root / _BUILD_LOG)
        with contextlib.suppress(OSError):  # another process built the same tree meanwhile
            os.replace(building, tree)
        if not (tree / "engine" / "__init__.py").is_file():
            raise CompiledBuildError(f"the compiled engine did not land in {tree}")
        _prune(root, tree)
        return tree
    finally:
        shutil.rmtree(building, ignore_errors=True)


def built_tree(cache_dir: Path | None = None, package: Path | None = None) -> Path | None:
    """The folder holding the compiled `engine` for this source when it is built, else None."""
    package = source_package() if package is None else package
    tree = _cache_root(cache_dir) / tree_key(package)
    if not (tree / "engine" / "__init__.py").is_file():
        return None
    with contextlib.suppress(OSError):
        os.utime(tree)  # the most recently used: kept by the next build's pruning
    return tree


def compiled_problem() -> str | None:
    """In a process meant to run the compiled engine (`TREE_ENV` set): why the engine it
    loaded is not that one, else None."""
    tree = os.environ.get(TREE_ENV)
    if tree is None:
        return None
    from engine.trading import desk

    if not is_compiled(desk):
        return f"the compiled engine in {tree} did not load (the desk is {desk.__file__})"
    return None


def _cache_root(cache_dir: Path | None) -> Path:
    return user_cache_dir() / "compiled" if cache_dir is None else cache_dir


def _prune(root: Path, newest: Path) -> None:
    """Keep `newest` and the one built before it (an engine edited back and forth); older
    trees (about 25 MB each, with numba's cache) are removed, and builds left by a process
    killed a day ago or more."""
    folders = [path for path in root.iterdir() if path.is_dir() and path != newest]
    abandoned = time.time() - _ABANDONED_S
    for folder in folders:
        if folder.name.startswith("building-") and folder.stat().st_mtime < abandoned:
            shutil.rmtree(folder, ignore_errors=True)
    trees = sorted(
        (folder for folder in folders if not folder.name.startswith("building-")),
        key=lambda folder: folder.stat().st_mtime,
        reverse=True,
    )
    for stale in trees[_TREES_KEPT - 1 :]:
        shutil.rmtree(stale, ignore_errors=True)


def is_compiled(module: object) -> bool:
    """Whether `module` was loaded from a C extension (a compiled module)."""
    return Path(getattr(module, "__file__", "") or "").suffix in (".so", ".pyd")


def _compile(building: Path, log: Path) -> None:
    """mypyc over `COMPILED_MODULES` in `building`; its output goes to `log`, which a failure
    names."""
    command = [
        sys.executable,
        "-m",
        "mypyc",
        "--ignore-missing-imports",
        "--follow-imports=silent",
        *(f"--disable-error-code={code}" for code in _RELAXED_CHECKS),
        *COMPILED_MODULES,
    ]
    with log.open("wb") as output:
        done = subprocess.run(
            command, cwd=building, stdout=output, stderr=subprocess.STDOUT, check=False
        )
    if done.returncode != 0:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        last = (errors or lines or ["no output"])[-1].strip()
        raise CompiledBuildError(
            f"mypyc failed (exit {done.returncode}): {last[:300]} (all of it in {log})"
        )
    shutil.rmtree(building / "build", ignore_errors=True)
    (building / "setup.py").unlink(missing_ok=True)


def check_build_tools() -> None:
    """Raises `CompiledBuildError` naming what building needs and this machine lacks."""
    missing = [name for name in ("mypyc", "setuptools") if importlib.util.find_spec(name) is None]
    if missing:
        raise CompiledBuildError(
            f"--compiled needs {' and '.join(missing)} and a C compiler: "
            "pip install 'hft-console[compiled]'"
        )
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        raise CompiledBuildError("--compiled needs a C compiler (cc or gcc) on the PATH")


def _mypy_version() -> str:
    try:
        return importlib.metadata.version("mypy")
    except importlib.metadata.PackageNotFoundError:
        return "none"
