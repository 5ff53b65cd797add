"""Chaos on the host side: Kev's llama-server killed mid-request and restarted, NVML raising on
every call, the journal's disk full, and the journal's directory removed mid-run.

Each scenario runs the real engine (`EngineNode` trading its in-process simulator) and injects
one fault. What it saw is gathered into an observation, and a `judge_*` function turns the
observation into checks; the judges are pure, so a test can hand them an observation that
breaks a rule and see the check fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from engine.config import EngineConfig
from engine.gpu import GIB, GpuMonitor, GpuMonitorConfig, GpuSample
from engine.journal import EntryKind, Journal, read_journal
from engine.kev.config import KevClientConfig, KevHubConfig, LlamaServerConfig
from engine.kev.hub import KevDecision, KevOutcome
from engine.kev.model_fetch import is_gguf, tiny_model_path
from engine.kev.server import LlamaServerError, LlamaServerProcess, find_llama_server, free_port
from engine.laya.config import LayaClassifierConfig
from engine.node import EngineNode
from engine.risk.events import TradingState, TradingStateChanged
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.tools.chaos.scenario import CheckList, Scenario, ScenarioResult
from engine.trading.commands import Command, Resume
from engine.trading.config import QuotingStrategyConfig, TradingConfig
from engine.trading.events import OrderAcknowledged, OrderFilled, TradingFault
from engine.trading.tracked_order import OrderRole

ALWAYS_LEAN_BUY = (1.0, 0.0, 1.0, 1.0)
"""Laya thresholds under which every verdict is LEAN_BUY: every frame is an anomaly for Kev."""
_START_TIMEOUT_S = 60.0
_POLL_S = 0.01
_QUOTES_TIMEOUT_S = 30.0
_FILL_TIMEOUT_S = 10.0
_RUN_ON_S = 1.5
"""How long the engine is watched after a fault to show it keeps running."""


# Shared plumbing


def _engine_config(
    journal: Path,
    thresholds: tuple[float, ...] = NEVER_EMERGENCY,
    kev_client: KevClientConfig | None = None,
) -> EngineConfig:
    """The engine trading its in-process simulator on the shipped Laya model (CPU)."""
    return EngineConfig(
        laya=LayaClassifierConfig(prefer_gpu=False, thresholds=thresholds),
        # Quotes at the microprice fill within a second on the simulator: a position to close.
        trading=TradingConfig(
            journal_path=journal, strategies=(QuotingStrategyConfig(half_spread_bps=0.0),)
        ),
        kev_client=kev_client,
        kev_hub=KevHubConfig(health_interval_s=0.2, max_mid_move_bps=500.0),
        status_interval_s=0.05,
    )


async def _until(condition: Callable[[], bool], timeout_s: float) -> bool:
    """Polls `condition`; False when `timeout_s` passed first (a check records that)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL_S)
    return True


def _verdicts(node: EngineNode) -> int:
    return sum(node.pipeline.decisions.counts().values())


def _orders_sent(node: EngineNode) -> int:
    return node.desk.executor.stats().sent if node.desk is not None else 0


def _trading_state(node: EngineNode) -> TradingState | None:
    return node.desk.gateway.state if node.desk is not None else None


def _failed_to_start(name: str, started: float, what: str, error: BaseException) -> ScenarioResult:
    checks = CheckList()
    checks.check(what, False, f"{type(error).__name__}: {error}")
    return checks.result(name, None, time.monotonic() - started)


# 1. Kev's server killed mid-request


@dataclass(frozen=True, slots=True)
class KevOutageObservation:
    """What `kev-server-killed` saw. Counts are taken at the kill (`_at_kill`), at the end of
    the outage (`_after_outage`) and once Kev answered again."""

    online_before: bool
    in_flight_at_kill: int
    decision_after_kill: KevDecision | None
    rejected_at_kill: int
    rejected_after_kill: int
    states_after_kill: tuple[str, ...]
    offline_detail: str
    frames_at_kill: int
    frames_after_outage: int
    verdicts_at_kill: int
    verdicts_after_outage: int
    trading_state_at_kill: TradingState | None
    trading_state_after_outage: TradingState | None
    restarted: str
    """"" when the server came back, else why it did not."""
    states_after_restart: tuple[str, ...]
    answered_after_restart: KevDecision | None


_SERVER_DOWN_REASONS = ("unreachable:", "timeout:")


def judge_kev_outage(seen: KevOutageObservation, checks: CheckList) -> None:
    checks.check("Kev was online before the kill", seen.online_before)
    checks.check(
        "the server was killed with a request in flight",
        seen.in_flight_at_kill >= 1,
        f"{seen.in_flight_at_kill} in flight at the kill",
    )
    failed = seen.decision_after_kill
    checks.check(
        "the in-flight request failed cleanly with the reason shown",
        failed is not None
        and failed.outcome is KevOutcome.REJECTED
        and failed.reason.startswith(_SERVER_DOWN_REASONS),
        "no decision came back" if failed is None else f"{failed.outcome.value}: {failed.reason}",
    )
    checks.check(
        "the failure was counted",
        seen.rejected_after_kill > seen.rejected_at_kill,
        f"rejected {seen.rejected_at_kill} -> {seen.rejected_after_kill}",
    )
    checks.check(
        "Kev's health went down, with why",
        "offline" in seen.states_after_kill and bool(seen.offline_detail),
        f"states seen {list(seen.states_after_kill)}, detail {seen.offline_detail!r}",
    )
    checks.check(
        "books kept flowing through the fast path while Kev was down",
        seen.frames_after_outage > seen.frames_at_kill,
        f"frames {seen.frames_at_kill} -> {seen.frames_after_outage}",
    )
    checks.check(
        "Laya's verdicts continued while Kev was down",
        seen.verdicts_after_outage > seen.verdicts_at_kill,
        f"verdicts {seen.verdicts_at_kill} -> {seen.verdicts_after_outage}",
    )
    checks.check(
        "the trading state did not change with Kev's outage",
        seen.trading_state_at_kill is not None
        and seen.trading_state_after_outage is seen.trading_state_at_kill,
        f"{_name(seen.trading_state_at_kill)} -> {_name(seen.trading_state_after_outage)}",
    )
    checks.check("the server restarted", not seen.restarted, seen.restarted)
    checks.check(
        "Kev's health came back up",
        any(state in ("online", "busy") for state in seen.states_after_restart),
        f"states seen {list(seen.states_after_restart)}",
    )
    answer = seen.answered_after_restart
    checks.check(
        "later anomalies were answered again",
        answer is not None and answer.command is not None,
        "no command came back after the restart"
        if answer is None
        else f"{answer.outcome.value}: {answer.reason}",
    )


def _name(state: TradingState | None) -> str:
    return state.name if state is not None else "no trading"


def _kev_prerequisites() -> tuple[Path | None, Path | None, str]:
    """llama-server and the tiny model, or why the scenario cannot run here."""
    try:
        binary = find_llama_server()
    except LlamaServerError as error:
        return None, None, f"llama-server not installed: {error}"
    model = tiny_model_path()
    if not is_gguf(model):
        return (
            binary,
            None,
            (f"the tiny model is not at {model}: run hft-console kev fetch-tiny-model"),
        )
    return binary, model, ""


class _StateWatch:
    """Records every Kev state the hub reports, polled on the engine loop."""

    def __init__(self, node: EngineNode) -> None:
        self._node = node
        self.states: list[str] = []
        self.offline_detail = ""

    def poll(self) -> None:
        hub = self._node.kev
        if hub is None:
            return
        status = hub.status()
        if not self.states or self.states[-1] != status.state:
            self.states.append(status.state)
        if status.state == "offline" and status.detail:
            self.offline_detail = status.detail

    async def watch(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        def polled() -> bool:
            self.poll()
            return condition()

        return await _until(polled, timeout_s)


def _decisions_since(node: EngineNode, first_id: int) -> list[KevDecision]:
    hub = node.kev
    if hub is None:
        return []
    return [decision for decision in hub.decisions(256) if decision.id >= first_id]


def _next_id(node: EngineNode) -> int:
    hub = node.kev
    decisions = hub.decisions(1) if hub is not None else ()
    return decisions[-1].id + 1 if decisions else 0


def _answered(node: EngineNode, first_id: int) -> KevDecision | None:
    return next((d for d in _decisions_since(node, first_id) if d.command is not None), None)


async def run_kev_server_killed() -> ScenarioResult:
    name = "kev-server-killed"
    started = time.monotonic()
    binary, model, missing = _kev_prerequisites()
    if binary is None or model is None:
        checks = CheckList()
        checks.check("llama-server and the tiny model are installed", False, missing)
        return checks.result(name, None, time.monotonic() - started, note=missing)
    with tempfile.TemporaryDirectory(prefix="hft-chaos-kev-") as folder:
        server_config = LlamaServerConfig(
            model=str(model),
            binary=str(binary),
            port=free_port(),
            # On the CPU, one thread: a decision of the tiny model takes a second or more (ten
            # with a cold prompt cache), so the kill lands in the middle of one, GPU or not.
            gpu_layers=0,
            threads=1,
            ready_timeout_s=120.0,
            pid_path=str(Path(folder) / "llama-server.pid"),
            log_path=str(Path(folder) / "llama-server.log"),
        )
        server = LlamaServerProcess(server_config)
        # Room for the first decision after a restart: its prompt cache is cold (the whole
        # system prompt, ~20 s on one thread of a busy 2-core VM).
        kev = KevClientConfig(base_url=server.url, request_timeout_s=45.0, probe_timeout_s=0.5)
        node = EngineNode(_engine_config(Path(folder) / "journal.sqlite", ALWAYS_LEAN_BUY, kev))
        try:
            try:
                await asyncio.to_thread(server.start)
                await node.start()
            except Exception as error:
                return _failed_to_start(name, started, "llama-server and the engine start", error)
            seen, recover_s = await _kill_and_restart_kev(node, server, server_config)
        finally:
            await node.stop()
            await asyncio.to_thread(server.stop)
    checks = CheckList()
    judge_kev_outage(seen, checks)
    return checks.result(name, recover_s, time.monotonic() - started)


async def _kill_and_restart_kev(
    node: EngineNode, server: LlamaServerProcess, server_config: LlamaServerConfig
) -> tuple[KevOutageObservation, float | None]:
    hub = node.kev
    assert hub is not None
    watch = _StateWatch(node)
    online_before = await watch.watch(
        lambda: hub.status().state in ("online", "busy"), _START_TIMEOUT_S
    )
    # Kill once a request has been in flight a while: mid-generation, not at its edges.
    in_flight_since: list[float] = []

    def long_in_flight() -> bool:
        if not hub.status().in_flight:
            in_flight_since.clear()
            return False
        if not in_flight_since:
            in_flight_since.append(time.monotonic())
        return time.monotonic() - in_flight_since[0] >= 0.2

    await _until(long_in_flight, _START_TIMEOUT_S)
    status = hub.status()
    first_after_kill = _next_id(node)
    frames_at_kill, verdicts_at_kill = node.parser.stats.frames, _verdicts(node)
    state_at_kill = _trading_state(node)
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)
    await watch.watch(lambda: bool(_decisions_since(node, first_after_kill)), 30.0)
    after_kill = _decisions_since(node, first_after_kill)
    await watch.watch(lambda: hub.status().state == "offline", 5.0)
    await asyncio.sleep(_RUN_ON_S)  # the outage: the fast path must not notice
    frames_after, verdicts_after = node.parser.stats.frames, _verdicts(node)
    state_after = _trading_state(node)
    states_after_kill = tuple(watch.states)
    await asyncio.to_thread(server.stop)  # reaps the killed process, removes its pid file
    watch.states.clear()
    restart = LlamaServerProcess(server_config)
    restarted_at = time.monotonic()
    first_after_restart = _next_id(node)
    restarted = ""
    try:
        await asyncio.to_thread(restart.start)
    except LlamaServerError as error:
        restarted = str(error)
    recover_s = None
    answer = None
    try:
        if not restarted:
            await watch.watch(lambda: _answered(node, first_after_restart) is not None, 90.0)
            answer = _answered(node, first_after_restart)
            if answer is not None:
                recover_s = time.monotonic() - restarted_at
    finally:
        await asyncio.to_thread(restart.stop)
    seen = KevOutageObservation(
        online_before=online_before,
        in_flight_at_kill=status.in_flight,
        decision_after_kill=after_kill[0] if after_kill else None,
        rejected_at_kill=status.outcomes[KevOutcome.REJECTED.value],
        rejected_after_kill=hub.status().outcomes[KevOutcome.REJECTED.value],
        states_after_kill=states_after_kill,
        offline_detail=watch.offline_detail,
        frames_at_kill=frames_at_kill,
        frames_after_outage=frames_after,
        verdicts_at_kill=verdicts_at_kill,
        verdicts_after_outage=verdicts_after,
        trading_state_at_kill=state_at_kill,
        trading_state_after_outage=state_after,
        restarted=restarted,
        states_after_restart=tuple(watch.states),
        answered_after_restart=answer,
    )
    return seen, recover_s


# 2. NVML raising on every call


class NVMLError(Exception):
    """pynvml's error base, as the fake raises it."""


class NVMLError_Unknown(NVMLError):
    def __str__(self) -> str:
        return "Unknown Error"


class _DeviceMemory(NamedTuple):
    total: int
    free: int
    used: int


class ChaosNvml(types.ModuleType):
    """A stand-in for `pynvml` (there is no GPU on the machines this runs on): while `failing`
    every call raises NVMLError_Unknown, otherwise it is a 12 GiB device with no processes."""

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.failing = True
        self.calls = 0
        self.raised = 0

    def _call(self, result: Any) -> Any:
        self.calls += 1
        if self.failing:
            self.raised += 1
            raise NVMLError_Unknown()
        return result

    def nvmlInit(self) -> None:
        self._call(None)

    def nvmlShutdown(self) -> None:
        self._call(None)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return self._call(f"device-{index}")

    def nvmlDeviceGetName(self, handle: str) -> bytes:
        return self._call(b"chaos device")

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> _DeviceMemory:
        return self._call(_DeviceMemory(12 * GIB, 8 * GIB, 4 * GIB))

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[object]:
        return self._call([])

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: str) -> list[object]:
        return self._call([])


@contextlib.contextmanager
def _pynvml_replaced(module: types.ModuleType) -> Iterator[None]:
    """`import pynvml` gives `module` until the block ends (GpuMonitor imports it lazily)."""
    previous = sys.modules.get("pynvml")
    sys.modules["pynvml"] = module
    try:
        yield
    finally:
        if previous is None:
            sys.modules.pop("pynvml", None)
        else:
            sys.modules["pynvml"] = previous


@dataclass(frozen=True, slots=True)
class NvmlObservation:
    nvml_calls_failed: int
    samples_while_failing: tuple[GpuSample, ...]
    monitor_alive: bool
    frames_at_fault: int
    frames_after: int
    trading_state_at_fault: TradingState | None
    trading_state_after: TradingState | None
    orders_sent_at_fault: int
    orders_sent_after: int
    recovered: GpuSample | None


def judge_nvml(seen: NvmlObservation, checks: CheckList) -> None:
    checks.check(
        "the monitor called NVML and every call raised",
        seen.nvml_calls_failed > 0,
        f"{seen.nvml_calls_failed} calls raised",
    )
    samples = seen.samples_while_failing
    unavailable = [sample for sample in samples if not sample.available]
    checks.check(
        "the GPU view is unavailable, with NVML's reason",
        bool(samples)
        and len(unavailable) == len(samples)
        and all("NVMLError" in sample.reason for sample in samples),
        f"{len(unavailable)} of {len(samples)} samples unavailable; reasons "
        f"{sorted({sample.reason for sample in samples})}",
    )
    checks.check("the monitor never raised (its thread lives on)", seen.monitor_alive)
    checks.check(
        "the engine kept running",
        seen.frames_after > seen.frames_at_fault,
        f"frames {seen.frames_at_fault} -> {seen.frames_after}",
    )
    checks.check(
        "trading was unaffected",
        seen.trading_state_at_fault is TradingState.ACTIVE
        and seen.trading_state_after is TradingState.ACTIVE
        and seen.orders_sent_after > seen.orders_sent_at_fault,
        f"{_name(seen.trading_state_at_fault)} -> {_name(seen.trading_state_after)}, "
        f"orders sent {seen.orders_sent_at_fault} -> {seen.orders_sent_after}",
    )
    recovered = seen.recovered
    checks.check(
        "the GPU view came back once NVML worked again (the monitor retries)",
        recovered is not None and recovered.available and recovered.total_bytes > 0,
        "still unavailable" if recovered is None else recovered.reason,
    )


async def run_nvml_raising() -> ScenarioResult:
    name = "nvml-raising"
    started = time.monotonic()
    nvml = ChaosNvml()
    interval_s = 0.5
    with tempfile.TemporaryDirectory(prefix="hft-chaos-nvml-") as folder:
        node = EngineNode(_engine_config(Path(folder) / "journal.sqlite"))
        monitor = GpuMonitor(GpuMonitorConfig(interval_s=interval_s))
        with _pynvml_replaced(nvml):
            try:
                try:
                    await node.start()
                except Exception as error:
                    return _failed_to_start(name, started, "the engine starts", error)
                sim = node.sim
                assert sim is not None
                await _until(lambda: len(sim.open_orders()) >= 2, _QUOTES_TIMEOUT_S)
                frames_at_fault, state_at_fault = node.parser.stats.frames, _trading_state(node)
                sent_at_fault = _orders_sent(node)
                monitor.start()
                samples: list[GpuSample] = []

                def sampled_a_while() -> bool:
                    sample = monitor.latest()
                    if sample.at_ns and (not samples or samples[-1].at_ns != sample.at_ns):
                        samples.append(sample)
                    return len(samples) >= 3

                # Samples that keep coming show the monitor's thread survived every raise.
                alive = await _until(sampled_a_while, 10 * interval_s)
                seen_fields: dict[str, Any] = {
                    "nvml_calls_failed": nvml.raised,
                    "samples_while_failing": tuple(samples),
                    "monitor_alive": alive,
                    "frames_at_fault": frames_at_fault,
                    "frames_after": node.parser.stats.frames,
                    "trading_state_at_fault": state_at_fault,
                    "trading_state_after": _trading_state(node),
                    "orders_sent_at_fault": sent_at_fault,
                    "orders_sent_after": _orders_sent(node),
                }
                nvml.failing = False
                healed_at = time.monotonic()
                recovered = await _until(lambda: monitor.latest().available, 10 * interval_s)
                recover_s = time.monotonic() - healed_at if recovered else None
                seen = NvmlObservation(
                    **seen_fields, recovered=monitor.latest() if recovered else None
                )
            finally:
                await asyncio.to_thread(monitor.stop)
                await node.stop()
    checks = CheckList()
    judge_nvml(seen, checks)
    note = (
        "a fake pynvml (no GPU here); transient NVML errors are retried every interval, "
        "LibraryNotFound/DriverNotLoaded/LibRmVersionMismatch/NoPermission are not"
    )
    return checks.result(name, recover_s, time.monotonic() - started, note=note)


# 3. The journal's disk full, and the journal's directory removed


@dataclass(frozen=True, slots=True)
class JournalFaultObservation:
    """What a journal scenario saw. `*_before` are the acks and fills the engine had when the
    fault was injected (with everything appended until then committed); `exchange_orders` are
    the clientOids of every order of ours the exchange acknowledged or filled during the run."""

    quoting_before: bool
    journal_fault: str
    halted: bool
    halt_reasons: tuple[str, ...]
    faults_shown: tuple[str, ...]
    resume_refused: bool
    kill_ok: bool | None
    kill_message: str
    venue_open_orders: int
    positions_before: tuple[tuple[str, float], ...]
    venue_positions: tuple[tuple[str, float], ...]
    frames_at_fault: int
    frames_after: int
    acked_before: frozenset[str]
    fills_before: frozenset[str]
    risk_increasing_after: tuple[str, ...]
    """Quotes acknowledged after the fault (only reduce-only closes may pass a halt)."""
    exchange_orders: frozenset[str]
    venue_close_orders: int
    """Orders the exchange made itself to close positions (flash close), journaled as intents."""
    journal_readable: str
    """"" when the journal could be read after the run, else why not."""
    journal_approved: frozenset[str]
    journal_acked: frozenset[str]
    journal_fills: frozenset[str]


def judge_journal_fault(
    seen: JournalFaultObservation, expected_fault: str, checks: CheckList
) -> None:
    checks.check("the engine was quoting before the fault", seen.quoting_before)
    checks.check(
        f"the journal reported the fault ({expected_fault})",
        expected_fault in seen.journal_fault,
        seen.journal_fault or "no fault",
    )
    checks.check(
        "trading HALTED on the journal fault",
        seen.halted and any("journal fault" in reason for reason in seen.halt_reasons),
        f"halted {seen.halted}, reasons {list(seen.halt_reasons)}",
    )
    checks.check(
        "the engine says why",
        any(expected_fault in fault for fault in seen.faults_shown),
        f"faults shown {list(seen.faults_shown)}",
    )
    checks.check("the halt is latched: resume is refused", seen.resume_refused)
    checks.check(
        "cancel all and close all ran and the venue confirms flat",
        bool(seen.kill_ok)
        and seen.venue_open_orders == 0
        and all(size == 0 for _, size in seen.venue_positions),
        f"positions before {dict(seen.positions_before)}; "
        f"kill: {seen.kill_message or 'never ran'}; venue after: {seen.venue_open_orders} "
        f"open orders, positions {dict(seen.venue_positions)}",
    )
    checks.check(
        "the engine kept running (books still processed)",
        seen.frames_after > seen.frames_at_fault,
        f"frames {seen.frames_at_fault} -> {seen.frames_after}",
    )
    checks.check(
        "no risk-increasing order was acknowledged after the fault",
        not seen.risk_increasing_after,
        f"acknowledged: {_listed(seen.risk_increasing_after)}",
    )
    checks.check(
        "the journal is readable after the fault", not seen.journal_readable, seen.journal_readable
    )
    unjournaled = sorted(seen.exchange_orders - seen.journal_approved)
    checks.check(
        "every order the exchange acknowledged was journaled before it was sent",
        bool(seen.exchange_orders) and not unjournaled,
        f"{len(seen.exchange_orders)} of our orders at the exchange (and "
        f"{seen.venue_close_orders} flash-close orders), not in the journal: "
        f"{_listed(unjournaled)}",
    )
    missing_acks = sorted(seen.acked_before - seen.journal_acked)
    missing_fills = sorted(seen.fills_before - seen.journal_fills)
    checks.check(
        "nothing acknowledged before the fault is missing from the journal",
        bool(seen.acked_before) and not missing_acks and not missing_fills,
        f"{len(seen.acked_before)} acks and {len(seen.fills_before)} fills before the fault; "
        f"missing acks {_listed(missing_acks)}, missing fills {_listed(missing_fills)}",
    )


def _listed(items: Sequence[str], shown: int = 8) -> str:
    """The first few of `items`, and how many more."""
    listed = ", ".join(items[:shown])
    return f"[{listed}, and {len(items) - shown} more]" if len(items) > shown else f"[{listed}]"


class _TmpfsMount:
    """A small tmpfs of its own (root with CAP_SYS_ADMIN), so that filling it is a real full
    disk and nothing else on the machine notices."""

    def __init__(self, folder: Path, size_bytes: int) -> None:
        self.folder = folder
        self.size_bytes = size_bytes
        self.mounted = False

    def mount(self) -> str:
        """ "" once mounted, else why not."""
        self.folder.mkdir(parents=True, exist_ok=True)
        mount = shutil.which("mount")
        if mount is None:
            return "no mount command"
        try:
            result = subprocess.run(
                [
                    mount,
                    "-t",
                    "tmpfs",
                    "-o",
                    f"size={self.size_bytes},mode=0700",
                    "tmpfs",
                    str(self.folder),
                ],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"mount failed: {error}"
        if result.returncode != 0:
            return f"mount failed: {result.stderr.strip() or result.returncode}"
        self.mounted = True
        return ""

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(
                ["umount", "-l", str(self.folder)], capture_output=True, timeout=10, check=False
            )
            self.mounted = False


def _fill_disk(folder: Path) -> int:
    """Writes a filler file until the file system is full; the bytes written."""
    written = 0
    block = b"\0" * (1 << 16)
    with (folder / "filler").open("wb", buffering=0) as filler:
        while True:
            try:
                written += filler.write(block)
            except OSError:
                break
        with contextlib.suppress(OSError):  # the last partial block: fill every byte
            while filler.write(b"\0"):
                written += 1
    return written


_QUOTE_ROLES = (OrderRole.BID.value, OrderRole.ASK.value)
_FALLBACK_MAX_BYTES = 4 << 20
"""The journal's own size limit when no tmpfs can be mounted: SQLite then refuses the write
that would pass it with the same SQLITE_FULL a full disk gives."""


async def _committed_all(journal: Journal, timeout_s: float) -> bool:
    """Until every entry appended so far is committed (the writer is between batches)."""

    def drained() -> bool:
        stats = journal.stats()
        return stats.queued == 0 and stats.appended == stats.committed

    return await _until(drained, timeout_s)


async def _journal_fault_scenario(
    name: str,
    expected_fault: str,
    inject: Callable[[EngineNode, Path], str],
    *,
    tmpfs: bool,
) -> ScenarioResult:
    """Trade, inject the journal fault once everything appended is committed, then watch the
    halt; `inject` returns where the journal file is after the fault."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hft-chaos-journal-") as temp:
        folder = Path(temp) / "journal"
        mount = _TmpfsMount(folder, 16 << 20)
        note = ""
        if tmpfs:
            why_not = mount.mount()
            note = (
                "disk full: a 16 MiB tmpfs filled by another file"
                if not why_not
                else f"no tmpfs ({why_not}): the journal's max_bytes "
                f"({_FALLBACK_MAX_BYTES >> 20} MiB) filled by one large entry instead"
            )
        else:
            folder.mkdir(parents=True)
        try:
            node = EngineNode(_engine_config(folder / "journal.sqlite"))
            if tmpfs and not mount.mounted:
                assert node.journal is not None
                # The node's own journal with a size limit, wired to the node's fault handler
                # as the node wires it.
                node.journal = Journal(
                    replace(node.journal.config, max_bytes=_FALLBACK_MAX_BYTES),
                    on_fault=node._journal_fault,
                )
            try:
                try:
                    await node.start()
                except Exception as error:
                    return _failed_to_start(name, started, "the engine starts", error)
                seen, recover_s = await _observe_journal_fault(node, folder, inject)
            finally:
                await node.stop()
            seen = _read_back(seen)
        finally:
            mount.unmount()
    checks = CheckList()
    judge_journal_fault(seen, expected_fault, checks)
    return checks.result(name, recover_s, time.monotonic() - started, note=note)


async def _observe_journal_fault(
    node: EngineNode, folder: Path, inject: Callable[[EngineNode, Path], str]
) -> tuple[JournalFaultObservation, float | None]:
    sim, desk, journal = node.sim, node.desk, node.journal
    assert sim is not None and desk is not None and journal is not None
    quoting = await _until(lambda: len(sim.open_orders()) >= 2, _QUOTES_TIMEOUT_S)
    # A position, so that close all has work to do.
    await _until(lambda: desk.executor.stats().fills > 0, _FILL_TIMEOUT_S)
    await _committed_all(journal, 5.0)
    # No await from here to the injection: nothing is appended in between.
    events_before, _ = node.events.since(-1)
    last_id_before = events_before[-1][0] if events_before else -1
    frames_at_fault = node.parser.stats.frames
    positions_before = tuple((p.symbol, p.size) for p in sim.positions() if p.size)
    injected_at = time.monotonic()
    journal_file = inject(node, folder)
    halted_and_flat = await _until(
        lambda: desk.last_kill is not None, desk.config.executor.kill_timeout_s + 10.0
    )
    recover_s = time.monotonic() - injected_at if halted_and_flat else None
    await asyncio.sleep(_RUN_ON_S)
    resume = await desk.execute(Command(Resume()))
    events_after, _ = node.events.since(last_id_before)
    kill = desk.last_kill
    positions = tuple((p.symbol, p.size) for p in sim.positions())
    exchange_oids = [
        e.client_oid for _, e in (*events_before, *events_after) if isinstance(e, OrderAcknowledged)
    ] + [fill.client_oid for fill in sim.fills()]
    # Ours carry the session's prefix; the rest are the exchange's own orders for a flash close
    # (close all positions), which must not wait for the journal.
    ours = f"{desk.config.executor.client_oid_prefix}{desk.session}"
    seen = JournalFaultObservation(
        quoting_before=quoting,
        journal_fault=str(journal.fault) if journal.fault is not None else "",
        halted=desk.gateway.state is TradingState.HALTED,
        halt_reasons=tuple(
            e.reason
            for _, e in events_after
            if isinstance(e, TradingStateChanged) and e.new is TradingState.HALTED
        ),
        faults_shown=tuple(e.reason for _, e in events_after if isinstance(e, TradingFault)),
        resume_refused=not resume.ok,
        kill_ok=kill.ok if kill is not None else None,
        kill_message=kill.message if kill is not None else "",
        venue_open_orders=len(sim.open_orders()),
        positions_before=positions_before,
        venue_positions=positions,
        frames_at_fault=frames_at_fault,
        frames_after=node.parser.stats.frames,
        acked_before=frozenset(
            e.client_oid for _, e in events_before if isinstance(e, OrderAcknowledged)
        ),
        fills_before=frozenset(e.trade_id for _, e in events_before if isinstance(e, OrderFilled)),
        risk_increasing_after=tuple(
            e.client_oid
            for _, e in events_after
            if isinstance(e, OrderAcknowledged) and e.role in _QUOTE_ROLES
        ),
        exchange_orders=frozenset(oid for oid in exchange_oids if oid.startswith(ours)),
        venue_close_orders=len({oid for oid in exchange_oids if not oid.startswith(ours)}),
        journal_readable=journal_file,
        journal_approved=frozenset(),
        journal_acked=frozenset(),
        journal_fills=frozenset(),
    )
    return seen, recover_s


def _read_back(seen: JournalFaultObservation) -> JournalFaultObservation:
    """The journal's entries, read from where the file is now (`journal_readable` holds that
    path until here); the engine has stopped."""
    try:
        entries = read_journal(seen.journal_readable)
    except Exception as error:  # a damaged journal is what this check is for
        return replace(seen, journal_readable=f"{type(error).__name__}: {error}")

    def ids(kind: EntryKind, key: str, **match: object) -> frozenset[str]:
        return frozenset(
            str(entry.payload.get(key))
            for entry in entries
            if entry.kind == kind
            and all(entry.payload.get(name) == value for name, value in match.items())
        )

    return replace(
        seen,
        journal_readable="",
        journal_approved=ids(EntryKind.ORDER_APPROVED, "client_oid"),
        journal_acked=ids(EntryKind.ORDER_ACK, "client_oid", event="placed"),
        journal_fills=ids(EntryKind.FILL, "trade_id"),
    )


def _fill_the_disk(node: EngineNode, folder: Path) -> str:
    journal = node.journal
    assert journal is not None
    if journal.config.max_bytes is None:
        _fill_disk(folder)
    else:
        padding = "x" * journal.config.max_bytes
        journal.append(EntryKind.FAULT, {"chaos_padding": padding}, time.time_ns())
    return str(folder / "journal.sqlite")


def _remove_the_directory(node: EngineNode, folder: Path) -> str:
    """Moves the journal's directory away (for the engine it is gone; the scenario can still
    read what was written)."""
    moved = folder.with_name("journal-removed")
    folder.rename(moved)
    return str(moved / "journal.sqlite")


async def run_journal_disk_full() -> ScenarioResult:
    return await _journal_fault_scenario(
        "journal-disk-full", "disk full", _fill_the_disk, tmpfs=True
    )


async def run_journal_unwritable() -> ScenarioResult:
    return await _journal_fault_scenario(
        "journal-unwritable", "journal file removed", _remove_the_directory, tmpfs=False
    )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "kev-server-killed",
        "llama-server killed -9 mid-request, then restarted: the request fails cleanly and is "
        "counted, Kev goes offline then online, Laya and trading carry on, Kev answers again "
        "(recover: restart to the first answer)",
        run_kev_server_killed,
    ),
    Scenario(
        "nvml-raising",
        "every NVML call raises: the GPU view is unavailable with the reason, nothing raises "
        "into the engine, trading carries on; the view returns once NVML works (recover: from "
        "then to the first good sample)",
        run_nvml_raising,
    ),
    Scenario(
        "journal-disk-full",
        "the journal's disk fills: HALTED with the fault shown, cancel all and close all until "
        "flat, the engine runs on, every order sent and every ack before the fault journaled "
        "(recover: fault to the kill sequence done)",
        run_journal_disk_full,
    ),
    Scenario(
        "journal-unwritable",
        "the journal's directory is removed mid-run: the same as a full disk",
        run_journal_unwritable,
    ),
)
