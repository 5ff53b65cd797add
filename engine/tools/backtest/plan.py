"""What a `hft-console backtest` runs: each recording, under each point of the `--set` grid,
under each quote gate asked for (`--compare`: Laya, none, the imbalance rule), as independent
deterministic runs; one at a time, or in worker processes, one per core."""

from __future__ import annotations

import dataclasses
import itertools
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.contract_sources import RecordedMarket, recording_contracts
from engine.feed.recording import require_recording_symbols
from engine.laya.decide import QuoteGate
from engine.settings.schema import Settings, recorded_book
from engine.tools.backtest.metrics import SessionMetrics, session_metrics
from engine.tools.backtest.session import (
    BacktestProgress,
    BacktestSpec,
    MarketWindow,
    run_backtest,
)
from engine.tools.cluster.workers import LocalWorkers, Place, Workers

COMPARED_GATES = (QuoteGate.LAYA, QuoteGate.NONE, QuoteGate.IMBALANCE)


@dataclass(frozen=True, slots=True)
class GridPoint:
    """One combination of `--set` values (key -> value); empty for a run without a grid."""

    values: tuple[tuple[str, object], ...] = ()

    @property
    def label(self) -> str:
        return ", ".join(f"{key}={_show(value)}" for key, value in self.values)


def parse_set(text: str) -> tuple[str, tuple[object, ...]]:
    """`KEY=VALUE[,VALUE...]` -> (key, values): each value a TOML literal, or else its text,
    which the setting reads as it reads the environment's (`BTCUSDT`, `[BTCUSDT, ETHUSDT]`,
    `http://...`); commas inside brackets or quotes belong to the value (`[0.6, 1.0]`)."""
    key, separator, rest = text.partition("=")
    key = key.strip()
    if not separator or not key or not rest.strip():
        raise ValueError(f"--set {text!r}: expected KEY=VALUE, e.g. trading.strategy.quote_size=2")
    values: list[object] = []
    for part in _split_top_level(rest):
        value = _literal(key, part)
        if value in values:  # the same point twice: a run that only repeats another
            raise ValueError(f"--set {key}: {_show(value)} is given twice")
        values.append(value)
    return key, tuple(values)


def grid(sets: Iterable[tuple[str, tuple[object, ...]]]) -> list[GridPoint]:
    """Every combination, in the order given (the last key varies fastest)."""
    keys: dict[str, tuple[object, ...]] = {}
    for key, values in sets:
        if key in keys:
            raise ValueError(f"--set {key} is given twice: put its values in one list")
        keys[key] = values
    combos = itertools.product(*keys.values())
    return [GridPoint(tuple(zip(keys, combo, strict=True))) for combo in combos]


def looped_recordings(recordings: Sequence[Path], frames: int, folder: Path) -> list[Path]:
    """Each recording played on and on to `frames` frames (market time and trade ids moved on
    each pass, as the soak loops), written into `folder`: for long runs and memory checks."""
    from engine.tools.soak import write_looped_recording

    looped = []
    for recording in recordings:
        name = recording.name.split(".", 1)[0]
        out = folder / f"{name}-looped-{frames}.bitget.gz"
        looped.append(write_looped_recording((recording,), out, frames).path)
    return looped


def backtest_specs(
    settings: Settings,
    recordings: Sequence[Path],
    symbols: tuple[str, ...] | None,
    points: Sequence[GridPoint],
    gates: Sequence[QuoteGate | None],
    *,
    kev_record: Path | None = None,
    kev_answers: Path | None = None,
    sources: Mapping[str, str] | None = None,
    window: MarketWindow | None = None,
) -> list[BacktestSpec]:
    """One spec a run (over `window` of each recording when given), on the book of `settings`
    whose market `symbols` are (None: each recording's own, `recorded_book`); a gate of None is
    the one the settings (and `--set`) name. Kev runs only
    when asked: against the [kev] server with its answers recorded to `kev_record`, or from
    the answers in `kev_answers` (one run: one server). Raises ValueError naming a symbol a
    recording does not have, or a setting that is not valid (SettingsError)."""
    if any(gate is not None for gate in gates) and any(
        key == "laya.gate" for point in points for key, _ in point.values
    ):
        raise ValueError("--compare runs every gate: --set laya.gate would undo it")
    kev = kev_record is not None or kev_answers is not None
    if kev and len(recordings) * len(points) * len(gates) > 1:
        raise ValueError(
            "Kev takes part in one run at a time (one llama-server): one recording, "
            "no grid, no --compare"
        )
    specs = []
    book = settings.engine if symbols else None
    for recording in recordings:
        chosen = require_recording_symbols(
            recording,
            symbols,
            hedge=book.hedge_symbol if book else None,
            leader=book.leader_symbol if book else None,
        )
        market = RecordedMarket.read(recording, chosen)
        for point in points:
            values: dict[str, object] = {"trading.mode": "paper"}
            if book is None:  # the recording's own
                values.update(recorded_book(chosen))
            values.update(dict(point.values))
            for gate in gates:
                if gate is not None:
                    values["laya.gate"] = gate.value
                configured = settings.with_overrides(values, sources)
                contracts = recording_contracts(configured, recording, market)
                engine = configured.engine_config(
                    replay_path=str(recording),
                    replay_speed=None,
                    trading=configured.trading_config(contracts=contracts),
                    status_interval_s=10.0,  # nobody watches: a status every 10 market seconds
                    contracts=contracts,
                )
                engine = dataclasses.replace(
                    engine,
                    kev_client=engine.kev_client if kev else None,
                    kev_answers_out=str(kev_record) if kev_record is not None else None,
                    kev_answers_in=str(kev_answers) if kev_answers is not None else None,
                )
                if gate is not None:
                    label = gate.value if not point.values else f"{gate.value} {point.label}"
                else:
                    label = point.label or configured.laya.gate
                specs.append(BacktestSpec(recording, engine, label, window, contracts))
    return specs


def run_specs(
    specs: Sequence[BacktestSpec],
    jobs: int,
    progress: Callable[[BacktestProgress], None] | None = None,
    done: Callable[[int, SessionMetrics], None] | None = None,
    *,
    ray: Workers | None = None,
) -> list[SessionMetrics]:
    """The metrics of each spec, in order: as tasks on the Ray cluster `ray` when given, else
    in this process when there is one run or one job (with `progress`), else in up to `jobs`
    worker processes; `done` hears each as it ends."""
    if ray is None and (len(specs) == 1 or jobs == 1):
        results = []
        for index, spec in enumerate(specs):
            metrics = session_metrics(run_backtest(spec, progress))
            results.append(metrics)
            if done is not None:
                done(index, metrics)
        return results
    workers = ray if ray is not None else LocalWorkers(jobs)
    found: dict[int, SessionMetrics] = {}
    for index, metrics in workers.map(_metrics_of, specs, [spec.recording for spec in specs]):
        found[index] = metrics
        if done is not None:
            done(index, metrics)
    return [found[index] for index in range(len(specs))]


def _metrics_of(spec: BacktestSpec, place: Place) -> SessionMetrics:
    """`spec`'s metrics, its recording read where `place` has it; they name the recording
    as `spec` does."""
    local = place.local(spec.recording)
    if local != spec.recording:
        engine = dataclasses.replace(spec.engine, replay_path=str(local))
        metrics = session_metrics(
            run_backtest(
                dataclasses.replace(spec, recording=local, engine=engine),
                scratch_in=place.scratch,
            )
        )
        return dataclasses.replace(metrics, recording=str(spec.recording))
    return session_metrics(run_backtest(spec, scratch_in=place.scratch))


def _split_top_level(text: str) -> list[str]:
    parts, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


def _literal(key: str, text: str) -> object:
    if not text:
        raise ValueError(f"--set {key}: an empty value")
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word or a list of them (gate=none, symbols=[BTCUSDT, ETHUSDT])


def _show(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
