"""Loading Bitget credentials from the environment and from real files with real permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine.bitget.credentials import (
    ENV_API_KEY,
    ENV_API_SECRET,
    ENV_PASSPHRASE,
    CredentialsError,
    default_credentials_path,
    load_credentials,
    mask_api_key,
)

LIVE_KEY = "bg_live0123456789abcdef0123456789"
LIVE_SECRET = "L1veS3cretValue9f8e7d6c5b4a39281706f5e4d3c2b1a0"
LIVE_PASSPHRASE = "LivePass7734"
DEMO_KEY = "bg_demo0123456789abcdef0123456789"
DEMO_SECRET = "D3moS3cretValue0a1b2c3d4e5f60718293a4b5c6d7e8f9"
DEMO_PASSPHRASE = "DemoPass1188"
SECRETS = (LIVE_SECRET, LIVE_PASSPHRASE, DEMO_SECRET, DEMO_PASSPHRASE)

BOTH_MODES = f"""
[live]
api_key = "{LIVE_KEY}"
api_secret = "{LIVE_SECRET}"
passphrase = "{LIVE_PASSPHRASE}"

[demo]
api_key = "{DEMO_KEY}"
api_secret = "{DEMO_SECRET}"
passphrase = "{DEMO_PASSPHRASE}"
"""

ENVIRONMENT = {ENV_API_KEY: LIVE_KEY, ENV_API_SECRET: LIVE_SECRET, ENV_PASSPHRASE: LIVE_PASSPHRASE}


@pytest.fixture
def private_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "config"
    directory.mkdir(mode=0o700)
    return directory


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def refused(**kwargs: object) -> str:
    """The error message of a refused load, checked to quote no secret."""
    with pytest.raises(CredentialsError) as caught:
        load_credentials(**kwargs)  # type: ignore[arg-type]
    message = str(caught.value)
    for secret in SECRETS:
        assert secret not in message
    return message


def test_a_0600_file_gives_the_key_set_of_the_mode(private_dir: Path) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES)
    live = load_credentials(environ={}, path=path)
    assert (live.api_key, live.api_secret, live.passphrase) == (
        LIVE_KEY,
        LIVE_SECRET,
        LIVE_PASSPHRASE,
    )
    demo = load_credentials(environ={}, path=path, mode="demo")
    assert (demo.api_key, demo.api_secret, demo.passphrase) == (
        DEMO_KEY,
        DEMO_SECRET,
        DEMO_PASSPHRASE,
    )


def test_a_read_only_0400_file_is_accepted(private_dir: Path) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES, 0o400)
    assert load_credentials(environ={}, path=path).api_key == LIVE_KEY


@pytest.mark.parametrize("mode", [0o640, 0o644, 0o604, 0o660, 0o606, 0o620, 0o610])
def test_any_group_or_other_bit_is_refused_with_the_mode_and_the_fix(
    private_dir: Path, mode: int
) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES, mode)
    message = refused(environ={}, path=path)
    assert f"mode {mode:04o}" in message
    assert f"chmod 600 {path}" in message


def test_a_symlink_to_a_looser_file_is_refused_naming_the_target(private_dir: Path) -> None:
    target = write(private_dir / "real.toml", BOTH_MODES, 0o644)
    link = private_dir / "credentials.toml"
    link.symlink_to(target)
    message = refused(environ={}, path=link)
    assert f"-> {target}" in message and f"chmod 600 {target}" in message


def test_a_symlink_to_a_private_file_is_followed(private_dir: Path) -> None:
    target = write(private_dir / "real.toml", BOTH_MODES)
    link = private_dir / "credentials.toml"
    link.symlink_to(target)
    assert load_credentials(environ={}, path=link).api_secret == LIVE_SECRET


def test_a_directory_or_fifo_is_not_a_credentials_file(private_dir: Path) -> None:
    directory = private_dir / "credentials.toml"
    directory.mkdir(mode=0o700)
    assert "not a regular file" in refused(environ={}, path=directory)
    fifo = private_dir / "fifo.toml"
    os.mkfifo(fifo, 0o600)
    assert "not a regular file" in refused(environ={}, path=fifo)


def test_a_file_in_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    path = write(shared / "credentials.toml", BOTH_MODES)
    message = refused(environ={}, path=path)
    assert f"chmod go-w {shared}" in message and "0777" in message
    os.chmod(shared, 0o777 | stat.S_ISVTX)  # sticky, like /tmp: others cannot swap our file
    assert load_credentials(environ={}, path=path).api_key == LIVE_KEY


def test_a_file_owned_by_someone_else_is_refused(private_dir: Path) -> None:
    if os.geteuid() == 0:
        path = write(private_dir / "credentials.toml", BOTH_MODES)
        os.chown(path, 65534, -1)
    else:
        # Not root: a file we cannot chown away, so use one root owns.
        path = Path("/etc/passwd")
        if path.stat().st_uid != 0:
            pytest.fail("expected /etc/passwd to be owned by root")
    message = refused(environ={}, path=path)
    assert "owned by uid" in message and "not by you" in message


def test_the_environment_comes_first_and_needs_all_three(private_dir: Path) -> None:
    loaded = load_credentials(environ=ENVIRONMENT)
    assert (loaded.api_key, loaded.api_secret, loaded.passphrase) == (
        LIVE_KEY,
        LIVE_SECRET,
        LIVE_PASSPHRASE,
    )
    partial = {ENV_API_KEY: LIVE_KEY, ENV_API_SECRET: LIVE_SECRET}
    message = refused(environ=partial)
    assert ENV_PASSPHRASE in message and "missing" in message
    assert LIVE_KEY not in message
    empty_passphrase = {**ENVIRONMENT, ENV_PASSPHRASE: ""}
    assert ENV_PASSPHRASE in refused(environ=empty_passphrase)


def test_an_empty_environment_falls_back_to_the_file(private_dir: Path) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES)
    blank = {ENV_API_KEY: "", ENV_API_SECRET: "", ENV_PASSPHRASE: ""}
    assert load_credentials(environ=blank, path=path, mode="demo").api_key == DEMO_KEY


def test_credentials_both_in_the_environment_and_a_given_file_are_ambiguous(
    private_dir: Path,
) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES)
    message = refused(environ=ENVIRONMENT, path=path)
    assert "both in the environment" in message and str(path) in message


def test_an_environment_value_with_a_stray_newline_names_the_variable() -> None:
    message = refused(environ={**ENVIRONMENT, ENV_API_SECRET: LIVE_SECRET + "\n"})
    assert ENV_API_SECRET in message and "newline" in message


def test_no_credentials_anywhere_says_how_to_provide_them(
    private_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(private_dir))
    expected = private_dir / "hft-console" / "credentials.toml"
    assert default_credentials_path() == expected
    message = refused(environ={})
    assert str(expected) in message and "chmod 600" in message
    assert ENV_API_KEY in message and ENV_API_SECRET in message and ENV_PASSPHRASE in message
    (private_dir / "hft-console").mkdir(mode=0o700)
    write(expected, BOTH_MODES)
    assert load_credentials(environ={}).api_key == LIVE_KEY


def test_a_missing_mode_table_names_the_tables_found(private_dir: Path) -> None:
    live_only = BOTH_MODES.split("[demo]")[0]
    path = write(private_dir / "credentials.toml", live_only)
    message = refused(environ={}, path=path, mode="demo")
    assert "no [demo] table" in message and "[live]" in message


def test_missing_and_unknown_fields_are_named(private_dir: Path) -> None:
    no_passphrase = f'[live]\napi_key = "{LIVE_KEY}"\napi_secret = "{LIVE_SECRET}"\n'
    path = write(private_dir / "credentials.toml", no_passphrase)
    assert "[live]: missing passphrase" in refused(environ={}, path=path)
    typo = BOTH_MODES.replace("api_key", "apikey", 1)
    write(path, typo)
    assert "unknown key 'apikey'" in refused(environ={}, path=path)


def test_keys_outside_a_table_and_unknown_tables_are_refused(private_dir: Path) -> None:
    path = write(private_dir / "credentials.toml", f'api_key = "{LIVE_KEY}"\n' + BOTH_MODES)
    assert "outside a table" in refused(environ={}, path=path)
    write(path, BOTH_MODES + '\n[paper]\napi_key = "x"\n')
    assert "unexpected entry 'paper'" in refused(environ={}, path=path)


def test_a_value_that_is_not_a_string_is_refused_by_type(private_dir: Path) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES.replace('"LivePass7734"', "7734"))
    message = refused(environ={}, path=path)
    assert "passphrase must be a quoted string, got a int" in message
    assert "7734" not in message


def test_bad_syntax_gives_the_position_but_never_the_line(private_dir: Path) -> None:
    broken = BOTH_MODES.replace(f'"{LIVE_SECRET}"', f"{LIVE_SECRET}")  # unquoted
    path = write(private_dir / "credentials.toml", broken)
    message = refused(environ={}, path=path)
    assert "not valid TOML (at line 4, column" in message
    for fragment in (LIVE_SECRET[:4], LIVE_SECRET[-4:]):
        assert fragment not in message


def test_control_characters_in_a_file_value_are_refused_by_field(private_dir: Path) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES.replace(LIVE_SECRET, "ab\\u0007cd"))
    message = refused(environ={}, path=path)
    assert "[live]: api_secret must be printable ASCII" in message


def test_not_utf8_and_oversized_files_are_refused(private_dir: Path) -> None:
    path = private_dir / "credentials.toml"
    path.write_bytes(b'[live]\napi_key = "\xff\xfe"\n')
    os.chmod(path, 0o600)
    assert "not UTF-8 text" in refused(environ={}, path=path)
    write(path, BOTH_MODES + "#" * 70_000)
    assert "bytes; a credentials file is under" in refused(environ={}, path=path)


def test_a_missing_explicit_file_is_named(private_dir: Path) -> None:
    message = refused(environ={}, path=private_dir / "nope.toml")
    assert f"no credentials file at {private_dir / 'nope.toml'}" in message


def test_an_unknown_mode_is_refused(private_dir: Path) -> None:
    path = write(private_dir / "credentials.toml", BOTH_MODES)
    assert "mode must be demo or live" in refused(environ={}, path=path, mode="paper")


def test_the_masked_key_shows_its_ends_only() -> None:
    assert mask_api_key(LIVE_KEY) == "bg_…6789"
    assert mask_api_key("short-key") == "…"
