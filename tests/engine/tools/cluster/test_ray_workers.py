"""Runs on a real Ray head started here on loopback, as a user starts one (`ray start --head`),
give the metrics the local pool gives, to the last digit (timings aside); what Ray cannot do
is refused in one line. The head is started once for the module (it takes seconds)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from engine.lab.dataset import DatasetConfig
from engine.lab.train import recording_datasets, train
from engine.lab.train_config import TrainConfig
from engine.settings.reader import load_settings
from engine.sim.market import MarketGeneratorConfig
from engine.sim.recording import simulate_recording
from engine.tools.backtest.plan import GridPoint, backtest_specs, run_specs
from engine.tools.backtest.report import metrics_json
from engine.tools.cluster.ray_workers import (
    COPIES_FOLDER,
    ClusterError,
    RayWorkers,
    node_versions,
    version_difference,
)
from engine.tools.cluster.workers import Place
from tests.support.cli import REPO, checkout_env, run_cli
from tests.support.ray_head import local_ray_head
from tests.support.recordings import SHARED_SPOT, shared_spot

ray = pytest.importorskip("ray")  # the cluster extra
pytestmark = pytest.mark.timeout(600)

TIMINGS = {"wall_s", "frames_per_s", "cpu_s", "frames_per_cpu_s", "rss_kb"}
SETTINGS = load_settings(environ={"HFT_CONSOLE_LAYA__PREFER_GPU": "false"})
SHARED_USDM = SHARED_SPOT.with_name("usdm_btc_20230405.bitget.gz")


@pytest.fixture(scope="module")
def head(compiled_cache):
    """A Ray head on loopback with 2 CPUs for the module, its compiled engine built in the
    suite's cache: its address."""
    with local_ray_head(2, checkout_env(XDG_CACHE_HOME=str(compiled_cache))) as address:
        yield address
        if ray.is_initialized():  # this process's connection, before the head goes
            ray.shutdown()


def without_timings(runs):
    return [{k: v for k, v in run.items() if k not in TIMINGS} for run in runs]


def backtest_json(*arguments):
    result = run_cli("backtest", "--json", "--quiet", *arguments, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["runs"]


def test_a_grid_on_ray_gives_the_local_pools_metrics(head):
    grid = ("--replay", str(shared_spot()), "--set", "trading.strategy.half_spread_bps=1,3")
    local = backtest_json(*grid, "--jobs", "2")
    on_ray = backtest_json(*grid, "--jobs", "2", "--ray", head)
    assert [run["label"] for run in on_ray] == [run["label"] for run in local]
    assert without_timings(on_ray) == without_timings(local)
    assert local[0]["fills"] != local[1]["fills"]  # two points that differ, in their order


def test_a_compiled_grid_on_ray_gives_the_local_pools_metrics(head, compiled_cache):
    grid = ("--replay", str(shared_spot()), "--set", "trading.strategy.half_spread_bps=1,3")
    local = backtest_json(*grid, "--jobs", "2")
    # From the checkout's folder, which Ray puts first on its workers' import path.
    on_ray = backtest_json(*grid, "--jobs", "2", "--ray", head, "--compiled")
    assert without_timings(on_ray) == without_timings(local)
    builds = compiled_cache / "hft-console" / "compiled"
    assert list(builds.glob("*/engine/trading/desk.*.so"))  # the node built it in its cache


def test_workers_that_did_not_load_the_compiled_engine_are_refused_naming_the_node(head):
    # This process joins first without the compiled engine's worker setup (a second connection
    # keeps the first's): its workers import the checkout's engine, Ray's path puts it first.
    RayWorkers(head)
    with pytest.raises(ClusterError, match=r"node \S+: the compiled engine in \S+ did not load"):
        RayWorkers(head, compiled=True)


def test_a_node_that_cannot_build_the_compiled_engine_is_named(tmp_path):
    shell = tmp_path / "bin"  # Ray starts its workers through bash
    shell.mkdir()
    (shell / "bash").symlink_to(shutil.which("bash"))
    no_compiler = checkout_env(  # the virtual environment's commands and bash: no cc, no gcc
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{shell}",
        CC="cc",
        XDG_CACHE_HOME=str(tmp_path),
    )
    with local_ray_head(1, no_compiler) as address:
        result = run_cli(
            *("backtest", "--replay", str(shared_spot()), "--ray", address, "--compiled"),
            timeout=300,
        )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1  # refused before any build is announced
    assert re.search(
        rf"--ray {address}: node \S+ cannot build the compiled engine: --compiled needs a C "
        r"compiler \(cc or gcc\) on the PATH",
        result.stderr,
    )


def test_a_command_ends_without_waiting_on_rays_exit_hook(head):
    # Ray's hook at exit sleeps half a second for worker logs a driver that takes none does
    # not need: the command disconnects first, so the hook finds nothing to wait for.
    code = f"""
import atexit, threading, time
slept = []
atexit.register(lambda: print(slept))  # registered first: run last
from engine.tools.cluster.ray_workers import RayWorkers
RayWorkers({head!r})
sleep = time.sleep
def watched(seconds):
    if threading.current_thread() is threading.main_thread():
        slept.append(seconds)
    sleep(seconds)
time.sleep = watched
"""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=checkout_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_setting_alone_sends_a_backtest_to_the_head(head, tmp_path):
    from ray._private.state import jobs  # the drivers the head has had: one per command

    config = tmp_path / "config.toml"
    config.write_text(f'[research]\nray_address = "{head}"\n')
    grid = ("--replay", str(shared_spot()), "--set", "trading.strategy.half_spread_bps=1,3")
    local = backtest_json(*grid, "--jobs", "2")
    RayWorkers(head)  # this process on the head, to read its drivers
    drivers = len(jobs())
    on_ray = backtest_json(*grid, "--jobs", "2", "--config", str(config))
    assert len(jobs()) == drivers + 1
    assert without_timings(on_ray) == without_timings(local)


def test_an_optimisation_on_ray_gives_the_local_walk(head):
    search = (
        *("--replay", str(shared_spot()), "--space", "trading.strategy.half_spread_bps=0.5:6"),
        *("--folds", "2", "--trials", "2", "--jobs", "2", "--json", "--quiet"),
    )
    walks = []
    for extra in ((), ("--ray", head)):
        result = run_cli("optimize", *search, *extra, timeout=300)
        assert result.returncode == 0, result.stderr
        walk = json.loads(result.stdout)
        del walk["pace"]  # its timings
        walks.append(walk)
    assert walks[0] == walks[1]


def test_a_recording_the_nodes_cannot_read_travels_through_the_object_store(head):
    recording = shared_spot()
    points = [GridPoint((("trading.strategy.half_spread_bps", 2.0),))]
    (spec,) = backtest_specs(SETTINGS, [recording], None, points, [None])
    (local,) = run_specs([spec], 1)
    (shipped,) = run_specs([spec], 2, ray=RayWorkers(head, ship_files=True))
    assert shipped.recording == str(recording)  # named as given, not as the node's copy
    assert without_timings([metrics_json(shipped)]) == without_timings([metrics_json(local)])
    copies = Path(tempfile.gettempdir()) / COPIES_FOLDER
    assert any(path.name == recording.name for path in copies.rglob("*"))


def _crash_the_first_attempt(item: tuple[Path, int], place: Place) -> int:
    """Kills its worker the first time (a marker file says it ran), as a node lost mid-run."""
    marker, value = item
    if value == 0 and not marker.exists():
        marker.touch()
        os._exit(1)
    return value * 10


def test_a_lost_worker_is_retried_and_its_result_taken_once(head, tmp_path):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers import no tests
    workers = RayWorkers(head)
    marker = tmp_path / "attempted"
    results = list(workers.map(_crash_the_first_attempt, [(marker, 0), (marker, 1), (marker, 2)]))
    assert marker.exists()  # the first attempt did die
    assert sorted(results) == [(0, 0), (1, 10), (2, 20)]


def test_each_recordings_training_dataset_built_on_ray_is_the_local_one(head):
    if not SHARED_USDM.is_file():
        pytest.skip(f"the shared recording is not here: {SHARED_USDM}")
    paths = [shared_spot(), SHARED_USDM]
    config = DatasetConfig()
    local = recording_datasets(paths, config)
    read = []
    on_ray = recording_datasets(paths, config, read.append, RayWorkers(head))
    assert sorted(read) == sorted(path.stat().st_size for path in paths)
    for ours, theirs in zip(local, on_ray, strict=True):
        for field in dataclasses.fields(ours):
            mine, yours = getattr(ours, field.name), getattr(theirs, field.name)
            if isinstance(mine, np.ndarray):
                assert np.array_equal(mine, yours, equal_nan=mine.dtype.kind == "f"), field.name
            else:
                assert mine == yours, field.name


class _MapsHeard(RayWorkers):
    """The real cluster, and the size of each batch of runs sent to it."""

    def __init__(self, address):
        super().__init__(address)
        self.batches = []

    def map(self, function, items, files=()):
        self.batches.append(len(items))
        return super().map(function, items, files)


def test_the_folds_fitted_side_by_side_on_ray_are_the_local_ones(head, tmp_path):
    from tests.engine.lab.laya_training import QUICK_CANDIDATES, QUICK_LABELS

    market = MarketGeneratorConfig(burst_rate_per_min=3.0)
    recordings = [
        simulate_recording(tmp_path / f"session-{seed}.gz", 2.5, seed=seed, market=market).path
        for seed in (5, 6)
    ]
    config = TrainConfig(
        dataset=DatasetConfig(labels=QUICK_LABELS),
        candidates=QUICK_CANDIDATES,
        latency_frames=50,
        progress=False,
    )
    cluster = _MapsHeard(head)
    reports = [
        train(recordings, tmp_path / f"{where}.onnx", config, ray=ray)
        for where, ray in (("local", None), ("ray", cluster))
    ]
    assert cluster.batches == [2, 2]  # the two recordings' datasets, then the two folds' fits

    def fold_figures(report):
        return [
            (fold.left_out, row.name, row.macro_f1, row.f1, row.ask_auc, row.bid_auc)
            for fold in report.folds.folds
            for row in fold.rows
        ]

    def fold_thresholds(report):
        return {
            left_out: {name: fitted.thresholds for name, fitted in candidates.items()}
            for left_out, candidates in report.folds.predictors.items()
        }

    local, on_ray = reports
    assert fold_figures(on_ray) == fold_figures(local)
    assert fold_thresholds(on_ray) == fold_thresholds(local)
    assert on_ray.choice == local.choice


RAY_COMMANDS = [
    ("backtest",),
    ("optimize", "--space", "trading.strategy.half_spread_bps=0.5:6"),
    ("train", "--out", "never-written.onnx"),
]
"""The commands that take --ray, each with what it needs besides --replay."""


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed again)."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return free.getsockname()[1]


@pytest.mark.parametrize("command", RAY_COMMANDS)
def test_an_address_where_nothing_answers_is_one_line(command, tmp_path):
    port = closed_port()
    result = run_cli(
        *command, "--replay", str(shared_spot()), "--ray", f"127.0.0.1:{port}", cwd=tmp_path
    )
    assert not (tmp_path / "never-written.onnx").exists()
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"--ray 127.0.0.1:{port}: nothing answers there" in result.stderr


@pytest.mark.parametrize("command", RAY_COMMANDS)
def test_an_address_set_in_the_settings_is_used_and_named(command, tmp_path):
    port = closed_port()
    setting = {"HFT_CONSOLE_RESEARCH__RAY_ADDRESS": f"127.0.0.1:{port}"}
    result = run_cli(
        *command, "--replay", str(shared_spot()), env=checkout_env(**setting), cwd=tmp_path
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"[research] ray_address 127.0.0.1:{port}: nothing answers there" in result.stderr


def test_an_address_that_answers_but_is_no_ray_head_is_one_line_soon():
    with socket.socket() as silent:  # accepts connections (its backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        result = run_cli("backtest", "--replay", str(shared_spot()), "--ray", address, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"--ray {address}: nothing answers there (timed out)" in result.stderr


def test_without_ray_installed_the_flag_names_the_extra():
    blocked = (  # as where Ray is not installed: its import fails
        "import sys; sys.modules['ray'] = None; from console.cli.main import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            blocked,
            "backtest",
            "--replay",
            str(shared_spot()),
            "--ray",
            "auto",
        ],
        capture_output=True,
        text=True,
        env=checkout_env(),
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "pip install 'hft-console[cluster]'" in result.stderr


def test_without_the_flag_ray_is_never_imported():
    code = (
        "import sys; from console.cli.main import main; "
        "code = main(sys.argv[1:]); assert 'ray' not in sys.modules, 'ray imported'; "
        "sys.exit(code)"
    )
    grid = ("--replay", str(shared_spot()), "--set", "trading.strategy.half_spread_bps=1,3")
    result = subprocess.run(
        [sys.executable, "-c", code, "backtest", *grid, "--jobs", "2", "--json", "--quiet"],
        capture_output=True,
        text=True,
        env=checkout_env(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr


def test_a_cluster_whose_workers_import_another_hft_console_is_refused_naming_it(tmp_path):
    ours = metadata.version("hft-console")
    installed = metadata.distribution("hft-console").read_text("METADATA")
    other = tmp_path / "other" / "hft_console-0.0.1.dist-info"  # first on the nodes' path
    other.mkdir(parents=True)
    (other / "METADATA").write_text(installed.replace(f"\nVersion: {ours}\n", "\nVersion: 0.0.1\n"))
    nodes = checkout_env(PYTHONPATH=f"{other.parent}{os.pathsep}{REPO}")
    with local_ray_head(1, nodes) as address:
        result = run_cli("backtest", "--replay", str(shared_spot()), "--ray", address)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert re.search(
        rf"--ray {address}: node \S+ runs hft-console 0\.0\.1 \(this machine: {ours}\): every "
        "node needs this machine's Python and packages",
        result.stderr,
    )


def test_a_node_with_other_versions_is_named_by_what_differs():
    ours = node_versions()
    assert version_difference(ours, dict(ours)) == ""
    theirs = {**ours, "numpy": "1.0.0"}
    assert version_difference(ours, theirs) == f"numpy 1.0.0 (this machine: {ours['numpy']})"
    assert version_difference(ours, {**ours, "ray": None}).startswith("ray missing")
