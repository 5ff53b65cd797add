"""scripts/package-check's reading of the headless status line (the whole script runs at the end
of scripts/test: a wheel, a fresh venv and a session take minutes, too long for the suite)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import SourceFileLoader
from pathlib import Path

PACKAGE_CHECK = Path(__file__).resolve().parents[2] / "scripts" / "package-check"


def load_script():
    loader = SourceFileLoader("package_check", str(PACKAGE_CHECK))
    spec = importlib.util.spec_from_loader("package_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


STATUS = (
    "SIM frames 1,208 | BTCUSDT live 63,978.30/63,978.40 (0.02 bps) age 67 ms | ETHUSDT live "
    "3,398.75/3,398.77 (0.06 bps) age 67 ms | Laya (CPU native kernel) HOLD {hold} LEAN_BUY 0 "
    "LEAN_SELL 7 EMERGENCY 42 | SIM ACTIVE pos flat delta +0 PnL +0.00 orders 2 fills 1 denials 0"
)


def test_the_last_status_line_gives_the_provider_and_verdict_counts() -> None:
    script = load_script()
    output = "\n".join(
        [
            "feed BTCUSDT: live (first book frame)",
            STATUS.format(hold=3),
            "fill BTCUSDT buy 0.002 @ 63,976.00 (maker, fee 0.0256) hcc21734b1",
            STATUS.format(hold="1,077"),
        ]
    )
    provider, counts = script.verdict_counts(output)
    assert provider == "CPU native kernel"
    assert counts == {"HOLD": 1077, "LEAN_BUY": 0, "LEAN_SELL": 7, "EMERGENCY": 42}


def test_output_without_a_status_line_has_no_verdicts() -> None:
    script = load_script()
    assert script.verdict_counts("feed BTCUSDT: stale (no book frame within 2 s)\n") == ("", {})
