"""`hft-console chaos`: the headless engine against the simulator with faults injected, each
scenario's checks, pass/fail and time to recover (see engine/chaos). Exits 0 when every
scenario passed, 1 when one failed, 2 on bad input.

The engine is imported only when the command runs, like the rest of the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING, TextIO

from console.cli.arguments import finite_number

if TYPE_CHECKING:
    from engine.tools.chaos.scenario import ScenarioResult


def _silence_seconds(text: str) -> float:
    from engine.tools.chaos.feed_scenarios import MIN_SILENCE_S

    value = finite_number(text)
    if value < MIN_SILENCE_S:
        raise argparse.ArgumentTypeError(f"the silence must last at least {MIN_SILENCE_S:g} s")
    return value


def add_chaos_parser(commands: argparse._SubParsersAction) -> None:
    """Register `chaos` on the main parser's subcommands."""
    chaos = commands.add_parser(
        "chaos",
        help="fault scenarios against the simulator: each expectation checked, time to recover",
        description="Run chaos scenarios, each on its own simulated exchange and headless "
        "engine trading it: inject the fault, check the expected behaviour, reconcile orders "
        "and positions with the exchange. Prints one line per scenario (and every failed "
        "check); exits 1 when a scenario fails.",
    )
    chaos.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help="run only this scenario (repeatable; default: all, see --list)",
    )
    chaos.add_argument("--list", action="store_true", help="list the scenarios and exit")
    chaos.add_argument(
        "--json", action="store_true", help="print the results as JSON instead of the table"
    )
    chaos.add_argument(
        "--silence-s",
        type=_silence_seconds,
        default=30.0,
        metavar="S",
        help="how long the feed falls silent in silence-30s (default 30)",
    )
    chaos.add_argument(
        "--verbose",
        action="store_true",
        help="print the engine's log records (retries, warnings) to stderr while it runs",
    )


def run_chaos(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    from engine.tools.chaos.runner import run_scenarios, select_scenarios
    from engine.tools.chaos.scenario import format_results

    try:
        scenarios = select_scenarios(args.scenario, args.silence_s)
    except ValueError as error:
        print(f"hft-console chaos: {error}", file=sys.stderr)
        return 2
    if args.list:
        width = max(len(scenario.name) for scenario in scenarios)
        for scenario in scenarios:
            print(f"{scenario.name:<{width}}  {scenario.expected}", file=out)
        return 0
    root = logging.getLogger()
    # The faults provoke retries and warnings by design: the table reports what matters.
    quiet = logging.NullHandler() if not args.verbose else logging.StreamHandler(sys.stderr)
    root.addHandler(quiet)
    try:
        results = asyncio.run(run_scenarios([s.name for s in scenarios], args.silence_s))
    finally:
        root.removeHandler(quiet)
    if args.json:
        print(json.dumps([_as_json(result) for result in results], indent=2), file=out)
    else:
        print(format_results(results), file=out)
    return 0 if all(result.passed for result in results) else 1


def _as_json(result: ScenarioResult) -> dict[str, object]:
    return {
        "scenario": result.name,
        "passed": result.passed,
        "recover_s": result.recover_s,
        "elapsed_s": round(result.elapsed_s, 3),
        "note": result.note,
        "checks": [
            {"what": check.what, "ok": check.ok, "detail": check.detail} for check in result.checks
        ],
    }
