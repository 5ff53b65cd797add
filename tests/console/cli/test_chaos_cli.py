"""`hft-console chaos` through its parser and runner: list, bad names, table and JSON."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from console.cli.chaos import add_chaos_parser, run_chaos
from engine.tools.chaos import runner
from engine.tools.chaos.scenario import CheckList, Scenario, ScenarioResult


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hft-console")
    add_chaos_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["chaos", *argv])


def test_list_names_every_scenario() -> None:
    out = io.StringIO()
    assert run_chaos(_args("--list"), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("ws-drop-mid-frame ")
    assert any(line.startswith("clock-skew-30s ") for line in lines)


def test_an_unknown_scenario_is_a_clear_error(capsys) -> None:
    assert run_chaos(_args("--scenario", "nope")) == 2
    assert "unknown chaos scenario nope" in capsys.readouterr().err


def test_a_silence_too_short_is_refused_by_the_parser(capsys) -> None:
    with pytest.raises(SystemExit):
        _args("--silence-s", "1")
    assert "at least 3 s" in capsys.readouterr().err


def test_a_scenario_prints_its_table_and_json() -> None:
    out = io.StringIO()
    assert run_chaos(_args("--scenario", "books-seq-gap"), out) == 0
    table = out.getvalue()
    assert "books-seq-gap" in table and "pass" in table and "1 of 1 scenarios passed" in table
    out = io.StringIO()
    assert run_chaos(_args("--scenario", "books-seq-gap", "--json"), out) == 0
    (result,) = json.loads(out.getvalue())
    assert result["scenario"] == "books-seq-gap" and result["passed"] is True
    assert all(check["ok"] for check in result["checks"])


def test_a_failing_scenario_exits_1(monkeypatch) -> None:
    async def broken() -> ScenarioResult:
        checks = CheckList()
        checks.check("orders reconcile", False, "engine 2 open, venue 1")
        return checks.result("broken-on-purpose", None, 0.1)

    scenario = Scenario("broken-on-purpose", "a rule that does not hold", broken)
    monkeypatch.setattr(runner, "all_scenarios", lambda silence_s=30.0: (scenario,))
    out = io.StringIO()
    assert run_chaos(_args("--scenario", "broken-on-purpose"), out) == 1
    shown = out.getvalue()
    assert "broken-on-purpose" in shown and "FAIL" in shown and "0 of 1 scenarios passed" in shown
    assert "failed: orders reconcile: engine 2 open, venue 1" in shown
