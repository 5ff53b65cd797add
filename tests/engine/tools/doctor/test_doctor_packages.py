"""The Python and packages checks on this installation."""

from __future__ import annotations

import sys

import numpy as np

from engine.tools.doctor.packages import check_packages, check_python
from engine.tools.doctor.report import CheckStatus


def test_python_and_packages_are_ok_on_this_installation() -> None:
    python = check_python()
    assert python.status is CheckStatus.OK
    assert ".".join(map(str, sys.version_info[:3])) in python.detail
    packages = check_packages()
    assert packages.status is CheckStatus.OK, packages.detail
    assert f"numpy {np.__version__}" in packages.detail
    assert "onnxruntime" not in packages.detail  # the onnxruntime check's business
