"""`engine.settings.layers`: a table with no built-in values needs every key."""

from __future__ import annotations

import pytest
from settings_files import NO_ENV, problems_of, write

from engine.settings.reader import load_settings
from engine.settings.sources import SettingsError


def test_a_new_symbol_needs_every_key(tmp_path):
    path = write(tmp_path, "[risk.symbols.SOLUSDT]\nmax_position = 10\n")
    with pytest.raises(SettingsError) as excinfo:
        load_settings(path=path, environ=NO_ENV)
    (problem,) = problems_of(excinfo)
    assert problem.startswith(
        f"{path} line 2: [risk.symbols.SOLUSDT] lacks max_notional_usdt, max_order_size, "
        "max_position_ceiling"
    )
