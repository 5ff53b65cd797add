"""The doctor's verdicts and the table and JSON it prints of them."""

from __future__ import annotations

import json

import pytest

from engine.tools.doctor.report import CheckResult, CheckStatus, DoctorReport


def test_a_warning_without_a_fix_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a fix"):
        CheckResult("gpu", CheckStatus.WARN, "no GPU")
    with pytest.raises(ValueError, match="one line"):
        CheckResult("gpu", CheckStatus.FAIL, "broken", "first\nsecond")
    assert CheckResult("gpu", "skip", "no GPU").status is CheckStatus.SKIP


def test_the_table_puts_each_fix_under_its_check_and_counts_statuses() -> None:
    report = DoctorReport(
        (
            CheckResult("python", CheckStatus.OK, "CPython 3.11.7"),
            CheckResult("credentials", CheckStatus.FAIL, "mode 0644", "chmod 600 FILE"),
            CheckResult("gpu", CheckStatus.WARN, "NVML not available", "install the driver"),
            CheckResult("vram-budget", CheckStatus.SKIP, "no GPU"),
        ),
        1.25,
    )
    lines = report.format_table(80).splitlines()
    assert lines[0].split() == ["ok", "python", "CPython", "3.11.7"]
    assert lines[1].split()[:2] == ["FAIL", "credentials"]
    assert lines[2].strip() == "fix: chmod 600 FILE"
    assert lines[2].index("fix") == lines[0].index("CPython")
    assert lines[-1] == "4 checks in 1.2 s: 1 ok, 1 warn, 1 failed, 1 skipped"
    assert report.failed
    document = json.loads(report.to_json())
    assert document["ok"] is False
    assert document["counts"] == {"ok": 1, "warn": 1, "fail": 1, "skip": 1}
    assert document["checks"][1] == {
        "name": "credentials",
        "status": "fail",
        "detail": "mode 0644",
        "fix": "chmod 600 FILE",
    }


def test_a_long_detail_wraps_under_its_own_column() -> None:
    detail = " ".join(f"word{n}" for n in range(40))
    report = DoctorReport((CheckResult("configuration", CheckStatus.OK, detail),), 0.1)
    lines = report.format_table(60).splitlines()[:-1]
    assert len(lines) > 3 and all(len(line) <= 60 for line in lines)
    column = lines[0].index("word0")
    assert all(line[:column].strip() == "" for line in lines[1:])
