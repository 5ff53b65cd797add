"""The panes on their own: what each row says, and that a new view redraws only the rows that
changed."""

from __future__ import annotations

import operator
from dataclasses import replace
from typing import ClassVar

import pytest
from console_scenarios import (
    BOOK_QUOTED,
    NEXO,
    PaneHost,
    book_snapshot,
    depth_view,
    fixed_snapshot,
    kev_decisions,
    latency_view,
    nexo_depth_view,
    status_view,
    vram_view,
)
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets._footer import FooterKey

from console.app import ConsoleConfig
from console.view import DepthLevel, HistogramBin, PositionLine, StageLatency
from console.widgets.book import BookPane
from console.widgets.depth import DepthPane
from console.widgets.footer import KeysFooter
from console.widgets.kev import KevPane
from console.widgets.latency import LatencyPane, sparkline
from console.widgets.lines import LinePane, fit
from console.widgets.orders import OrdersPane
from console.widgets.status import StatusPane
from console.widgets.vram import VramPane, split_cells
from engine.risk.events import TradingState
from engine.trading.config import TradingMode


def rows(pane: Widget) -> list[str]:
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


def recorded_refreshes(pane: Widget, monkeypatch) -> list[tuple[Region, ...]]:
    """The regions of each refresh the pane asks for from now on."""
    refreshed: list[tuple[Region, ...]] = []
    original = pane.refresh

    def record(*regions: Region, **options):
        refreshed.append(regions)
        return original(*regions, **options)

    monkeypatch.setattr(pane, "refresh", record)
    return refreshed


async def test_a_new_view_redraws_only_the_rows_that_changed(monkeypatch):
    pane = DepthPane("depth", classes="pane")
    app = PaneHost(pane)
    async with app.run_test(size=(46, 34)) as pilot:
        first = depth_view()
        pane.view = first
        await pilot.pause()
        refreshed = recorded_refreshes(pane, monkeypatch)
        bids = list(first.bids)
        bids[3] = DepthLevel(bids[3].price, bids[3].size + 0.5)
        pane.view = replace(first, bids=tuple(bids))
        # The largest size did not change, so only the fourth bid's row differs: the header,
        # 15 asks and the spread row come first.
        assert refreshed == [(Region(0, 1 + 15 + 1 + 3, pane.size.width, 1),)]
        refreshed.clear()
        pane.view = replace(first, bids=tuple(bids))
        assert refreshed == []


class StyledRows(LinePane[str]):
    """Two rows: a fixed one, and one whose text is fixed and whose colour is the view."""

    def rows(self, view: str, width: int, height: int) -> list[Text]:
        return [Text("fixed"), Text.assemble(("alert", view))]


async def test_a_row_that_changes_only_its_colour_is_redrawn(monkeypatch):
    pane = StyledRows("styled")
    async with PaneHost(pane).run_test(size=(20, 6)) as pilot:
        pane.view = "red"
        await pilot.pause()
        refreshed = recorded_refreshes(pane, monkeypatch)
        pane.view = "green"
        assert refreshed == [(Region(0, 1, pane.size.width, 1),)]
        assert next(iter(pane.render_line(1))).style.color.name == "green"


async def test_the_ladder_marks_our_orders_and_counts_those_beyond_it():
    pane = DepthPane("depth", classes="pane")
    async with PaneHost(pane).run_test(size=(46, 34)) as pilot:
        pane.view = depth_view()
        await pilot.pause()
        lines = rows(pane)
    assert len(lines) == 32
    assert "+1 beyond" in lines[0]  # the sell at 60,003.0 is past the 15th ask
    marked = [line for line in lines if "◆" in line]
    assert len(marked) == 2
    assert "60,000.4" in marked[0] and "59,999.8" in marked[1]
    assert lines[16] == "spread 1 tick = 0.02 bps · μ 60,000.06"


async def test_a_large_tick_book_reads_as_a_ladder_a_row_per_tick_ours_marked():
    """NEXOUSDT's 0.001 is 8 bps: every tick out to the deepest level has its row, the empty
    ones blank (ours marked there too), prices and sizes at the contract's decimals."""
    pane = DepthPane("depth", classes="pane")
    async with PaneHost(pane).run_test(size=(46, 34)) as pilot:
        pane.view = nexo_depth_view()
        await pilot.pause()
        lines = rows(pane)
    columns = [line[:30].rstrip() for line in lines[11:24]]  # mine, price, size: no bars
    assert columns == [
        "               1.216   4000.3",
        "◆   40.0       1.215",
        "               1.214",
        "               1.213   1100.0",
        "               1.212    640.2",
        "spread 2 ticks = 16.52 bps · μ",
        "◆   40.0       1.210   1520.4",
        "               1.209    310.0",
        "◆   40.0       1.208",
        "               1.207   2800.7",
        "               1.206",
        "               1.205",
        "               1.204     95.1",
    ]
    assert lines[1:11] == [""] * 10 and lines[24:] == [""] * 8  # nothing known past the book
    assert "beyond" not in lines[0]


async def test_a_short_large_tick_ladder_keeps_the_ticks_nearest_the_spread():
    pane = DepthPane("depth", classes="pane")
    async with PaneHost(pane).run_test(size=(38, 12)) as pilot:
        pane.view = nexo_depth_view()
        await pilot.pause()
        lines = rows(pane)
    assert [line[:19].split()[-1] for line in lines[1:5]] == ["1.215", "1.214", "1.213", "1.212"]
    assert lines[5] == "0.002 2t 16.52bps μ 1.2108"
    assert [line[:19].split()[-1] for line in lines[6:10]] == ["1.210", "1.209", "1.208", "1.207"]


@pytest.mark.parametrize(
    "thinned",
    [
        replace(depth_view(), bids=depth_view().bids[::2]),  # BTC: a tick is 0.02 bps
        replace(  # a coarse tick, but prices off it (a spot recording's finer grid)
            nexo_depth_view(), bids=(DepthLevel(1.2105, 10.0), *nexo_depth_view().bids[1:])
        ),
    ],
    ids=["fine-tick", "off-the-tick"],
)
async def test_a_fine_tick_book_or_one_off_its_tick_lists_its_levels_as_they_come(thinned):
    pane = DepthPane("depth", classes="pane")
    async with PaneHost(pane).run_test(size=(46, 34)) as pilot:
        pane.view = thinned
        await pilot.pause()
        lines = rows(pane)
    spread_row = next(index for index, line in enumerate(lines) if "bps" in line)
    shown = [line for line in lines[spread_row + 1 :] if line]
    assert len(shown) == len(thinned.bids)  # no empty rows between the levels
    assert all(line[20:30].strip() for line in shown)  # each with its size


async def test_the_ladder_shows_as_many_levels_as_fit():
    pane = DepthPane("depth", classes="pane")
    async with PaneHost(pane).run_test(size=(38, 12)) as pilot:
        pane.view = depth_view()
        await pilot.pause()
        lines = rows(pane)
    # 10 rows inside the border: the header, 4 asks, the spread, 4 bids.
    assert len(lines) == 10
    assert "60,000.4" in lines[1] and "60,000.1" in lines[4]
    assert "60,000.0" in lines[6] and "59,999.7" in lines[9]


async def test_status_puts_live_in_its_own_badge_and_keeps_the_essentials_when_narrow():
    pane = StatusPane("status", classes="pane")
    async with PaneHost(pane).run_test(size=(60, 5)) as pilot:
        pane.view = status_view(TradingState.HALTED, TradingMode.LIVE)
        await pilot.pause()
        lines = rows(pane)
        live_style = pane.get_component_rich_style("status--live", partial=True)
    assert lines[0].startswith(" LIVE  HALTED")
    assert "day +14.07 USDT" in lines[0]
    assert "fees" not in lines[0]  # dropped first when narrow
    assert lines[1].startswith("BTCUSDT live 10.2/s <1 s")
    # Every position stays; its entry price goes first, then the order count.
    assert lines[2] == "+0.014 BTC +0.14 USDT │ -0.2 ETH +0.22 USDT"
    assert live_style.reverse


async def test_status_gives_money_in_usdt_sizes_in_the_coin_and_fees_paid_as_negative():
    pane = StatusPane("status", classes="pane")
    async with PaneHost(pane).run_test(size=(160, 5)) as pilot:
        pane.view = status_view()
        await pilot.pause()
        lines = rows(pane)
    money = "day +14.07 USDT │ real +18.42  unreal +0.36  fees -4.71 USDT │ net Δ +240 / 2,500 USDT"
    assert money in lines[0]
    assert lines[2] == (
        "+0.014 BTC @ 59,990.2 +0.14 USDT │ -0.2 ETH @ 3,001.10 +0.22 USDT │ 4 open orders"
    )


async def test_status_shows_a_risk_scale_below_one_beside_the_limit_it_scales():
    pane = StatusPane("status", classes="pane")
    view = status_view()
    halved = replace(view.trading.overrides, risk_scale=0.5)  # Kev halved the risk
    async with PaneHost(pane).run_test(size=(160, 5)) as pilot:
        pane.view = replace(view, trading=replace(view.trading, overrides=halved))
        await pilot.pause()
        lines = rows(pane)
    assert "net Δ +240 / 2,500 USDT · risk 0.5" in lines[0]


async def test_status_names_the_quoted_contracts_tick_and_fees():
    pane = StatusPane("status", classes="pane")
    view = status_view()
    async with PaneHost(pane).run_test(size=(160, 5)) as pilot:
        pane.view = view
        await pilot.pause()
        btc = rows(pane)
        pane.view = replace(view, contracts=(NEXO, *view.contracts))
        await pilot.pause()
        nexo = rows(pane)
    assert "5.40 s │ BTCUSDT tick 0.1 · maker 2 taker 6 bps │ Laya CUDA" in btc[1]
    assert "5.40 s │ NEXOUSDT tick 0.001 · fee n/a │ Laya CUDA" in nexo[1]  # none listed


async def test_status_writes_an_entry_price_at_its_contracts_decimals():
    """On the tick at the contract's decimals; an average off it one decimal finer."""
    pane = StatusPane("status", classes="pane")
    view = status_view()
    positions = (
        PositionLine("NEXOUSDT", 80.0, 1.21, 1.211, 0.08),
        PositionLine("BTCUSDT", 0.014, 59_990.25, 60_000.05, 0.14),
        PositionLine("ETHUSDT", -0.2, 3_001.1, 3_000.01, 0.22),
    )
    trading = replace(view.trading, positions=positions)
    async with PaneHost(pane).run_test(size=(160, 5)) as pilot:
        pane.view = replace(view, trading=trading, contracts=(NEXO, *view.contracts))
        await pilot.pause()
        lines = rows(pane)
        pane.view = replace(
            view,
            trading=replace(trading, positions=(positions[0]._replace(entry_price=1.21033),)),
            contracts=(NEXO,),
        )
        await pilot.pause()
        averaged = rows(pane)
    assert lines[2] == (
        "+80 NEXO @ 1.210 +0.08 USDT │ +0.014 BTC @ 59,990.25 +0.14 USDT │ "
        "-0.2 ETH @ 3,001.10 +0.22 USDT │ 4 open orders"
    )
    assert averaged[2] == "+80 NEXO @ 1.2103 +0.08 USDT │ 4 open orders"


async def test_status_says_laya_is_still_warming_up():
    pane = StatusPane("status", classes="pane")
    view = status_view()
    warming = "warming up: BTCUSDT 20.1 s, ETHUSDT 20.1 s of market data to go"
    async with PaneHost(pane).run_test(size=(160, 5)) as pilot:
        pane.view = replace(view, laya=replace(view.laya, warming=warming))
        await pilot.pause()
        lines = rows(pane)
    assert f"Laya CUDA │ {warming} │ Kev online" in lines[1]


@pytest.mark.parametrize("width", [160, 84])  # 84: the compact bar's 80 columns and the border
async def test_status_stays_one_glance_with_a_book_of_symbols(width):
    """Nine feeds, four positions, eight symbols warming: counted, so the state, Laya and Kev
    keep their place (the book pane lists each symbol)."""
    book = book_snapshot().status
    waits = tuple((symbol, 20.1 - index) for index, symbol in enumerate(BOOK_QUOTED))
    warming = "warming up: " + ", ".join(f"{symbol} {wait} s" for symbol, wait in waits)
    pane = StatusPane("status", classes="pane")
    async with PaneHost(pane).run_test(size=(width, 5)) as pilot:
        pane.view = replace(book, laya=replace(book.laya, warming=warming, warming_s=waits))
        await pilot.pause()
        lines = rows(pane)
    assert lines[0].startswith(" SIM  ACTIVE")
    assert lines[1].startswith("feeds 8 live, 1 stale ADAUSDT │ ")
    assert "Laya CUDA │ warming up 8 symbols: 20.1 s to go" in lines[1]
    if width == 160:
        assert "to go │ Kev online" in lines[1]
    positions = "+0.014 BTC @ 59,990.2 +0.14 USDT │ -3 SOL @ 150.12 -0.84 USDT │ "
    assert lines[2].startswith(positions if width == 160 else "4 positions: 2 long, 2 short")


@pytest.mark.parametrize(
    ("width", "order", "fill"),
    [
        (46, "sell 0.02 BTC @ 60,003.0 live", "09:59:59 sell 0.004 BTC @ 60,000.4 M"),
        (
            80,
            "BTCUSDT  sell 0.02 BTC @ 60,003.0 live",
            "09:59:59.423 BTCUSDT  sell 0.004 BTC @ 60,000.4 maker, fee -0.0480 USDT",
        ),
    ],
    ids=["narrow", "wide"],
)
async def test_orders_and_fills_give_sizes_in_the_coin_and_the_fee_by_its_pnl_effect(
    width, order, fill
):
    pane = OrdersPane("orders and fills", classes="pane")
    snapshot = fixed_snapshot()
    async with PaneHost(pane).run_test(size=(width, 12)) as pilot:
        pane.view = (snapshot.orders, snapshot.fills, snapshot.status.contracts)
        await pilot.pause()
        lines = rows(pane)
    assert lines[1] == order  # the newest order first
    assert lines[lines.index("fills 3") + 1] == fill  # the newest fill first


async def test_orders_and_fills_write_prices_on_the_contracts_grid():
    """A price computed in floats (61852.200000000004) is written at its contract's decimals."""
    pane = OrdersPane("orders and fills", classes="pane")
    snapshot = fixed_snapshot()
    order = snapshot.orders[0]._replace(symbol="ETHUSDT", price=3_000.5)
    fill = snapshot.fills[-1]._replace(price=61_852.200000000004)
    async with PaneHost(pane).run_test(size=(46, 12)) as pilot:
        pane.view = ((order,), (*snapshot.fills[:-1], fill), snapshot.status.contracts)
        await pilot.pause()
        lines = rows(pane)
    assert lines[1].endswith("ETH @ 3,000.50 live")
    assert lines[lines.index("fills 3") + 1].endswith("BTC @ 61,852.2 M")


async def test_orders_and_fills_write_any_contracts_prices_and_sizes_at_its_decimals():
    """A large-tick contract's prices at its 3 decimals, a large fill size without an
    exponent (`:g` wrote 1.25e+06)."""
    pane = OrdersPane("orders and fills", classes="pane")
    snapshot = fixed_snapshot()
    order = snapshot.orders[1]._replace(
        symbol="NEXOUSDT", price=1.21, size=2_000_000.0, filled_size=1_250_000.0
    )
    fill = snapshot.fills[-1]._replace(symbol="NEXOUSDT", price=1.212, size=40.0)
    async with PaneHost(pane).run_test(size=(80, 12)) as pilot:
        pane.view = ((order,), (fill,), (NEXO,))
        await pilot.pause()
        lines = rows(pane)
    assert lines[1] == "NEXOUSDT sell 2000000 NEXO @ 1.210 filled 1250000.0"
    assert lines[3].startswith("09:59:59.423 NEXOUSDT sell 40 NEXO @ 1.212 maker")


async def test_latency_marks_a_p99_over_budget_with_a_bang():
    pane = LatencyPane("latency", classes="pane")
    async with PaneHost(pane).run_test(size=(57, 11)) as pilot:
        pane.view = latency_view()
        await pilot.pause()
        lines = rows(pane)
    infer = next(line for line in lines if line.startswith("infer"))
    parse = next(line for line in lines if line.startswith("parse"))
    assert "!27.9 µs" in infer and "25.0 µs" in infer
    assert "!" not in parse


def test_a_stage_without_samples_is_never_over_budget():
    assert not StageLatency("kev", 0, 0.0, 0.0, 0.0, 0.0, 1.0).over_budget


def test_sparkline_merges_bins_and_shows_a_lone_outlier():
    bins = tuple(HistogramBin(i, i + 1, count) for i, count in enumerate([0, 1000, 10, 0, 1]))
    assert sparkline(bins, 10) == " █▃ ▁"
    merged = sparkline(bins, 2)
    assert len(merged) == 2 and merged[0] == "█"


@pytest.mark.parametrize("width", [1, 7, 53, 200])
def test_vram_bar_cells_add_up_to_the_width(width):
    cells = split_cells([4_400, 612, 1_200, 5_900], 12_112, width)
    assert sum(cells) == width and all(cell >= 0 for cell in cells)


async def test_vram_says_why_there_is_no_gpu():
    pane = VramPane("VRAM", classes="pane")
    async with PaneHost(pane).run_test(size=(57, 8)) as pilot:
        pane.view = vram_view(available=False)
        await pilot.pause()
        lines = rows(pane)
    assert lines[:3] == [
        "no NVIDIA GPU",
        "NVMLError_LibraryNotFound: NVML Shared Library Not",
        "Found",
    ]


async def test_vram_falls_back_to_device_totals_and_says_so():
    pane = VramPane("VRAM", classes="pane")
    async with PaneHost(pane).run_test(size=(80, 8)) as pilot:
        pane.view = vram_view(per_process=False)
        await pilot.pause()
        lines = rows(pane)
    assert "used 6.1 GiB" in lines[2]
    assert lines[4].startswith("device totals only: NVML does not report per-process memory")


async def test_vram_marks_a_user_over_its_budget():
    view = vram_view()
    over = replace(view, sample=replace(view.sample, laya_bytes=3 << 30))
    pane = VramPane("VRAM", classes="pane")
    async with PaneHost(pane).run_test(size=(80, 8)) as pilot:
        pane.view = over
        await pilot.pause()
        lines = rows(pane)
    assert "Laya 3.0/2.0 GiB!" in lines[2]
    assert "Kev 4.3/4.4 GiB " in lines[2]


async def test_kev_shows_why_a_decision_was_stale_and_its_reasoning():
    pane = KevPane("Kev", classes="pane")
    async with PaneHost(pane).run_test(size=(57, 15)) as pilot:
        pane.view = kev_decisions()
        await pilot.pause()
        lines = rows(pane)
    assert lines[0].startswith("09:59:54.123  6.12 s flatten   stale")
    assert lines[1] == "  answer arrived 6.1 s after the question (limit 5 s)"
    assert lines[2].startswith("  ETH basis against BTC")


def test_fit_drops_the_least_important_parts_first():
    parts = [(0, Text("SIM ACTIVE")), (2, Text("net 240")), (1, Text("day +14")), (2, Text("x"))]
    assert fit(parts, 100, " | ").plain == "SIM ACTIVE | net 240 | day +14 | x"
    assert fit(parts, 30, " | ").plain == "SIM ACTIVE | net 240 | day +14"
    assert fit(parts, 20, " | ").plain == "SIM ACTIVE | day +14"
    assert fit(parts, 3, " | ").plain == "SIM ACTIVE"


def test_the_fixed_snapshot_is_frozen():
    snapshot = fixed_snapshot()
    with pytest.raises(AttributeError):
        snapshot.at_ns = 0  # type: ignore[misc]


class FooterHost(App[None]):
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [Binding("k", "kill", "KILL", id="console.kill")]

    def compose(self) -> ComposeResult:
        yield KeysFooter()

    def action_kill(self) -> None:
        pass


async def test_the_footer_is_composed_again_only_when_its_keys_change():
    app = FooterHost()
    async with app.run_test() as pilot:
        await pilot.pause()
        keys = list(app.query(FooterKey))
        assert [key.key for key in keys] == ["k"]
        app.screen.refresh_bindings()  # as focus moving or a dialog closing does
        await pilot.pause()
        assert all(map(operator.is_, app.query(FooterKey), keys))
        app.set_keymap({"console.kill": "K"})
        await pilot.pause()
        assert [key.key for key in app.query(FooterKey)] == ["K"]


async def test_the_book_says_each_symbols_laya_state_and_a_symbol_paused_alone():
    """Laya: warming up, aside for its model, the current verdict (with its probability while
    the stream's last record of it agrees; a HOLD the stream no longer holds, bare); the role
    says a symbol the gateway paused alone."""
    snapshot = book_snapshot()
    pane = BookPane.build(ConsoleConfig())
    async with PaneHost(pane).run_test(size=(160, 14)) as pilot:
        pane.view = pane.part(snapshot, "BTCUSDT")
        await pilot.pause()
        lines = {line.split()[0].strip("▶"): line for line in rows(pane)[1:] if line.split()}
    assert "LEAN_BUY 0.66" in lines["SOLUSDT"] and "EMERGENCY 0.91" in lines["XRPUSDT"]
    assert "HOLD" in lines["DOGEUSDT"] and "HOLD 0" not in lines["DOGEUSDT"]
    assert "warming 12 s" in lines["LINKUSDT"] and "no model" in lines["NEXOUSDT"]
    assert "paused" in lines["AVAXUSDT"] and "paused" not in lines["DOGEUSDT"]
