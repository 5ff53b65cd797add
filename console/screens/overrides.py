"""The risk override form: every limit at once (and the hedge ratio and each quoted symbol's
beta in a book with a hedge), checked here by the engine's own rules (`RiskOverrides.problems`)
before anything is sent; what the operator changed is applied by the engine as a whole or not
at all."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.widgets import Input, Label, Static

from console.screens.dialog import LiveDialog
from console.view import TradingView
from engine.risk.limits import OverrideBounds
from engine.risk.overrides import RiskOverrides
from engine.units import coin, exact


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError
    return value


def _integer(text: str) -> int:
    return int(text)


def _shown(value: float) -> str:
    """Every digit of the value in force, so applying an untouched form changes nothing."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def _field_values(overrides: RiskOverrides) -> dict[str, float]:
    """Each field's value in `overrides`, by the field's input id."""
    values = {f"max-position-{symbol}": size for symbol, size in overrides.max_position.items()}
    values |= {
        "max-net-delta": overrides.max_net_delta,
        "max-slippage": overrides.max_slippage_bps,
        "orders-per-second": overrides.orders_per_second,
        "orders-per-minute": overrides.orders_per_minute,
        "risk-scale": overrides.risk_scale,
    }
    if overrides.hedge_ratio is not None:
        values["hedge-ratio"] = overrides.hedge_ratio
    return values | {f"beta-{symbol}": beta for symbol, beta in overrides.betas.items()}


def _band(edges: tuple[float, float]) -> str:
    """A [low, high] band as the field shows it: `0.25..1`."""
    return "..".join(exact(edge) for edge in edges)


class OverridesScreen(LiveDialog[RiskOverrides | None]):
    """Prefilled with the limits in force, kept to them while open (`follow`). Enter (or
    ctrl+s) applies; escape cancels. Dismisses with the limits the operator changed (the
    others None), or None when cancelled or nothing changed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="overrides.cancel"),
        Binding("ctrl+s", "apply", "Apply", id="overrides.apply"),
    ]

    def __init__(self, current: RiskOverrides, bounds: OverrideBounds) -> None:
        super().__init__()
        self._current = current
        self._bounds = bounds
        # (input id, label, ceiling text, parser)
        self._fields: list[tuple[str, str, str, Callable[[str], float]]] = [
            (
                f"max-position-{symbol}",
                f"max position {symbol}",
                f"<= {coin(symbol, bounds.max_position.get(symbol, math.inf))}",
                _number,
            )
            for symbol in current.max_position
        ]
        self._fields += [
            (
                "max-net-delta",
                "max net delta USDT",
                f"<= {bounds.max_net_delta:g}",
                _number,
            ),
            (
                "max-slippage",
                "max slippage bps",
                f"<= {bounds.max_slippage_bps:g}",
                _number,
            ),
            (
                "orders-per-second",
                "orders per second",
                f"1..{bounds.max_orders_per_second}",
                _integer,
            ),
            (
                "orders-per-minute",
                "orders per minute",
                f"1..{bounds.max_orders_per_minute}",
                _integer,
            ),
            ("risk-scale", "risk scale", "0..1", _number),
        ]
        if bounds.hedge_ratio is not None and current.hedge_ratio is not None:
            self._fields.append(("hedge-ratio", "hedge ratio", _band(bounds.hedge_ratio), _number))
        self._fields += [
            (f"beta-{symbol}", f"beta {symbol}", _band(bounds.betas[symbol]), _number)
            for symbol in current.betas
        ]

    def compose(self) -> ComposeResult:
        values = _field_values(self._current)
        with Vertical(classes="dialog overrides"):
            yield Static("Risk overrides", classes="dialog-title")
            with Grid(classes="override-grid"):
                for field_id, label, ceiling, parser in self._fields:
                    yield Label(label)
                    yield Input(
                        _shown(values[field_id]),
                        id=field_id,
                        type="integer" if parser is _integer else "number",
                        select_on_focus=True,
                    )
                    yield Label(ceiling, classes="override-bound")
            yield Static("", id="overrides-error", classes="dialog-error")
            yield Static(
                "tab  next field      enter / ctrl+s  apply all      esc  cancel",
                classes="dialog-keys",
            )

    def follow(self, trading: TradingView) -> None:
        """The limits in force changed while the form is open (Kev lowers them too): a field
        the operator has not edited takes the new value, so applying cannot put an old one
        back."""
        latest = trading.overrides
        if latest == self._current:
            return
        if self.is_mounted:
            before, after = _field_values(self._current), _field_values(latest)
            for field_id, *_ in self._fields:
                field = self.query_one(f"#{field_id}", Input)
                if field.value.strip() == _shown(before[field_id]):
                    field.value = _shown(after[field_id])
            self.query_one("#overrides-error", Static).update(
                "The limits in force changed meanwhile: the fields not edited show them now."
            )
        self._current = latest

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_apply()

    def action_apply(self) -> None:
        values: dict[str, float] = {}
        problems: list[str] = []
        for field_id, label, _, parser in self._fields:
            text = self.query_one(f"#{field_id}", Input).value.strip()
            try:
                values[field_id] = parser(text)
            except ValueError:
                kind = "a whole number" if parser is _integer else "a number"
                problems.append(f"{label}: {text!r} is not {kind}")
        if not problems:
            overrides = RiskOverrides(
                max_position={
                    symbol: values[f"max-position-{symbol}"]
                    for symbol in self._current.max_position
                },
                max_net_delta=values["max-net-delta"],
                max_slippage_bps=values["max-slippage"],
                orders_per_second=int(values["orders-per-second"]),
                orders_per_minute=int(values["orders-per-minute"]),
                risk_scale=values["risk-scale"],
                hedge_ratio=values.get("hedge-ratio"),
                betas={symbol: values[f"beta-{symbol}"] for symbol in self._current.betas},
            )
            problems = overrides.problems(self._bounds)
        if problems:
            self.query_one("#overrides-error", Static).update("\n".join(problems))
            return
        # Only the operator's edits go: a limit Kev moves after the form's last refresh stays.
        edits = overrides.changes_from(self._current)
        if edits.empty:
            self.notify("Risk limits unchanged.")
            self.dismiss(None)
            return
        self.dismiss(edits)

    def action_cancel(self) -> None:
        self.dismiss(None)
