"""Fuzz targets as fixtures, one per module: each is long-lived, as the code it drives is in a
running engine (a parser that has seen earlier frames, a gateway that has taken earlier
commands).

`HYPOTHESIS_PROFILE=full` runs every fuzz test with 100,000 examples (`fuzz_tally.
fuzz_settings`); the default `ci` profile keeps tests/fuzz under a minute. `scripts/fuzz` is the
documented full run, with atheris as well.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fuzz_config_target import ConfigTarget
from fuzz_frame_target import FrameTarget
from fuzz_kev_target import KevTarget
from fuzz_rest_target import RestTarget


@pytest.fixture(scope="module")
def frame_target() -> Iterator[FrameTarget]:
    target = FrameTarget()
    yield target
    target.close()


@pytest.fixture(scope="module")
def rest_target() -> RestTarget:
    return RestTarget()


@pytest.fixture(scope="module")
def kev_target() -> KevTarget:
    return KevTarget()


@pytest.fixture(scope="module")
def config_target(tmp_path_factory) -> ConfigTarget:
    return ConfigTarget(tmp_path_factory.mktemp("fuzz-config"))
