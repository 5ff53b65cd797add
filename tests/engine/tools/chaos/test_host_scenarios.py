"""The host-side chaos scenarios (Kev's server killed, NVML raising, the journal's disk full or
removed), each against the real engine; their judges fed observations that break each rule;
and the journal noticing its file removed mid-run."""

from __future__ import annotations

import dataclasses
import time

import pytest

from engine.gpu import GIB, GpuSample
from engine.journal import EntryKind, Journal, JournalConfig, JournalFault, read_journal
from engine.kev.command import KevCommand
from engine.kev.hub import KevDecision, KevOutcome
from engine.kev.model_fetch import is_gguf, tiny_model_path
from engine.kev.server import LlamaServerError, find_llama_server
from engine.risk.commands import KevAction
from engine.risk.events import TradingState
from engine.tools.chaos import host_scenarios
from engine.tools.chaos.host_scenarios import (
    SCENARIOS,
    JournalFaultObservation,
    KevOutageObservation,
    NvmlObservation,
    judge_journal_fault,
    judge_kev_outage,
    judge_nvml,
)
from engine.tools.chaos.scenario import CheckList, format_results

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


def test_the_host_scenarios_are_registered_once_each():
    assert list(BY_NAME) == [
        "kev-server-killed",
        "nvml-raising",
        "journal-disk-full",
        "journal-unwritable",
    ]
    assert all(scenario.expected for scenario in SCENARIOS)


# The scenarios, run for real


@pytest.mark.parametrize("name", ["nvml-raising", "journal-disk-full", "journal-unwritable"])
async def test_host_scenario_passes(name: str) -> None:
    result = await BY_NAME[name].run()
    print(format_results([result]), result.note)
    assert result.passed, format_results([result])
    assert result.recover_s is not None


async def test_a_full_disk_without_tmpfs_is_the_journals_size_limit(monkeypatch) -> None:
    monkeypatch.setattr(host_scenarios._TmpfsMount, "mount", lambda self: "not here")
    result = await BY_NAME["journal-disk-full"].run()
    assert result.passed, format_results([result])
    assert result.note.startswith("no tmpfs (not here): the journal's max_bytes")


def llama_server_installed() -> str:
    try:
        find_llama_server()
    except LlamaServerError as error:
        return f"llama-server not installed: {error}"
    if not is_gguf(tiny_model_path()):
        return "the tiny model is not fetched: hft-console kev fetch-tiny-model"
    return ""


async def test_kev_server_killed_mid_request_and_restarted() -> None:
    missing = llama_server_installed()
    if missing:
        pytest.skip(missing)
    result = await BY_NAME["kev-server-killed"].run()
    print(format_results([result]))
    assert result.passed, format_results([result])
    assert result.recover_s is not None and result.recover_s > 0


async def test_without_llama_server_the_kev_scenario_fails_and_says_why(monkeypatch) -> None:
    def absent(explicit=None):
        raise LlamaServerError("llama-server not found: install it")

    monkeypatch.setattr(host_scenarios, "find_llama_server", absent)
    result = await BY_NAME["kev-server-killed"].run()
    assert not result.passed
    assert result.note.startswith("llama-server not installed")
    assert [check.detail for check in result.failures] == [result.note]


# The judges: a passing observation, then each rule broken in turn


def failed_rules(judge, seen, *arguments) -> list[str]:
    checks = CheckList()
    judge(seen, *arguments, checks)
    return [check.what for check in checks.result("x", None, 0.0).failures]


def decision(outcome: KevOutcome, reason: str, answered: bool = False) -> KevDecision:
    command = None
    if answered:
        command = KevCommand(KevAction.HOLD, 0.8, 0.5, 0.0, 8000, "calm")
    return KevDecision(
        0, 0, "BTCUSDT", "LEAN_BUY", outcome, reason, command, "", "m", 1.0, 0.0, None, 0
    )


KEV_SURVIVED = KevOutageObservation(
    online_before=True,
    in_flight_at_kill=1,
    decision_after_kill=decision(
        KevOutcome.REJECTED, "unreachable: ServerDisconnectedError: Server disconnected"
    ),
    rejected_at_kill=0,
    rejected_after_kill=1,
    states_after_kill=("busy", "offline"),
    offline_detail="Cannot connect",
    frames_at_kill=100,
    frames_after_outage=130,
    verdicts_at_kill=90,
    verdicts_after_outage=120,
    trading_state_at_kill=TradingState.ACTIVE,
    trading_state_after_outage=TradingState.ACTIVE,
    restarted="",
    states_after_restart=("loading", "busy"),
    answered_after_restart=decision(KevOutcome.ACCEPTED, "hold", answered=True),
)


def test_the_kev_judge_passes_an_outage_that_follows_the_rules():
    assert failed_rules(judge_kev_outage, KEV_SURVIVED) == []


@pytest.mark.parametrize(
    ("broken", "rule"),
    [
        ({"in_flight_at_kill": 0}, "the server was killed with a request in flight"),
        (
            {"decision_after_kill": decision(KevOutcome.REJECTED, "internal error: KeyError()")},
            "the in-flight request failed cleanly with the reason shown",
        ),
        ({"rejected_after_kill": 0}, "the failure was counted"),
        ({"states_after_kill": ("busy",)}, "Kev's health went down, with why"),
        (
            {"verdicts_after_outage": 90},
            "Laya's verdicts continued while Kev was down",
        ),
        (
            {"trading_state_after_outage": TradingState.HALTED},
            "the trading state did not change with Kev's outage",
        ),
        ({"states_after_restart": ("offline",)}, "Kev's health came back up"),
        (
            {"answered_after_restart": decision(KevOutcome.REJECTED, "timeout: 45 s")},
            "later anomalies were answered again",
        ),
    ],
)
def test_the_kev_judge_fails_each_broken_rule(broken, rule):
    seen = dataclasses.replace(KEV_SURVIVED, **broken)
    assert failed_rules(judge_kev_outage, seen) == [rule]


def unavailable(reason: str = "NVMLError_Unknown: Unknown Error") -> GpuSample:
    return GpuSample(False, reason, at_ns=1)


NVML_SURVIVED = NvmlObservation(
    nvml_calls_failed=3,
    samples_while_failing=(unavailable(), unavailable(), unavailable()),
    monitor_alive=True,
    frames_at_fault=10,
    frames_after=40,
    trading_state_at_fault=TradingState.ACTIVE,
    trading_state_after=TradingState.ACTIVE,
    orders_sent_at_fault=2,
    orders_sent_after=9,
    recovered=GpuSample(True, "", total_bytes=12 * GIB, at_ns=2),
)


def test_the_nvml_judge_passes_a_monitor_that_follows_the_rules():
    assert failed_rules(judge_nvml, NVML_SURVIVED) == []


@pytest.mark.parametrize(
    ("broken", "rule"),
    [
        (
            {"samples_while_failing": (unavailable(), GpuSample(True, "", at_ns=2))},
            "the GPU view is unavailable, with NVML's reason",
        ),
        (
            {"samples_while_failing": (unavailable(""),)},
            "the GPU view is unavailable, with NVML's reason",
        ),
        ({"monitor_alive": False}, "the monitor never raised (its thread lives on)"),
        ({"frames_after": 10}, "the engine kept running"),
        ({"orders_sent_after": 2}, "trading was unaffected"),
        (
            {"recovered": None},
            "the GPU view came back once NVML worked again (the monitor retries)",
        ),
    ],
)
def test_the_nvml_judge_fails_each_broken_rule(broken, rule):
    seen = dataclasses.replace(NVML_SURVIVED, **broken)
    assert failed_rules(judge_nvml, seen) == [rule]


JOURNAL_HALTED = JournalFaultObservation(
    quoting_before=True,
    journal_fault="disk full (or the journal's max_bytes reached): j.sqlite",
    halted=True,
    halt_reasons=("journal fault: disk full (or the journal's max_bytes reached): j.sqlite",),
    faults_shown=("journal fault, trading halted: disk full ...",),
    resume_refused=True,
    kill_ok=True,
    kill_message="venue confirms no open orders and flat",
    venue_open_orders=0,
    positions_before=(("BTCUSDT", 0.002),),
    venue_positions=(("BTCUSDT", 0.0),),
    frames_at_fault=10,
    frames_after=40,
    acked_before=frozenset({"hcA", "hcB"}),
    fills_before=frozenset({"t1"}),
    risk_increasing_after=(),
    exchange_orders=frozenset({"hcA", "hcB", "hcC"}),
    venue_close_orders=1,
    journal_readable="",
    journal_approved=frozenset({"hcA", "hcB", "hcC"}),
    journal_acked=frozenset({"hcA", "hcB"}),
    journal_fills=frozenset({"t1"}),
)


def test_the_journal_judge_passes_a_halt_that_follows_the_rules():
    assert failed_rules(judge_journal_fault, JOURNAL_HALTED, "disk full") == []


@pytest.mark.parametrize(
    ("broken", "rule"),
    [
        ({"journal_fault": ""}, "the journal reported the fault (disk full)"),
        ({"halted": False}, "trading HALTED on the journal fault"),
        ({"faults_shown": ()}, "the engine says why"),
        ({"resume_refused": False}, "the halt is latched: resume is refused"),
        (
            {"venue_positions": (("BTCUSDT", 0.002),)},
            "cancel all and close all ran and the venue confirms flat",
        ),
        ({"kill_ok": None}, "cancel all and close all ran and the venue confirms flat"),
        ({"frames_after": 10}, "the engine kept running (books still processed)"),
        (
            {"risk_increasing_after": ("hcD",)},
            "no risk-increasing order was acknowledged after the fault",
        ),
        (
            {"journal_readable": "DatabaseError: file is not a database"},
            "the journal is readable after the fault",
        ),
        (
            {"journal_approved": frozenset({"hcA", "hcB"})},
            "every order the exchange acknowledged was journaled before it was sent",
        ),
        (
            {"journal_acked": frozenset({"hcA"})},
            "nothing acknowledged before the fault is missing from the journal",
        ),
        (
            {"journal_fills": frozenset()},
            "nothing acknowledged before the fault is missing from the journal",
        ),
    ],
)
def test_the_journal_judge_fails_each_broken_rule(broken, rule):
    seen = dataclasses.replace(JOURNAL_HALTED, **broken)
    assert failed_rules(judge_journal_fault, seen, "disk full") == [rule]


# The journal fix the journal-unwritable scenario needed


def test_a_journal_whose_file_is_removed_mid_run_faults_instead_of_writing_into_the_void(
    tmp_path,
):
    faults: list[JournalFault] = []
    folder = tmp_path / "journal"
    journal = Journal(JournalConfig(folder / "journal.sqlite"), on_fault=faults.append)
    journal.start()
    try:
        journal.append_durable(EntryKind.FILL, {"trade_id": "t1"}, time.time_ns())
        folder.rename(tmp_path / "moved")
        with pytest.raises(JournalFault, match="journal file removed or replaced"):
            journal.append_durable(EntryKind.FILL, {"trade_id": "t2"}, time.time_ns())
    finally:
        journal.stop()
    assert len(faults) == 1 and "trading must halt" in str(faults[0])
    entries = read_journal(tmp_path / "moved" / "journal.sqlite")
    assert [entry.payload["trade_id"] for entry in entries] == ["t1"]
