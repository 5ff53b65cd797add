"""The one place that decides where independent runs execute: `LocalWorkers` (a process pool on
this machine) or `RayWorkers` (tasks on a Ray cluster, engine/tools/cluster/ray_workers.py).
Both run `function(item, place)` for each item and yield `(index, result)` as each ends, in
any order; `place` says where the run's temporary files go and where each input file is read
on the machine running it."""

from __future__ import annotations

import multiprocessing
import signal
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True, slots=True)
class Place:
    """Where a run executes: `scratch`, a folder for its temporary files; `copies`, the local
    copy of each input file that the machine could not read where the driver names it."""

    scratch: Path
    copies: Mapping[Path, Path] = field(default_factory=dict)

    def local(self, path: Path) -> Path:
        """`path` as this machine reads it."""
        return self.copies.get(Path(path), Path(path))


class Workers(Protocol):
    def map(
        self,
        function: Callable[[Item, Place], Result],
        items: Sequence[Item],
        files: Iterable[Path] = (),
    ) -> Iterator[tuple[int, Result]]:
        """`(index, function(items[index], place))` for each item, as each ends; `files` are
        the input files the runs read (each reaches the machine that runs one)."""
        ...


@dataclass(frozen=True, slots=True)
class LocalWorkers:
    """Up to `jobs` worker processes on this machine.

    The workers ignore SIGINT: Ctrl-C (sent to the whole foreground group) interrupts this
    process alone, whose KeyboardInterrupt terminates them, so none prints a traceback."""

    jobs: int

    def map(
        self,
        function: Callable[[Item, Place], Result],
        items: Sequence[Item],
        files: Iterable[Path] = (),
    ) -> Iterator[tuple[int, Result]]:
        # The runs' scratch folders are made in this one, which outlives the workers: a worker
        # terminated mid-run leaves nothing behind.
        with tempfile.TemporaryDirectory(prefix="hft-runs-") as scratch:
            interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)  # born ignoring it
            try:
                pool = multiprocessing.Pool(min(self.jobs, len(items)))
            finally:
                signal.signal(signal.SIGINT, interrupt)
            with pool:  # its end terminates the workers (and waits for them), whatever ended it
                place = Place(Path(scratch))
                runs = [(function, index, item, place) for index, item in enumerate(items)]
                yield from pool.imap_unordered(_run_one, runs)


def _run_one(run: tuple[Callable[[Item, Place], Result], int, Item, Place]) -> tuple[int, Result]:
    function, index, item, place = run
    return index, function(item, place)
