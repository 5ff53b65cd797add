"""A whole doctor run, against loopback stand-ins for what this machine lacks (llama-server,
Bitget's time endpoint), and a real credentials file."""

from __future__ import annotations

from pathlib import Path

from support.doctor import (
    CHECK_NAMES,
    DEMO_TABLE,
    write_credentials,
)
from support.loopback import Loopback

from engine.tools.doctor.report import CheckStatus
from engine.tools.doctor.run import DoctorConfig, run_checks


async def test_a_whole_run_reports_every_check_in_order(
    laya_model: Path, llama: Loopback, bitget_time: Loopback, tmp_path: Path
) -> None:
    credentials = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE)
    report = await run_checks(
        DoctorConfig(
            laya_model_path=laya_model,
            kev_url=llama.url,
            bitget_rest_url=bitget_time.url,
            credentials_path=credentials,
            environ={},
            probe_timeout_s=60,
        )
    )
    assert [result.name for result in report.results] == CHECK_NAMES
    statuses = {result.name: result.status for result in report.results}
    for name in ("python", "providers", "llama-server", "bitget", "credentials"):
        assert statuses[name] is CheckStatus.OK, report.format_table()
    assert not report.failed, report.format_table()
