"""What a test needs to know of the machine's GPU."""

from __future__ import annotations

import ctypes

import pytest


def cuda_driver_present() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def needs_no_cuda(why: str) -> pytest.MarkDecorator:
    """Skip where a CUDA driver is present: there `why` (the test expects CPU) may not hold."""
    return pytest.mark.skipif(cuda_driver_present(), reason=f"a CUDA driver is present: {why}")
