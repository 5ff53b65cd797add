"""Number, time and size formats shared by the panes (fixed widths where columns align)."""

from __future__ import annotations

import math
import time

GIB = 1 << 30
MIB = 1 << 20


def clock_ms(epoch_ms: int) -> str:
    """HH:MM:SS.mmm, UTC."""
    seconds, millis = divmod(int(epoch_ms), 1000)
    return time.strftime("%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}"


def clock_ns(epoch_ns: int) -> str:
    return clock_ms(epoch_ns // 1_000_000)


def duration_us(value: float) -> str:
    """A latency in its natural unit, at most 8 characters."""
    if not math.isfinite(value):
        return "-"
    if value < 1_000:
        return f"{value:.1f} µs" if value < 100 else f"{value:.0f} µs"
    if value < 1_000_000:
        return f"{value / 1e3:.1f} ms" if value < 100_000 else f"{value / 1e3:.0f} ms"
    return f"{value / 1e6:.2f} s"


def duration_ms(value: float) -> str:
    return duration_us(value * 1e3)


def age_ms(value: float | None) -> str:
    """How long ago the last frame came: "<1 s" while frames flow (milliseconds that change
    with every redraw would be noise), then how long the feed has been quiet."""
    if value is None:
        return "no frame"
    if value < 1_000:
        return "<1 s"
    return duration_ms(value)


def signed(value: float, decimals: int) -> str:
    return f"{value:+,.{decimals}f}"


def price(value: float, decimals: int) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:,.{decimals}f}"


def size(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def gib(value: int | None) -> str:
    if value is None:
        return "n/a"
    if value < GIB:
        return f"{value / MIB:.0f} MiB"
    return f"{value / GIB:.1f} GiB"


def gib_of(used: int, limit: int) -> str:
    """Used against a limit, both in GiB: "4.3/4.4 GiB"."""
    return f"{used / GIB:.1f}/{limit / GIB:.1f} GiB"


def count(value: int) -> str:
    return f"{value:,}"


def byte_rate(value: float) -> str:
    """Bytes a second to two significant digits, so it changes only when it moves:
    "850 B/s", "9.8 kB/s", "12 kB/s"."""
    for unit, scale in (("MB/s", 1e6), ("kB/s", 1e3)):
        if value >= scale * 0.995:
            scaled = value / scale
            return f"{scaled:.1f} {unit}" if scaled < 9.95 else f"{scaled:.0f} {unit}"
    return f"{value:.2g} B/s" if value < 100 else f"{round(value, -1):.0f} B/s"
