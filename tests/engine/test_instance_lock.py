"""The lock that keeps a second engine off a journal or an account: held by another process it
refuses naming that process; left by a process that died it is taken over and said."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.cli import checkout_env
from support.locks import held_by_another_process

from engine.instance_lock import EngineLocked, InstanceLock, account_lock_path

DIE_HOLDING = """
import os, sys
from pathlib import Path
from engine.instance_lock import InstanceLock
InstanceLock(Path(sys.argv[1]), "the journal").acquire()
os._exit(0)  # gone without releasing: the OS drops the flock, the pid stays in the file
"""


def test_a_lock_another_process_holds_is_refused_naming_its_pid(tmp_path):
    path = tmp_path / "journal.sqlite.lock"
    with held_by_another_process(path) as holder, pytest.raises(EngineLocked) as refused:
        InstanceLock(path, "the journal J").acquire()
    assert str(refused.value) == (
        f"the journal J is in use by another engine (pid {holder}; lock {path}): stop that "
        "one first"
    )
    # The holder released it as it ended: free and clean.
    lock = InstanceLock(path, "the journal J")
    assert lock.acquire() is None
    lock.release()


def test_a_lock_left_by_a_dead_process_is_taken_over_and_said(tmp_path):
    path = tmp_path / "journal.sqlite.lock"
    died = subprocess.Popen([sys.executable, "-c", DIE_HOLDING, str(path)], env=checkout_env())
    assert died.wait(timeout=30) == 0
    lock = InstanceLock(path, "the journal J")
    assert lock.acquire() == (
        f"took over the lock on the journal J left by pid {died.pid}, which ended without "
        "stopping: check the venue for its orders"
    )
    assert path.read_text() == f"{os.getpid()}\n"
    lock.release()
    assert path.read_text() == ""  # a clean end leaves no pid to take over
    again = InstanceLock(path, "the journal J")
    assert again.acquire() is None
    again.release()


def test_an_accounts_lock_is_named_by_a_hash_of_its_key_never_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    key = "bg_0123456789abcdef0123456789abcdef"
    path = account_lock_path(key)
    assert path.parent == tmp_path / "hft-console" / "accounts"
    assert key not in str(path) and path == account_lock_path(key)
    assert path != account_lock_path(key + "x")
