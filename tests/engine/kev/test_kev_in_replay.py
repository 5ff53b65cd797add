"""Kev in a replay: market time stands still while Kev thinks, an answer takes effect its
latency after its request (never earlier), and a rerun from the recorded answers is exact."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator

import pytest
from support.scripted_llama import ScriptedLlama, command, delayed, on_a_thread

from engine.config import EngineConfig
from engine.journal import EntryKind, read_journal
from engine.kev.answers import KevAnswersError, RecordedKevClient
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig, KevHubConfig
from engine.laya.config import LayaClassifierConfig
from engine.node import EngineNode
from engine.sim.recording import simulate_recording
from engine.trading.config import TradingConfig, TradingMode

CHAT = "/v1/chat/completions"
ALWAYS_LEAN_BUY = (1.0, 0.0, 1.0, 1.0)
THINKING_S = 0.25


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("kev-replay") / "sim.bitget.gz"
    simulate_recording(path, 0.12, seed=3)  # 7 s of market: ~28 answers, 7 s of thinking
    return path


@pytest.fixture(scope="module")
def thinking_server() -> Iterator[ScriptedLlama]:
    """A scripted llama-server on a loop of its own (real time): 0.25 s per answer."""
    server = ScriptedLlama()
    server.script(CHAT, delayed(THINKING_S, command(act="hold", risk=90, ttl=8000, why="calm")))
    with on_a_thread(server):
        yield server


def replay_config(recording, model, journal, kev_url, **kev) -> EngineConfig:
    return EngineConfig(
        replay_path=str(recording),
        replay_speed=None,
        laya=LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=ALWAYS_LEAN_BUY),
        trading=TradingConfig(mode=TradingMode.PAPER, journal_path=journal),
        kev_client=KevClientConfig(base_url=kev_url, request_timeout_s=2.0),
        kev_hub=KevHubConfig(health_interval_s=1.0, max_mid_move_bps=500.0),
        status_interval_s=10.0,
        **kev,
    )


def play(config: EngineConfig) -> EngineNode:
    node = EngineNode(config)

    async def main() -> None:
        await node.start()
        try:
            await node.feed.wait()
        finally:
            await node.stop()

    node.clock.run(main())
    return node


def kev_entries(journal):
    return [entry for entry in read_journal(journal) if entry.kind == EntryKind.KEV_DECISION]


def trading_entries(journal):
    kinds = {"order_approved", "order_ack", "fill", "kev_decision", "state_change"}
    return [(e.kind, e.at_ns, e.payload) for e in read_journal(journal) if e.kind in kinds]


@pytest.fixture(scope="module")
def recorded_run(recording, laya_model, tmp_path_factory, thinking_server):
    """One replay with Kev answering: its config, journal and recorded answers."""
    folder = tmp_path_factory.mktemp("kev-recorded")
    answers, journal = folder / "answers.jsonl", folder / "journal.sqlite"
    config = replay_config(
        recording, laya_model, journal, thinking_server.url, kev_answers_out=str(answers)
    )
    play(config)
    return config, journal, answers


def test_kev_answers_take_effect_their_latency_after_the_request_in_market_time(recorded_run):
    _, journal, answers = recorded_run
    decisions = kev_entries(journal)
    assert len(decisions) >= 3
    for entry in decisions:
        payload = entry.payload
        assert payload["outcome"] == "accepted"
        # Judged once its latency had passed in market time: never earlier.
        assert payload["latency_ms"] >= THINKING_S * 1e3
        assert payload["context_age_ms"] >= payload["latency_ms"]
    # One answer at a time, each its latency long: the decisions are that far apart at least.
    times = [entry.at_ns for entry in decisions]
    assert all(later - earlier >= THINKING_S * 1e9 for earlier, later in itertools.pairwise(times))
    lines = [json.loads(line) for line in answers.read_text().splitlines()[1:]]  # the header
    recorded = sum("reply" in line for line in lines)  # the rest: each health probe's link
    assert {line["link"] for line in lines if "link" in line} == {"ok"}
    # Every answer is on file; the last may have been waiting out its latency at the end.
    assert recorded - 1 <= len(decisions) <= recorded


def test_a_rerun_from_the_recorded_answers_is_exact_without_a_server(recorded_run, tmp_path):
    config, first, answers = recorded_run
    rerun = dataclasses.replace(
        config,
        trading=dataclasses.replace(config.trading, journal_path=tmp_path / "second.sqlite"),
        kev_client=KevClientConfig(base_url="http://127.0.0.1:9"),  # nobody there
        kev_answers_out=None,
        kev_answers_in=str(answers),
    )
    node = play(rerun)
    assert node._kev_client.diverged == ""
    assert kev_entries(first)
    assert trading_entries(tmp_path / "second.sqlite") == trading_entries(first)


def test_a_rerun_that_asks_other_questions_is_told_where_it_diverged(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        '{"format":"hft-console kev answers 1"}\n'
        '{"request":0,"symbol":"BTCUSDT","verdict":"LEAN_BUY","context_ns":5,"reply":'
        '{"command":null,"failure":"timeout","reason":"slow","raw":"","model":"m",'
        '"wall_ms":3000.0,"timings":null,"finish_reason":""}}\n'
    )
    client = RecordedKevClient(answers, KevCommandSpec())
    assert client.answer("BTCUSDT", "LEAN_BUY", 5).reason == "slow"
    reply = client.answer("ETHUSDT", "EMERGENCY", 9)
    assert reply.command is None
    assert "diverged" in reply.reason and "holds 1 answers" in reply.reason


def test_an_answer_recorded_before_commands_had_a_beta_plays_back_without_one(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        '{"format":"hft-console kev answers 1"}\n'
        '{"request":0,"symbol":"BTCUSDT","verdict":"LEAN_BUY","context_ns":5,"reply":'
        '{"command":{"action":"hold","risk_scale":1.0,"hedge_ratio":0.5,"skew_bps":0.0,'
        '"ttl_ms":3000,"reasoning":"calm"},"failure":null,"reason":"","raw":"","model":"m",'
        '"wall_ms":900.0,"timings":null,"finish_reason":"stop"}}\n'
    )
    command = RecordedKevClient(answers, KevCommandSpec()).answer("BTCUSDT", "LEAN_BUY", 5).command
    assert (command.hedge_ratio, command.beta) == (0.5, None)  # the hub then moves no beta


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a file of Kev's answers"),
        (b'{"format":"hft-console kev answers 1"}\n{bad\n', "line 2"),
    ],
)
def test_a_file_that_is_not_kev_answers_is_refused_naming_it(tmp_path, content, message):
    path = tmp_path / "answers.jsonl"
    path.write_bytes(content)
    with pytest.raises(KevAnswersError, match=message):
        RecordedKevClient(path, KevCommandSpec())


def test_answers_are_recorded_and_replayed_only_with_a_recording():
    with pytest.raises(ValueError, match="only with a recording"):
        EngineConfig(kev_answers_out="a.jsonl")


def test_a_rerun_of_a_run_whose_kev_never_answered_is_exact(recording, laya_model, tmp_path):
    """Kev offline all along: the rerun has it offline too, its questions unasked, not answered
    with 'diverged' failures."""
    answers, first = tmp_path / "answers.jsonl", tmp_path / "first.sqlite"
    nobody = "http://127.0.0.1:9"
    play(replay_config(recording, laya_model, first, nobody, kev_answers_out=str(answers)))
    rerun = replay_config(
        recording, laya_model, tmp_path / "second.sqlite", nobody, kev_answers_in=str(answers)
    )
    node = play(rerun)
    assert node.kev is not None and node.kev.status().offered > 0
    assert node._kev_client.diverged == ""
    assert trading_entries(tmp_path / "second.sqlite") == trading_entries(first)
    assert kev_entries(tmp_path / "second.sqlite") == kev_entries(first) == []
