import os
import stat

import pytest

from engine.user_files import (
    APP_DIR_NAME,
    OutputRefused,
    check_output_file,
    check_output_folder,
    content_digest,
    folder_made_whole,
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


def test_a_missing_folder_is_made(tmp_path):
    target = tmp_path / "models" / "day1" / "model.onnx"
    with replacing(target) as scratch:
        scratch.write_bytes(b"new")
    assert target.read_bytes() == b"new"


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


def test_an_output_file_is_refused_before_any_work_for_every_way_it_could_lose_a_file(tmp_path):
    kept = tmp_path / "notes.md"
    kept.write_text("mine")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    (tmp_path / "plain").write_text("a file")
    for path, message in (
        (kept, "--out notes.md: exists; add --force to replace it"),
        (tmp_path, "is a folder; give the name of a file to write"),
        (tmp_path / "dangling", f"is a symbolic link to {tmp_path / 'gone'}, which does not exist"),
        (tmp_path / "plain" / "model.onnx", f"{tmp_path / 'plain'} is a file, not a folder"),
        (tmp_path / "plain" / "deeper" / "model.onnx", f"{tmp_path / 'plain'} is a file"),
    ):
        name = "--out notes.md" if path == kept else f"--out {path}"
        with pytest.raises(OutputRefused) as refused:
            check_output_file(path, name)
        text = str(refused.value)
        assert text.startswith(f"{name}: ") and message in text and "\n" not in text
    assert kept.read_text() == "mine"
    assert check_output_file(kept, "--out", force=True) == kept
    assert check_output_file(tmp_path / "new" / "model.onnx", "--out")  # made when written
    with pytest.raises(OutputRefused, match="give a name that is not taken"):
        check_output_file(kept, "--out", can_force=False)
    with pytest.raises(OutputRefused, match="is one of the files this command reads"):
        check_output_file(kept, "--out", force=True, inputs=[tmp_path / "x", kept])


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in any folder")
def test_an_output_in_a_folder_this_user_cannot_write_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(OutputRefused, match=f"cannot write in the folder {locked}"):
        check_output_file(locked / "model.onnx", "--out")


def test_an_output_folder_must_be_new_or_empty(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "report.html").write_text("an earlier report")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    for path, message in (
        (tmp_path / "file", "is a file, not a folder"),
        (tmp_path / "full", "is a folder with files in it"),
        (tmp_path / "link", "is a symbolic link to"),
        (tmp_path / "file" / "report", f"{tmp_path / 'file'} is a file, not a folder"),
    ):
        with pytest.raises(OutputRefused, match=f"--report {path}: .*{message}"):
            check_output_folder(path, f"--report {path}")
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "empty", tmp_path / "new" / "report"):
        assert check_output_folder(path, "--report") == path


def test_the_same_bytes_under_another_name_have_the_same_digest(tmp_path):
    first, copy, other = tmp_path / "a.gz", tmp_path / "copy.gz", tmp_path / "b.gz"
    content = os.urandom(3 << 20)  # longer than the two ends the digest reads
    first.write_bytes(content)
    copy.write_bytes(content)
    other.write_bytes(content[:-1] + bytes([content[-1] ^ 1]))
    assert content_digest(first) == content_digest(copy) != content_digest(other)


def test_a_folder_made_whole_appears_complete_or_not_at_all(tmp_path):
    report = tmp_path / "out" / "report"
    with folder_made_whole(report) as scratch:
        (scratch / "a.txt").write_text("a")
        assert not report.exists()  # nothing half-written where a reader looks
    assert (report / "a.txt").read_text() == "a"
    other = tmp_path / "other"
    other.mkdir()  # an empty folder (checked before the work) is replaced
    with pytest.raises(RuntimeError), folder_made_whole(other) as scratch:
        (scratch / "b.txt").write_text("b")
        raise RuntimeError("the run failed")
    assert other.is_dir() and not any(other.iterdir())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["other", "out"]
