"""The progress bar the long-running commands draw on a terminal's stderr."""

from __future__ import annotations

BAR_WIDTH = 24


def progress_bar(fraction: float) -> str:
    """`[#########...............]  38%`."""
    filled = int(min(max(fraction, 0.0), 1.0) * BAR_WIDTH)
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction:4.0%}"
