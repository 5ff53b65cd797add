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
once, from the run that delivered it."""

from __future__ import annotations

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
    ) -> None:
        """Connects, starts the workers and checks the cluster; raises ClusterError saying
        what is wrong, or ImportError naming the extra. `ship_files`: every input file through
        the object store, as for nodes that share no storage with this machine; `given_by`:
        the flag or setting that gave `address`, which the errors name; `preload`: the modules
        the runs import, imported by each worker as it starts."""
        require_ray()
        import ray

        self.address = address
        self.name = f"{given_by} {address}"
        self._ship_all = ship_files
        self._shipped: dict[Path, tuple[str, Any] | None] = {}
        _require_answer(address, self.name)
        try:
            ray.init(
                address=address,
                logging_level=logging.ERROR,
                log_to_driver=False,
                ignore_reinit_error=True,
            )
        except (ConnectionError, RuntimeError) as error:  # RuntimeError: a version mismatch
            raise ClusterError(f"{self.name}: {_first_line(error)}") from None
        self._runner = ray.remote(
            num_cpus=1, max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES
        )(_Runner)
        self._preload = tuple(preload)
        self._runners: list[Any] = []
        self._add_runners()  # they start while the nodes are asked below
        ours = node_versions()
        for node, report in self._reports([]):
            difference = version_difference(ours, report["versions"])
            if difference:
                raise ClusterError(
                    f"{self.name}: node {node} runs {difference}: every node needs this "
                    "machine's Python and packages, or the results would differ"
                )

    def _add_runners(self) -> None:
        """A runner for each CPU the cluster has now (it may have grown since the last)."""
        import ray

        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        while len(self._runners) < cpus:
            self._runners.append(self._runner.remote(self._preload))

    def _reports(self, paths: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        """Each live node's address and `_node_report(paths)`."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = ray.remote(num_cpus=0, max_retries=MAX_RETRIES)(_node_report)
        nodes = [node for node in ray.nodes() if node["Alive"]]
        refs = [
            probe.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote(list(paths))
            for node in nodes
        ]
        try:
            reports = ray.get(refs, timeout=120)
        except ray.exceptions.RayTaskError as error:
            raise ClusterError(
                f"{self.name}: a node cannot run hft-console's engine "
                f"({_first_line(error.cause)}): install it on every node"
            ) from None
        except ray.exceptions.RayError as error:
            raise ClusterError(f"{self.name}: {_first_line(error)}") from None
        return [
            (node["NodeManagerAddress"], report)
            for node, report in zip(nodes, reports, strict=True)
        ]

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
