"""The shared reconciliation check fails on a mismatch, and a failed check fails the scenario."""

from __future__ import annotations

from engine.tools.chaos.harness import AccountView, reconciliation_checks
from engine.tools.chaos.scenario import CheckList, format_results


def test_matching_views_reconcile() -> None:
    view = AccountView(frozenset({"hcab1", "hcaa2"}), {"BTCUSDT": 0.004})
    assert all(check.ok for check in reconciliation_checks(view, view))


def test_a_mismatched_state_fails_the_scenario() -> None:
    engine = AccountView(frozenset({"hcab1", "hcaa2"}), {"BTCUSDT": 0.004, "ETHUSDT": -0.06})
    venue = AccountView(frozenset({"hcab1", "hcab3"}), {"BTCUSDT": 0.002})
    checks = CheckList()
    for check in reconciliation_checks(engine, venue):
        checks.check(check.what, check.ok, check.detail)
    result = checks.result("mismatch", None, 0.1)
    assert not result.passed
    orders, positions = result.failures
    assert "only in the engine ['hcaa2']" in orders.detail
    assert "only at the venue ['hcab3']" in orders.detail
    assert "BTCUSDT engine +0.004 venue +0.002" in positions.detail
    assert "ETHUSDT engine -0.06 venue +0" in positions.detail
    table = format_results([result])
    assert "mismatch  FAIL" in table and "0 of 1 scenarios passed" in table
