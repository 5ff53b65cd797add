"""GPU memory: a bar split Kev / Laya / other / free against the budget, per-process lines,
an alert when headroom falls below the floor, or why there is no GPU to show."""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.text import Text

from console.view import ConsoleSnapshot, VramView
from console.widgets import format as fmt
from console.widgets.lines import LinePane

_PARTS = (
    # (field, label, glyph, component): distinct glyphs keep the bar legible without colour.
    ("kev_bytes", "Kev", "█", "vram--kev"),
    ("laya_bytes", "Laya", "▓", "vram--laya"),
    ("other_bytes", "other", "▒", "vram--other"),
)
_FREE_GLYPH = "░"


def split_cells(parts: list[int], total: int, width: int) -> list[int]:
    """Cells per part, largest remainders first, so the cells add up to `width` exactly."""
    if total <= 0 or width <= 0:
        return [0] * len(parts)
    exact = [part / total * width for part in parts]
    cells = [int(value) for value in exact]
    spare = width - sum(cells)
    by_remainder = sorted(range(len(parts)), key=lambda i: exact[i] - cells[i], reverse=True)
    for index in by_remainder[:spare]:
        cells[index] += 1
    return cells


class VramPane(LinePane[VramView]):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "vram--kev",
        "vram--laya",
        "vram--other",
        "vram--free",
        "vram--alert",
        "vram--label",
    }
    pane_id = "vram"
    pane_title = "VRAM"
    budget = "vram_s"

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> VramView:
        return snapshot.vram

    def urgent(self, shown: VramView, view: VramView) -> bool:
        """The GPU appearing or going, and the headroom alert, at once."""
        before, after = shown.sample, view.sample
        return (before.available, before.headroom_low) != (after.available, after.headroom_low)

    def rows(self, view: VramView, width: int, height: int) -> list[Text]:
        sample, budget = view.sample, view.budget
        if not sample.available:
            reason = textwrap.wrap(sample.reason, max(10, width)) or [""]
            return [
                Text("no NVIDIA GPU", self.style("vram--alert")),
                *(Text(line, self.style("vram--label")) for line in reason),
            ]
        head = Text(f"{sample.device_name} · {fmt.gib(sample.total_bytes)}")
        if sample.headroom_low:
            head.append("  ! headroom below the floor", self.style("vram--alert"))
        lines = [head, self._bar(view, width), self._usage(view)]
        free = Text(f"{_FREE_GLYPH} ", self.style("vram--free"))
        free.append(
            f"free {fmt.gib(sample.free_bytes)}, floor {fmt.gib(budget.free_floor_bytes)}",
            self.style("vram--alert" if sample.headroom_low else "vram--label"),
        )
        lines.append(free)
        if sample.per_process:
            lines.append(self._processes(view))
        else:
            lines.append(
                Text(f"device totals only: {sample.per_process_note}", self.style("vram--label"))
            )
        if sample.kev_note:
            lines.append(Text(sample.kev_note, self.style("vram--label")))
        return lines

    def _bar(self, view: VramView, width: int) -> Text:
        sample = view.sample
        if sample.per_process:
            parts = [getattr(sample, field) or 0 for field, _, _, _ in _PARTS]
            glyphs = [(glyph, component) for _, _, glyph, component in _PARTS]
        else:
            parts = [sample.used_bytes]
            glyphs = [(_PARTS[-1][2], _PARTS[-1][3])]
        parts.append(sample.free_bytes)
        glyphs.append((_FREE_GLYPH, "vram--free"))
        bar = Text()
        for cells, (glyph, component) in zip(
            split_cells(parts, sum(parts), width), glyphs, strict=True
        ):
            bar.append(glyph * cells, self.style(component))
        return bar

    def _usage(self, view: VramView) -> Text:
        """Each user's share against its budget; over budget is marked `!`."""
        sample, budget = view.sample, view.budget
        if not sample.per_process:
            text = Text(f"{_PARTS[-1][2]} ", self.style(_PARTS[-1][3]))
            text.append(f"used {fmt.gib(sample.used_bytes)}", self.style("vram--label"))
            return text
        budgets = {"kev_bytes": budget.kev_bytes, "laya_bytes": budget.laya_bytes}
        usage = Text()
        for field, label, glyph, component in _PARTS:
            used = getattr(sample, field) or 0
            limit = budgets.get(field)
            over = limit is not None and used > limit
            usage.append(f"{glyph} ", self.style(component))
            text = f"{label} " + (fmt.gib(used) if limit is None else fmt.gib_of(used, limit))
            usage.append(
                text + ("!" if over else ""), self.style("vram--alert" if over else "vram--label")
            )
            usage.append("  ")
        usage.rstrip()
        return usage

    def _processes(self, view: VramView) -> Text:
        sample = view.sample
        if not sample.processes:
            return Text("no process holds GPU memory", self.style("vram--label"))
        roles = {sample.laya_pid: "Laya ", sample.kev_pid: "Kev "}
        return Text(
            " · ".join(
                f"{roles.get(process.pid, '')}{process.pid} {fmt.gib(process.used_bytes)}"
                for process in sample.processes
            ),
            self.style("vram--label"),
        )
