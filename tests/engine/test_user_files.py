import stat

import pytest

from engine.user_files import (
    APP_DIR_NAME,
    replacing,
    user_cache_dir,
    user_config_dir,
    user_data_dir,
    user_log_dir,
)


def _beside(target):
    return sorted(path.name for path in target.parent.iterdir())


def test_the_new_file_replaces_the_old_one_whole_with_its_mode(tmp_path):
    target = tmp_path / "model.onnx"
    target.write_bytes(b"old")
    with replacing(target, mode=0o640) as scratch:
        assert scratch.parent == tmp_path and scratch.read_bytes() == b""
        scratch.write_bytes(b"new")
        assert target.read_bytes() == b"old"  # not before the block ends
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _beside(target) == ["model.onnx"]


def test_after_an_error_the_old_file_stands_and_nothing_is_left_beside_it(tmp_path):
    target = tmp_path / "config.toml"
    target.write_text("kept")
    with pytest.raises(ValueError, match="does not read back"), replacing(target) as scratch:
        scratch.write_text("half")
        raise ValueError("does not read back")
    assert target.read_text() == "kept"
    assert _beside(target) == ["config.toml"]


def test_after_an_error_a_new_file_is_not_created(tmp_path):
    target = tmp_path / "out.gz"
    with pytest.raises(KeyboardInterrupt), replacing(target) as scratch:
        scratch.write_bytes(b"partial")
        raise KeyboardInterrupt
    assert _beside(target) == []


def test_the_folder_must_exist(tmp_path):
    with pytest.raises(FileNotFoundError), replacing(tmp_path / "missing" / "file"):
        pass


def test_every_user_folder_is_the_apps_own(monkeypatch, tmp_path):
    for variable, folder in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
    ):
        monkeypatch.setenv(variable, str(tmp_path / folder))
    assert user_config_dir() == tmp_path / "config" / APP_DIR_NAME
    assert user_data_dir() == tmp_path / "data" / APP_DIR_NAME
    assert user_cache_dir() == tmp_path / "cache" / APP_DIR_NAME
    assert user_log_dir() == tmp_path / "state" / APP_DIR_NAME / "log"
