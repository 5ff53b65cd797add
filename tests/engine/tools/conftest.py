"""What the backtest and cluster tests share: one cache of the compiled engine for the session,
so the suite builds it once (about a minute)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def compiled_cache(tmp_path_factory) -> Path:
    """An XDG_CACHE_HOME for `--compiled` runs: the build lands in hft-console/compiled/."""
    return tmp_path_factory.mktemp("compiled-cache")
