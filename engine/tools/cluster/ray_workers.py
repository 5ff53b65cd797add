"""Runs as tasks on a Ray cluster (`--ray ADDRESS`); Ray is an optional extra, imported only
here and only when asked for.

Connecting is bounded and checked: an address where nothing answers, and a cluster whose nodes
run another Python or other versions of the packages the runs depend on (the results would
differ), are refused in one line before any run. Each input file reaches the nodes by its path
where every node reads it (shared storage), else through Ray's object store, copied once per
node. The runs go to a pool of workers (Ray actors, one a CPU of the cluster) started as the
command connects, each running runs in turn: a command pays for starting Ray's workers and
importing the engine in them once, while the cluster is checked, not per run. A run whose
worker is lost is run again on its restarted worker (`MAX_RETRIES`); each result is taken
once, from the run that delivered it. With `compiled`, each node builds the compiled engine
(engine/tools/backtest/compiled.py) from its own installed source, once, and its workers run
it."""

from __future__ import annotations

import atexit
import hashlib
import importlib
import logging
import os
import platform
import socket
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from engine.extras import require_module
from engine.tools.backtest.compiled import (
    TREE_ENV,
    built_tree,
    check_build_tools,
    compiled_problem,
    compiled_tree,
)
from engine.tools.cluster.workers import Place

Item = TypeVar("Item")
Result = TypeVar("Result")

CLUSTER_EXTRA = "pip install 'hft-console[cluster]'"
CONNECT_TIMEOUT_S = 10.0
"""How long the head's address has to answer."""
MAX_RETRIES = 3
"""Times a task is run again after its worker or node was lost."""
COMPARED_PACKAGES = ("hft-console", "ray", "numpy", "numba", "orjson")
"""Whose versions every node must share with the driver (with Python's)."""
COPIES_FOLDER = "hft-console-ray-files"
BUILD_TIMEOUT_S = 1800.0
"""How long a node has to build the compiled engine (about a minute on a quiet core)."""


class ClusterError(ValueError):
    """The cluster cannot run this: the message says why in one line."""


def require_ray() -> None:
    """A one-line ImportError naming the extra when Ray cannot be imported."""
    require_module("ray", "--ray runs on a Ray cluster, and Ray did not import", CLUSTER_EXTRA)


def node_versions() -> dict[str, str | None]:
    """Python's version and each of `COMPARED_PACKAGES`' (None: not installed) here."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in COMPARED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def version_difference(ours: Mapping[str, str | None], theirs: Mapping[str, str | None]) -> str:
    """What the first version that differs is, or '' when none does."""
    for name, version in ours.items():
        if theirs.get(name) != version:
            return f"{name} {theirs.get(name) or 'missing'} (this machine: {version or 'missing'})"
    return ""


def _node_tree(build: bool) -> str | None:
    """Run on each node: the folder of the compiled engine for the source installed there,
    built first when `build`, else None where it is not built (and can be)."""
    tree = compiled_tree() if build else built_tree()
    if tree is None:
        check_build_tools()
        return None
    return str(tree)


def _tree_first() -> Callable[[], None]:
    """Each worker process's setup: where `TREE_ENV` names a compiled engine, its `engine`
    imported from there first. Ray puts the driver's folder first on the workers' path, where
    a checkout's `engine` would win; `engine` once imported, its modules come from its folder.
    A closure, so pickled by value: the worker imports no `engine` to run it."""
    name = TREE_ENV

    def setup() -> None:
        import importlib
        import os
        import sys

        tree = os.environ.get(name)
        if tree:
            sys.path.insert(0, tree)
            importlib.import_module("engine")

    return setup


def _node_report(paths: Sequence[str]) -> dict[str, Any]:
    """Run on each node: its versions and the size of each file it reads at `paths`."""
    sizes = {}
    for path in paths:
        try:
            sizes[path] = os.stat(path).st_size
        except OSError:
            sizes[path] = None
    return {"versions": node_versions(), "sizes": sizes}


class RayWorkers:
    """Tasks on the Ray cluster at `address` (`auto`: the one running on this machine)."""

    def __init__(
        self,
        address: str,
        *,
        ship_files: bool = False,
        given_by: str = "--ray",
        preload: Sequence[str] = (),
        compiled: bool = False,
        on_build: Callable[[], None] | None = None,
    ) -> None:
        """Connects, starts the workers and checks the cluster; raises ClusterError saying
        what is wrong, or ImportError naming the extra. `ship_files`: every input file through
        the object store, as for nodes that share no storage with this machine; `given_by`:
        the flag or setting that gave `address`, which the errors name; `preload`: the modules
        the runs import, imported by each worker as it starts; `compiled`: the workers run the
        compiled engine, built on each node that lacks it first (`on_build` hears that one
        does)."""
        require_ray()
        import ray

        self.address = address
        self.name = f"{given_by} {address}"
        self._ship_all = ship_files
        self._shipped: dict[Path, tuple[str, Any] | None] = {}
        _require_answer(address, self.name)
        if not ray.is_initialized():
            # Disconnected by us as the command ends (atexit: last in, first run): Ray's own
            # exit hook first waits half a second for worker logs, which we do not take.
            atexit.register(ray.shutdown)
        try:
            ray.init(
                address=address,
                logging_level=logging.ERROR,
                log_to_driver=False,
                ignore_reinit_error=True,
                runtime_env={"worker_process_setup_hook": _tree_first()} if compiled else None,
            )
        except (ConnectionError, RuntimeError) as error:  # RuntimeError: a version mismatch
            raise ClusterError(f"{self.name}: {_first_line(error)}") from None
        self._runner = ray.remote(
            num_cpus=1, max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES
        )(_Runner)
        self._preload = tuple(preload)
        self._runners: list[Any] = []
        self._trees: dict[str, tuple[str, str]] | None = None
        if not compiled:
            self._add_runners()  # they start while the nodes are asked below
        ours = node_versions()
        for node, report in self._reports([]):
            difference = version_difference(ours, report["versions"])
            if difference:
                raise ClusterError(
                    f"{self.name}: node {node} runs {difference}: every node needs this "
                    "machine's Python and packages, or the results would differ"
                )
        if compiled:
            self._trees = self._build_trees(on_build)
            self._add_runners()

    def _add_runners(self) -> None:
        """A runner for each CPU the cluster has now (it may have grown since the last); with
        the compiled engine, for each CPU of the nodes it was built on, each on its node's
        build and checked to run it."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if self._trees is None:
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            while len(self._runners) < cpus:
                self._runners.append(self._runner.remote(self._preload))
            return
        if self._runners:  # a node that joined since the build gets none
            return
        started = []
        for node in ray.nodes():
            if not node["Alive"] or node["NodeID"] not in self._trees:
                continue
            address, tree = self._trees[node["NodeID"]]
            on_node = self._runner.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
                runtime_env={"env_vars": {TREE_ENV: tree}},
            )
            for _ in range(int(node["Resources"].get("CPU", 0))):
                started.append((address, on_node.remote(self._preload)))
        if not started:
            raise ClusterError(f"{self.name}: no node the compiled engine was built on has a CPU")
        for address, runner in started:
            try:
                problem = ray.get(runner.compiled_problem.remote(), timeout=120)
            except ray.exceptions.RayError as error:  # it did not start: its import failed
                cause = getattr(error, "cause", None) or error
                raise ClusterError(f"{self.name}: node {address}: {_first_line(cause)}") from None
            if problem is not None:
                raise ClusterError(f"{self.name}: node {address}: {problem}")
        self._runners = [runner for _, runner in started]

    def _reports(self, paths: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        """Each live node's address and `_node_report(paths)`."""
        return [
            (node["NodeManagerAddress"], report)
            for node, report in self._on_each_node(
                _node_report,
                list(paths),
                timeout=120,
                failing="cannot run hft-console's engine ({cause}): install it on every node",
            )
        ]

    def _build_trees(self, on_build: Callable[[], None] | None) -> dict[str, tuple[str, str]]:
        """Each live node's id -> its address and the folder of its compiled engine, built
        there first where it is missing (the nodes side by side, one build a node)."""
        failing = "cannot build the compiled engine: {cause}"
        found = self._on_each_node(_node_tree, False, timeout=120, failing=failing)
        if any(tree is None for _, tree in found):
            if on_build is not None:
                on_build()
            found = self._on_each_node(_node_tree, True, timeout=BUILD_TIMEOUT_S, failing=failing)
        return {node["NodeID"]: (node["NodeManagerAddress"], tree) for node, tree in found}

    def _on_each_node(
        self, function: Callable[[Any], Result], argument: Any, *, timeout: float, failing: str
    ) -> list[tuple[dict[str, Any], Result]]:
        """Each live node and `function(argument)` run there; a node where it raises is
        refused by `failing` ({cause}: the error's first line), naming the node."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        task = ray.remote(num_cpus=0, max_retries=MAX_RETRIES)(function)
        nodes = [node for node in ray.nodes() if node["Alive"]]
        refs = [
            task.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote(argument)
            for node in nodes
        ]
        results = []
        for node, ref in zip(nodes, refs, strict=True):  # they run side by side meanwhile
            try:
                results.append((node, ray.get(ref, timeout=timeout)))
            except ray.exceptions.RayTaskError as error:
                cause = failing.format(cause=_first_line(error.cause or error))
                raise ClusterError(
                    f"{self.name}: node {node['NodeManagerAddress']} {cause}"
                ) from None
            except ray.exceptions.RayError as error:
                raise ClusterError(f"{self.name}: {_first_line(error)}") from None
        return results

    def _shipping(self, files: Iterable[Path]) -> dict[str, tuple[str, Any] | None]:
        """Each file -> None where every node reads it by its path, else (its digest, [its
        bytes in the object store])."""
        import ray

        new = sorted({Path(path).resolve() for path in files} - set(self._shipped))
        if new:
            readable = set(new)
            if self._ship_all:
                readable = set()
            else:
                for _, report in self._reports([str(path) for path in new]):
                    readable -= {
                        path for path in new if report["sizes"][str(path)] != path.stat().st_size
                    }
            for path in new:
                if path in readable:
                    self._shipped[path] = None
                else:
                    content = path.read_bytes()
                    digest = hashlib.sha256(content).hexdigest()[:24]
                    self._shipped[path] = (digest, [ray.put(content)])  # a list: not resolved
        return {str(path): self._shipped[Path(path).resolve()] for path in files}

    def map(
        self,
        function: Callable[[Item, Place], Result],
        items: Sequence[Item],
        files: Iterable[Path] = (),
    ) -> Iterator[tuple[int, Result]]:
        import ray

        shipped = {path: how for path, how in self._shipping(files).items() if how is not None}
        self._add_runners()
        waiting = iter(enumerate(items))
        pending: dict[Any, tuple[int, Any]] = {}

        def next_run(runner: Any) -> None:
            for index, item in waiting:  # one run in flight a runner: the next as it ends
                pending[runner.run.remote(function, item, shipped)] = (index, runner)
                return

        for runner in self._runners:
            next_run(runner)
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    index, runner = pending.pop(ref)  # a result is taken once
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as error:
                        raise (error.cause or error) from None  # the run's own error
                    except ray.exceptions.RayError as error:
                        raise ClusterError(
                            f"{self.name}: a run was lost {MAX_RETRIES + 1} times "
                            f"({_first_line(error)})"
                        ) from None
                    next_run(runner)
                    yield index, result
        finally:
            if pending:  # interrupted or failed: the runs in flight are not wanted
                for runner in self._runners:
                    ray.kill(runner, no_restart=True)
                self._runners = []  # the next map starts others


class _Runner:
    """A worker kept for the command (a Ray actor): its process started and `preload`
    imported once, then runs in turn."""

    def __init__(self, preload: Sequence[str]) -> None:
        for module in preload:
            importlib.import_module(module)

    def compiled_problem(self) -> str | None:
        return compiled_problem()

    def run(
        self,
        function: Callable[[Item, Place], Result],
        item: Item,
        shipped: Mapping[str, tuple[str, list[Any]]],
    ) -> Result:
        return _run_task(function, item, shipped)


def _run_task(
    function: Callable[[Item, Place], Result],
    item: Item,
    shipped: Mapping[str, tuple[str, list[Any]]],
) -> Result:
    """On a worker: the shipped files copied to this node (once), then the run."""
    copies = {
        Path(path): _node_copy(Path(path).name, digest, refs[0])
        for path, (digest, refs) in shipped.items()
    }
    with tempfile.TemporaryDirectory(prefix="hft-ray-run-") as scratch:
        return function(item, Place(Path(scratch), copies))


def _node_copy(name: str, digest: str, ref: Any) -> Path:
    """This node's copy of a shipped file (its name kept: the suffix says how it is read)."""
    import ray

    folder = Path(tempfile.gettempdir()) / COPIES_FOLDER / digest
    copy = folder / name
    if not copy.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{name}.{os.getpid()}"
        partial.write_bytes(ray.get(ref))
        os.replace(partial, copy)  # whole or absent: tasks on the node copy side by side
    return copy


def _require_answer(address: str, name: str) -> None:
    """The head must answer as a gRPC server (Ray's GCS and client server are) within
    `CONNECT_TIMEOUT_S`: Ray itself waits minutes on a port that accepts and says nothing.
    `auto` is Ray's to find."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(
            f"{name}: expected HOST:PORT (the address `ray start --head` prints), "
            "ray://HOST:PORT or auto"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S) as head:
            head.sendall(_HTTP2_PREFACE)
            reply = head.recv(9)  # the server's first frame header: its SETTINGS
    except OSError as error:
        raise ClusterError(
            f"{name}: nothing answers there ({error.strerror or error}): start the "
            "head (ray start --head), or give the address it printed"
        ) from None
    if len(reply) < 4 or reply[3] != _HTTP2_SETTINGS:
        raise ClusterError(
            f"{name}: something answers there, but not a Ray head: give the address "
            "`ray start --head` printed"
        )


_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""A client's HTTP/2 preface and an empty SETTINGS frame, as gRPC opens a connection."""
_HTTP2_SETTINGS = 0x04


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
