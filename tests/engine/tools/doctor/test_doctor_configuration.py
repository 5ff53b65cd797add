"""The configuration check on real configuration files."""

from __future__ import annotations

from engine.kev.config import KevClientConfig
from engine.tools.doctor.configuration import check_configuration
from engine.tools.doctor.report import CheckStatus


def test_without_a_file_the_defaults_validate(tmp_path) -> None:
    result = check_configuration(environ={"HFT_CONSOLE_CONFIG": str(tmp_path / "none.toml")})
    assert result.status is CheckStatus.FAIL  # a file named explicitly must exist
    result = check_configuration(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.status is CheckStatus.OK, result.detail
    assert "defaults (no file at" in result.detail and "trading" in result.detail


def test_the_configuration_file_is_read_and_a_bad_key_named(tmp_path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[risk]\nmax_net_delta_usdt = 2000.0\n")
    environ = {"HFT_CONSOLE_CONFIG": str(config)}
    result = check_configuration(environ=environ)
    assert result.status is CheckStatus.OK, result.detail
    assert str(config) in result.detail
    config.write_text("[risk]\nmax_net_delta = 5000.0\n")
    result = check_configuration(environ=environ)
    assert result.status is CheckStatus.FAIL
    assert "max_net_delta" in result.detail and str(config) in result.fix


def test_an_invalid_configuration_fails_naming_it() -> None:
    result = check_configuration(
        [("Kev client", lambda: KevClientConfig(max_tokens=0)), ("fine", dict)]
    )
    assert result.status is CheckStatus.FAIL
    assert result.detail.startswith("invalid: Kev client: KevClientConfig.max_tokens")
