"""`hft-console soak`: a long replay at maximum speed through the live engine, with figures.

The recordings are looped into one continuous market (each pass shifted forward in receive
time, exchange time and trade ids, so the parser admits every frame and the feature windows see
time move on) and replayed by a real `EngineNode` in replay mode: parser -> book -> features ->
Laya -> decision -> `TradingDesk` on the paper venue, quoting, filling and journaling. A
sampler on the engine loop (it runs between frames, every ~256 frames) reads the resident set
at each tenth of the run, the depth of every bounded queue on the path, and splits the feed's
per-frame clock (the bench's: parse to the desk's return) into the first and the last tenth.

Each pass starts where its recording started, so at every pass boundary (after a 1 s gap) the
price jumps back to the recording's first price: the features see one large move there.

Laya runs on every books15 frame, but by default its verdicts are held at HOLD: at maximum
speed the market moves ~20x faster than the desk's wall-clock timers and the journal's fsync,
so the model's own verdicts pull every quote before it reaches the venue and the run would
exercise no order flow. `model_verdicts=True` keeps the model's thresholds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import math
import os
import re
import resource
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.config import EngineConfig
from engine.feed.recording import (
    RecordingReadStats,
    contracts_line,
    encode_line,
    iter_recording,
    recording_instruments,
)
from engine.feed.replay import ReplayFeed
from engine.kev.config import KevClientConfig
from engine.latency import LatencyHistogram, timer_cost_ns
from engine.laya.config import LayaClassifierConfig
from engine.node import EngineNode
from engine.risk.intents import DenialReason
from engine.sim.recording import simulate_recording
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.trading.config import TradingConfig, TradingMode
from engine.user_files import user_data_dir

DEFAULT_FRAMES = 1_000_000
MIN_FRAMES = 10_000
"""Below this a tenth of the run is too few frames for the sampler (it wakes every ~256)."""
REPLAY_DIR_ENV = "HFT_CONSOLE_REPLAY_DIR"
"""Where `soak` looks for recordings when none are given (else the per-user data directory's
`recordings`)."""
GENERATED_SEED = 7
SIM_FRAMES_PER_MINUTE = 1_800
"""About what `simulate_recording` writes per simulated minute (books and trades, 2 symbols)."""
MAX_GENERATED_MINUTES = 10.0
_PASS_GAP_NS = 1_000_000_000
"""Market time between the end of one pass (or recording) and the start of the next."""
_STAMPS = re.compile(rb'"(ts|tradeId)":("?)(\d+)')
_TRADE_IDS = re.compile(rb'"tradeId":"(\d+)"')
_NS_PER_MS = 1_000_000
_TENTHS = 10


def default_replay_dir() -> Path:
    """`$HFT_CONSOLE_REPLAY_DIR`, else `recordings` in the per-user data directory."""
    configured = os.environ.get(REPLAY_DIR_ENV)
    if configured:
        return Path(configured)
    return user_data_dir() / "recordings"


def find_recordings(directory: Path) -> tuple[Path, ...]:
    """The non-hidden regular files of `directory`, by name; none if it does not exist."""
    if not directory.is_dir():
        return ()
    return tuple(
        sorted(
            path for path in directory.iterdir() if path.is_file() and not path.name.startswith(".")
        )
    )


@dataclass(frozen=True, slots=True)
class SoakTargets:
    """What a soak must show: resident memory from the first tenth to the end grows at most
    `max_rss_growth` (a fraction), the fast path's p99 over the last tenth is at most
    `max_p99_ratio` times the first tenth's."""

    max_rss_growth: float = 0.10
    max_p99_ratio: float = 1.2

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_rss_growth) and self.max_rss_growth >= 0):
            raise ValueError(f"max_rss_growth must be a fraction >= 0, got {self.max_rss_growth}")
        if not (math.isfinite(self.max_p99_ratio) and self.max_p99_ratio >= 1):
            raise ValueError(f"max_p99_ratio must be >= 1, got {self.max_p99_ratio}")


@dataclass(frozen=True, slots=True)
class SoakConfig:
    """`recordings` are looped, in order, to `frames` frames. The journal goes to a temporary
    directory unless `journal_path` is set; `kev_url` turns Kev's hub on (its queue is then
    measured too)."""

    recordings: tuple[Path, ...]
    frames: int = DEFAULT_FRAMES
    laya: LayaClassifierConfig = field(default_factory=LayaClassifierConfig)
    model_verdicts: bool = False
    journal_path: Path | None = None
    kev_url: str | None = None
    targets: SoakTargets = field(default_factory=SoakTargets)
    sample_interval_s: float = 0.1
    """How often the sampler wakes, in market seconds (the replay's clock)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "recordings", tuple(Path(path) for path in self.recordings))
        if not self.recordings:
            raise ValueError("SoakConfig.recordings must name at least one recording")
        missing = [str(path) for path in self.recordings if not path.is_file()]
        if missing:
            raise ValueError(f"recording not found: {', '.join(missing)}")
        if isinstance(self.frames, bool) or not (
            isinstance(self.frames, int) and self.frames >= MIN_FRAMES
        ):
            raise ValueError(f"SoakConfig.frames must be an integer >= {MIN_FRAMES:,}")
        if self.journal_path is not None:
            object.__setattr__(self, "journal_path", Path(self.journal_path))
        if not 0 < self.sample_interval_s <= 1:
            raise ValueError(
                f"SoakConfig.sample_interval_s must be within (0, 1], got {self.sample_interval_s}"
            )


# The looped recording


@dataclass(frozen=True, slots=True)
class LoopedRecording:
    path: Path
    frames: int
    passes: float
    source_frames: int
    pass_span_s: float
    """Market time one pass covers (the recordings and the gaps between them)."""
    problems: tuple[str, ...] = ()
    """What was wrong with the recordings (cut short, malformed lines): each is looped as far
    as it reads."""


@dataclass(frozen=True, slots=True)
class _Source:
    path: Path
    frames: int
    offset_ns: int
    """Added to the recording's times so that it follows the one before it."""


def write_looped_recording(
    sources: Iterable[Path], out: Path, frames: int, *, compress_level: int = 1
) -> LoopedRecording:
    """Write `frames` frames of `sources` played in order and looped to `out` (gzip): each
    recording follows the one before it, each pass the one before it, in receive time and
    exchange time (whole milliseconds), its trade ids moved past those of the one before.
    The sources' contracts come first (a later source's replace an earlier one's)."""
    plan, span_ns, id_stride, problems = _plan(tuple(sources))
    source_frames = sum(source.frames for source in plan)
    span_ms = span_ns // _NS_PER_MS
    written = 0
    contracts = {}
    for source in plan:
        contracts.update(recording_instruments(source.path))
    with gzip.GzipFile(out, "xb", compresslevel=compress_level) as file:
        if contracts:  # stamped with the first frame's time
            first_ns, _ = next(iter_recording(plan[0].path))
            file.write(contracts_line(first_ns, contracts.values()))
        loop = segment = 0
        while written < frames:
            for source in plan:
                shift_ms = source.offset_ns // _NS_PER_MS + loop * span_ms
                shift_ids = segment * id_stride
                segment += 1
                for recv_ns, raw in iter_recording(source.path):
                    if shift_ms or shift_ids:
                        raw = _shifted(raw, shift_ms, shift_ids)
                    file.write(encode_line(recv_ns + shift_ms * _NS_PER_MS, raw))
                    written += 1
                    if written == frames:
                        break
                if written == frames:
                    break
            loop += 1
    return LoopedRecording(
        out, written, written / source_frames, source_frames, span_ns / 1e9, problems
    )


def _plan(sources: tuple[Path, ...]) -> tuple[tuple[_Source, ...], int, int, tuple[str, ...]]:
    """Each recording's frame count and time offset, one pass's span (whole ms), the trade id
    stride that moves a recording's ids above those of any recording played before it, and what
    was wrong with the recordings. Raises RecordingUnreadable for one without a frame."""
    plan = []
    problems = []
    start_ns = end_ns = None
    lowest_id, highest_id = None, None
    for path in sources:
        first = last = None
        count = 0
        stats = RecordingReadStats()
        for recv_ns, raw in iter_recording(path, stats):
            first = recv_ns if first is None else first
            last = recv_ns
            count += 1
            for match in _TRADE_IDS.finditer(raw):
                trade_id = int(match[1])
                lowest_id = trade_id if lowest_id is None else min(lowest_id, trade_id)
                highest_id = trade_id if highest_id is None else max(highest_id, trade_id)
        problem = stats.problem(path)
        if problem is not None:
            problem.raise_if_unreadable()
            problems.append(problem.text)
        assert first is not None and last is not None  # without a frame it was unreadable
        offset_ns = 0 if end_ns is None else _whole_ms(end_ns + _PASS_GAP_NS - first)
        start_ns = first if start_ns is None else start_ns
        end_ns = last + offset_ns
        plan.append(_Source(path, count, offset_ns))
    if start_ns is None or end_ns is None:
        raise ValueError("no recordings to loop")
    span_ns = _whole_ms(end_ns - start_ns + _PASS_GAP_NS)
    id_stride = 1 if lowest_id is None or highest_id is None else highest_id - lowest_id + 1
    return tuple(plan), span_ns, id_stride, tuple(problems)


def _whole_ms(ns: int) -> int:
    return -(-ns // _NS_PER_MS) * _NS_PER_MS


def _shifted(raw: bytes, shift_ms: int, shift_ids: int) -> bytes:
    def moved(match: re.Match[bytes]) -> bytes:
        amount = shift_ms if match[1] == b"ts" else shift_ids
        return b'"%b":%b%d' % (match[1], match[2], int(match[3]) + amount)

    return _STAMPS.sub(moved, raw)


# Figures


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """One bounded queue on the path: its deepest sample against its bound, and how many items
    its overflow policy shed (`overflowed`; None where the component does not count them)."""

    name: str
    bound: int
    max_depth: int
    policy: str
    overflowed: int | None


@dataclass(frozen=True, slots=True)
class SoakFigures:
    frames: int
    book_frames: int
    wall_s: float
    frames_per_s: float
    rss_kb: tuple[tuple[int, int], ...]
    """(frames replayed, resident set in kB) at each tenth of the run."""
    first_tenth_frames: int
    last_tenth_frames: int
    p99_first_us: float
    p99_last_us: float
    total_us: Mapping[str, float]
    """p50 / p99 / p999 / max of the whole run, per books15 frame (parse to the desk)."""
    queues: tuple[QueueFigures, ...]
    orders_placed: int
    orders_denied: int
    cancels_sent: int
    fills: int
    denials: Mapping[str, int]
    journal_entries: int
    journal_refused: int
    handler_errors: int
    rejected_frames: Mapping[str, int]
    verdicts: Mapping[str, int]
    trading_state: str
    asyncio_tasks_max: int

    @property
    def rss_baseline_kb(self) -> int:
        return self.rss_kb[0][1]

    @property
    def rss_end_kb(self) -> int:
        return self.rss_kb[-1][1]

    @property
    def rss_growth(self) -> float:
        return (self.rss_end_kb - self.rss_baseline_kb) / self.rss_baseline_kb

    @property
    def p99_ratio(self) -> float:
        return self.p99_last_us / self.p99_first_us if self.p99_first_us > 0 else math.inf


@dataclass(frozen=True, slots=True)
class SoakCheck:
    name: str
    value: str
    target: str
    passed: bool


@dataclass(frozen=True, slots=True)
class SoakResult:
    requested_frames: int
    recording: LoopedRecording
    sources: tuple[str, ...]
    notes: tuple[str, ...]
    prepare_s: float
    """Writing the looped recording, before the replay."""
    figures: SoakFigures
    checks: tuple[SoakCheck, ...]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def as_dict(self) -> dict[str, object]:
        """One JSON-ready object."""
        figures = self.figures
        return {
            "passed": self.passed,
            "frames_requested": self.requested_frames,
            "sources": list(self.sources),
            "passes": round(self.recording.passes, 2),
            "pass_span_s": self.recording.pass_span_s,
            "notes": list(self.notes),
            "prepare_s": self.prepare_s,
            "frames": figures.frames,
            "book_frames": figures.book_frames,
            "wall_s": figures.wall_s,
            "frames_per_s": figures.frames_per_s,
            "rss_kb": [{"frames": frames, "rss_kb": kb} for frames, kb in figures.rss_kb],
            "rss_growth": figures.rss_growth,
            "p99_first_tenth_us": figures.p99_first_us,
            "p99_last_tenth_us": figures.p99_last_us,
            "p99_ratio": figures.p99_ratio,
            "first_tenth_frames": figures.first_tenth_frames,
            "last_tenth_frames": figures.last_tenth_frames,
            "total_us": dict(figures.total_us),
            "queues": [dataclasses.asdict(queue) for queue in figures.queues],
            "orders_placed": figures.orders_placed,
            "orders_denied": figures.orders_denied,
            "cancels_sent": figures.cancels_sent,
            "fills": figures.fills,
            "denials": dict(figures.denials),
            "journal_entries": figures.journal_entries,
            "journal_refused": figures.journal_refused,
            "handler_errors": figures.handler_errors,
            "rejected_frames": dict(figures.rejected_frames),
            "verdicts": dict(figures.verdicts),
            "trading_state": figures.trading_state,
            "asyncio_tasks_max": figures.asyncio_tasks_max,
            "checks": [dataclasses.asdict(check) for check in self.checks],
        }


def evaluate(
    figures: SoakFigures, targets: SoakTargets, requested_frames: int
) -> tuple[SoakCheck, ...]:
    """Each target against the figures."""
    checks = [
        SoakCheck(
            "frames replayed",
            f"{figures.frames:,}",
            f"= {requested_frames:,}",
            figures.frames == requested_frames,
        ),
        SoakCheck(
            "RSS growth, first tenth -> end",
            f"{figures.rss_growth:+.1%} ({figures.rss_baseline_kb / 1024:,.0f} -> "
            f"{figures.rss_end_kb / 1024:,.0f} MB)",
            f"<= {targets.max_rss_growth:.0%}",
            figures.rss_growth <= targets.max_rss_growth,
        ),
        SoakCheck(
            "fast path p99, last / first tenth",
            f"{figures.p99_ratio:.2f}x ({figures.p99_first_us:,.1f} -> "
            f"{figures.p99_last_us:,.1f} us)",
            f"<= {targets.max_p99_ratio:g}x",
            figures.p99_ratio <= targets.max_p99_ratio,
        ),
    ]
    for queue in figures.queues:
        checks.append(
            SoakCheck(
                f"queue depth: {queue.name}",
                f"{queue.max_depth:,}",
                f"<= {queue.bound:,}",
                queue.max_depth <= queue.bound,
            )
        )
    checks += [
        SoakCheck(
            "journal entries refused",
            f"{figures.journal_refused:,}",
            "= 0",
            figures.journal_refused == 0,
        ),
        SoakCheck(
            "pipeline errors",
            f"{figures.handler_errors:,}",
            "= 0",
            figures.handler_errors == 0,
        ),
        SoakCheck(
            "order flow exercised",
            f"{figures.orders_placed:,} placed, {figures.fills:,} fills",
            "> 0 each",
            figures.orders_placed > 0 and figures.fills > 0,
        ),
    ]
    return tuple(checks)


# The run


def rss_kb() -> int:
    """The resident set now, in kB (Linux), else the peak."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize() // 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _copy(histogram: LatencyHistogram) -> LatencyHistogram:
    copy = LatencyHistogram()
    copy.merge(histogram)
    return copy


class _QueueWatch:
    """The deepest sample of one queue; `depth` and `overflowed` are read on each sample."""

    __slots__ = ("bound", "depth", "max_depth", "name", "overflowed", "policy")

    def __init__(
        self,
        name: str,
        bound: int,
        policy: str,
        depth: Callable[[], int],
        overflowed: Callable[[], int | None],
    ) -> None:
        self.name, self.bound, self.policy = name, bound, policy
        self.depth, self.overflowed = depth, overflowed
        self.max_depth = 0

    def sample(self) -> None:
        depth = self.depth()
        if depth > self.max_depth:
            self.max_depth = depth

    def figures(self) -> QueueFigures:
        return QueueFigures(self.name, self.bound, self.max_depth, self.policy, self.overflowed())


def _queue_watches(node: EngineNode) -> list[_QueueWatch]:
    events, journal, pipeline = node.events, node.journal, node.pipeline
    assert journal is not None and node.desk is not None
    executor = node.desk.executor
    stream_size = pipeline.config.verdict_stream_size
    watches = [
        _QueueWatch(
            "event log", events.capacity, "drop oldest", lambda: len(events), lambda: events.dropped
        ),
        _QueueWatch(
            "journal writer",
            journal.config.queue_capacity,
            "refuse (backpressure)",
            lambda: journal.stats().queued,
            lambda: journal.stats().backpressure,
        ),
        _QueueWatch(
            "verdict stream",
            stream_size,
            "drop oldest",
            lambda: len(pipeline.decisions.view(stream_size).recent),
            lambda: None,
        ),
        _QueueWatch(
            "finished orders kept",
            executor.config.closed_orders_kept,
            "drop oldest",
            lambda: executor.finished_kept,
            lambda: None,
        ),
        _QueueWatch(
            "open orders",
            node.desk.gateway.config.limits.max_open_orders,
            "deny (risk gateway)",
            lambda: len(executor.open_orders()),
            lambda: node.desk.gateway.snapshot().denial_counts[DenialReason.MAX_OPEN_ORDERS],
        ),
    ]
    hub = node.kev
    if hub is not None:
        watches.append(
            _QueueWatch(
                "Kev queue",
                node.config.kev_hub.queue_capacity,
                f"coalesce per symbol, {node.config.kev_hub.overflow.name.lower()}",
                lambda: hub.status().queue_depth,
                lambda: hub.status().dropped,
            )
        )
    return watches


class _Sampler:
    """Runs on the engine loop while the replay plays: the resident set at each tenth, queue
    depths on every wake, the feed's per-frame clock split at the first and last tenth."""

    def __init__(
        self,
        node: EngineNode,
        feed: ReplayFeed,
        frames: int,
        interval_s: float,
        progress: Callable[[str], None] | None,
    ) -> None:
        self._node = node
        self._feed = feed
        self._frames = frames
        self._interval_s = interval_s
        self._progress = progress
        self._tenth = frames // _TENTHS
        self.queues = _queue_watches(node)
        self.rss_kb: list[tuple[int, int]] = []
        self.first_tenth: LatencyHistogram | None = None
        self.first_tenth_frames = 0
        self.before_last_tenth: LatencyHistogram | None = None
        self.last_tenth_start = 0
        self.tasks_max = 0
        self._started = time.perf_counter()

    async def run(self) -> None:
        stats = self._node.parser.stats
        total = self._feed.timings.total
        last_start = self._frames - self._tenth
        next_tenth = self._tenth
        while True:
            await asyncio.sleep(self._interval_s)
            frames = stats.frames
            for queue in self.queues:
                queue.sample()
            tasks = len(asyncio.all_tasks())
            if tasks > self.tasks_max:
                self.tasks_max = tasks
            if self.first_tenth is None and frames >= self._tenth:
                self.first_tenth = _copy(total)
                self.first_tenth_frames = frames
            if self.before_last_tenth is None and frames >= last_start:
                # The soak owns this node: restart the feed's clock so the rest is the last tenth.
                self.before_last_tenth = _copy(total)
                total.reset()
                self.last_tenth_start = frames
            if frames >= next_tenth and next_tenth < self._frames:
                self._tenth_reached(frames)
                next_tenth += self._tenth

    def _tenth_reached(self, frames: int) -> None:
        resident = rss_kb()
        self.rss_kb.append((frames, resident))
        if self._progress is not None:
            elapsed = time.perf_counter() - self._started
            self._progress(
                f"soak: {frames:,} / {self._frames:,} frames, {frames / elapsed:,.0f} frames/s, "
                f"RSS {resident / 1024:,.0f} MB"
            )


def soak(
    config: SoakConfig,
    *,
    notes: Iterable[str] = (),
    progress: Callable[[str], None] | None = None,
) -> SoakResult:
    """Loop the recordings to `config.frames`, replay them through a paper-trading engine at
    maximum speed (on the recording's market clock), and return the figures with each target
    checked."""
    with tempfile.TemporaryDirectory(prefix="hft-soak-") as scratch:
        started = time.perf_counter()
        looped = write_looped_recording(
            config.recordings, Path(scratch) / "looped.bitget.gz", config.frames
        )
        prepare_s = time.perf_counter() - started
        if progress is not None:
            progress(
                f"soak: {looped.frames:,} frames ready in {prepare_s:,.1f} s "
                f"({looped.passes:.1f} passes of {looped.source_frames:,} frames, "
                f"{looped.pass_span_s:,.0f} s of market each)"
            )
        journal = config.journal_path or Path(scratch) / "journal.sqlite"
        node = EngineNode(_engine_config(config, looped.path, journal))
        figures = node.clock.run(_run(node, config, progress))
    notes = (*looped.problems, *notes)
    if not config.model_verdicts:
        notes = (*notes, "Laya ran on every books15 frame with its verdicts held at HOLD")
    return SoakResult(
        config.frames,
        looped,
        tuple(str(path) for path in config.recordings),
        tuple(notes),
        prepare_s,
        figures,
        evaluate(figures, config.targets, config.frames),
    )


def _engine_config(config: SoakConfig, recording: Path, journal: Path) -> EngineConfig:
    laya = config.laya
    if not config.model_verdicts:
        laya = replace(laya, thresholds=NEVER_EMERGENCY)
    return EngineConfig(
        replay_path=str(recording),
        replay_speed=None,
        laya=laya,
        trading=TradingConfig(mode=TradingMode.PAPER, journal_path=journal),
        kev_client=KevClientConfig(base_url=config.kev_url) if config.kev_url else None,
    )


async def _run(
    node: EngineNode, config: SoakConfig, progress: Callable[[str], None] | None
) -> SoakFigures:
    await node.start()
    try:
        feed = node.feed
        assert isinstance(feed, ReplayFeed) and node.desk is not None and node.journal is not None
        sampler = _Sampler(node, feed, config.frames, config.sample_interval_s, progress)
        started = time.perf_counter()
        watching = asyncio.create_task(sampler.run(), name="soak-sampler")
        try:
            replay = await feed.wait()
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
        wall_s = time.perf_counter() - started
        sampler.rss_kb.append((replay.frames, rss_kb()))
        for queue in sampler.queues:
            queue.sample()
        queues = tuple(queue.figures() for queue in sampler.queues)
        trading = node.desk.status()
    finally:
        await node.stop()
    journal_stats = node.journal.stats()
    overhead_ns = timer_cost_ns()
    total = feed.timings.total
    first = sampler.first_tenth or LatencyHistogram()
    whole = _copy(sampler.before_last_tenth or LatencyHistogram())
    whole.merge(total)
    executor = trading.executor
    return SoakFigures(
        frames=replay.frames,
        book_frames=whole.count,
        wall_s=wall_s,
        frames_per_s=replay.frames / wall_s,
        rss_kb=tuple(sampler.rss_kb),
        first_tenth_frames=sampler.first_tenth_frames,
        last_tenth_frames=replay.frames - sampler.last_tenth_start,
        p99_first_us=first.summary_us(overhead_ns)["p99"],
        p99_last_us=total.summary_us(overhead_ns)["p99"],
        total_us=whole.summary_us(overhead_ns),
        queues=queues,
        orders_placed=executor.sent,
        orders_denied=executor.denied,
        cancels_sent=executor.cancels_sent,
        fills=executor.fills,
        denials={
            reason.name: count for reason, count in trading.risk.denial_counts.items() if count
        },
        journal_entries=journal_stats.committed,
        journal_refused=journal_stats.backpressure + executor.journal_refused,
        handler_errors=replay.handler_errors,
        rejected_frames=dict(replay.parser.get("rejected", {})),
        verdicts=node.pipeline.decisions.counts(),
        trading_state=trading.state.name,
        asyncio_tasks_max=sampler.tasks_max,
    )


def generate_recording(directory: Path, frames: int) -> tuple[Path, str]:
    """A simulator recording long enough to cover `frames` (at most 10 minutes; the soak loops
    it), and a note saying so."""
    minutes = min(MAX_GENERATED_MINUTES, max(1.0, frames / SIM_FRAMES_PER_MINUTE))
    path = directory / f"simulated-seed{GENERATED_SEED}.bitget.gz"
    recording = simulate_recording(path, minutes, GENERATED_SEED)
    note = (
        f"no recordings given or found: generated {minutes:g} simulated minutes "
        f"({recording.frames:,} frames, seed {GENERATED_SEED}) and looped them"
    )
    return path, note


def format_table(result: SoakResult) -> str:
    """The human-readable report: the run, the figures, each target with PASS or FAIL."""
    figures = result.figures
    looped = result.recording
    lines = [
        f"soak: {figures.frames:,} frames ({figures.book_frames:,} books15) in "
        f"{figures.wall_s:,.1f} s, {figures.frames_per_s:,.0f} frames/s; "
        f"{looped.passes:.1f} passes of {looped.source_frames:,} frames (written in "
        f"{result.prepare_s:,.1f} s before the replay)",
        "recordings: " + ", ".join(result.sources),
        *result.notes,
        "",
        f"{'check':<36}{'value':<40}{'target':<12}result",
    ]
    for check in result.checks:
        verdict = "PASS" if check.passed else "FAIL"
        lines.append(f"{check.name:<36}{check.value:<40}{check.target:<12}{verdict}")
    total = figures.total_us
    lines += [
        "",
        f"fast path per books15 frame (us): p50 {total['p50']:,.1f}  p99 {total['p99']:,.1f}  "
        f"p99.9 {total['p999']:,.1f}  max {total['max']:,.1f}  (first tenth "
        f"{figures.first_tenth_frames:,} frames, last tenth {figures.last_tenth_frames:,})",
        "RSS (MB) by frames: "
        + "  ".join(f"{frames // 1000:,}k {kb / 1024:,.0f}" for frames, kb in figures.rss_kb),
        f"{'queue':<24}{'bound':>8}{'max depth':>11}{'shed':>9}  policy",
    ]
    for queue in figures.queues:
        shed = "-" if queue.overflowed is None else f"{queue.overflowed:,}"
        lines.append(
            f"{queue.name:<24}{queue.bound:>8,}{queue.max_depth:>11,}{shed:>9}  {queue.policy}"
        )
    denials = ", ".join(f"{name} {count:,}" for name, count in sorted(figures.denials.items()))
    verdicts = ", ".join(f"{name} {count:,}" for name, count in figures.verdicts.items())
    lines += [
        f"orders placed {figures.orders_placed:,}, denied {figures.orders_denied:,}, cancels "
        f"sent {figures.cancels_sent:,}, fills {figures.fills:,}; journal entries "
        f"{figures.journal_entries:,}; trading state at the end {figures.trading_state}",
        f"denials by reason: {denials or 'none'}",
        f"Laya verdicts: {verdicts}; asyncio tasks at most {figures.asyncio_tasks_max}",
    ]
    if figures.rejected_frames:
        rejected = ", ".join(f"{k} {v:,}" for k, v in sorted(figures.rejected_frames.items()))
        lines.append(f"frames rejected by the parser: {rejected}")
    lines.append(f"soak {'PASSED' if result.passed else 'FAILED'}")
    return "\n".join(lines)
