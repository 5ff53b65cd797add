"""The credentials check on real credentials files; no secret is ever shown."""

from __future__ import annotations

from pathlib import Path

from support.doctor import (
    API_KEY,
    API_SECRET,
    DEMO_TABLE,
    PASSPHRASE,
    assert_no_secret,
    write_credentials,
)

from engine.tools.doctor.credentials import check_credentials
from engine.tools.doctor.report import CheckStatus


def test_no_credentials_warns_and_says_where_they_go(tmp_path: Path) -> None:
    result = check_credentials(tmp_path / "credentials.toml", {})
    assert result.status is CheckStatus.WARN
    assert "sim and paper need none" in result.detail
    assert "chmod 600" in result.fix and str(tmp_path / "credentials.toml") in result.fix


def test_a_credentials_file_others_can_read_fails_with_the_chmod(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE, 0o644)
    result = check_credentials(path, {})
    assert result.status is CheckStatus.FAIL
    assert "mode 0644" in result.detail
    assert result.fix == f"chmod 600 {path.resolve()}"
    assert_no_secret(result)


def test_a_private_file_with_demo_keys_is_ok_and_shows_the_key_masked(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE)
    result = check_credentials(path, {})
    assert result.status is CheckStatus.OK
    assert result.detail == f"{path} (mode 0600): demo key bg_…abcd, no [live] table"
    assert_no_secret(result)


def test_a_broken_live_table_beside_good_demo_keys_fails(tmp_path: Path) -> None:
    text = DEMO_TABLE + f'[live]\napi_key = "{API_KEY}"\napi_secret = "{API_SECRET}"\n'
    path = write_credentials(tmp_path / "credentials.toml", text)
    result = check_credentials(path, {})
    assert result.status is CheckStatus.FAIL
    assert "demo key bg_…abcd" in result.detail and "missing passphrase" in result.detail
    assert_no_secret(result)


def test_a_file_with_no_usable_table_fails(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", f'[paper]\nkey = "{API_SECRET}"\n')
    result = check_credentials(path, {})
    assert result.status is CheckStatus.FAIL
    assert "serves neither demo nor live" in result.detail
    assert_no_secret(result)


def test_credentials_in_the_environment_win_and_a_partial_set_fails(tmp_path: Path) -> None:
    path = write_credentials(tmp_path / "credentials.toml", DEMO_TABLE)
    environ = {
        "BITGET_API_KEY": API_KEY,
        "BITGET_API_SECRET": API_SECRET,
        "BITGET_API_PASSPHRASE": PASSPHRASE,
    }
    result = check_credentials(path, environ)
    assert result.status is CheckStatus.OK
    assert "from the environment (key bg_…abcd)" in result.detail
    assert f"{path} is ignored while they are set" in result.detail
    assert_no_secret(result)
    partial = check_credentials(path, {"BITGET_API_KEY": API_KEY})
    assert partial.status is CheckStatus.FAIL and "BITGET_API_SECRET" in partial.detail
    assert_no_secret(partial)
