"""`backtest --compiled`: the trading stack compiled by mypyc gives the same results; the
build is keyed by every source file, kept, pruned; what is missing is said in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from support.cli import CLI

from console.cli import backtest as backtest_cli
from console.cli.main import main
from engine.tools.backtest import compiled
from engine.tools.backtest.compiled import TREE_ENV, CompiledBuildError, compiled_tree, tree_key

TIMINGS = ("wall_s", "cpu_s", "frames_per_s", "frames_per_cpu_s", "rss_kb")


def test_the_key_follows_every_source_file(tmp_path):
    package = tmp_path / "engine"
    (package / "trading").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "trading" / "desk.py").write_text("X = 1\n")
    first = tree_key(package)
    (package / "notes.txt").write_text("not Python")
    assert tree_key(package) == first
    (package / "trading" / "desk.py").write_text("X = 2\n")
    edited = tree_key(package)
    (package / "trading" / "new.py").write_text("")
    assert len({first, edited, tree_key(package)}) == 3


def test_missing_build_tools_are_one_line_with_the_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(compiled.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(CompiledBuildError, match=r"needs mypyc and setuptools .*\[compiled\]"):
        compiled_tree(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    code = main(["backtest", "--quiet", "--replay", "unused.gz", "--compiled"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "pip install 'hft-console[compiled]'" in err


def test_a_failed_build_names_its_log_and_leaves_nothing_half_built(tmp_path):
    package = tmp_path / "source" / "engine"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")  # none of the modules to compile
    cache = tmp_path / "cache"
    with pytest.raises(CompiledBuildError, match=r"mypyc failed \(exit \d+\): .*last-build.log"):
        compiled_tree(cache, package)
    assert [path.name for path in cache.iterdir()] == ["last-build.log"]


@pytest.mark.parametrize("flag", ["--compiled", "--compi"])
def test_the_child_gets_the_command_line_without_the_flag(monkeypatch, flag):
    children = []
    monkeypatch.setattr(
        backtest_cli, "_run_compiled", lambda child, quiet: children.append((child, quiet)) or 0
    )
    assert main(["backtest", "--replay", "a.gz", flag, "--json"]) == 0
    assert children == [(["backtest", "--replay", "a.gz", "--json"], False)]


@pytest.mark.parametrize("flag", [[], ["--compiled"]])
def test_a_child_whose_engine_is_not_compiled_refuses(monkeypatch, tmp_path, capsys, flag):
    monkeypatch.setenv(TREE_ENV, str(tmp_path))  # a child: --compiled is not run again
    code = main(["backtest", "--quiet", "--replay", "unused.gz", *flag])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert f"the compiled engine in {tmp_path} did not load" in err


def backtest(recording, cache, *extra):
    environment = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    command = [*CLI, "backtest", "--replay", str(recording)]
    done = subprocess.run(
        [*command, "--json", "--no-charts", *extra],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    untimed = [{key: value for key, value in run.items() if key not in TIMINGS} for run in runs]
    return untimed, done.stderr


def test_the_compiled_engine_gives_the_same_results_and_is_kept(simulated_session, compiled_cache):
    root = compiled_cache / "hft-console" / "compiled"
    shutil.rmtree(root, ignore_errors=True)  # this test watches a build (later ones reuse it)
    for age, name in ((1_000, "oldest"), (2_000, "older"), (3_000, "building-killed")):
        (root / name / "engine").mkdir(parents=True)
        os.utime(root / name, (age, age))
    # Two runs of a grid: in worker processes, whose specs and metrics cross by pickle.
    grid = ("--set", "trading.strategy.half_spread_bps=1,3", "--jobs", "2")
    plain, _ = backtest(simulated_session, compiled_cache, *grid)
    built, said = backtest(simulated_session, compiled_cache, *grid, "--compiled")
    assert built == plain and len(plain) == 2
    assert "compiling the trading stack with mypyc" in said
    (tree,) = {path for path in root.iterdir() if path.is_dir() and path.name != "older"}
    kept = sorted(path.name for path in root.iterdir() if path.is_dir())
    assert kept == sorted([tree.name, "older"])  # the oldest and a killed build's leftovers go
    assert list((tree / "engine" / "trading").glob("desk.*.so"))  # the desk is compiled
    again, said = backtest(simulated_session, compiled_cache, *grid, "--compiled")
    assert again == plain and "compiling" not in said  # the kept build, not a new one
