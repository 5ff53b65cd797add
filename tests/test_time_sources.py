"""Time comes from one place: the engine's code that runs in a replay reads the time and waits
through the engine's clock (`engine.clock`), never through the wall clock, so a recording plays
in market time at any speed. `time.perf_counter` stays allowed (CPU time: stage latencies, the
reaction), and so do `loop.time()`, `asyncio.sleep` and `call_later` (on the engine's loop they
are market time in a replay; the Laya warmer, which waits on real idle time, is not started
there). The live venue
(`engine.bitget`), the simulator (`engine.sim`), the tools and the lab run on the wall clock by
design; the few runtime places that must read it are listed with the reason."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WALL_CLOCK = {
    "time": {"time", "time_ns", "monotonic", "monotonic_ns", "sleep"},
    "datetime": {"now", "utcnow", "today"},
    "date": {"today"},
}
ON_THE_WALL_CLOCK = ("engine/bitget/", "engine/sim/", "engine/tools/", "engine/lab/")
ALLOWED = {
    # path: the wall-clock reads it may make, and why
    "engine/clock.py": "the clock itself: the wall clock of live and sim, the replay's pacing",
    "engine/journal.py": "`--since 15m` is relative to the real now; the writer thread's waits",
    "engine/gpu.py": "NVML samples are stamped in the GPU monitor's own thread",
    "engine/kev/server.py": "waiting for a llama-server process to start",
    "engine/feed/recorder.py": "the live recorder's flush cadence (nothing records a replay)",
    "engine/laya/model.py": "a model card's creation time (written by the lab's export)",
}


def _wall_clock_reads(path: Path) -> list[str]:
    """`module.name` references to a wall-clock function (called or passed on), and names
    imported from those modules, with their line numbers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in WALL_CLOCK.get(node.value.id, ())
        ):
            found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module in WALL_CLOCK:
            found.extend(
                f"from {node.module} import {alias.name} (line {node.lineno})"
                for alias in node.names
                if alias.name in WALL_CLOCK[node.module]
            )
    return found


def _runtime_files() -> list[Path]:
    return [
        path
        for path in sorted((REPO / "engine").rglob("*.py"))
        if not path.relative_to(REPO).as_posix().startswith(ON_THE_WALL_CLOCK)
    ]


def test_the_runtime_reads_the_wall_clock_only_where_listed():
    offenders = {
        path.relative_to(REPO).as_posix(): reads
        for path in _runtime_files()
        if (reads := _wall_clock_reads(path)) and path.relative_to(REPO).as_posix() not in ALLOWED
    }
    assert not offenders, f"wall-clock reads outside engine.clock: {offenders}"


def test_every_listed_place_still_reads_the_wall_clock():
    stale = [path for path in ALLOWED if not _wall_clock_reads(REPO / path)]
    assert not stale, f"listed but no longer reading the wall clock: {stale}"


def test_the_scan_finds_each_form(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import time\nfrom datetime import datetime\nfrom time import monotonic\n"
        "def f(clock=time.monotonic):\n    time.sleep(1)\n    return datetime.now()\n"
    )
    assert _wall_clock_reads(sample) == [
        "from time import monotonic (line 3)",
        "time.monotonic (line 4)",
        "time.sleep (line 5)",
        "datetime.now (line 6)",
    ]
