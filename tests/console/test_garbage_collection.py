"""The console's collections: Textual's strips freed without the cycle collector."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from console.garbage_collection import break_strip_cycles

WIDTH = 40


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The cycle collector off and its garbage kept, so that what only it frees is seen."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def strips_left_to_the_collector(use: Callable[[Strip], object]) -> int:
    strip = Strip([Segment("x" * WIDTH, Style(bold=True))], WIDTH)
    use(strip)
    del strip
    gc.collect()
    left = sum(1 for item in gc.garbage if isinstance(item, Strip))
    gc.garbage.clear()
    return left


USES: dict[str, Callable[[Strip], object]] = {
    "divided at its end (the compositor, every line)": lambda strip: strip.divide([WIDTH]),
    "cropped and extended to itself (logs)": lambda strip: strip.crop_extend(0, WIDTH, None),
}


@pytest.mark.parametrize("use", USES.values(), ids=USES.keys())
def test_textual_leaves_its_strips_to_the_collector(collector_off, use):
    """What the fix is for: if Textual stops caching a strip in itself, this fails and
    `break_strip_cycles` can go."""
    if getattr(Strip.divide, "breaks_cycles", False):
        pytest.skip("the fix is already in place in this process")
    assert strips_left_to_the_collector(use) == 1


@pytest.mark.parametrize("use", USES.values(), ids=USES.keys())
def test_fixed_strips_are_freed_at_once(collector_off, use):
    break_strip_cycles()
    assert strips_left_to_the_collector(use) == 0


def test_fixed_strips_divide_and_crop_as_before():
    break_strip_cycles()
    break_strip_cycles()  # idempotent: the second call wraps nothing again
    strip = Strip([Segment("a" * 10, Style(bold=True)), Segment("b" * 10)], 20)
    assert list(strip.divide([20])) == [strip]
    assert [part.text for part in strip.divide([5, 20])] == ["aaaaa", "aaaaabbbbbbbbbb"]
    assert strip.crop_extend(0, 20, None) is strip
    assert strip.crop_extend(5, 25, None).text == "aaaaabbbbbbbbbb" + " " * 5
