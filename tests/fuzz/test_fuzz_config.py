"""Fuzzing configuration parsing: hostile TOML files and environment variables raise only
`SettingsError`, naming the key, and accepted values come out as written."""

from __future__ import annotations

import pytest
from fuzz_config_target import DEFAULT_TEXT, check_source, config_files, environments
from fuzz_tally import InvariantViolation, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st


def test_the_default_file_loads_and_builds_every_config(config_target) -> None:
    assert config_target.check_load(DEFAULT_TEXT.encode(), {}) is not None


def test_the_key_check_catches_an_error_that_does_not_name_the_key(config_target) -> None:
    with pytest.raises(InvariantViolation, match="does not name"):
        config_target.check_load(b"[gpu]\ninterval_s = 'x'\n", {}, ("laya", "device_id"))


@pytest.mark.parametrize(
    ("content", "key"),
    [
        (b"a = " + b"[" * 2000 + b"]" * 2000 + b"\n", None),
        (b"[laya]\ngpu_mem_limit_gib = inf\n", ("laya", "gpu_mem_limit_gib")),
        (b"[gpu]\nkev_gib = 1e300\n", ("gpu", "kev_gib")),
        (DEFAULT_TEXT.replace("gpu_mem_limit_gib = 2.0", "gpu_mem_limit_gib = nan").encode(),
         ("laya", "gpu_mem_limit_gib")),
    ],
    ids=["deep-array", "infinite-gib", "overflowing-gib", "nan-gib-in-full-file"],
)  # fmt: skip
def test_files_that_once_escaped_are_settings_errors(config_target, content, key) -> None:
    assert config_target.check_load(content, {}, key) is None


@fuzz_settings(ci_examples=150)
@given(config_files())
def test_hostile_files_raise_only_settings_errors_naming_the_key(config_target, file) -> None:
    content, key = file
    config_target.check_load(content, {}, key)


@fuzz_settings(ci_examples=150)
@given(environments())
def test_hostile_environment_raises_only_settings_errors(config_target, env) -> None:
    environ, path = env
    settings = config_target.check_load(b"", environ, path)
    if settings is not None:
        check_source(settings, environ, path)


@fuzz_settings(ci_examples=100)
@given(st.binary(max_size=300))
def test_raw_bytes_files_raise_only_settings_errors(config_target, content) -> None:
    config_target.check_load(content, {})
